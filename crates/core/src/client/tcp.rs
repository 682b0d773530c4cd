//! A TCP test, the client's half: a data connection per stream to each agent, each configured
//! for its role (or for both under `--mix`), then the one engine over all of them.

use super::session::{
    ClientError, ClientOptions, Run, Target, data_connection, drive, joined, open_sessions, start_all,
};
use crate::engine::{Sink, sockopt, tcp};
use crate::result::{Role, TestResult};
use crate::spec::{TcpSpec, TestSpec};
use std::sync::atomic::AtomicBool;

/// Runs a TCP test against every target at once and returns the joined result. `interrupt`
/// (Ctrl-C) stops the senders early; what was measured until then is returned, marked partial.
pub fn run_tcp(
    spec: &TcpSpec,
    targets: &[Target],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    let test = TestSpec::Tcp(spec.clone());
    let per_agent = test.streams_per_agent();
    let mut sessions = open_sessions(&test, &spec.cpus, targets, opts)?;

    // Data connections: stream i of agent a is client stream a * per_agent + i (under --mix
    // connection i carries streams i and i + streams of its agent).
    let mut streams = Vec::with_capacity(per_agent * targets.len());
    for (a, s) in sessions.iter().enumerate() {
        let peer = s.target.addr;
        for i in 0..spec.connections_per_agent() {
            let role = Role::of_client(spec.stream_flows_forward(i));
            let sock = data_connection(peer, opts, &s.cookie, i as u16, |sock| {
                sockopt::before_connect(sock, spec)
            })?;
            let mut grant = match spec.mix {
                Some(_) => tcp::mix::configure(&sock, spec)?,
                None => sockopt::configure(&sock, spec, role)?,
            };
            sockopt::mark(&sock, spec.dscp_of(i), &mut grant)?;
            streams.push(tcp::DataStream {
                id: (a * per_agent + i) as u16,
                role,
                socket: sock,
                grant,
            });
        }
    }
    start_all(&mut sessions, opts)?;
    let ipv6 = sessions.first().is_some_and(|s| s.target.addr.is_ipv6());
    let run = Run::agents(&test, &mut sessions, opts, interrupt);
    let local = |control: &_| {
        match spec.mix {
            Some(_) => tcp::mix::run(spec, tcp::mix::MixEnd::Client, &spec.cpus, streams, sink, control),
            None => tcp::run(spec, &spec.cpus, streams, sink, control),
        }
        .map(|r| (r, ()))
    };
    drive(run, local, |ended, ()| joined(ended, ipv6))
}
