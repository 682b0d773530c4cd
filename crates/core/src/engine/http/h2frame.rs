//! The HTTP/2 client's wire (RFC 9113) and header compression (RFC 7541), no more than a load
//! client needs: its frames written into a buffer, the server's frames read from one, and a
//! response head's `:status`.
//!
//! The client asks for no dynamic table (SETTINGS_HEADER_TABLE_SIZE 0): it sends each URL's
//! request as one block encoded before the run (static indexes and literals without indexing,
//! the same bytes every time), and it reads a response head statelessly, skipping every field
//! but `:status`. A server that still refers to a dynamic entry broke the protocol
//! ([`Compression`]).

/// The connection preface a client sends first.
pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The frame header's length.
pub(super) const HEAD: usize = 9;
/// The largest frame payload the client accepts (SETTINGS_MAX_FRAME_SIZE's initial value; the
/// client does not raise it) and the largest request block it sends in one frame.
pub(super) const MAX_FRAME: usize = 16_384;

pub(super) const DATA: u8 = 0x0;
pub(super) const HEADERS: u8 = 0x1;
pub(super) const RST_STREAM: u8 = 0x3;
pub(super) const SETTINGS: u8 = 0x4;
pub(super) const PUSH_PROMISE: u8 = 0x5;
pub(super) const PING: u8 = 0x6;
pub(super) const GOAWAY: u8 = 0x7;
pub(super) const WINDOW_UPDATE: u8 = 0x8;
pub(super) const CONTINUATION: u8 = 0x9;

pub(super) const END_STREAM: u8 = 0x1;
pub(super) const ACK: u8 = 0x1;
pub(super) const END_HEADERS: u8 = 0x4;
pub(super) const PADDED: u8 = 0x8;
pub(super) const PRIORITY: u8 = 0x20;

pub(super) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(super) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// RST_STREAM's code for a stream the client gave up on.
pub(super) const CANCEL: u32 = 0x8;

/// The largest response header block the client takes (a HEADERS frame and its CONTINUATIONs,
/// HPACK-encoded as sent), as nghttp2 bounds a header list; it says so in its SETTINGS
/// (MAX_HEADER_LIST_SIZE, which counts the decoded list: never less than its encoding).
pub(crate) const MAX_HEADER_BLOCK: usize = 64 << 10;

