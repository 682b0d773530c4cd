//! The HTTP/2 client's frame reader: the server's frames out of the bytes read, each
//! whole, a header block cut into CONTINUATIONs joined, and the bounds a hostile server meets
//! (a header block's size and its CONTINUATIONs, SETTINGS per second, a PING's length); what
//! breaks them is a [`Violation`], which ends the connection as the server's fault. The frames'
//! wire is in [`super::h2frame`]; the connection (`h2/connection.rs`) acts on what this reads.

use super::h2frame::{
    ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEAD, HEADERS, Head, MAX_FRAME, MAX_HEADER_BLOCK, PADDED,
    PING, PRIORITY, PUSH_PROMISE, RST_STREAM, SETTINGS,
};

/// The most CONTINUATION frames after one HEADERS (nghttp2's bound, CVE-2024-27316).
pub(crate) const MAX_CONTINUATIONS: u32 = 8;
/// The most SETTINGS frames a server may send in one second of a connection (a server sends
/// one at its start, and one more for each change).
pub(crate) const MAX_SETTINGS_PER_SECOND: u32 = 16;
/// A PING's payload (RFC 9113 6.7): its acknowledgement echoes these.
pub(super) const PING_LEN: usize = 8;

/// How the server broke HTTP/2 on a connection, or went past one of the client's bounds
///: the connection is ended as the server's fault, counted under [`Violation::key`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Violation {
    /// PINGs faster than it reads their acknowledgements (over the session's
    /// `MAX_PENDING_ACKS` unsent).
    PingFlood,
    /// SETTINGS over [`MAX_SETTINGS_PER_SECOND`], or faster than it reads their acknowledgements.
    SettingsFlood,
    /// A header block over [`MAX_HEADER_BLOCK`] bytes or [`MAX_CONTINUATIONS`] CONTINUATIONs.
    ContinuationFlood,
    /// It does not read what the client writes (over the session's `MAX_UNSENT` bytes unsent).
    Unread,
    /// A frame over [`MAX_FRAME`].
    FrameSize,
    /// A PUSH_PROMISE, push being off.
    Push,
    /// A header block that does not decode ([`super::h2frame::Compression`]).
    Compression,
    /// A frame that breaks its own rules: padding past its payload, a PING not of 8 bytes, a
    /// SETTINGS not of 6-byte entries, a GOAWAY without its last stream, a frame inside a
    /// header block.
    Malformed,
}

impl Violation {
    /// Its name in `http2.protocol_error_causes`.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Violation::PingFlood => "ping_flood",
            Violation::SettingsFlood => "settings_flood",
            Violation::ContinuationFlood => "continuation_flood",
            Violation::Unread => "unread_writes",
            Violation::FrameSize => "frame_size",
            Violation::Push => "push",
            Violation::Compression => "compression",
            Violation::Malformed => "malformed_frame",
        }
    }
}

