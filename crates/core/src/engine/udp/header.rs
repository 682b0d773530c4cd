//! The header at the start of every linerate datagram (32 bytes, little-endian): magic `LNRU`,
//! stream (u16), kind (u16: data or end marker), sequence number (u64), the sender's
//! CLOCK_REALTIME at sending (u64 ns), and the test's id (u64). The sender writes it, the
//! receiver parses it and drops what is not this test's.

/// The first bytes of every linerate datagram.
pub(crate) const MAGIC: [u8; 4] = *b"LNRU";
/// Bytes of linerate's header at the start of each datagram.
pub(crate) const HEADER_BYTES: usize = 32;
pub(super) const KIND_DATA: u16 = 0;
pub(super) const KIND_END: u16 = 1;

/// What a datagram's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub stream: u16,
    pub kind: u16,
    pub seq: u64,
    /// CLOCK_REALTIME at the sender when it was sent, ns since the Unix epoch.
    pub send_ns: u64,
    pub test_id: u64,
}

/// Writes linerate's header into the first [`HEADER_BYTES`] of `buf`.
pub(crate) fn write_header(buf: &mut [u8], h: &Header) {
    buf[0..4].copy_from_slice(&MAGIC);
    buf[4..6].copy_from_slice(&h.stream.to_le_bytes());
    buf[6..8].copy_from_slice(&h.kind.to_le_bytes());
    buf[8..16].copy_from_slice(&h.seq.to_le_bytes());
    buf[16..24].copy_from_slice(&h.send_ns.to_le_bytes());
    buf[24..32].copy_from_slice(&h.test_id.to_le_bytes());
}

/// Reads a header; `None` for anything that is not a linerate datagram.
pub(crate) fn parse_header(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER_BYTES || buf[0..4] != MAGIC {
        return None;
    }
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
    Some(Header {
        stream: u16::from_le_bytes([buf[4], buf[5]]),
        kind: u16::from_le_bytes([buf[6], buf[7]]),
        seq: u64_at(8),
        send_ns: u64_at(16),
        test_id: u64_at(24),
    })
}

/// CLOCK_REALTIME now, ns since the Unix epoch.
pub(super) fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = Header {
            stream: 7,
            kind: KIND_DATA,
            seq: 1 << 40,
            send_ns: 1_700_000_000_000_000_000,
            test_id: 0xdead_beef,
        };
        let mut buf = [0u8; 64];
        write_header(&mut buf, &h);
        assert_eq!(parse_header(&buf), Some(h));
        assert_eq!(parse_header(&buf[..31]), None);
        buf[0] = b'X';
        assert_eq!(parse_header(&buf), None);
    }
}
