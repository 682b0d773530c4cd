//! The multicast side of UDP data sockets: a sender's outgoing interface and TTL, a receiver
//! bound to its group and joined on the interface that reached the client.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};

/// Sends `socket`'s multicast datagrams out of the interface holding `local`, with `ttl` hops.
pub(crate) fn sender(socket: &UdpSocket, local: IpAddr, ttl: u8) -> io::Result<()> {
    let s = socket2::SockRef::from(socket);
    match local {
        IpAddr::V4(l) => {
            s.set_multicast_if_v4(&l)?;
            s.set_multicast_ttl_v4(u32::from(ttl))
        }
        IpAddr::V6(_) => s.set_multicast_hops_v6(u32::from(ttl)),
    }
}

/// A socket bound to `group:port` that has joined the group on the interface holding `local`.
pub(crate) fn join_group(group: IpAddr, port: u16, local: IpAddr) -> io::Result<UdpSocket> {
    let domain = if group.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.bind(&SocketAddr::new(group, port).into())?;
    match group {
        IpAddr::V4(g) => s.join_multicast_v4(&g, &v4_interface(local))?,
        IpAddr::V6(g) => s.join_multicast_v6(&g, 0)?,
    }
    Ok(s.into())
}

/// The IPv4 address naming the interface to join an IPv4 group on. An agent listening on `::`
/// (the default) sees an IPv4 client as `::ffff:a.b.c.d`, which names the interface as well; a
/// client over IPv6 proper leaves the choice to the kernel's routes (INADDR_ANY, ip(7)).
pub(crate) fn v4_interface(local: IpAddr) -> Ipv4Addr {
    match local {
        IpAddr::V4(l) => l,
        IpAddr::V6(l) => l.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_an_ipv4_group_joins_behind_a_dual_stack_listener() {
        let mapped: IpAddr = "::ffff:10.0.0.2".parse().expect("address");
        assert_eq!(v4_interface(mapped), Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(
            v4_interface("2001:db8::1".parse().expect("address")),
            Ipv4Addr::UNSPECIFIED
        );
        assert_eq!(
            v4_interface("10.0.0.3".parse().expect("address")),
            Ipv4Addr::new(10, 0, 0, 3)
        );
    }
}
