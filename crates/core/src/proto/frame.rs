//! Bytes on the wire: preambles, data-connection headers and length-prefixed messages.
//!
//! Control preamble (8 bytes, each way): `LNRT`, version (u16 big-endian), flags (u8), a
//! reserved zero byte. A client's preamble with [`FLAG_PROOF`] set is followed by its proof
//! ([`PROOF_LEN`] bytes: time, nonce, mac1; `auth::first_flight`): the two together are its
//! first flight.
//! Data header (24 bytes, client -> agent): `LNRD`, 16-byte cookie, stream index (u16 BE),
//! 2 reserved zero bytes.
//! Message frame: length (u32 BE) then that many bytes of UTF-8 JSON.

use super::Message;

pub(crate) const CONTROL_MAGIC: [u8; 4] = *b"LNRT";
pub(crate) const DATA_MAGIC: [u8; 4] = *b"LNRD";
pub(crate) const PREAMBLE_LEN: usize = 8;
/// Flags byte of a client's preamble, bit 0: its proof of the secret follows (version 4 on).
pub(crate) const FLAG_PROOF: u8 = 1;
/// Bytes of the proof after a preamble with [`FLAG_PROOF`]: the client's clock (u64 BE,
/// milliseconds since the Unix epoch), a 16-byte nonce, a 32-byte mac1.
pub(crate) const PROOF_LEN: usize = 8 + 16 + 32;
/// A client's whole first flight when it proves the secret: its preamble and its proof.
pub(crate) const FIRST_FLIGHT_LEN: usize = PREAMBLE_LEN + PROOF_LEN;
pub(crate) use crate::codec::DATA_HEADER_LEN;
pub(crate) const COOKIE_LEN: usize = 16;
/// The largest message a client accepts: an agent's result with the most interval samples it
/// keeps ([`crate::spec::MAX_INTERVAL_SAMPLES`], about 200 bytes each as JSON) fits.
pub(crate) const MAX_MESSAGE_BYTES: u32 = 128 << 20;
/// The largest message an agent accepts: requests are small, and whoever sends more before it has
/// authenticated is not to be buffered.
pub(crate) const MAX_REQUEST_BYTES: u32 = 1 << 20;
/// The largest message an agent that wants a secret accepts before the client has proved it
/// knows it: an `auth` message is under 200 bytes, and a stranger's megabyte is not parsed.
pub(crate) const MAX_AUTH_BYTES: u32 = 4 << 10;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("control message of {len} bytes exceeds the {max}-byte limit")]
    TooLarge { len: u32, max: u32 },
    #[error("unreadable control message: {0}")]
    Json(String),
}

pub(crate) fn preamble(version: u16) -> [u8; PREAMBLE_LEN] {
    preamble_with(version, 0)
}

/// A preamble with these flags ([`FLAG_PROOF`]).
pub(crate) fn preamble_with(version: u16, flags: u8) -> [u8; PREAMBLE_LEN] {
    let v = version.to_be_bytes();
    [
        CONTROL_MAGIC[0],
        CONTROL_MAGIC[1],
        CONTROL_MAGIC[2],
        CONTROL_MAGIC[3],
        v[0],
        v[1],
        flags,
        0,
    ]
}

/// Whether a client's preamble says its proof follows.
pub(crate) fn has_proof(bytes: &[u8; PREAMBLE_LEN]) -> bool {
    bytes[6] & FLAG_PROOF != 0
}

/// The version in a control preamble, or `None` if the bytes are not one.
pub(crate) fn parse_preamble(bytes: &[u8; PREAMBLE_LEN]) -> Option<u16> {
    (bytes[..4] == CONTROL_MAGIC).then(|| u16::from_be_bytes([bytes[4], bytes[5]]))
}

pub(crate) fn data_header(cookie: &[u8; COOKIE_LEN], stream: u16) -> [u8; DATA_HEADER_LEN] {
    let mut h = [0u8; DATA_HEADER_LEN];
    h[..4].copy_from_slice(&DATA_MAGIC);
    h[4..20].copy_from_slice(cookie);
    h[20..22].copy_from_slice(&stream.to_be_bytes());
    h
}

