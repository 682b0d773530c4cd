//! A UDP test, this end's half: a socket per stream on the control connection's address (or
//! joined to the multicast group), connected to the client's socket for that stream once the
//! client says which.

use super::profile::Applied;
use super::session::{
    Quiet, Refusal, await_start, new_cookie, proto_refusal, run_and_report, send_accepted, source_of,
};
use super::{IDLE_TIMEOUT, State};
use crate::engine::{pin, udp};
use crate::proto::conn::Conn;
use crate::proto::{ErrorKind, Message};
use crate::result::Role;
use crate::spec::UdpSpec;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};

/// A UDP test: a socket per stream on the control connection's address, connected to the
/// client's socket for that stream once the client says which.
pub(super) fn run(
    state: &State,
    conn: &mut Conn,
    spec: &UdpSpec,
    profile: &mut Option<Applied<'_>>,
) -> Result<(), Refusal> {
    pin::check_cpus(&spec.peer_cpus).map_err(|e| (ErrorKind::BadSpec, format!("--peer-cpus: {e}")))?;
    let cookie = new_cookie();
    let failed = |what: &str, e: std::io::Error| (ErrorKind::Failed, format!("{what}: {e}"));
    let local_ip = conn
        .stream()
        .local_addr()
        .map_err(|e| failed("control socket", e))?
        .ip();
    let peer_ip = conn.peer().ip();
    let per_agent = spec.streams_per_agent();
    let mut sockets = Vec::with_capacity(per_agent);
    let mut ports = Vec::with_capacity(per_agent);
    for i in 0..per_agent {
        let s = match &spec.multicast {
            Some(m) => {
                if !state.config.joins.contains(&m.group) {
                    return Err((
                        ErrorKind::BadSpec,
                        format!(
                            "this agent takes no multicast tests to {0} (start it with --join {0})",
                            m.group
                        ),
                    ));
                }
                join_group(m.group, m.port + i as u16, local_ip)
                    .map_err(|e| failed("joining the multicast group", e))?
            }
            None => UdpSocket::bind((local_ip, 0)).map_err(|e| failed("binding a UDP data socket", e))?,
        };
        ports.push(s.local_addr().map_err(|e| failed("UDP data socket", e))?.port());
        sockets.push(s);
    }
    let test_id = spec
        .multicast
        .map_or_else(|| crate::client::udp_test_id(&cookie), |m| m.test_id);
    send_accepted(conn, state, &cookie, ports)?;
    let client_ports = match conn
        .recv(IDLE_TIMEOUT, "waiting for the client's ports")
        .map_err(proto_refusal)?
    {
        Message::Ports { udp_ports } if udp_ports.len() == per_agent => udp_ports,
        Message::Ports { udp_ports } => {
            return Err((
                ErrorKind::Protocol,
                format!("{} UDP ports for {per_agent} streams", udp_ports.len()),
            ));
        }
        other => return Err((ErrorKind::Protocol, format!("expected 'ports', got '{}'", other.name()))),
    };
    let mut streams = Vec::with_capacity(per_agent);
    for (i, (socket, port)) in sockets.into_iter().zip(client_ports).enumerate() {
        // A socket joined to an IPv4 group is an IPv4 socket: it takes the client's address in
        // its IPv4 form, not as the `::ffff:` one a dual-stack listener saw.
        let peer = match spec.multicast {
            Some(m) if m.group.is_ipv4() => peer_ip.to_canonical(),
            _ => peer_ip,
        };
        socket
            .connect((peer, port))
            .map_err(|e| failed("connecting a UDP data socket", e))?;
        let role = if spec.stream_flows_forward(i) {
            Role::Receive
        } else {
            Role::Send
        };
        let grant =
            udp::configure(&socket, spec, role).map_err(|e| (ErrorKind::Failed, format!("{e}: {}", source_of(&e))))?;
        streams.push(udp::UdpStream {
            id: i as u16,
            wire_id: i as u16,
            test_id,
            role,
            socket,
            grant,
        });
    }
    await_start(conn, profile)?;
    conn.send(&Message::Started).map_err(proto_refusal)?;
    run_and_report(state, conn, Some(peer_ip), profile, |control| {
        udp::run(spec, &spec.peer_cpus, streams, &mut Quiet, control)
    })
}

/// A socket bound to `group:port` that has joined the group on the interface holding `local`.
fn join_group(group: IpAddr, port: u16, local: IpAddr) -> io::Result<UdpSocket> {
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
fn v4_interface(local: IpAddr) -> Ipv4Addr {
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
