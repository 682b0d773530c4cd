//! A TCP test, this end's half: the data connections arrive with the test's cookie, each is
//! configured for its role, and the engine runs until done, stopped or abandoned.

use super::session::{
    Accepted, Expecting, Quiet, Refusal, check_peer_cpus, collect_streams, engine_refusal, new_cookie,
};
use crate::engine::{sockopt, tcp};
use crate::result::Role;
use crate::spec::TcpSpec;

pub(super) fn run(t: &mut Accepted<'_, '_>, spec: &TcpSpec) -> Result<(), Refusal> {
    check_peer_cpus(&spec.peer_cpus)?;
    let cookie = new_cookie();
    let (expecting, rx) = Expecting::per_stream(spec.streams_per_agent(), t.source());
    let registration = t.expect_streams(cookie, expecting);
    t.accepted(&cookie, Vec::new())?;
    t.await_start()?;
    let sockets = collect_streams(&rx, spec.connections_per_agent())?;
    drop(registration);
    let mut streams = Vec::with_capacity(sockets.len());
    for (i, socket) in sockets.into_iter().enumerate() {
        let role = Role::of_agent(spec.stream_flows_forward(i));
        let mut grant = match spec.mix {
            Some(_) => tcp::mix::configure(&socket, spec),
            None => sockopt::configure(&socket, spec, role),
        }
        .map_err(|e| engine_refusal(&e))?;
        sockopt::mark(&socket, spec.dscp_of(i), &mut grant).map_err(|e| engine_refusal(&e))?;
        streams.push(tcp::DataStream {
            id: i as u16,
            role,
            socket,
            grant,
        });
    }
    let peer = streams.first().and_then(|s| s.socket.peer_addr().ok()).map(|a| a.ip());
    t.started()?;
    t.run_and_report(peer, |control| match spec.mix {
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