/// The test id a UDP test's datagrams carry: the first 8 bytes of the agent's cookie (both ends
/// know it once the test is accepted).
pub(crate) fn udp_test_id(cookie: &[u8; COOKIE_LEN]) -> u64 {
    u64::from_le_bytes(cookie[..8].try_into().expect("a cookie is 16 bytes"))
}

/// Cookie and stream index of a data header, or `None` if the bytes are not one.
pub(crate) fn parse_data_header(h: &[u8; DATA_HEADER_LEN]) -> Option<([u8; COOKIE_LEN], u16)> {
    if h[..4] != DATA_MAGIC {
        return None;
    }
    let mut cookie = [0u8; COOKIE_LEN];
    cookie.copy_from_slice(&h[4..20]);
    Some((cookie, u16::from_be_bytes([h[20], h[21]])))
}

/// A message as one frame: length prefix and JSON.
pub(crate) fn encode(msg: &Message) -> Result<Vec<u8>, FrameError> {
    let body = serde_json::to_vec(msg).expect("messages are plain data and always serialise");
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    if len > MAX_MESSAGE_BYTES {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_MESSAGE_BYTES,
        });
    }
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// The body length announced by a frame's 4-byte prefix, checked against `max`.
pub(crate) fn body_len(prefix: [u8; 4], max: u32) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(prefix);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(len as usize)
}

pub(crate) fn decode_body(body: &[u8]) -> Result<Message, FrameError> {
    serde_json::from_slice(body).map_err(|e| FrameError::Json(e.to_string()))
}

/// Splits one whole frame of at most `max` bytes off the front of `buf`: `Ok(None)` while more
/// bytes are needed.
pub(crate) fn decode(buf: &[u8], max: u32) -> Result<Option<(Message, usize)>, FrameError> {
    let Some(prefix) = buf.get(..4) else { return Ok(None) };
    let len = body_len(prefix.try_into().expect("slice of four"), max)?;
    let Some(body) = buf.get(4..4 + len) else {
        return Ok(None);
    };
    Ok(Some((decode_body(body)?, 4 + len)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ErrorKind;

    #[test]
    fn preamble_round_trips_and_rejects_strangers() {
        assert_eq!(parse_preamble(&preamble(7)), Some(7));
        assert_eq!(parse_preamble(b"HTTP/1.1"), None);
        let flagged = preamble_with(4, FLAG_PROOF);
        assert_eq!(parse_preamble(&flagged), Some(4));
        assert!(has_proof(&flagged) && !has_proof(&preamble(4)));
    }

    #[test]
    fn data_header_round_trips() {
        let cookie = [9u8; COOKIE_LEN];
        let h = data_header(&cookie, 513);
        assert_eq!(parse_data_header(&h), Some((cookie, 513)));
        let mut bad = h;
        bad[0] = b'X';
        assert_eq!(parse_data_header(&bad), None);
    }

    #[test]
    fn frames_round_trip_and_wait_for_whole_frames() {
        let msg = Message::Error {
            kind: ErrorKind::Busy,
            message: "busy".into(),
        };
        let mut bytes = encode(&msg).expect("small");
        bytes.extend(encode(&Message::Start).expect("small"));
        let (first, used) = decode(&bytes, MAX_MESSAGE_BYTES).expect("valid").expect("whole");
        assert_eq!(first, msg);
        let (second, used2) = decode(&bytes[used..], MAX_MESSAGE_BYTES)
            .expect("valid")
            .expect("whole");
        assert_eq!(second, Message::Start);
        assert_eq!(used + used2, bytes.len());
        for cut in 0..used {
            assert_eq!(decode(&bytes[..cut], MAX_MESSAGE_BYTES), Ok(None), "truncated at {cut}");
        }
    }

    #[test]
    fn oversized_and_garbled_frames_are_errors() {
        let huge = decode(&[0xff, 0xff, 0xff, 0xff], MAX_MESSAGE_BYTES);
        assert!(matches!(huge, Err(FrameError::TooLarge { .. })));
        let big_request = decode(&[0, 0x20, 0, 0], MAX_REQUEST_BYTES);
        assert!(matches!(big_request, Err(FrameError::TooLarge { .. })));
        let mut garbled = 3u32.to_be_bytes().to_vec();
        garbled.extend(b"{x}");
        assert!(matches!(decode(&garbled, MAX_MESSAGE_BYTES), Err(FrameError::Json(_))));
    }
}
