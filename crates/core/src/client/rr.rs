//! A request-response test, the client's half: this end asks. A TCP stream is a data
//! connection (or, with `connect`, a new one per transaction), a UDP stream a socket connected
//! to the agent's; then the one engine over all of them.

use super::session::{
    ClientError, ClientOptions, Run, Target, data_connection, drive, joined, open_sessions, start_all,
};
use crate::engine::{Sink, rr, sockopt};
use crate::proto::frame;
use crate::result::{Role, SocketGrant, TestResult};
use crate::spec::{RrProto, RrSpec, TestSpec};
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Runs a request-response test against every target at once and returns the joined result.
pub fn run_rr(
    spec: &RrSpec,
    targets: &[Target],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    run_rr_recorded(spec, targets, opts, sink, interrupt, None)
}

/// [`run_rr`], the first stream's requests kept one by one in `record` (an open loop: a latency
/// probe session beside another test, which reads them as they come and after the run).
pub fn run_rr_recorded(
    spec: &RrSpec,
    targets: &[Target],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
    record: Option<Arc<rr::ProbeRecord>>,
) -> Result<TestResult, ClientError> {
    let test = TestSpec::Rr(spec.clone());
    let per_agent = test.streams_per_agent();
    let total = per_agent * targets.len();
    let mut sessions = open_sessions(&test, &spec.cpus, targets, opts)?;
    let mut streams = Vec::with_capacity(total);
    for (a, s) in sessions.iter_mut().enumerate() {
        let peer = s.target.addr;
        let data = |source| ClientError::Data { peer, source };
        let mut udp_ports = Vec::new();
        for i in 0..per_agent {
            let id = (a * per_agent + i) as u16;
            let socket = match (spec.proto, spec.connect) {
                (RrProto::Tcp, true) => rr::RrSocket::Connect {
                    addr: peer,
                    header: frame::data_header(&s.cookie, i as u16),
                    from: opts.bind,
                },
                (RrProto::Tcp, false) => {
                    rr::RrSocket::Tcp(data_connection(peer, opts, &s.cookie, i as u16, |_| Ok(()))?)
                }
                (RrProto::Udp, _) => {
                    let port = *s.udp_ports.get(i).ok_or(ClientError::Malformed {
                        peer,
                        what: "list of UDP ports",
                    })?;
                    let local_ip = s.conn.stream().local_addr().map_err(data)?.ip();
                    let u = UdpSocket::bind((local_ip, 0)).map_err(data)?;
                    u.connect((peer.ip(), port)).map_err(data)?;
                    udp_ports.push(u.local_addr().map_err(data)?.port());
                    rr::RrSocket::Udp(u)
                }
            };
            let grant = match rr::raw_fd(&socket) {
                Some(fd) => {
                    let mut grant = rr::configure_socket(fd, spec, spec.proto == RrProto::Tcp)?;
                    sockopt::mark(&fd, spec.dscp_of(i), &mut grant)?;
                    grant
                }
                None => SocketGrant {
                    nodelay: true,
                    ..Default::default()
                },
            };
            streams.push(rr::RrStream {
                id,
                // The client asks on every stream.
                role: Role::of_client(true),
                socket,
                grant,
                record: if a == 0 && i == 0 { record.clone() } else { None },
            });
        }
        if spec.proto == RrProto::Udp {
            s.send_ports(udp_ports)?;
        }
    }
    start_all(&mut sessions, opts)?;
    let run = Run::agents(&test, &mut sessions, opts, interrupt);
    let local = |control: &_| rr::run(spec, &spec.cpus, streams, None, sink, control).map(|r| (r, ()));
    drive(run, local, |ended, ()| joined(ended, false))
}
