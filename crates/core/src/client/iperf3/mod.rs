//! A TCP or UDP test against an `iperf3 -s`: the target `iperf3://HOST[:PORT]`.
//! linerate's client speaks iperf3's control protocol (`proto::iperf3`) and moves the data with
//! its own engines, so the run is linerate's document like any other: this end's samplers, the
//! live lines, Ctrl-C and the lab through [`drive`], and the far end's figures from iperf3's
//! results message, joined by `summary::assemble` as its one far end (no host is made up for
//! it) and kept as iperf3 said them in `result.iperf3`.
//!
//! The flow (iperf3 3.12's client, `iperf_client_api.c`): cookie; PARAM_EXCHANGE, the
//! parameters; CREATE_STREAMS, the data streams (TCP: connect and the cookie; UDP: a connected
//! socket, the hello answered); TEST_START, TEST_RUNNING; the run, while the control connection
//! is watched; the client decides the end and sends TEST_END (at the time limit, or when the
//! count is sent, or in `-R` received); EXCHANGE_RESULTS (this end's results first, then the
//! server's), DISPLAY_RESULTS, IPERF_DONE. Every wait has a deadline; a server that closes,
//! terminates or fails during the run stops the engine at once (the result is partial, or
//! failed when nothing was counted).//!
//! Here: the run and the document (what iperf3 is asked: `proto::iperf3::params_of`); `server` the control
//! connection's waits and refusals, `streams` the data streams, `watch` the run's end.

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzz;
mod sequence;
mod server;
mod streams;
mod watch;

use super::session::{ClientError, ClientOptions, Ended, Run, Target, connect, drive};
use crate::engine::{Control, EngineError, Sink, tcp, udp};
use crate::metrics::host::{HostInfo, ReadHostInfo};
use crate::proto::iperf3::{self as wire, Control as Wire, Iperf3Error, Results, STEP_TIMEOUT, State};
use crate::result::{Role, SideReport, TestResult};
use crate::spec::TestSpec;
use crate::summary::{self, AgentOutcome};
use sequence::{Action, Event, Sequence};
use server::Server;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use streams::{Data, tcp_streams, udp_streams};
use watch::{EndRule, Progress, TcpSockets, Watching};

/// The scheme that names an iperf3 server as a test's target.
pub const SCHEME: &str = "iperf3://";

/// `iperf3://HOST[:PORT]` as a target (port 5201 by default, `iperf3://[::1]:5201` for IPv6);
/// None when `text` does not start with the scheme.
pub fn iperf3_target(text: &str) -> Option<Result<Target, ClientError>> {
    let rest = text.strip_prefix(SCHEME)?;
    Some(Target::resolve(rest, wire::DEFAULT_PORT).map(|t| Target {
        name: text.to_string(),
        addr: t.addr,
    }))
}

