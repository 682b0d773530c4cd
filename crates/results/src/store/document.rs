//! How a document is kept in the `documents` table: one-line JSON, zlib-compressed (layout 2
//! on), or the pretty-printed text `--json` printed (records stored under layout 1).
//!
//! In: the document's JSON text as the run printed it. Out: the stored bytes and their
//! [`Encoding`], and back: the JSON text on one line ([`decode`]) or pretty-printed as `--json`
//! prints it ([`pretty`]). Both directions keep the document's field order and numbers exactly:
//! the text is transcoded token by token (serde-transcode), never through a map that sorts its
//! keys. docs/results.md ("The results store") gives the sizes that chose this.

use super::StoreError;
use std::io::{Read, Write};

/// How a stored document's bytes read; the `documents.encoding` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// The JSON text itself (layout 1 stored documents pretty-printed this way).
    Json,
    /// One-line JSON compressed with zlib (RFC 1950: deflate with an Adler-32 check).
    Zlib,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Json => "json",
            Encoding::Zlib => "zlib",
        }
    }

    pub fn parse(text: &str) -> Option<Encoding> {
        match text {
            "json" => Some(Encoding::Json),
            "zlib" => Some(Encoding::Zlib),
            _ => None,
        }
    }
}

/// The most a stored document may be as JSON text: 256 MiB. The largest real ones are far below
/// (docs/results.md: a 10 s tcp run is 88 KB on one line, a 5-run repeat 456 KB; a tcp run
/// grows by about 7 KB a second with one stream, 11 KB with eight, so 256 MiB is over six hours
/// of one run), while a zlib bomb of 1 MB inflates to 1 GB: past this a document is refused,
/// whether stored compressed or as text, and none this big is stored.
pub const MAX_DOCUMENT_BYTES: usize = 256 << 20;

/// The zlib level: 6 (zlib's default) stores a 10 s tcp document in 15 KB in about a
/// millisecond; 9 saves under 5 % more for several times the time.
const LEVEL: u32 = 6;