/// One frame of the server's as the session takes it (the ones it ignores are `Other`).
#[derive(Debug, PartialEq)]
pub(super) enum Frame<'a> {
    /// DATA: `body` bytes of body, `taken` of the windows (padding included).
    Data {
        stream: u32,
        end_stream: bool,
        body: usize,
        taken: usize,
    },
    /// A whole header block (its CONTINUATIONs joined), padding and priority taken off.
    Head {
        stream: u32,
        end_stream: bool,
        block: &'a [u8],
    },
    Reset {
        stream: u32,
    },
    /// SETTINGS (not an acknowledgement): its 6-byte entries.
    Settings(&'a [u8]),
    /// A PING (not an acknowledgement): its 8 bytes.
    Ping(&'a [u8]),
    GoAway {
        last: u32,
    },
    /// The first part of a header block cut into CONTINUATIONs, an acknowledgement, a window
    /// update, a priority, an unknown type: nothing for the session to do.
    Other,
}

/// The server's frames out of the bytes read: whole frames only, a header block cut into
/// CONTINUATIONs joined (its bytes kept here, bounded), SETTINGS counted per second. No
/// allocation but the block's buffer, made once to [`MAX_HEADER_BLOCK`] when a server first
/// cuts a head into CONTINUATIONs.
#[derive(Debug, Default)]
pub(super) struct Reader {
    /// A header block open: its stream and whether its HEADERS ended the stream.
    continuation: Option<(u32, bool)>,
    continuations: u32,
    block: Vec<u8>,
    /// The last frame handed out was the joined block: emptied before the next.
    block_out: bool,
    /// The start of the current second of SETTINGS (ns, the caller's clock) and how many came in it.
    settings_since: u64,
    settings: u32,
}

impl Reader {
    /// The frame at the start of `buf` and its length with its head; None while it is not
    /// whole. `now_ns` is the caller's clock (for SETTINGS per second). Inlined into the
    /// session's loop: it runs once per frame.
    #[inline]
    pub(super) fn next<'a>(&'a mut self, buf: &'a [u8], now_ns: u64) -> Result<Option<(Frame<'a>, usize)>, Violation> {
        if self.block_out {
            self.block.clear();
            self.block_out = false;
        }
        let Some(h) = buf.first_chunk::<HEAD>() else {
            return Ok(None);
        };
        let head = Head::parse(h);
        if head.len > MAX_FRAME {
            return Err(Violation::FrameSize);
        }
        let Some(p) = buf.get(HEAD..HEAD + head.len) else {
            return Ok(None);
        };
        let size = HEAD + head.len;
        if let Some((stream, end_stream)) = self.continuation {
            if head.kind != CONTINUATION || head.stream != stream {
                return Err(Violation::Malformed);
            }
            self.continuations += 1;
            if self.continuations > MAX_CONTINUATIONS || self.block.len() + p.len() > MAX_HEADER_BLOCK {
                return Err(Violation::ContinuationFlood);
            }
            self.block.extend_from_slice(p);
            if head.flags & END_HEADERS == 0 {
                return Ok(Some((Frame::Other, size)));
            }
            self.continuation = None;
            self.block_out = true;
            let block = &self.block[..];
            return Ok(Some((
                Frame::Head {
                    stream,
                    end_stream,
                    block,
                },
                size,
            )));
        }
        let frame = match head.kind {
            DATA => Frame::Data {
                stream: head.stream,
                end_stream: head.flags & END_STREAM != 0,
                body: unpad(head.flags, p)?.len(),
                taken: p.len(),
            },
            HEADERS => {
                let mut block = unpad(head.flags, p)?;
                if head.flags & PRIORITY != 0 {
                    block = block.get(5..).ok_or(Violation::Malformed)?;
                }
                let end_stream = head.flags & END_STREAM != 0;
                if head.flags & END_HEADERS == 0 {
                    self.continuation = Some((head.stream, end_stream));
                    self.continuations = 0;
                    // Made once, to the bound: it never grows past it nor moves.
                    if self.block.capacity() < MAX_HEADER_BLOCK {
                        self.block = Vec::with_capacity(MAX_HEADER_BLOCK);
                    }
                    self.block.clear();
                    self.block.extend_from_slice(block);
                    Frame::Other
                } else {
                    Frame::Head {
                        stream: head.stream,
                        end_stream,
                        block,
                    }
                }
            }
            RST_STREAM => Frame::Reset { stream: head.stream },
            SETTINGS if head.flags & ACK == 0 => {
                if p.len() % 6 != 0 {
                    return Err(Violation::Malformed);
                }
                if now_ns.saturating_sub(self.settings_since) >= 1_000_000_000 || self.settings == 0 {
                    (self.settings_since, self.settings) = (now_ns, 0);
                }
                self.settings += 1;
                if self.settings > MAX_SETTINGS_PER_SECOND {
                    return Err(Violation::SettingsFlood);
                }
                Frame::Settings(p)
            }
            PING if head.flags & ACK == 0 => {
                if p.len() != PING_LEN {
                    return Err(Violation::Malformed);
                }
                Frame::Ping(p)
            }
            GOAWAY => Frame::GoAway {
                last: p
                    .first_chunk::<4>()
                    .map(|b| u32::from_be_bytes(*b) & 0x7fff_ffff)
                    .ok_or(Violation::Malformed)?,
            },
            // The client asked for no push.
            PUSH_PROMISE => return Err(Violation::Push),
            // A CONTINUATION outside a header block.
            CONTINUATION => return Err(Violation::Malformed),
            _ => Frame::Other,
        };
        Ok(Some((frame, size)))
    }

    /// The bytes its header block buffer holds (its capacity): 0, or [`MAX_HEADER_BLOCK`].
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn block_capacity(&self) -> usize {
        self.block.capacity()
    }
}

