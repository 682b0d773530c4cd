//! A UDP test, the client's half: a socket per stream connected to the agent's socket for it
//! (or, multicast, one sender per stream to the group for every agent), the client's ports told
//! to each agent, then the one engine over all of them.

use super::session::{ClientError, ClientOptions, Run, Target, drive, joined, open_sessions, start_all};
use crate::engine::{Sink, sockopt, udp};
use crate::proto::frame::udp_test_id;
use crate::result::{Role, TestResult};
use crate::spec::{TestSpec, UdpSpec};
use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;

/// Runs a UDP test against every target at once and returns the joined result.
pub fn run_udp(
    spec: &UdpSpec,
    targets: &[Target],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    let test = TestSpec::Udp(spec.clone());
    let per_agent = test.streams_per_agent();
    let total = per_agent * targets.len();
    let mut sessions = open_sessions(&test, &spec.cpus, targets, opts)?;
    let mut streams = Vec::with_capacity(total);
    let mut multicast_ports: Vec<u16> = Vec::new();
    for (a, s) in sessions.iter_mut().enumerate() {
        let peer = s.target.addr;
        if s.udp_ports.len() != per_agent {
            return Err(ClientError::Malformed {
                peer,
                what: "list of UDP ports",
            });
        }
        let data = |source| ClientError::Data { peer, source };
        let local_ip = s.conn.stream().local_addr().map_err(data)?.ip();
        if let Some(m) = &spec.multicast {
            // One sender per stream for every agent: made once, its ports told to each.
            if a == 0 {
                for i in 0..per_agent {
                    let socket = UdpSocket::bind((local_ip, 0)).map_err(data)?;
                    sockopt::multicast::sender(&socket, local_ip, m.ttl).map_err(data)?;
                    socket.connect((m.group, m.port + i as u16)).map_err(data)?;
                    let role = Role::of_client(true);
                    let mut grant = udp::configure(&socket, spec, role)?;
                    sockopt::mark(&socket, spec.dscp_of(i), &mut grant)?;
                    multicast_ports.push(socket.local_addr().map_err(data)?.port());
                    streams.push(udp::UdpStream {
                        id: i as u16,
                        wire_id: i as u16,
                        test_id: m.test_id,
                        role,
                        socket,
                        grant,
                        framing: udp::Framing::Linerate,
                    });
                }
            }
            s.send_ports(multicast_ports.clone())?;
            continue;
        }
        let mut ports = Vec::with_capacity(per_agent);
        for (i, port) in s.udp_ports.iter().enumerate() {
            let socket = UdpSocket::bind((local_ip, 0)).map_err(data)?;
            socket.connect((peer.ip(), *port)).map_err(data)?;
            let role = Role::of_client(spec.stream_flows_forward(i));
            let mut grant = udp::configure(&socket, spec, role)?;
            sockopt::mark(&socket, spec.dscp_of(i), &mut grant)?;
            ports.push(socket.local_addr().map_err(data)?.port());
            streams.push(udp::UdpStream {
                id: (a * per_agent + i) as u16,
                wire_id: i as u16,
                test_id: udp_test_id(&s.cookie),
                role,
                socket,
                grant,
                framing: udp::Framing::Linerate,
            });
        }
        s.send_ports(ports)?;
    }
    start_all(&mut sessions, opts)?;
    let run = Run::agents(&test, &mut sessions, opts, interrupt);
    let local = |control: &_| udp::run(spec, &spec.cpus, streams, sink, control).map(|r| (r, ()));
    drive(run, local, |ended, ()| joined(ended, false))
}
