//! A request-response test, this end's half: this end answers. TCP streams come as data
//! connections (one each, or a new one per transaction with `connect`); UDP streams as sockets
//! on the control connection's address, connected to the client's once it names its ports.

use super::session::{
    Accepted, Expecting, Quiet, Refusal, check_peer_cpus, collect_streams, engine_refusal, io_refusal, new_cookie,
};
use crate::engine::{rr, sockopt};
use crate::result::Role;
use crate::spec::{RrProto, RrSpec};
use std::net::UdpSocket;

pub(super) fn run(t: &mut Accepted<'_, '_>, spec: &RrSpec) -> Result<(), Refusal> {
    check_peer_cpus(&spec.peer_cpus)?;
    let cookie = new_cookie();
    let per_agent = usize::from(spec.streams);
    let peer_ip = t.conn.peer().ip();
    let (expecting, rx) = if spec.connect {
        Expecting::per_transaction(per_agent, spec.rate, t.source())
    } else {
        Expecting::per_stream(per_agent, t.source())
    };
    let mut udp_sockets = Vec::new();
    let mut udp_ports = Vec::new();
    // Held for the whole run: TCP_CRR connections keep arriving with this cookie.
    let mut _registration = None;
    if spec.proto == RrProto::Udp {
        let local_ip = t.local_ip()?;
        for _ in 0..per_agent {
            let s = UdpSocket::bind((local_ip, 0)).map_err(|e| io_refusal("binding a UDP data socket", e))?;
            udp_ports.push(s.local_addr().map_err(|e| io_refusal("UDP data socket", e))?.port());
            udp_sockets.push(s);
        }
    } else {
        _registration = Some(t.expect_streams(cookie, expecting));
    }
    t.accepted(&cookie, udp_ports)?;
    if spec.proto == RrProto::Udp {
        for (s, port) in udp_sockets.iter().zip(t.client_ports(per_agent)?) {
            s.connect((peer_ip, port))
                .map_err(|e| io_refusal("connecting a UDP data socket", e))?;
        }
    }
    t.await_start()?;
    let mut accept = None;
    let sockets: Vec<rr::RrSocket> = match (spec.proto, spec.connect) {
        (RrProto::Udp, _) => udp_sockets.into_iter().map(rr::RrSocket::Udp).collect(),
        (RrProto::Tcp, false) => collect_streams(&rx, per_agent)?
            .into_iter()
            .map(rr::RrSocket::Tcp)
            .collect(),
        (RrProto::Tcp, true) => {
            accept = Some(rx);
            (0..per_agent).map(|_| rr::RrSocket::Accept).collect()
        }
    };
    let mut streams = Vec::with_capacity(per_agent);
    for (i, socket) in sockets.into_iter().enumerate() {
        let grant = match rr::raw_fd(&socket) {
            Some(fd) => {
                let mut grant =
                    rr::configure_socket(fd, spec, spec.proto == RrProto::Tcp).map_err(|e| engine_refusal(&e))?;
                sockopt::mark(&fd, spec.dscp_of(i), &mut grant).map_err(|e| engine_refusal(&e))?;
                grant
            }
            None => Default::default(),
        };
        streams.push(rr::RrStream {
            id: i as u16,
            // The client asks on every stream, this end answers.
            role: Role::of_agent(true),
            socket,
            grant,
            record: None,
        });
    }
    t.started()?;
    t.run_and_report(Some(peer_ip), |control| {
        rr::run(spec, &spec.peer_cpus, streams, accept, &mut Quiet, control)
    })
}
