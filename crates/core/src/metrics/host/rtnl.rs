//! rtnetlink requests, hand-built: two fixed-layout messages do not justify the
//! netlink-packet-route crate (~13 s of extra build on 2 cores). netlink-packet-core (already
//! under `ethtool`) walks the attributes.

use netlink_packet_core::{NetlinkBuffer, NlasIterator};
use std::io::{self, Read};
use std::net::IpAddr;

const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
// include/uapi/linux/if_link.h
const IFLA_ADDRESS: u16 = 1;
const IFLA_MTU: u16 = 4;
const IFLA_QDISC: u16 = 6;
const IFLA_TXQLEN: u16 = 13;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_EXT_MASK: u16 = 29;
const IFLA_GSO_MAX_SIZE: u16 = 41;
const IFLA_MAX_MTU: u16 = 51;
const IFLA_PARENT_DEV_NAME: u16 = 56;
const IFLA_PARENT_DEV_BUS_NAME: u16 = 57;
const IFLA_GRO_MAX_SIZE: u16 = 58;
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const IFINFOMSG_LEN: usize = 16;
const RTMSG_LEN: usize = 12;

/// What RTM_GETLINK tells about one interface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Link {
    pub flags: u32,
    pub address: Option<Vec<u8>>,
    pub mtu: Option<u32>,
    pub max_mtu: Option<u32>,
    pub gso_max_size: Option<u32>,
    pub gro_max_size: Option<u32>,
    pub kind: Option<String>,
    pub parent_device: Option<String>,
    pub parent_bus: Option<String>,
    pub qdisc: Option<String>,
    pub tx_queue_len: Option<u32>,
    pub operstate: Option<u8>,
}

pub(super) fn get_link(ifindex: u32) -> io::Result<Link> {
    let mut body = vec![0u8; IFINFOMSG_LEN];
    body[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    push_attr(&mut body, IFLA_EXT_MASK, &RTEXT_FILTER_SKIP_STATS.to_ne_bytes());
    let reply = request(RTM_GETLINK, &body, RTM_NEWLINK)?;
    parse_link(&reply).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed RTM_NEWLINK"))
}

/// The output interface of the route to `dst` (`ip route get`).
pub(super) fn route_oif(dst: IpAddr) -> io::Result<u32> {
    let (family, bytes) = match dst {
        IpAddr::V4(a) => (libc::AF_INET, a.octets().to_vec()),
        IpAddr::V6(a) => (libc::AF_INET6, a.octets().to_vec()),
    };
    let mut body = vec![0u8; RTMSG_LEN];
    body[0] = family as u8;
    body[1] = (bytes.len() * 8) as u8;
    push_attr(&mut body, RTA_DST, &bytes);
    let reply = request(RTM_GETROUTE, &body, RTM_NEWROUTE)?;
    parse_route_oif(&reply).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "route has no output interface"))
}