/// Runs a TCP or UDP test (`test`) against the iperf3 server `server` and returns linerate's
/// document of it; the far end's figures are iperf3's own.
pub fn run_iperf3(
    test: &TestSpec,
    server: &Target,
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    let params = wire::params_of(test).expect("the callers run only tcp and udp against iperf3");
    let (streams, udp, cpus) = match test {
        TestSpec::Tcp(s) => (test.streams_per_agent(), false, &s.cpus),
        TestSpec::Udp(s) => (test.streams_per_agent(), true, &s.cpus),
        _ => unreachable!("as above"),
    };
    crate::engine::pin::check_cpus(cpus)?;
    let peer = server.addr;
    let ours: Vec<Role> = (0..streams).map(|i| Role::of_client(flows_forward(test, i))).collect();
    let mut s = Server {
        ctl: Wire::new(connect(peer, opts, |_| Ok(()))?, peer),
        peer,
        seq: Sequence::new(peer, streams),
    };
    let cookie = wire::new_cookie();
    s.ctl.send_bytes(&cookie, "sending the cookie")?;
    let Opened {
        data,
        sockets,
        udp_held,
        old_udp_reply,
    } = set_up(&mut s, test, &params, &ours, opts, &cookie)?;

    let end = EndRule::of(test, &ours);
    let run = Run {
        spec: test,
        sessions: &mut [],
        opts,
        interrupt,
        towards: vec![peer.ip()],
        notes: Vec::new(),
        // A UDP receiver in iperf3's framing ends on the stop given at TEST_END: that stop is
        // the test's end, not a cut, so the report is partial only if the run was aborted.
        peer_ends: true,
    };
    let seconds = test_seconds(test);
    let local = |control: &Control| {
        let progress = Progress::default();
        let mut watching = Watching {
            inner: sink,
            progress: &progress,
            receiving: Vec::new(),
        };
        let engine_done = AtomicBool::new(false);
        let (report, watched) = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| watch::watch(&mut s, control, &engine_done, &end, &progress, &sockets));
            let report = match data {
                Data::Tcp((spec, streams)) => tcp::run(spec, &spec.cpus, streams, &mut watching, control),
                Data::Udp((spec, streams)) => udp::run(spec, &spec.cpus, streams, &mut watching, control),
            };
            engine_done.store(true, Ordering::Relaxed);
            (report, watcher.join().expect("the watcher does not panic"))
        });
        let report = report?;
        let exchanged = watched.and_then(|()| exchange(&mut s, &report, udp, streams, seconds));
        drop(udp_held);
        Ok::<_, EngineError>((report, exchanged))
    };
    let started = std::time::Instant::now();
    drive(run, local, |ended, exchanged| {
        let far = Far {
            server,
            ours: &ours,
            udp,
            old_udp_reply,
            elapsed: started.elapsed(),
        };
        assemble(ended, exchanged, &far)
    })
}

/// Whether stream `index` of `test` carries data from the client to the server.
fn flows_forward(test: &TestSpec, index: usize) -> bool {
    match test {
        TestSpec::Tcp(s) => s.stream_flows_forward(index),
        TestSpec::Udp(s) => s.stream_flows_forward(index),
        _ => true,
    }
}

/// The test's time limit, seconds (a count: none, taken as 1 for bounds).
fn test_seconds(test: &TestSpec) -> f64 {
    let timing = match test {
        TestSpec::Tcp(s) => &s.timing,
        TestSpec::Udp(s) => &s.timing,
        _ => return 1.0,
    };
    timing.length_seconds().unwrap_or(1.0)
}

/// After TEST_END: EXCHANGE_RESULTS (this end's results sent first, the server's read, bounded
/// by the test's streams and length), DISPLAY_RESULTS, IPERF_DONE, as the sequence says.
fn exchange(
    s: &mut Server,
    local: &SideReport,
    udp: bool,
    streams: usize,
    seconds: f64,
) -> Result<Results, Iperf3Error> {
    let mut results = None;
    loop {
        match s.next(STEP_TIMEOUT)? {
            Action::ExchangeResults => {
                s.ctl.send_json(&summary::iperf3::results_of(local, udp))?;
                let (limit, what) = (wire::results_limit(streams, seconds), s.seq.waiting());
                let bytes = s.ctl.recv_json(limit, STEP_TIMEOUT, what)?;
                if let Action::Keep(r) = s.feed(Event::ServerResults(&bytes), what)? {
                    results = Some(*r);
                }
            }
            Action::SendDone => break,
            Action::Wait => {}
            other => unreachable!("the sequence says {other:?} after TEST_END"),
        }
    }
    s.ctl.send_state(State::IperfDone)?;
    // iperf3 closes its end after IPERF_DONE; a short wait lets it read the byte first.
    let _ = s.ctl.stream().shutdown(std::net::Shutdown::Write);
    let _ = s.ctl.stream().set_read_timeout(Some(Duration::from_millis(200)));
    let mut rest = s.ctl.stream();
    let _ = rest.read(&mut [0u8; 1]);
    Ok(results.expect("the sequence has the server's results read before DISPLAY_RESULTS"))
}