/// `json` on one line, in its own field order.
pub fn compact(json: &str) -> Result<String, StoreError> {
    let mut out = Vec::with_capacity(json.len() / 2);
    let mut de = serde_json::Deserializer::from_str(json);
    serde_transcode::transcode(&mut de, &mut serde_json::Serializer::new(&mut out)).map_err(StoreError::Document)?;
    de.end().map_err(StoreError::Document)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// `json` pretty-printed as `--json` prints a document (two-space indent, a trailing newline),
/// in its own field order.
pub fn pretty(json: &str) -> Result<String, StoreError> {
    let mut out = Vec::with_capacity(json.len() * 2);
    let mut de = serde_json::Deserializer::from_str(json);
    serde_transcode::transcode(&mut de, &mut serde_json::Serializer::pretty(&mut out)).map_err(StoreError::Document)?;
    de.end().map_err(StoreError::Document)?;
    out.push(b'\n');
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// What this build stores for a document: its one-line form, compressed.
pub fn encode(json: &str) -> Result<Vec<u8>, StoreError> {
    let line = compact(json)?;
    if line.len() > MAX_DOCUMENT_BYTES {
        return Err(too_large());
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::with_capacity(line.len() / 4), flate2::Compression::new(LEVEL));
    z.write_all(line.as_bytes())
        .expect("compressing into memory cannot fail");
    Ok(z.finish().expect("compressing into memory cannot fail"))
}

fn too_large() -> StoreError {
    StoreError::TooLarge {
        limit_mib: MAX_DOCUMENT_BYTES >> 20,
    }
}

/// The JSON text of stored bytes, as they were stored (one line since layout 2); refused past
/// [`MAX_DOCUMENT_BYTES`], inflating no more than one byte beyond it.
pub fn decode(bytes: &[u8], encoding: Encoding) -> Result<String, StoreError> {
    decode_within(bytes, encoding, MAX_DOCUMENT_BYTES)
}

/// [`decode`] with another limit (the tests' small one).
pub(crate) fn decode_within(bytes: &[u8], encoding: Encoding, limit: usize) -> Result<String, StoreError> {
    let corrupt = |why: String| StoreError::Corrupt { why };
    let text = match encoding {
        Encoding::Json if bytes.len() > limit => return Err(too_large()),
        Encoding::Json => bytes.to_vec(),
        Encoding::Zlib => {
            // First inflated into nothing, only counted and never past the limit (one byte more
            // says it is too large), so a bomb costs no memory; then into a buffer of the size
            // counted. Documents are small: the second pass costs about a millisecond.
            let inflate = || flate2::read::ZlibDecoder::new(bytes).take(limit as u64 + 1);
            let inflated = std::io::copy(&mut inflate(), &mut std::io::sink())
                .map_err(|e| corrupt(format!("compressed document: {e}")))?;
            if inflated > limit as u64 {
                return Err(too_large());
            }
            let mut text = Vec::with_capacity(inflated as usize);
            inflate()
                .read_to_end(&mut text)
                .map_err(|e| corrupt(format!("compressed document: {e}")))?;
            text
        }
    };
    String::from_utf8(text).map_err(|e| corrupt(format!("document text: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document as `--json` prints one: field order not alphabetical, floats, escapes,
    /// empty containers, nulls and large integers.
    const PRETTY: &str = "{\n  \"test\": \"tcp\",\n  \"b\": 1.0,\n  \"a\": [\n    0.1,\n    -3,\n    1e-7,\n    18446744073709551615\n  ],\n  \"empty\": {},\n  \"none\": [],\n  \"text\": \"tab\\t \\\"q\\\" \\u0001 é\",\n  \"null\": null\n}\n";

    #[test]
    fn a_document_goes_to_one_line_and_back_byte_for_byte() {
        let line = compact(PRETTY).expect("compact");
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with("{\"test\":\"tcp\",\"b\":1.0,\"a\":[0.1,-3,1e-7,"),
            "{line}"
        );
        assert_eq!(pretty(&line).expect("pretty"), PRETTY);
        assert_eq!(
            pretty(PRETTY).expect("pretty of pretty"),
            PRETTY,
            "an old document reads as it was"
        );
    }

    #[test]
    fn encode_compresses_and_decode_gives_the_line_back() {
        let mut big = String::from("{\"intervals\":[");
        for i in 0..2000 {
            big += &format!("{{\"stream\":1,\"start_ns\":{},\"bytes\":123456}},", i * 1000);
        }
        big.pop();
        big += "]}";
        let stored = encode(&pretty(&big).expect("pretty")).expect("encode");
        assert!(stored.len() * 5 < big.len(), "{} of {}", stored.len(), big.len());
        assert_eq!(decode(&stored, Encoding::Zlib).expect("decode"), big);
        assert_eq!(decode(PRETTY.as_bytes(), Encoding::Json).expect("decode"), PRETTY);
        assert!(matches!(
            decode(&stored[..stored.len() / 2], Encoding::Zlib),
            Err(StoreError::Corrupt { .. })
        ));
        assert!(compact("{\"a\":1} x").is_err(), "trailing text is not a document");
    }

    #[test]
    fn issue_22_a_document_past_the_limit_is_refused_not_inflated() {
        let bomb = {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            z.write_all(&vec![b' '; 1 << 20]).expect("compress");
            z.finish().expect("compress")
        };
        assert!(bomb.len() < 4096, "{} bytes", bomb.len());
        let refused = decode_within(&bomb, Encoding::Zlib, 64 << 10).expect_err("past the limit");
        assert!(matches!(refused, StoreError::TooLarge { .. }), "{refused}");
        assert_eq!(
            decode_within(&bomb, Encoding::Zlib, 1 << 20)
                .expect("at the limit")
                .len(),
            1 << 20
        );
        assert!(matches!(
            decode_within(&[b' '; 100], Encoding::Json, 99),
            Err(StoreError::TooLarge { .. })
        ));
        assert_eq!(
            too_large().to_string(),
            "a stored document is over 256 MiB of JSON, the most this build stores or reads: refused"
        );
    }
}
