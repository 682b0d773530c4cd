//! A third-party test (issue 24): a controller asks this agent to run a test against another
//! agent and send back the whole run. This agent becomes the client's half ([`crate::client`]),
//! proving the fleet's secret to the far agent and requiring its proof back, so it sends test
//! traffic only to an agent that knows the secret and accepted the test: it cannot be made a
//! reflector. The handshake only lets a relay through on an agent that has a secret.
//!
//! While the run goes on, the controller's connection is watched: `stop` (its Ctrl-C), its loss
//! or the agent stopping end the run early, and what was measured still goes back.

use super::clock::now_unix_ns;
use super::refusal::{Refusal, proto_refusal};
use super::state::State;
use crate::client::{ClientError, ClientOptions, StartAt, Target, error_chain, run_rr, run_tcp, run_udp};
use crate::engine::NullSink;
use crate::proto::conn::Conn;
use crate::proto::{ErrorKind, Message};
use crate::spec::TestSpec;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

/// How often the controller's connection is looked at while the run goes on.
const WATCH_POLL: Duration = Duration::from_millis(100);

/// Runs `spec` from here against the agent at `to`, starting at `start_at_unix_ns` (this
/// agent's clock, as it tells it) when given, and sends the run back as `relay_result`.
pub(super) fn run(
    state: &State,
    conn: &mut Conn,
    spec: &TestSpec,
    to: SocketAddr,
    start_at_unix_ns: Option<i64>,
) -> Result<(), Refusal> {
    let secret = state.config.secret.clone().ok_or((
        ErrorKind::Auth,
        "this agent has no secret, so it runs no third-party tests".to_string(),
    ))?;
    refuse_unsendable(spec, to)?;
    let offset = state.config.clock_offset_ns;
    let started = Arc::new(AtomicI64::new(i64::MIN));
    let sent = Arc::new(AtomicI64::new(i64::MIN));
    let start_at = match start_at_unix_ns {
        None => None,
        Some(at) => {
            let wait = at.saturating_sub(now_unix_ns(state));
            if wait > crate::client::START_WAIT_MAX.as_nanos() as i64 {
                return Err((
                    ErrorKind::BadSpec,
                    format!(
                        "a start {:.1} s from now is further off than the {} s a test may wait",
                        wait as f64 / 1e9,
                        crate::client::START_WAIT_MAX.as_secs()
                    ),
                ));
            }
            Some(StartAt {
                at: crate::client::system_time(at.saturating_sub(offset)),
                sent_unix_ns: Arc::clone(&sent),
                started_unix_ns: Arc::clone(&started),
            })
        }
    };
    let opts = ClientOptions {
        secret: Some(secret),
        start_at,
        ..ClientOptions::default()
    };
    let target = Target {
        name: to.to_string(),
        addr: to,
    };
    let interrupt = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            let r = run_kind(spec, &target, &opts, &interrupt);
            done.store(true, Ordering::SeqCst);
            r
        });
        watch(state, conn, &interrupt, &done);
        running.join().expect("a relayed run does not panic")
    });
    match outcome {
        Ok(result) => {
            // The agent's counters: what this end (the run's client) counted, in the window.
            let mine = |s: &crate::result::SideSummary| {
                if s.counted_by.iter().all(|c| c == "client") {
                    s.bytes
                } else {
                    0
                }
            };
            state
                .metrics
                .moved(spec.kind(), mine(&result.summary.sent), mine(&result.summary.received));
            // As this agent tells time (its pretend offset added); unset: no synchronised start.
            let told = |t: &AtomicI64| {
                let at = t.load(Ordering::Relaxed);
                (at != i64::MIN).then(|| at.saturating_add(offset))
            };
            conn.send(&Message::RelayResult {
                result: Box::new(result),
                start_sent_unix_ns: told(&sent),
                started_unix_ns: told(&started),
            })
            .map_err(proto_refusal)
        }
        Err(e) => Err((ErrorKind::Failed, format!("from here to {to}: {}", error_chain(&e)))),
    }
}

/// A test this agent could be made to send to someone who never agreed: a multicast group.
fn refuse_unsendable(spec: &TestSpec, to: SocketAddr) -> Result<(), Refusal> {
    let unicast = |ip: std::net::IpAddr| !(ip.is_multicast() || ip.is_unspecified());
    let broadcast = matches!(to.ip(), std::net::IpAddr::V4(v4) if v4.is_broadcast());
    if !unicast(to.ip()) || broadcast {
        return Err((ErrorKind::BadSpec, format!("{to} is not one agent's address")));
    }
    match spec {
        TestSpec::Udp(u) if u.multicast.is_some() => Err((
            ErrorKind::BadSpec,
            "a third-party test sends to one agent, not to a multicast group".into(),
        )),
        TestSpec::Http(_) => Err((
            ErrorKind::BadSpec,
            "http has no third-party form: its far end is a web server, not an agent".into(),
        )),
        _ => Ok(()),
    }
}

fn run_kind(
    spec: &TestSpec,
    target: &Target,
    opts: &ClientOptions,
    interrupt: &AtomicBool,
) -> Result<crate::result::TestResult, ClientError> {
    let targets = std::slice::from_ref(target);
    let mut sink = NullSink;
    match spec {
        TestSpec::Tcp(s) => run_tcp(s, targets, opts, &mut sink, interrupt),
        TestSpec::Udp(s) => run_udp(s, targets, opts, &mut sink, interrupt),
        TestSpec::Rr(s) => run_rr(s, targets, opts, &mut sink, interrupt),
        TestSpec::Http(_) => unreachable!("refused before the run"),
    }
}

/// Watches the controller's connection until the run is done: its `stop`, its loss, silence
/// past the idle timeout after a message it should not have sent, or this agent stopping all
/// end the run early (the run then returns what it measured).
fn watch(state: &State, conn: &mut Conn, interrupt: &AtomicBool, done: &AtomicBool) {
    while !done.load(Ordering::SeqCst) {
        if state.stopping.load(Ordering::SeqCst) {
            interrupt.store(true, Ordering::SeqCst);
        }
        match conn.try_recv(WATCH_POLL) {
            Ok(None) => {}
            Ok(Some(Message::Stop)) => interrupt.store(true, Ordering::SeqCst),
            // Anything else, or the controller gone: nobody is left to want the rest.
            Ok(Some(_)) | Err(_) => {
                interrupt.store(true, Ordering::SeqCst);
                // Do not spin on a dead connection; the run ends within its own deadlines.
                while !done.load(Ordering::SeqCst) {
                    std::thread::sleep(WATCH_POLL);
                }
                return;
            }
        }
    }
}
