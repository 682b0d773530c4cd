//! What the wire allows: the most TCP or UDP payload a link of a given speed and MTU can carry,
//! after what the link counts of each frame beyond its IP packet ([`LinkKind`]), the IP header
//! (20, or 40 for IPv6) and the transport header (TCP 20 plus 12 of timestamps option, as Linux
//! sends by default; UDP 8).
//!
//! Two kinds of link count frames differently (`calc` said 941 Mbit/s, the lab docs
//! 949, and linerate and iperf3 both measured 955 on a `rate=1gbit` lab link):
//! - an Ethernet link on the wire carries per frame the preamble and start delimiter (8 bytes),
//!   the header (14), the frame check (4) and the inter-frame gap (12), and pads short frames to
//!   64 bytes: 1448 payload bytes of TCP per 1538 at MTU 1500, 941.5 Mbit/s of 1 Gbit/s;
//! - a link shaped by Linux's tbf (the lab's `rate=`) counts each packet's `skb->len` at the
//!   qdisc (`qdisc_pkt_len`, per GSO segment): the Ethernet header and the IP packet, no
//!   preamble, frame check, gap or padding: 1448 per 1514, 956.4 Mbit/s of 1 Gbit/s.
//!
//! One model for `calc goodput`, the line-rate share in a result's summary, and docs/lab.md.

use serde::{Deserialize, Serialize};

/// Ethernet's header: destination, source, type.
const ETHERNET_HEADER_BYTES: u32 = 14;
/// Bytes each Ethernet frame costs on the wire beyond its IP packet: preamble and start
/// delimiter 8, header 14, frame check 4, inter-frame gap 12.
pub const ETHERNET_OVERHEAD_BYTES: u32 = 8 + ETHERNET_HEADER_BYTES + 4 + 12;
/// Ethernet's smallest frame carries 46 bytes of payload (shorter ones are padded).
pub const ETHERNET_MIN_PAYLOAD_BYTES: u32 = 46;

/// What a link counts of each packet against its rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// Ethernet on the wire: the IP packet (padded to 46 bytes) plus 38 bytes of preamble,
    /// header, frame check and inter-frame gap.
    #[default]
    Ethernet,
    /// A link shaped by Linux's tbf: the IP packet plus the 14-byte Ethernet header, as the
    /// qdisc counts `skb->len`; no preamble, frame check, gap or padding.
    Tbf,
}

impl LinkKind {
    /// Both kinds, in the order `calc goodput --link-kind both` prints them.
    pub const ALL: [LinkKind; 2] = [LinkKind::Ethernet, LinkKind::Tbf];

    /// The name used in flags and the document: `ethernet`, `tbf`.
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::Ethernet => "ethernet",
            LinkKind::Tbf => "tbf",
        }
    }

    /// What the link counts beyond the IP packet, in words, after "N bytes per M".
    pub fn counts(self) -> &'static str {
        match self {
            LinkKind::Ethernet => "on the wire: Ethernet's preamble 8, header 14, FCS 4, gap 12",
            LinkKind::Tbf => "as tbf counts: Ethernet's header 14, no preamble, FCS or gap",
        }
    }

    /// What a packet of `ip_bytes` (IP header included) costs this link, bytes.
    pub fn wire_bytes(self, ip_bytes: u32) -> u32 {
        match self {
            LinkKind::Ethernet => ip_bytes.max(ETHERNET_MIN_PAYLOAD_BYTES) + ETHERNET_OVERHEAD_BYTES,
            LinkKind::Tbf => ip_bytes + ETHERNET_HEADER_BYTES,
        }
    }
}

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
    /// What the link counts of each packet.
    #[serde(default)]
    pub link_kind: LinkKind,
    /// Payload bytes per full-sized packet.
    pub payload_bytes: u32,
    /// What that packet costs the link, bytes, as `link_kind` counts.
    pub wire_bytes: u32,
    /// link x payload / wire.
    pub bits_per_second: f64,
}

/// Header bytes inside the MTU: IP plus transport.
pub fn header_bytes(transport: Transport, ipv6: bool) -> u32 {
    let ip = if ipv6 { 40 } else { 20 };
    ip + match transport {
        Transport::Tcp => 20 + 12,
        Transport::Udp => 8,
    }
}

