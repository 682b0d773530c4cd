//! A TCP test, this end's half: the data connections arrive with the test's cookie, each is
//! configured for its direction, and the engine runs until done, stopped or abandoned.

use super::State;
use super::admit::Source;
use super::profile::Applied;
use super::session::{
    Expecting, Quiet, Refusal, Registration, await_start, collect_streams, expect_streams, new_cookie, proto_refusal,
    run_and_report, send_accepted, source_of,
};
use crate::engine::{pin, sockopt, tcp};
use crate::proto::conn::Conn;
use crate::proto::{ErrorKind, Message};
use crate::result::Role;
use crate::spec::TcpSpec;

pub(super) fn run(
    state: &State,
    conn: &mut Conn,
    spec: &TcpSpec,
    profile: &mut Option<Applied<'_>>,
) -> Result<(), Refusal> {
    pin::check_cpus(&spec.peer_cpus).map_err(|e| (ErrorKind::BadSpec, format!("--peer-cpus: {e}")))?;
    let cookie = new_cookie();
    let (expecting, rx) = Expecting::per_stream(spec.streams_per_agent(), Source::of(&conn.peer()));
    expect_streams(state, cookie, expecting);
    let registration = Registration {
        pending: &state.pending,
        cookie,
    };
    send_accepted(conn, state, &cookie, Vec::new())?;
    await_start(conn, profile)?;
    let sockets = collect_streams(&rx, spec.connections_per_agent())?;
    drop(registration);
    let mut streams = Vec::with_capacity(sockets.len());
    for (i, s) in sockets.into_iter().enumerate() {
        let socket = s.expect("collect_streams fills every slot");
        let role = if spec.stream_flows_forward(i) {
            Role::Receive
        } else {
            Role::Send
        };
        let grant = match spec.mix {
            Some(_) => tcp::mix::configure(&socket, spec),
            None => sockopt::configure(&socket, spec, role),
        }
        .map_err(|e| (ErrorKind::Failed, format!("{e}: {}", source_of(&e))))?;
        streams.push(tcp::DataStream {
            id: i as u16,
            role,
            socket,
            grant,
        });
    }
    let peer = streams.first().and_then(|s| s.socket.peer_addr().ok()).map(|a| a.ip());
    conn.send(&Message::Started).map_err(proto_refusal)?;
    run_and_report(state, conn, peer, profile, |control| match spec.mix {
        Some(_) => tcp::mix::run(
            spec,
            tcp::mix::MixEnd::Agent,
            &spec.peer_cpus,
            streams,
            &mut Quiet,
            control,
        ),
        None => tcp::run(spec, &spec.peer_cpus, streams, &mut Quiet, control),
    })
}