/// What the set-up opened: the data streams for the engine, second handles on them, and how
/// the server answered the UDP hello.
struct Opened<'s> {
    data: Data<'s>,
    /// The TCP streams as the kernel counts them: sending queues acknowledged before TEST_END,
    /// bytes received for a count's end.
    sockets: TcpSockets,
    /// UDP sockets kept open until the results are in: a socket closed while the server still
    /// sends would answer with an ICMP error, and iperf3 ends the test on it.
    udp_held: Vec<std::net::UdpSocket>,
    old_udp_reply: bool,
}

/// Up to TEST_RUNNING, as the sequence says: the parameters, then the data streams.
fn set_up<'s>(
    s: &mut Server,
    test: &'s TestSpec,
    params: &wire::Params,
    ours: &[Role],
    opts: &ClientOptions,
    cookie: &[u8; wire::COOKIE_LEN],
) -> Result<Opened<'s>, ClientError> {
    // A free server answers at once; the connect timeout bounds its first answer.
    let mut timeout = opts.connect_timeout;
    let mut opened = None;
    loop {
        match s.next(timeout)? {
            Action::SendParams => s.ctl.send_json(params)?,
            Action::CreateStreams => opened = Some(open_streams(s, test, ours, opts, cookie)?),
            Action::Wait => {}
            Action::Run => return Ok(opened.expect("the sequence has CREATE_STREAMS before TEST_RUNNING")),
            other => unreachable!("the sequence says {other:?} before the test runs"),
        }
        timeout = STEP_TIMEOUT;
    }
}

/// CREATE_STREAMS: the data streams (TCP: connect and the cookie; UDP: a connected socket, the
/// hello answered).
fn open_streams<'s>(
    s: &Server,
    test: &'s TestSpec,
    ours: &[Role],
    opts: &ClientOptions,
    cookie: &[u8; wire::COOKIE_LEN],
) -> Result<Opened<'s>, ClientError> {
    let peer = s.peer;
    let mut sockets = TcpSockets::default();
    let mut udp_held = Vec::new();
    let mut old_udp_reply = false;
    let data = match test {
        TestSpec::Tcp(spec) => {
            let (spec, streams) = tcp_streams(spec, ours, peer, opts, cookie)?;
            for s in &streams {
                let second = s
                    .socket
                    .try_clone()
                    .map_err(|source| ClientError::Data { peer, source })?;
                match s.role {
                    Role::Send => sockets.senders.push(second),
                    Role::Receive => sockets.receivers.push(second),
                }
            }
            Data::Tcp((spec, streams))
        }
        TestSpec::Udp(spec) => {
            let local_ip = s
                .ctl
                .stream()
                .local_addr()
                .map_err(|source| ClientError::Data { peer, source })?
                .ip();
            let (streams, old) = udp_streams(spec, ours, peer, local_ip, opts)?;
            old_udp_reply = old;
            for s in &streams.1 {
                udp_held.push(
                    s.socket
                        .try_clone()
                        .map_err(|source| ClientError::Data { peer, source })?,
                );
            }
            Data::Udp(streams)
        }
        _ => unreachable!("tcp or udp, as run_iperf3 checked"),
    };
    Ok(Opened {
        data,
        sockets,
        udp_held,
        old_udp_reply,
    })
}

/// The server as the run knows it: its target, this end's role on each stream, the protocol,
/// how it answered the UDP hello, and how long the run took on this end's clock.
struct Far<'a> {
    server: &'a Target,
    ours: &'a [Role],
    udp: bool,
    old_udp_reply: bool,
    elapsed: Duration,
}