fn push_attr(buf: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let len = 4 + value.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(value);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

/// Sends one request to the kernel and returns the payload of the reply of type `want`.
fn request(kind: u16, body: &[u8], want: u16) -> io::Result<Vec<u8>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(
        Domain::from(libc::AF_NETLINK),
        Type::RAW,
        Some(Protocol::from(libc::NETLINK_ROUTE)),
    )?;
    socket.set_read_timeout(Some(super::QUERY_TIMEOUT))?;
    const SEQ: u32 = 1;
    let mut msg = Vec::with_capacity(16 + body.len());
    msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    msg.extend_from_slice(&SEQ.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(body);
    // An unbound, unconnected netlink socket sends to the kernel and is bound on first send.
    socket.send(&msg)?;
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..16 {
        let n = (&socket).read(&mut buf)?;
        let mut at = 0;
        while at < n {
            let Ok(m) = NetlinkBuffer::new_checked(&buf[at..n]) else {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated netlink reply"));
            };
            let len = m.length() as usize;
            if m.sequence_number() == SEQ {
                if m.message_type() == NLMSG_ERROR {
                    let code = m
                        .payload()
                        .get(..4)
                        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    match code {
                        Some(0) => {}
                        Some(c) => return Err(io::Error::from_raw_os_error(-c)),
                        None => return Err(io::Error::new(io::ErrorKind::InvalidData, "short netlink error")),
                    }
                } else if m.message_type() == want {
                    return Ok(m.payload().to_vec());
                }
            }
            if len == 0 {
                break;
            }
            at += len.next_multiple_of(4);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "no reply to the netlink request",
    ))
}

fn u32_of(v: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
}

fn string_of(v: &[u8]) -> String {
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    String::from_utf8_lossy(&v[..end]).into_owned()
}

/// An RTM_NEWLINK payload: struct ifinfomsg, then IFLA_* attributes.
pub(super) fn parse_link(payload: &[u8]) -> Option<Link> {
    let header = payload.get(..IFINFOMSG_LEN)?;
    let mut link = Link {
        flags: u32_of(&header[8..12])?,
        ..Link::default()
    };
    for nla in NlasIterator::new(&payload[IFINFOMSG_LEN..]) {
        let Ok(nla) = nla else { break };
        let v = nla.value();
        match nla.kind() {
            IFLA_ADDRESS if !v.is_empty() => link.address = Some(v.to_vec()),
            IFLA_MTU => link.mtu = u32_of(v),
            IFLA_MAX_MTU => link.max_mtu = u32_of(v).filter(|&m| m != 0),
            IFLA_GSO_MAX_SIZE => link.gso_max_size = u32_of(v),
            IFLA_GRO_MAX_SIZE => link.gro_max_size = u32_of(v),
            IFLA_QDISC => link.qdisc = Some(string_of(v)),
            IFLA_TXQLEN => link.tx_queue_len = u32_of(v),
            IFLA_OPERSTATE => link.operstate = v.first().copied(),
            IFLA_PARENT_DEV_NAME => link.parent_device = Some(string_of(v)),
            IFLA_PARENT_DEV_BUS_NAME => link.parent_bus = Some(string_of(v)),
            IFLA_LINKINFO => {
                link.kind = NlasIterator::new(v)
                    .filter_map(Result::ok)
                    .find(|n| n.kind() == IFLA_INFO_KIND)
                    .map(|n| string_of(n.value()));
            }
            _ => {}
        }
    }
    Some(link)
}

/// An RTM_NEWROUTE payload's RTA_OIF: struct rtmsg, then RTA_* attributes.
pub(super) fn parse_route_oif(payload: &[u8]) -> Option<u32> {
    NlasIterator::new(payload.get(RTMSG_LEN..)?)
        .map_while(Result::ok)
        .find(|n| n.kind() == RTA_OIF)
        .and_then(|n| u32_of(n.value()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        push_attr(&mut v, kind, value);
        v
    }

    #[test]
    fn parses_rtnetlink_replies() {
        let mut payload = vec![0u8; 16];
        payload[8..12].copy_from_slice(&(libc::IFF_UP as u32).to_ne_bytes());
        payload.extend(attr(IFLA_MTU, &1500u32.to_ne_bytes()));
        payload.extend(attr(IFLA_MAX_MTU, &9216u32.to_ne_bytes()));
        payload.extend(attr(IFLA_QDISC, b"mq\0"));
        payload.extend(attr(IFLA_ADDRESS, &[2, 0, 0, 0, 0, 1]));
        payload.extend(attr(IFLA_PARENT_DEV_NAME, b"0000:3b:00.0\0"));
        payload.extend(attr(IFLA_PARENT_DEV_BUS_NAME, b"pci\0"));
        payload.extend(attr(IFLA_LINKINFO, &attr(IFLA_INFO_KIND, b"veth\0")));
        let link = parse_link(&payload).expect("parses");
        assert_eq!(link.flags, libc::IFF_UP as u32);
        assert_eq!((link.mtu, link.max_mtu), (Some(1500), Some(9216)));
        assert_eq!(link.qdisc.as_deref(), Some("mq"));
        assert_eq!(link.address.as_deref(), Some(&[2u8, 0, 0, 0, 0, 1][..]));
        assert_eq!(link.parent_device.as_deref(), Some("0000:3b:00.0"));
        assert_eq!(link.parent_bus.as_deref(), Some("pci"));
        assert_eq!(link.kind.as_deref(), Some("veth"));
        assert_eq!(parse_link(&payload[..10]), None);
        // A truncated attribute ends the walk; what came before stays.
        let cut = parse_link(&payload[..16 + 8 + 3]).expect("parses");
        assert_eq!((cut.mtu, cut.max_mtu), (Some(1500), None));

        let mut route = vec![0u8; 12];
        route.extend(attr(1, &[127, 0, 0, 1]));
        route.extend(attr(RTA_OIF, &7u32.to_ne_bytes()));
        assert_eq!(parse_route_oif(&route), Some(7));
        assert_eq!(parse_route_oif(&route[..16]), None);
    }
}
