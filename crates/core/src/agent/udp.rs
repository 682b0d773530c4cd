//! A UDP test, this end's half: a socket per stream on the control connection's address (or
//! joined to the multicast group), connected to the client's socket for that stream once the
//! client says which.

use super::session::{Accepted, Quiet, Refusal, check_peer_cpus, engine_refusal, io_refusal, new_cookie};
use crate::engine::{sockopt, udp};
use crate::proto::ErrorKind;
use crate::proto::frame::udp_test_id;
use crate::result::Role;
use crate::spec::UdpSpec;
use std::net::UdpSocket;

pub(super) fn run(t: &mut Accepted<'_, '_>, spec: &UdpSpec) -> Result<(), Refusal> {
    check_peer_cpus(&spec.peer_cpus)?;
    let cookie = new_cookie();
    let local_ip = t.local_ip()?;
    let peer_ip = t.conn.peer().ip();
    let per_agent = spec.streams_per_agent();
    let mut sockets = Vec::with_capacity(per_agent);
    let mut ports = Vec::with_capacity(per_agent);
    for i in 0..per_agent {
        let s = match &spec.multicast {
            Some(m) => {
                if !t.state.config.joins.contains(&m.group) {
                    return Err((
                        ErrorKind::BadSpec,
                        format!(
                            "this agent takes no multicast tests to {0} (start it with --join {0})",
                            m.group
                        ),
                    ));
                }
                sockopt::multicast::join_group(m.group, m.port + i as u16, local_ip)
                    .map_err(|e| io_refusal("joining the multicast group", e))?
            }
            None => UdpSocket::bind((local_ip, 0)).map_err(|e| io_refusal("binding a UDP data socket", e))?,
        };
        ports.push(s.local_addr().map_err(|e| io_refusal("UDP data socket", e))?.port());
        sockets.push(s);
    }
    let test_id = spec.multicast.map_or_else(|| udp_test_id(&cookie), |m| m.test_id);
    t.accepted(&cookie, ports)?;
    let client_ports = t.client_ports(per_agent)?;
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
            .map_err(|e| io_refusal("connecting a UDP data socket", e))?;
        let role = Role::of_agent(spec.stream_flows_forward(i));
        let mut grant = udp::configure(&socket, spec, role).map_err(|e| engine_refusal(&e))?;
        sockopt::mark(&socket, spec.dscp_of(i), &mut grant).map_err(|e| engine_refusal(&e))?;
        streams.push(udp::UdpStream {
            id: i as u16,
            wire_id: i as u16,
            test_id,
            role,
            socket,
            grant,
            framing: udp::Framing::Linerate,
        });
    }
    t.await_start()?;
    t.started()?;
    t.run_and_report(Some(peer_ip), |control| {
        udp::run(spec, &spec.peer_cpus, streams, &mut Quiet, control)
    })
}