/// A frame's header: its payload's length, type, flags and stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    pub(super) fn parse(b: &[u8; HEAD]) -> Head {
        Head {
            len: usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a frame header.
pub(super) fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// The preface, the client's SETTINGS (no dynamic table, no push, `stream_window` per stream,
/// header blocks of at most [`MAX_HEADER_BLOCK`]) and the connection window raised to
/// `connection_window`.
pub(super) fn client_start(out: &mut Vec<u8>, stream_window: u32, connection_window: u32) {
    out.extend_from_slice(PREFACE);
    let settings = [
        (SETTINGS_HEADER_TABLE_SIZE, 0),
        (SETTINGS_ENABLE_PUSH, 0),
        (SETTINGS_INITIAL_WINDOW_SIZE, stream_window),
        (SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_BLOCK as u32),
    ];
    head(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
    if connection_window > 65_535 {
        window_update(out, 0, connection_window - 65_535);
    }
}

pub(super) fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub(super) fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// A request: one HEADERS frame that ends the stream, its block `prefix` (a table size update,
/// or nothing) then `block`, one of a URL's [`Requests`].
pub(super) fn request(out: &mut Vec<u8>, stream: u32, prefix: &[u8], block: &[u8]) {
    head(
        out,
        prefix.len() + block.len(),
        HEADERS,
        END_STREAM | END_HEADERS,
        stream,
    );
    out.extend_from_slice(prefix);
    out.extend_from_slice(block);
}

/// A URL's GET as HPACK blocks, encoded once: `:method GET`, `:scheme`, `:authority`, `:path`
/// and `user-agent: linerate`. As a browser or h2load does, a connection's requests after its
/// first index the fields that repeat in the server's table: `plain` puts them as literals
/// without indexing (no state at the server), `first` as literals with incremental indexing
/// (they enter the server's dynamic table), `indexed` refers to those entries (a few bytes).
#[derive(Clone, Debug)]
pub(super) struct Requests {
    pub plain: Vec<u8>,
    pub first: Vec<u8>,
    pub indexed: Vec<u8>,
    /// What `first`'s entries take of the server's table (RFC 7541 §4.1: name, value, 32).
    pub table_bytes: usize,
}

impl Requests {
    pub(super) fn new(https: bool, authority: &str, path: &str) -> Requests {
        let start = [0x82, if https { 0x87 } else { 0x86 }];
        // (static name index, value): each becomes a dynamic entry in `first`.
        let mut fields = vec![(1, authority.as_bytes())];
        if path != "/" {
            fields.push((4, path.as_bytes()));
        }
        fields.push((58, b"linerate".as_slice()));
        let name_len = |i: usize| match i {
            1 => ":authority".len(),
            4 => ":path".len(),
            _ => "user-agent".len(),
        };
        let (mut plain, mut first, mut indexed) = (start.to_vec(), start.to_vec(), start.to_vec());
        for (k, &(name, value)) in fields.iter().enumerate() {
            literal(&mut plain, name, value);
            int(&mut first, 6, 0x40, name);
            int(&mut first, 7, 0x00, value.len());
            first.extend_from_slice(value);
            // The newest entry is 62: the last field inserted, so the first field is the oldest.
            int(&mut indexed, 7, 0x80, 62 + fields.len() - 1 - k);
            if path == "/" && k == 0 {
                indexed.push(0x84);
                plain.push(0x84);
                first.push(0x84);
            }
        }
        let table_bytes = fields
            .iter()
            .map(|&(name, value)| name_len(name) + value.len() + 32)
            .sum();
        Requests {
            plain,
            first,
            indexed,
            table_bytes,
        }
    }
}

/// A dynamic table size update to `size` (the start of a block, RFC 7541 §6.3).
pub(super) fn table_size_update(out: &mut Vec<u8>, size: usize) {
    int(out, 5, 0x20, size);
}

/// A literal header field without indexing, its name the static table's entry `name`.
fn literal(out: &mut Vec<u8>, name: usize, value: &[u8]) {
    int(out, 4, 0x00, name);
    int(out, 7, 0x00, value.len());
    out.extend_from_slice(value);
}

/// An HPACK integer with an `n`-bit prefix, `high` the first byte's bits above it.
fn int(out: &mut Vec<u8>, n: u32, high: u8, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(high | v as u8);
        return;
    }
    out.push(high | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// A header block that does not decode, or refers to a dynamic table entry the client never
/// allowed (COMPRESSION_ERROR).
#[derive(Debug, PartialEq)]
pub(super) struct Compression;

/// What the client reads of a response head's block: its `:status` and its `content-length`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct ResponseHead {
    /// None when the block has none (or one that is not three digits).
    pub status: Option<u16>,
    /// None when the block has none, or one that is not a number.
    pub content_length: Option<u64>,
}

/// A header the client reads: by its static table index (RFC 7541 Appendix A) or its name.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Status,
    ContentLength,
    Other,
}

impl Field {
    fn of_index(i: usize) -> Field {
        match i {
            8..=14 => Field::Status,
            28 => Field::ContentLength,
            _ => Field::Other,
        }
    }

    /// A literal name (as nginx and h2 send them, not Huffman-coded).
    fn of_name(name: &[u8], huffman: bool) -> Field {
        match (name, huffman) {
            (b":status", false) => Field::Status,
            (b"content-length", false) => Field::ContentLength,
            _ => Field::Other,
        }
    }
}

/// The `:status` and `content-length` of a response head's block (or of trailers: neither).
pub(super) fn response_head(block: &[u8]) -> Result<ResponseHead, Compression> {
    let mut at = 0;
    let mut head = ResponseHead::default();
    while at < block.len() {
        let first = block[at];
        if first & 0x80 != 0 {
            // Indexed: the static table's :status entries are 8 to 14 (content-length, 28, has
            // no value there).
            let i = read_int(block, &mut at, 7)?;
            match i {
                8..=14 => head.status = Some([200, 204, 206, 304, 400, 404, 500][i - 8]),
                1..=61 => {}
                _ => return Err(Compression),
            }
            continue;
        }
        if first & 0xe0 == 0x20 {
            // A dynamic table size update: only to the size the client allowed.
            if read_int(block, &mut at, 5)? != 0 {
                return Err(Compression);
            }
            continue;
        }
        // A literal: with incremental indexing (6-bit name index), or without / never indexed
        // (4-bit); a table of size 0 keeps none of them.
        let prefix = if first & 0xc0 == 0x40 { 6 } else { 4 };
        let field = match read_int(block, &mut at, prefix)? {
            0 => {
                let (raw, huffman) = read_str(block, &mut at)?;
                Field::of_name(raw, huffman)
            }
            i @ 1..=61 => Field::of_index(i),
            _ => return Err(Compression),
        };
        let (value, huffman) = read_str(block, &mut at)?;
        let number = if huffman { huffman_number(value) } else { number(value) };
        match field {
            Field::Status => head.status = number.filter(|&(_, digits)| digits == 3).map(|(v, _)| v as u16),
            Field::ContentLength => head.content_length = number.map(|(v, _)| v),
            Field::Other => {}
        }
    }
    Ok(head)
}

fn read_int(b: &[u8], at: &mut usize, n: u32) -> Result<usize, Compression> {
    let max = (1usize << n) - 1;
    let mut v = usize::from(*b.get(*at).ok_or(Compression)?) & max;
    *at += 1;
    if v < max {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let byte = *b.get(*at).ok_or(Compression)?;
        *at += 1;
        v = v.checked_add(usize::from(byte & 0x7f) << shift).ok_or(Compression)?;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 28 {
            return Err(Compression);
        }
    }
}

/// A string literal: its bytes as sent, and whether they are Huffman-coded.
fn read_str<'a>(b: &'a [u8], at: &mut usize) -> Result<(&'a [u8], bool), Compression> {
    let huffman = b.get(*at).ok_or(Compression)? & 0x80 != 0;
    let len = read_int(b, at, 7)?;
    let end = at.checked_add(len).filter(|&e| e <= b.len()).ok_or(Compression)?;
    let s = &b[*at..end];
    *at = end;
    Ok((s, huffman))
}