/// The flood a frame at the start of `buf` adds to when its acknowledgement has no room: a
/// PING or a SETTINGS that asks for one (None: another frame, or no whole head yet).
pub(super) fn asks_ack(buf: &[u8]) -> Option<Violation> {
    let head = Head::parse(buf.first_chunk::<HEAD>()?);
    match head.kind {
        _ if head.flags & ACK != 0 => None,
        PING => Some(Violation::PingFlood),
        SETTINGS => Some(Violation::SettingsFlood),
        _ => None,
    }
}

/// A DATA or HEADERS payload without its padding.
#[inline]
fn unpad(flags: u8, p: &[u8]) -> Result<&[u8], Violation> {
    if flags & PADDED == 0 {
        return Ok(p);
    }
    let pad = usize::from(*p.first().ok_or(Violation::Malformed)?);
    p.get(1..p.len().checked_sub(pad).ok_or(Violation::Malformed)?)
        .ok_or(Violation::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::http::h2frame::{head, response_head};

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        head(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out
    }

    /// Every frame of `bytes` through a reader at `now_ns`: how many were taken, and the error
    /// that ended them.
    fn read(reader: &mut Reader, bytes: &[u8], now_ns: u64) -> (usize, Option<Violation>) {
        let (mut at, mut n) = (0, 0);
        loop {
            match reader.next(&bytes[at..], now_ns) {
                Ok(Some((_, size))) => (at, n) = (at + size, n + 1),
                Ok(None) => return (n, None),
                Err(v) => return (n, Some(v)),
            }
        }
    }

    #[test]
    fn a_header_block_is_joined_from_its_continuations_within_its_bounds() {
        let mut r = Reader::default();
        let cut = [
            frame(HEADERS, PADDED, 1, &[1, 0x88, 0]),
            frame(CONTINUATION, 0, 1, &[0x0f, 0x0d]),
            frame(CONTINUATION, END_HEADERS, 1, &[0x01, b'7']),
        ]
        .concat();
        let mut at = 0;
        for _ in 0..2 {
            let (f, size) = r.next(&cut[at..], 0).expect("valid").expect("whole");
            assert_eq!(f, Frame::Other);
            at += size;
        }
        let (f, _) = r.next(&cut[at..], 0).expect("valid").expect("whole");
        let Frame::Head {
            stream: 1,
            end_stream: false,
            block,
        } = f
        else {
            panic!("{f:?}")
        };
        assert_eq!(block, [0x88, 0x0f, 0x0d, 0x01, b'7']);
        assert_eq!(response_head(block).map(|h| h.content_length), Ok(Some(7)));
        // Eight CONTINUATIONs are allowed, the ninth is a flood; so is a block past 64 KiB.
        let open = frame(HEADERS, 0, 3, &[0x88]);
        let small = frame(CONTINUATION, 0, 3, &[0; 10]);
        let eight = [open.clone(), small.repeat(8)].concat();
        assert_eq!(read(&mut Reader::default(), &eight, 0), (9, None));
        let nine = [open.clone(), small.repeat(9)].concat();
        assert_eq!(
            read(&mut Reader::default(), &nine, 0),
            (9, Some(Violation::ContinuationFlood))
        );
        let big = frame(CONTINUATION, 0, 3, &[0; MAX_FRAME]);
        let past = [open, big.repeat(4)].concat();
        let mut r = Reader::default();
        assert_eq!(read(&mut r, &past, 0), (4, Some(Violation::ContinuationFlood)));
        assert_eq!(r.block_capacity(), MAX_HEADER_BLOCK, "made once, to the bound");
        // Another frame inside a block, or a CONTINUATION outside one, breaks the protocol.
        let inside = [frame(HEADERS, 0, 5, &[0x88]), frame(PING, 0, 0, &[0; 8])].concat();
        assert_eq!(
            read(&mut Reader::default(), &inside, 0),
            (1, Some(Violation::Malformed))
        );
        let stray = frame(CONTINUATION, END_HEADERS, 5, &[0x88]);
        assert_eq!(read(&mut Reader::default(), &stray, 0), (0, Some(Violation::Malformed)));
    }

    #[test]
    fn settings_are_bounded_per_second_and_pings_are_eight_bytes() {
        let settings = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]).repeat(MAX_SETTINGS_PER_SECOND as usize);
        let mut r = Reader::default();
        assert_eq!(read(&mut r, &settings, 5), (16, None));
        // One more in the same second is a flood; a second later the count starts again.
        let one = frame(SETTINGS, 0, 0, &[]);
        assert_eq!(read(&mut r, &one, 999_999_999), (0, Some(Violation::SettingsFlood)));
        let mut r = Reader::default();
        assert_eq!(read(&mut r, &settings, 5), (16, None));
        assert_eq!(read(&mut r, &one, 1_000_000_005), (1, None));
        // Acknowledgements are not counted.
        let acks = frame(SETTINGS, ACK, 0, &[]).repeat(100);
        assert_eq!(read(&mut Reader::default(), &acks, 0), (100, None));
        let odd = frame(SETTINGS, 0, 0, &[0; 5]);
        assert_eq!(read(&mut Reader::default(), &odd, 0), (0, Some(Violation::Malformed)));
        let ping = frame(PING, 0, 0, &[9; 8]);
        assert_eq!(Reader::default().next(&ping, 0), Ok(Some((Frame::Ping(&[9; 8]), 17))));
        let long = frame(PING, 0, 0, &[0; 9]);
        assert_eq!(read(&mut Reader::default(), &long, 0), (0, Some(Violation::Malformed)));
        assert_eq!(asks_ack(&ping), Some(Violation::PingFlood));
        assert_eq!(asks_ack(&one), Some(Violation::SettingsFlood));
        assert_eq!(asks_ack(&frame(PING, ACK, 0, &[0; 8])), None);
        assert_eq!(asks_ack(&frame(DATA, 0, 1, b"x")), None);
        assert_eq!(asks_ack(&ping[..8]), None, "no whole head yet");
    }

    #[test]
    fn a_frame_is_taken_only_whole_and_never_past_the_largest() {
        let data = frame(DATA, PADDED | END_STREAM, 1, &[2, b'a', b'b', 0, 0]);
        let mut r = Reader::default();
        for cut in 0..data.len() {
            assert_eq!(r.next(&data[..cut], 0), Ok(None), "{cut} bytes");
        }
        let want = Frame::Data {
            stream: 1,
            end_stream: true,
            body: 2,
            taken: 5,
        };
        assert_eq!(r.next(&data, 0), Ok(Some((want, data.len()))));
        let mut huge = Vec::new();
        head(&mut huge, MAX_FRAME + 1, DATA, 0, 1);
        assert_eq!(r.next(&huge, 0), Err(Violation::FrameSize), "refused from its head");
        let pad = frame(DATA, PADDED, 1, &[9, b'a']);
        assert_eq!(r.next(&pad, 0), Err(Violation::Malformed));
        assert_eq!(r.next(&frame(PUSH_PROMISE, 0, 1, &[0; 4]), 0), Err(Violation::Push));
        assert_eq!(r.next(&frame(GOAWAY, 0, 0, &[0; 3]), 0), Err(Violation::Malformed));
    }
}