/// The document: the local report joined with the server's side as its one far end, and the
/// server as iperf3 said it. A server lost before its results came, or whose results cannot be
/// the answer to this test (checked as an agent's report is,
/// `summary::iperf3::check_iperf3`), leaves the run partial (or failed, when nothing was counted
/// here either); results refused are dropped whole.
fn assemble(e: Ended<'_>, exchanged: Result<Results, Iperf3Error>, f: &Far<'_>) -> TestResult {
    let Far {
        server,
        ours,
        udp,
        old_udp_reply,
        elapsed,
    } = *f;
    let checked = exchanged.map_err(|err| err.to_string()).and_then(|r| {
        let side = summary::iperf3::side_of(&r, ours, udp);
        summary::iperf3::check_iperf3(e.spec, &r, &side, e.local, elapsed)
            .map(|()| (r, side))
            .map_err(|why| format!("iperf3 server {}: result refused: {why}", server.addr))
    });
    let (results, side, failure) = match checked {
        Ok((r, side)) => (Some(r), Some(side), None),
        Err(why) => (None, None, Some(why)),
    };
    let far = AgentOutcome {
        name: &server.name,
        host: None,
        report: side.as_ref(),
        client: e.local,
    };
    let mut notes = e.notes;
    // The error names the server's address already.
    notes.extend(failure.clone());
    let ipv6 = server.addr.is_ipv6();
    let mut result = summary::assemble(e.spec, HostInfo::read(), &[far], e.started_unix_ms, notes, ipv6);
    if let Some(f) = failure {
        result.partial = true;
        let counted = |x: &crate::result::SideSummary| x.ops > 0 || x.bytes > 0;
        if !counted(&result.summary.sent) && !counted(&result.summary.received) {
            result.error = Some(f);
        }
    }
    if !udp
        && results.is_some()
        && let Some(note) = unread_note(&result)
    {
        result.notes.push(note);
    }
    if let Some(r) = &results {
        let version = r.server_version();
        let hint = version.is_none().then(|| version_hint(r, old_udp_reply));
        result.iperf3 = Some(summary::iperf3::peer_of(
            r,
            ours,
            udp,
            "server",
            server.addr.to_string(),
            version,
            hint,
        ));
    }
    result
}

/// Where iperf3's server counted fewer bytes than this client sent it over TCP (1.4 to
/// 1.7 % under `--bidir`, with no word): the difference and its cause. This client waits for
/// the server's kernel to acknowledge every byte before TEST_END, but iperf3 stops counting at
/// TEST_END, and what it had not yet read from its sockets (one thread reads and writes every
/// stream) is in no count of its own. With `--warmup` (iperf3's `-O`) the ends count from
/// different instants: no note.
fn unread_note(result: &TestResult) -> Option<String> {
    if result.options.timing().warmup_seconds > 0.0 {
        return None;
    }
    let s = &result.summary;
    let (sent, received) = match (&s.directions, result.options.direction()) {
        (Some(d), _) => {
            let f = d.get("forward")?;
            (f.sent.bytes, f.received.bytes)
        }
        (None, crate::spec::Direction::Send) => (s.sent.bytes, s.received.bytes),
        (None, _) => return None,
    };
    let unread = sent.checked_sub(received).filter(|&u| u > 0)?;
    Some(format!(
        "iperf3's server counted {unread} bytes fewer than this client sent it ({:.2} % of {sent}): its kernel \
         acknowledged every byte before TEST_END, but iperf3 stops counting at TEST_END and had not read these \
         from its sockets yet (one iperf3 thread reads and writes every stream); sent is this client's count, \
         received the server's",
        unread as f64 / sent as f64 * 100.0
    ))
}

/// What a server's messages show of its version when it did not say it.
fn version_hint(r: &Results, old_udp_reply: bool) -> String {
    let omitted = r.streams.iter().any(|s| s.omitted_packets.is_some());
    let mut hint = if omitted {
        "3.14 or later (its results carry omitted_packets)".to_string()
    } else {
        "before 3.14 (its results lack omitted_packets)".to_string()
    };
    if old_udp_reply {
        hint.push_str("; before 3.17 (it answered the UDP hello as 987654321)");
    }
    hint
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_26_targets_take_the_scheme_and_default_port() {
        let t = iperf3_target("iperf3://127.0.0.1")
            .expect("the scheme")
            .expect("resolves");
        assert_eq!(t.addr.to_string(), "127.0.0.1:5201");
        assert_eq!(t.name, "iperf3://127.0.0.1");
        let t = iperf3_target("iperf3://[::1]:6000")
            .expect("the scheme")
            .expect("resolves");
        assert_eq!(t.addr.to_string(), "[::1]:6000");
        assert!(iperf3_target("127.0.0.1").is_none());
        assert!(iperf3_target("iperf3://").expect("the scheme").is_err());
    }
}