/// The most digits a number may have here (u64 holds any 19).
const MAX_DIGITS: usize = 19;

/// A number written in ASCII digits, and how many: None when empty, too long or not digits.
fn number(s: &[u8]) -> Option<(u64, usize)> {
    if s.is_empty() || s.len() > MAX_DIGITS || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some((s.iter().fold(0, |v, d| v * 10 + u64::from(d - b'0')), s.len()))
}

/// A Huffman-coded number (RFC 7541 Appendix B: '0'-'2' are the 5-bit codes 00000-00010,
/// '3'-'9' the 6-bit 011001-011111), then padding of ones shorter than a byte; and how many
/// digits.
fn huffman_number(s: &[u8]) -> Option<(u64, usize)> {
    let bits = s.len() * 8;
    let bit = |i: usize| (s[i / 8] >> (7 - i % 8)) & 1;
    let take = |from: usize, n: usize| (from..from + n).fold(0u8, |v, i| v << 1 | bit(i));
    let (mut at, mut v, mut digits) = (0, 0u64, 0);
    while at + 5 <= bits && digits < MAX_DIGITS {
        let five = take(at, 5);
        let d = if five <= 0b00010 {
            at += 5;
            five
        } else {
            let six = if at + 6 <= bits { take(at, 6) } else { 0 };
            if !(0b011001..=0b011111).contains(&six) {
                break;
            }
            at += 6;
            six - 0b011001 + 3
        };
        v = v * 10 + u64::from(d);
        digits += 1;
    }
    let pad = bits - at;
    (digits > 0 && pad < 8 && (at..bits).all(|i| bit(i) == 1)).then_some((v, digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_take_their_prefix_then_seven_bit_groups() {
        // RFC 7541 C.1: 10 and 1337 with a 5-bit prefix, 42 with an 8-bit one.
        let mut out = Vec::new();
        int(&mut out, 5, 0, 10);
        int(&mut out, 5, 0, 1337);
        assert_eq!(out, [0x0a, 0x1f, 0x9a, 0x0a]);
        let (mut at, b) = (0, [0x0a, 0x1f, 0x9a, 0x0a]);
        assert_eq!(read_int(&b, &mut at, 5), Ok(10));
        assert_eq!(read_int(&b, &mut at, 5), Ok(1337));
        assert_eq!(at, 4);
        assert_eq!(read_int(&[0x1f, 0x9a], &mut 0, 5), Err(Compression), "cut short");
    }

    #[test]
    fn a_request_is_static_indexes_and_literals_then_the_entries_they_made() {
        let r = Requests::new(false, "h:80", "/x");
        let plain = [
            &[0x82, 0x86, 0x01, 4][..],
            b"h:80",
            &[0x04, 2],
            b"/x",
            &[0x0f, 43, 8],
            b"linerate",
        ]
        .concat();
        assert_eq!(r.plain, plain);
        let first = [
            &[0x82, 0x86, 0x41, 4][..],
            b"h:80",
            &[0x44, 2],
            b"/x",
            &[0x7a, 8],
            b"linerate",
        ]
        .concat();
        assert_eq!(r.first, first);
        // Inserted authority, path, user-agent: user-agent is 62, the authority 64.
        assert_eq!(r.indexed, [0x82, 0x86, 0xc0, 0xbf, 0xbe]);
        assert_eq!(r.table_bytes, (10 + 4 + 32) + (5 + 2 + 32) + (10 + 8 + 32));
        let root = Requests::new(true, "h", "/");
        assert_eq!(root.indexed, [0x82, 0x87, 0xbf, 0x84, 0xbe]);
        assert_eq!(&root.plain[..2], [0x82, 0x87]);
        assert_eq!(root.plain[2..5], [0x01, 1, b'h']);
        assert_eq!(root.plain[5], 0x84);
        let mut update = Vec::new();
        table_size_update(&mut update, 0);
        table_size_update(&mut update, 4096);
        assert_eq!(update, [0x20, 0x3f, 0xe1, 0x1f]);
    }

    #[test]
    fn status_comes_from_a_static_index_a_literal_or_huffman_digits() {
        let status = |b: &[u8]| response_head(b).map(|h| h.status);
        let huffman_digits = |b: &[u8]| huffman_number(b).filter(|&(_, n)| n == 3).map(|(v, _)| v as u16);
        // Indexed :status 200 (8), then a literal without indexing of content-length (28).
        assert_eq!(status(&[0x88, 0x0f, 0x0d, 0x01, b'5']), Ok(Some(200)));
        assert_eq!(status(&[0x8d]), Ok(Some(404)));
        // A literal with incremental indexing, name :status (8), raw "302".
        assert_eq!(status(&[0x48, 0x03, b'3', b'0', b'2']), Ok(Some(302)));
        // RFC 7541 C.6.1: "302" Huffman-coded is 64 02.
        assert_eq!(status(&[0x48, 0x82, 0x64, 0x02]), Ok(Some(302)));
        // "307": '3' 011001, '0' 00000, '7' 011101, then seven bits of padding (ones).
        assert_eq!(huffman_digits(&[0x64, 0x0e, 0xff]), Some(307));
        assert_eq!(huffman_digits(&[0x64, 0x0e]), None, "cut short");
        assert_eq!(huffman_digits(&[0x64, 0x0e, 0xfe]), None, "a zero in the padding");
        assert_eq!(huffman_digits(&[0x64, 0x02, 0xff]), None, "padding of a whole byte");
        assert_eq!(status(&[0x0f, 0x0d, 0x01, b'5']), Ok(None), "no :status");
        assert_eq!(status(&[0xbe]), Err(Compression), "a dynamic entry (62)");
        assert_eq!(
            status(&[0x3f, 0xe1, 0x1f]),
            Err(Compression),
            "a table size update to 4096"
        );
        assert_eq!(status(&[0x20, 0x88]), Ok(Some(200)), "a table size update to 0");
        assert_eq!(status(&[0x48, 0x05, b'2']), Err(Compression), "a string past the block");
    }

    #[test]
    fn content_length_comes_from_a_literal_raw_or_huffman() {
        let length = |b: &[u8]| response_head(b).map(|h| h.content_length);
        // Indexed :status 200, content-length (28) without indexing, raw "1024".
        let raw = [0x88, 0x0f, 0x0d, 0x04, b'1', b'0', b'2', b'4'];
        assert_eq!(
            response_head(&raw),
            Ok(ResponseHead {
                status: Some(200),
                content_length: Some(1024)
            })
        );
        // With incremental indexing (0x40 | 28), Huffman "1024": 00001 00000 00010 011010, pad.
        assert_eq!(length(&[0x5c, 0x83, 0x08, 0x04, 0xd7]), Ok(Some(1024)));
        // A literal name.
        let named = [&[0x00, 14][..], b"content-length", &[0x01, b'0']].concat();
        assert_eq!(length(&named), Ok(Some(0)));
        assert_eq!(length(&[0x0f, 0x0d, 0x02, b'1', b'x']), Ok(None), "not a number");
        assert_eq!(length(&[0x0f, 0x0d, 0x00]), Ok(None), "empty");
        assert_eq!(length(&[0x88]), Ok(None), "none");
        let long = [&[0x0f, 0x0d, 20][..], &[b'9'; 20]].concat();
        assert_eq!(length(&long), Ok(None), "past u64's digits");
        assert_eq!(huffman_number(&[0xff]), None, "padding alone");
    }

    #[test]
    fn every_three_digit_status_huffman_codes_and_decodes() {
        let code = |d: u8| {
            if d <= 2 {
                (u32::from(d), 5)
            } else {
                (0b011001 + u32::from(d) - 3, 6)
            }
        };
        for v in 100..600u16 {
            let (mut acc, mut n) = (0u64, 0u32);
            for d in [v / 100, v / 10 % 10, v % 10] {
                let (c, len) = code(d as u8);
                acc = acc << len | u64::from(c);
                n += len;
            }
            let bytes = n.div_ceil(8);
            let pad = bytes * 8 - n;
            acc = acc << pad | ((1 << pad) - 1);
            let s: Vec<u8> = (0..bytes).rev().map(|i| (acc >> (8 * i)) as u8).collect();
            assert_eq!(huffman_number(&s), Some((u64::from(v), 3)), "{s:02x?}");
        }
    }

    #[test]
    fn frame_heads_round_trip_with_the_reserved_bit_cleared() {
        let mut out = Vec::new();
        head(&mut out, 70_000, DATA, END_STREAM, 0x8000_0003);
        let h = Head::parse(out[..HEAD].try_into().expect("nine bytes"));
        assert_eq!(
            h,
            Head {
                len: 70_000,
                kind: DATA,
                flags: END_STREAM,
                stream: 3
            }
        );
    }

    #[test]
    fn the_client_starts_with_the_preface_settings_and_its_window() {
        let mut out = Vec::new();
        client_start(&mut out, 1 << 20, 1 << 24);
        assert!(out.starts_with(PREFACE));
        let h = Head::parse(out[PREFACE.len()..][..HEAD].try_into().expect("nine bytes"));
        assert_eq!((h.kind, h.len, h.stream), (SETTINGS, 24, 0));
        let wu = &out[PREFACE.len() + HEAD + 24..];
        assert_eq!(Head::parse(wu[..HEAD].try_into().expect("nine")).kind, WINDOW_UPDATE);
        assert_eq!(
            u32::from_be_bytes(wu[HEAD..].try_into().expect("four")),
            (1 << 24) - 65_535
        );
    }
}
