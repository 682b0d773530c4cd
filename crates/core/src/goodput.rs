//! What the wire allows: the most TCP or UDP payload a link of a given speed and MTU can carry,
//! after Ethernet's preamble and start delimiter (8 bytes), header (14), frame check (4) and the
//! inter-frame gap (12), the IP header (20, or 40 for IPv6) and the transport header (TCP 20 plus
//! 12 of timestamps option, as Linux sends by default; UDP 8).

use serde::{Deserialize, Serialize};

/// Bytes each Ethernet frame costs on the wire beyond its IP packet.
pub(crate) const ETHERNET_OVERHEAD_BYTES: u32 = 8 + 14 + 4 + 12;
/// Ethernet's smallest frame carries 46 bytes of payload (shorter ones are padded).
pub(crate) const ETHERNET_MIN_PAYLOAD_BYTES: u32 = 46;

/// The transport whose payload is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// TCP with the timestamps option (Linux's default).
    Tcp,
    Udp,
}

/// The largest goodput of one packet size on one link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    pub transport: Transport,
    pub link_bits_per_second: f64,
    pub mtu_bytes: u32,
    pub ipv6: bool,
    /// Payload bytes per full-sized packet.
    pub payload_bytes: u32,
    /// What that packet costs on the wire, bytes.
    pub wire_bytes: u32,
    /// link x payload / wire.
    pub bits_per_second: f64,
}

/// Header bytes inside the MTU: IP plus transport.
pub(crate) fn header_bytes(transport: Transport, ipv6: bool) -> u32 {
    let ip = if ipv6 { 40 } else { 20 };
    ip + match transport {
        Transport::Tcp => 20 + 12,
        Transport::Udp => 8,
    }
}

/// The goodput of full-sized packets; `None` when the MTU leaves no room for payload.
pub fn goodput(link_bits_per_second: f64, mtu_bytes: u32, transport: Transport, ipv6: bool) -> Option<Goodput> {
    let payload_bytes = mtu_bytes
        .checked_sub(header_bytes(transport, ipv6))
        .filter(|p| *p > 0)?;
    let wire_bytes = mtu_bytes.max(ETHERNET_MIN_PAYLOAD_BYTES) + ETHERNET_OVERHEAD_BYTES;
    Some(Goodput {
        transport,
        link_bits_per_second,
        mtu_bytes,
        ipv6,
        payload_bytes,
        wire_bytes,
        bits_per_second: link_bits_per_second * f64::from(payload_bytes) / f64::from(wire_bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_at_10g_matches_the_textbook_figures() {
        let jumbo = goodput(10e9, 9000, Transport::Tcp, false).expect("fits");
        assert_eq!((jumbo.payload_bytes, jumbo.wire_bytes), (8948, 9038));
        assert_eq!(format!("{:.3}", jumbo.bits_per_second / 1e9), "9.900");
        let std = goodput(10e9, 1500, Transport::Tcp, false).expect("fits");
        assert_eq!((std.payload_bytes, std.wire_bytes), (1448, 1538));
        assert_eq!(format!("{:.3}", std.bits_per_second / 1e9), "9.415");
    }

    #[test]
    fn udp_and_ipv6_headers() {
        let u = goodput(1e9, 1500, Transport::Udp, false).expect("fits");
        assert_eq!(u.payload_bytes, 1472);
        let v6 = goodput(1e9, 1500, Transport::Tcp, true).expect("fits");
        assert_eq!(v6.payload_bytes, 1428);
        assert_eq!(goodput(1e9, 40, Transport::Tcp, false), None);
    }
}
