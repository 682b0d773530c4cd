//! The header at the start of every linerate datagram (32 bytes, little-endian): magic `LNRU`,
//! stream (u16), kind (u16: data or end marker), sequence number (u64), the sender's
//! CLOCK_REALTIME at sending (u64 ns), and the test's id (u64). The sender writes it, the
//! receiver parses it and drops what is not this test's.

/// What a stream's datagrams carry at their start: linerate's header, or iperf3's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    /// linerate's 32-byte header (below): stream, kind, sequence, send time, test id; the
    /// sender ends with three end markers.
    #[default]
    Linerate,
    /// iperf3's: the send time (seconds and microseconds, u32 each) and the sequence number
    /// from 1 (u32, or u64 with `udp_counters_64bit`), big-endian. No end marker: the control
    /// connection says when the test is over, and a stray cannot be told apart.
    Iperf3 { counters_64bit: bool },
}

impl Framing {
    /// Bytes of this framing's header.
    pub fn header_bytes(self) -> usize {
        match self {
            Framing::Linerate => HEADER_BYTES,
            Framing::Iperf3 { counters_64bit: false } => 12,
            Framing::Iperf3 { counters_64bit: true } => 16,
        }
    }

    /// Writes the header of data datagram `h` into `buf` (of at least [`Framing::header_bytes`]).
    #[inline]
    pub(crate) fn write(self, buf: &mut [u8], h: &Header) {
        match self {
            Framing::Linerate => write_header(buf, h),
            Framing::Iperf3 { counters_64bit } => {
                let sec = (h.send_ns / 1_000_000_000) as u32;
                let usec = ((h.send_ns % 1_000_000_000) / 1_000) as u32;
                buf[0..4].copy_from_slice(&sec.to_be_bytes());
                buf[4..8].copy_from_slice(&usec.to_be_bytes());
                let pcount = h.seq + 1;
                if counters_64bit {
                    buf[8..16].copy_from_slice(&pcount.to_be_bytes());
                } else {
                    buf[8..12].copy_from_slice(&(pcount as u32).to_be_bytes());
                }
            }
        }
    }

    /// Reads a datagram's header; for iperf3's framing, `stream` and `test_id` are the
    /// receiving stream's own (a datagram on a connected socket is taken as its stream's).
    #[inline]
    pub(crate) fn parse(self, buf: &[u8], stream: u16, test_id: u64) -> Option<Header> {
        match self {
            Framing::Linerate => parse_header(buf),
            Framing::Iperf3 { counters_64bit } => {
                if buf.len() < self.header_bytes() {
                    return None;
                }
                let u32_at = |i: usize| u32::from_be_bytes(buf[i..i + 4].try_into().expect("4 bytes"));
                let pcount = if counters_64bit {
                    u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes"))
                } else {
                    u64::from(u32_at(8))
                };
                // Sequence numbers start at 1; a 0 is not a data datagram of this test.
                let seq = pcount.checked_sub(1)?;
                Some(Header {
                    stream,
                    kind: KIND_DATA,
                    seq,
                    send_ns: u64::from(u32_at(0)) * 1_000_000_000 + u64::from(u32_at(4)) * 1_000,
                    test_id,
                })
            }
        }
    }
}

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
    crate::engine::pacing::clock_ns(libc::CLOCK_REALTIME)
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

    #[test]
    fn issue_26_iperf3_framing_round_trips_from_sequence_one() {
        for counters_64bit in [false, true] {
            let f = Framing::Iperf3 { counters_64bit };
            let h = Header {
                stream: 3,
                kind: KIND_DATA,
                seq: 41,
                send_ns: 34_218_056_347_000,
                test_id: 9,
            };
            let mut buf = [0u8; 32];
            f.write(&mut buf, &h);
            // As iperf3 3.12 writes it: seconds, microseconds, then the count from 1.
            assert_eq!(&buf[0..4], &34_218u32.to_be_bytes());
            assert_eq!(&buf[4..8], &56_347u32.to_be_bytes());
            assert_eq!(f.parse(&buf, 3, 9), Some(h));
            assert_eq!(f.parse(&buf[..f.header_bytes() - 1], 3, 9), None);
        }
        let zero = [0u8; 12];
        assert_eq!(Framing::Iperf3 { counters_64bit: false }.parse(&zero, 0, 0), None);
    }
}
