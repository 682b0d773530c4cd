//! A request-response test, this end's half: this end answers. TCP streams come as data
//! connections (one each, or a new one per transaction with `connect`); UDP streams as sockets
//! on the control connection's address, connected to the client's once it names its ports.

use super::admit::Source;
use super::profile::Applied;
use super::session::{
    Expecting, Quiet, Refusal, Registration, await_start, collect_streams, expect_streams, new_cookie, proto_refusal,
    run_and_report, send_accepted, source_of,
};
use super::{IDLE_TIMEOUT, State};
use crate::engine::{pin, rr};
use crate::proto::conn::Conn;
use crate::proto::{ErrorKind, Message};
use crate::result::Role;
use crate::spec::{RrProto, RrSpec};
use std::net::UdpSocket;

/// A request-response test: this end answers. TCP streams come as data connections (one each,
/// or a new one per transaction with `connect`); UDP as for a UDP test.
pub(super) fn run(
    state: &State,
    conn: &mut Conn,
    spec: &RrSpec,
    profile: &mut Option<Applied<'_>>,
) -> Result<(), Refusal> {
    pin::check_cpus(&spec.peer_cpus).map_err(|e| (ErrorKind::BadSpec, format!("--peer-cpus: {e}")))?;
    let cookie = new_cookie();
    let failed = |what: &str, e: std::io::Error| (ErrorKind::Failed, format!("{what}: {e}"));
    let per_agent = usize::from(spec.streams);
    let peer_ip = conn.peer().ip();
    let (expecting, rx) = if spec.connect {
        Expecting::per_transaction(per_agent, spec.rate, Source::of(&conn.peer()))
    } else {
        Expecting::per_stream(per_agent, Source::of(&conn.peer()))
    };
    let mut udp_sockets = Vec::new();
    let mut udp_ports = Vec::new();
    if spec.proto == RrProto::Udp {
        let local_ip = conn
            .stream()
            .local_addr()
            .map_err(|e| failed("control socket", e))?
            .ip();
        for _ in 0..per_agent {
            let s = UdpSocket::bind((local_ip, 0)).map_err(|e| failed("binding a UDP data socket", e))?;
            udp_ports.push(s.local_addr().map_err(|e| failed("UDP data socket", e))?.port());
            udp_sockets.push(s);
        }
    } else {
        expect_streams(state, cookie, expecting);
    }
    // Held for the whole run: TCP_CRR connections keep arriving with this cookie.
    let _registration = Registration {
        pending: &state.pending,
        cookie,
    };
    send_accepted(conn, state, &cookie, udp_ports)?;
    if spec.proto == RrProto::Udp {
        let client_ports = match conn
            .recv(IDLE_TIMEOUT, "waiting for the client's ports")
            .map_err(proto_refusal)?
        {
            Message::Ports { udp_ports } if udp_ports.len() == per_agent => udp_ports,
            other => return Err((ErrorKind::Protocol, format!("expected 'ports', got '{}'", other.name()))),
        };
        for (s, port) in udp_sockets.iter().zip(client_ports) {
            s.connect((peer_ip, port))
                .map_err(|e| failed("connecting a UDP data socket", e))?;
        }
    }
    await_start(conn, profile)?;
    let mut accept = None;
    let sockets: Vec<rr::RrSocket> = match (spec.proto, spec.connect) {
        (RrProto::Udp, _) => udp_sockets.into_iter().map(rr::RrSocket::Udp).collect(),
        (RrProto::Tcp, false) => collect_streams(&rx, per_agent)?
            .into_iter()
            .map(|s| rr::RrSocket::Tcp(s.expect("collect_streams fills every slot")))
            .collect(),
        (RrProto::Tcp, true) => {
            accept = Some(rx);
            (0..per_agent).map(|_| rr::RrSocket::Accept).collect()
        }
    };
    let mut streams = Vec::with_capacity(per_agent);
    for (i, socket) in sockets.into_iter().enumerate() {
        let grant = match rr::raw_fd(&socket) {
            Some(fd) => rr::configure_socket(fd, spec, spec.proto == RrProto::Tcp)
                .map_err(|e| (ErrorKind::Failed, format!("{e}: {}", source_of(&e))))?,
            None => Default::default(),
        };
        streams.push(rr::RrStream {
            id: i as u16,
            role: Role::Receive,
            socket,
            grant,
        });
    }
    conn.send(&Message::Started).map_err(proto_refusal)?;
    run_and_report(state, conn, Some(peer_ip), profile, |control| {
        rr::run(spec, &spec.peer_cpus, streams, accept, &mut Quiet, control)
    })
}