/// The goodput of full-sized packets on a link of `kind`; `None` when the MTU leaves no room
/// for payload.
pub fn goodput(
    link_bits_per_second: f64,
    mtu_bytes: u32,
    transport: Transport,
    ipv6: bool,
    kind: LinkKind,
) -> Option<Goodput> {
    let payload_bytes = mtu_bytes
        .checked_sub(header_bytes(transport, ipv6))
        .filter(|p| *p > 0)?;
    let wire_bytes = kind.wire_bytes(mtu_bytes);
    Some(Goodput {
        transport,
        link_bits_per_second,
        mtu_bytes,
        ipv6,
        link_kind: kind,
        payload_bytes,
        wire_bytes,
        bits_per_second: link_bits_per_second * f64::from(payload_bytes) / f64::from(wire_bytes),
    })
}

/// A limit computed for full-sized packets of `mtu_bytes` on a link of kind `from`, as a link
/// of kind `to` would allow it: the same payload over the other kind's cost per packet.
pub fn rerate(limit_bits_per_second: f64, mtu_bytes: u32, from: LinkKind, to: LinkKind) -> f64 {
    limit_bits_per_second * f64::from(from.wire_bytes(mtu_bytes)) / f64::from(to.wire_bytes(mtu_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_at_10g_matches_the_textbook_figures() {
        let jumbo = goodput(10e9, 9000, Transport::Tcp, false, LinkKind::Ethernet).expect("fits");
        assert_eq!((jumbo.payload_bytes, jumbo.wire_bytes), (8948, 9038));
        assert_eq!(format!("{:.3}", jumbo.bits_per_second / 1e9), "9.900");
        let std = goodput(10e9, 1500, Transport::Tcp, false, LinkKind::Ethernet).expect("fits");
        assert_eq!((std.payload_bytes, std.wire_bytes), (1448, 1538));
        assert_eq!(format!("{:.3}", std.bits_per_second / 1e9), "9.415");
    }

    #[test]
    fn udp_and_ipv6_headers() {
        let u = goodput(1e9, 1500, Transport::Udp, false, LinkKind::Ethernet).expect("fits");
        assert_eq!(u.payload_bytes, 1472);
        let v6 = goodput(1e9, 1500, Transport::Tcp, true, LinkKind::Ethernet).expect("fits");
        assert_eq!(v6.payload_bytes, 1428);
        assert_eq!(goodput(1e9, 40, Transport::Tcp, false, LinkKind::Tbf), None);
    }

    #[test]
    fn issue_23_one_model_for_ethernet_and_a_tbf_shaped_link() {
        // 1 Gbit/s, MTU 1500, TCP with timestamps: 1448 payload bytes per packet.
        let eth = goodput(1e9, 1500, Transport::Tcp, false, LinkKind::Ethernet).expect("fits");
        assert_eq!((eth.payload_bytes, eth.wire_bytes), (1448, 1538));
        assert_eq!(format!("{:.1}", eth.bits_per_second / 1e6), "941.5");
        // tbf counts skb->len: the 14-byte header and the IP packet (what iperf3 and linerate
        // measured on the lab's rate=1gbit link: 955).
        let tbf = goodput(1e9, 1500, Transport::Tcp, false, LinkKind::Tbf).expect("fits");
        assert_eq!((tbf.payload_bytes, tbf.wire_bytes), (1448, 1514));
        assert_eq!(format!("{:.1}", tbf.bits_per_second / 1e6), "956.4");
        assert_eq!(
            format!(
                "{:.1}",
                rerate(eth.bits_per_second, 1500, LinkKind::Ethernet, LinkKind::Tbf) / 1e6
            ),
            "956.4"
        );
        // Short frames: Ethernet pads to 64 bytes on the wire, tbf counts what there is.
        assert_eq!(LinkKind::Ethernet.wire_bytes(28), 84);
        assert_eq!(LinkKind::Tbf.wire_bytes(28), 42);
        let udp = goodput(1e9, 1500, Transport::Udp, false, LinkKind::Tbf).expect("fits");
        assert_eq!((udp.payload_bytes, udp.wire_bytes), (1472, 1514));
    }
}
