//! A third-party test: a controller asks this agent to run a test against another
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
    // The address as the kernel will use it: `::ffff:a.b.c.d` is a.b.c.d.
    let to = SocketAddr::new(to.ip().to_canonical(), to.port());
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
                at: crate::unixtime::system_time(at.saturating_sub(offset)),
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
    reach(&target, &opts)?;
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
        Ok(mut result) => {
            // The run's start as this agent tells time, like the instants below: the controller
            // checks it came after its request.
            let offset_ms = offset / 1_000_000;
            result.started_unix_ms = result.started_unix_ms.saturating_add_signed(offset_ms);
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

/// How long the far end has to show it is a linerate agent holding the fleet's secret before a
/// relay sends it anything else, and how long every failure to do so takes.
pub(crate) const REACH_TIME: Duration = Duration::from_secs(5);

/// Whether `to` is a linerate agent of this fleet, asked before the test: the plain preamble
/// (no first-flight proof, so a stranger never receives one), its challenge answered and its
/// own proof checked, then `profiles` so that it ends cleanly. Every failure (a closed port, a
/// silent or stalling listener, a stranger's bytes, a wrong proof) gives one answer after
/// [`REACH_TIME`]: a relay tells a secret holder nothing about a port but "no agent of this
/// fleet answered".
fn reach(target: &Target, opts: &ClientOptions) -> Result<(), Refusal> {
    let began = std::time::Instant::now();
    // On a thread of its own, so that the answer comes at REACH_TIME whatever the far end does
    // (a listener dripping bytes stretches a message's own deadline); the thread ends within
    // its own deadlines.
    let (tx, rx) = std::sync::mpsc::channel();
    let (t, o) = (target.clone(), opts.clone());
    let asked = std::thread::Builder::new().name("relay-reach".into()).spawn(move || {
        let _ = tx.send(crate::client::proves_itself(&t, &o, REACH_TIME).is_ok());
    });
    let proven = asked.is_ok() && rx.recv_timeout(REACH_TIME).unwrap_or(false);
    if proven {
        return Ok(());
    }
    std::thread::sleep(REACH_TIME.saturating_sub(began.elapsed()));
    Err((
        ErrorKind::Failed,
        format!(
            "from here to {}: no linerate agent of this fleet answered within {} s",
            target.addr,
            REACH_TIME.as_secs()
        ),
    ))
}

/// A test this agent could be made to send to someone who never agreed: a multicast group, a
/// broadcast address, the unspecified address (this host). `to` is canonical already (an
/// IPv4-mapped address is its IPv4 address); an IPv4-compatible one (`::a.b.c.d`, deprecated)
/// is an IPv6 address to the kernel and is judged as one.
fn refuse_unsendable(spec: &TestSpec, to: SocketAddr) -> Result<(), Refusal> {
    let ip = to.ip().to_canonical();
    let unicast = |ip: std::net::IpAddr| !(ip.is_multicast() || ip.is_unspecified());
    let broadcast = matches!(ip, std::net::IpAddr::V4(v4) if v4.is_broadcast());
    if !unicast(ip) || broadcast {
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
        TestSpec::Rpm(_) => Err((
            ErrorKind::BadSpec,
            "rpm has no third-party form: its far end is a responsiveness server, not an agent".into(),
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
        TestSpec::Http(_) | TestSpec::Rpm(_) => unreachable!("refused before the run"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TcpSpec;

    fn judged(to: &str) -> Result<(), Refusal> {
        let to: SocketAddr = to.parse().expect("an address");
        // As `run` does: the canonical address first.
        let to = SocketAddr::new(to.ip().to_canonical(), to.port());
        refuse_unsendable(&TestSpec::Tcp(TcpSpec::new()), to)
    }

    #[test]
    fn issue_39_mapped_forms_of_unsendable_addresses_are_refused() {
        for bad in [
            "0.0.0.0:5301",
            "[::]:5301",
            "224.0.0.1:5301",
            "255.255.255.255:5301",
            "[ff02::1]:5301",
            "[::ffff:0.0.0.0]:5301",
            "[::ffff:224.0.0.1]:5301",
            "[::ffff:255.255.255.255]:5301",
            "[::ffff:239.1.2.3]:5301",
        ] {
            let r = judged(bad);
            assert!(
                matches!(&r, Err((ErrorKind::BadSpec, m)) if m.contains("not one agent's address")),
                "{bad}: {r:?}"
            );
        }
        for good in [
            "127.0.0.1:5301",
            "[::1]:5301",
            "[::ffff:10.0.0.2]:5301",
            "[2001:db8::1]:5301",
        ] {
            assert_eq!(judged(good), Ok(()), "{good}");
        }
        // Even called with the mapped form, the check itself looks at the canonical address.
        let mapped: SocketAddr = "[::ffff:0.0.0.0]:1".parse().expect("an address");
        assert!(refuse_unsendable(&TestSpec::Tcp(TcpSpec::new()), mapped).is_err());
    }
}
