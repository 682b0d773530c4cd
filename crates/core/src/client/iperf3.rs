//! A TCP or UDP test against an `iperf3 -s` (issue 26): the target `iperf3://HOST[:PORT]`.
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
//! failed when nothing was counted).

use super::session::{ClientError, ClientOptions, Ended, Run, Target, connect, drive};
use crate::engine::{Control, EngineError, Sink, sockopt, tcp, udp};
use crate::metrics::host::HostInfo;
use crate::proto::iperf3::{
    self as wire, Control as Wire, Iperf3Error, Params, Results, STEP_TIMEOUT, State, UDP_HELLO,
};
use crate::result::{IntervalSample, Role, SideReport, TestResult};
use crate::spec::{Direction, TcpSpec, TestSpec, UdpSpec};
use crate::summary::{self, AgentOutcome};
use std::io::{Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The scheme that names an iperf3 server as a test's target.
pub const SCHEME: &str = "iperf3://";

/// How often the control connection is looked at during the run: a server's end is noticed
/// within this, and the end of the test is decided at this resolution.
const WATCH_SLICE: Duration = Duration::from_millis(20);
/// How often a UDP hello is sent again while its answer does not come.
const HELLO_RESEND: Duration = Duration::from_millis(500);
/// The longest TEST_END waits for the sending TCP streams' queues to be acknowledged.
const DRAIN_MAX: Duration = Duration::from_secs(2);
/// A UDP run's end is taken from the interval samples' clock; before the first sample, only
/// from when the workers were started, so this much later to be past the senders' deadline.
const START_MARGIN: Duration = Duration::from_millis(50);

/// `iperf3://HOST[:PORT]` as a target (port 5201 by default, `iperf3://[::1]:5201` for IPv6);
/// None when `text` does not start with the scheme.
pub fn iperf3_target(text: &str) -> Option<Result<Target, ClientError>> {
    let rest = text.strip_prefix(SCHEME)?;
    Some(Target::resolve(rest, wire::DEFAULT_PORT).map(|t| Target {
        name: text.to_string(),
        addr: t.addr,
    }))
}

/// What iperf3 is asked for a TCP test: its parameters from the spec (`-n` is per stream in
/// linerate, iperf3's block count is over all streams; `-t` and `--warmup` in whole seconds,
/// the callers checked they are).
fn tcp_params(spec: &TcpSpec) -> Params {
    Params {
        tcp: Some(true),
        mss: spec.mss_bytes.map(f64::from),
        nodelay: spec.nodelay.then_some(true),
        window: spec.window_bytes.map(|w| w.0 as f64),
        len: Some(spec.buffer_bytes.0 as f64),
        congestion: spec.congestion.clone(),
        ..common_params(&spec.timing, spec.streams, spec.direction, &spec.peer_cpus)
    }
}

/// What iperf3 is asked for a UDP test: as TCP, with the rate per stream (payload bits/s; 0
/// for as fast as possible).
fn udp_params(spec: &UdpSpec) -> Params {
    Params {
        udp: Some(true),
        len: Some(f64::from(spec.payload_bytes)),
        window: spec.window_bytes.map(|w| w.0 as f64),
        bandwidth: Some(spec.stream_bits_per_second().map_or(0.0, f64::round)),
        ..common_params(&spec.timing, spec.streams, spec.direction, &spec.peer_cpus)
    }
}

/// The parameters every kind shares: the end, the omit, the streams and their direction.
fn common_params(timing: &crate::spec::Timing, streams: u16, direction: Direction, peer_cpus: &[usize]) -> Params {
    let warmup = timing.warmup_seconds.ceil();
    let (time, blockcount) = match timing.limit.count() {
        Some(n) => (0.0, n as f64 * f64::from(streams)),
        None => (
            (timing.length_seconds().unwrap_or(0.0) - warmup).max(1.0).ceil(),
            0.0,
        ),
    };
    Params {
        omit: Some(warmup),
        time: Some(time),
        num: Some(0.0),
        blockcount: Some(blockcount),
        parallel: Some(f64::from(streams)),
        reverse: (direction == Direction::Reverse).then_some(true),
        bidirectional: (direction == Direction::Bidir).then_some(true),
        pacing_timer: Some(1000.0),
        // A server run with -J says its version in its output (`start.version`).
        get_server_output: Some(1.0),
        server_affinity: peer_cpus.first().map(|c| *c as f64),
        ..Params::default()
    }
}

/// i_errno's name for the errors a server sends most (esnet/iperf `src/iperf_api.h`).
fn i_errno_name(i_errno: i32) -> &'static str {
    match i_errno {
        6 => "too many parallel streams",
        7 => "block size too large",
        8 => "socket buffer size too large",
        10 => "MSS too large",
        20 => "UDP block size invalid",
        25 => "cannot be both reverse and bidirectional",
        101 => "test initialization failed",
        102 => "unable to listen for connections",
        112 => "unable to receive a control message",
        114 => "unable to receive the parameters",
        117 => "unable to receive the results",
        119 => "the client has terminated",
        120 => "the server has terminated",
        121 => "the server is busy",
        122 => "unable to set TCP_NODELAY",
        123 => "unable to set the MSS",
        124 | 130 | 141 => "unable to set the socket buffer size",
        132 => "unable to set CPU affinity",
        134 => "unable to set TCP_CONGESTION",
        142 => "test authorization failed",
        200..=207 => "a data stream failed",
        208 => "a stream has an invalid id",
        _ => "an error",
    }
}

/// The control connection, with what its waits need.
struct Server {
    ctl: Wire,
    peer: SocketAddr,
}

impl Server {
    /// Waits (at most `timeout`) for `want`; ACCESS_DENIED, SERVER_ERROR and any other state
    /// are the errors they say.
    fn expect(&mut self, want: State, timeout: Duration, what: &'static str) -> Result<(), Iperf3Error> {
        match self.ctl.recv_state(timeout, what)? {
            s if s == want => Ok(()),
            other => Err(self.refusal(other, what)),
        }
    }

    /// The error a state other than the one expected stands for.
    fn refusal(&mut self, state: State, what: &'static str) -> Iperf3Error {
        let peer = self.peer;
        match state {
            State::AccessDenied => Iperf3Error::Busy { peer },
            State::ServerError => {
                // Two big-endian ints follow: i_errno, then errno.
                let mut b = [0u8; 8];
                let (i_errno, errno) = match self.ctl.read_exact_within(&mut b, STEP_TIMEOUT, what) {
                    Ok(()) => (
                        i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                        i32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                    ),
                    Err(_) => (-1, 0),
                };
                Iperf3Error::ServerError {
                    peer,
                    what,
                    name: i_errno_name(i_errno),
                    i_errno,
                    errno,
                }
            }
            State::ServerTerminate => Iperf3Error::Bad {
                peer,
                what: format!("the server ended the test (SERVER_TERMINATE) while {what}"),
            },
            other => Iperf3Error::Bad {
                peer,
                what: format!("sent {other:?} while {what}"),
            },
        }
    }
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
    let (params, streams, udp, cpus) = match test {
        TestSpec::Tcp(s) => (tcp_params(s), test.streams_per_agent(), false, &s.cpus),
        TestSpec::Udp(s) => (udp_params(s), test.streams_per_agent(), true, &s.cpus),
        _ => unreachable!("the callers run only tcp and udp against iperf3"),
    };
    crate::engine::pin::check_cpus(cpus)?;
    let peer = server.addr;
    let ours: Vec<Role> = (0..streams)
        .map(|i| Role::of_client(flows_forward(test, i)))
        .collect();
    let mut s = Server {
        ctl: Wire::new(connect(peer, opts, |_| Ok(()))?, peer),
        peer,
    };
    let cookie = wire::new_cookie();
    s.ctl.send_bytes(&cookie, "sending the cookie")?;
    // A free server answers at once; the connect timeout bounds its first answer.
    s.expect(State::ParamExchange, opts.connect_timeout, "waiting for the parameter exchange")?;
    s.ctl.send_json(&params)?;
    s.expect(State::CreateStreams, STEP_TIMEOUT, "waiting to create the streams")?;
    let mut old_udp_reply = false;
    // The sending TCP streams, to see their queues acknowledged before TEST_END.
    let mut senders = Vec::new();
    let data = match test {
        TestSpec::Tcp(spec) => {
            let (spec, streams) = tcp_streams(spec, &ours, peer, opts, &cookie)?;
            for s in streams.iter().filter(|s| s.role == Role::Send) {
                senders.push(s.socket.try_clone().map_err(|source| ClientError::Data { peer, source })?);
            }
            Data::Tcp((spec, streams))
        }
        TestSpec::Udp(spec) => {
            let local_ip = s.ctl.stream().local_addr().map_err(|source| ClientError::Data { peer, source })?.ip();
            let (streams, old) = udp_streams(spec, &ours, peer, local_ip, opts)?;
            old_udp_reply = old;
            Data::Udp(streams)
        }
        _ => unreachable!("tcp or udp, as above"),
    };
    s.expect(State::TestStart, STEP_TIMEOUT, "waiting for the test to start")?;
    s.expect(State::TestRunning, STEP_TIMEOUT, "waiting for the test to run")?;

    let end = EndRule::of(test, &ours);
    let run = Run {
        spec: test,
        sessions: &mut [],
        opts,
        interrupt,
        towards: vec![peer.ip()],
        notes: Vec::new(),
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
            let watcher = scope.spawn(|| watch(&mut s, control, &engine_done, &end, &progress, &senders));
            let report = match data {
                Data::Tcp((spec, streams)) => tcp::run(spec, &spec.cpus, streams, &mut watching, control),
                Data::Udp((spec, streams)) => udp::run(spec, &spec.cpus, streams, &mut watching, control),
            };
            engine_done.store(true, Ordering::Relaxed);
            (report, watcher.join().expect("the watcher does not panic"))
        });
        let mut report = report?;
        // A UDP receiver in iperf3's framing ends on the stop given at TEST_END: that stop is
        // the test's end, not a cut, so the report is partial only if the run was aborted.
        if watched.is_ok() && !control.aborted() && !interrupt.load(Ordering::Relaxed) {
            report.partial = false;
        }
        let exchanged = watched.and_then(|()| exchange(&mut s, &report, udp, streams, seconds));
        Ok::<_, EngineError>((report, exchanged))
    };
    drive(run, local, |ended, exchanged| {
        assemble(ended, exchanged, server, &ours, udp, old_udp_reply)
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

/// The data streams, ready for their engine.
enum Data<'s> {
    Tcp((&'s TcpSpec, Vec<tcp::DataStream>)),
    Udp((&'s UdpSpec, Vec<udp::UdpStream>)),
}

/// TCP data connections: each connected (its options set first), the cookie sent, then
/// configured for its role, as `client::tcp` does against an agent.
fn tcp_streams<'s>(
    spec: &'s TcpSpec,
    ours: &[Role],
    peer: SocketAddr,
    opts: &ClientOptions,
    cookie: &[u8; wire::COOKIE_LEN],
) -> Result<(&'s TcpSpec, Vec<tcp::DataStream>), ClientError> {
    let mut streams = Vec::with_capacity(ours.len());
    for (i, role) in ours.iter().enumerate() {
        let mut sock = connect(peer, opts, |sock| sockopt::before_connect(sock, spec))?;
        let data = |source| ClientError::Data { peer, source };
        sock.set_write_timeout(Some(opts.connect_timeout)).map_err(data)?;
        sock.write_all(cookie).map_err(data)?;
        sock.set_write_timeout(None).map_err(data)?;
        let grant = sockopt::configure(&sock, spec, *role)?;
        streams.push(tcp::DataStream {
            id: i as u16,
            role: *role,
            socket: sock,
            grant,
        });
    }
    Ok((spec, streams))
}

/// UDP data sockets, each connected to the server's port and announced by the hello (sent
/// again every [`HELLO_RESEND`] until answered, within the connect timeout). The second value:
/// some answer was the one servers before 3.17 give (987654321 in host order).
fn udp_streams<'s>(
    spec: &'s UdpSpec,
    ours: &[Role],
    peer: SocketAddr,
    local_ip: std::net::IpAddr,
    opts: &ClientOptions,
) -> Result<((&'s UdpSpec, Vec<udp::UdpStream>), bool), ClientError> {
    let mut streams = Vec::with_capacity(ours.len());
    let mut old_reply = false;
    for (i, role) in ours.iter().enumerate() {
        let data = |source| ClientError::Data { peer, source };
        let socket = UdpSocket::bind((local_ip, 0)).map_err(data)?;
        socket.connect(peer).map_err(data)?;
        let answer = hello(&socket, peer, opts.connect_timeout)?;
        old_reply |= answer == 987_654_321u32.to_ne_bytes();
        let grant = udp::configure(&socket, spec, *role)?;
        streams.push(udp::UdpStream {
            id: i as u16,
            wire_id: i as u16,
            test_id: 0,
            role: *role,
            socket,
            grant,
            framing: udp::Framing::Iperf3 { counters_64bit: false },
        });
    }
    Ok(((spec, streams), old_reply))
}

/// Sends the UDP hello and returns the server's four-byte answer.
fn hello(socket: &UdpSocket, peer: SocketAddr, within: Duration) -> Result<[u8; 4], ClientError> {
    let data = |source| ClientError::Data { peer, source };
    let until = Instant::now() + within;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Iperf3Error::Timeout {
                peer,
                what: "waiting for the answer to a UDP stream's hello",
                seconds: within.as_secs_f64(),
            }
            .into());
        }
        socket.send(&UDP_HELLO).map_err(data)?;
        socket
            .set_read_timeout(Some(left.min(HELLO_RESEND).max(Duration::from_millis(1))))
            .map_err(data)?;
        let mut answer = [0u8; 4];
        match socket.recv(&mut answer) {
            Ok(4) => return Ok(answer),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            // Nothing listens on that UDP port (ICMP port unreachable).
            Err(e) => return Err(data(e)),
        }
    }
}

/// When the client ends the test (sends TEST_END): iperf3's servers wait for it in every mode.
enum EndRule {
    /// Every local stream sends: when the engine is done (its senders reached their limit).
    EngineDone,
    /// TCP with local receivers, timed: when the runner stops the senders at the deadline.
    Stopped,
    /// UDP with local receivers, timed: this long after the engine's time zero.
    After(Duration),
    /// A count with local receivers: when this many bytes were received here in all.
    Received(u64),
}

impl EndRule {
    fn of(test: &TestSpec, ours: &[Role]) -> EndRule {
        if !ours.contains(&Role::Receive) {
            return EndRule::EngineDone;
        }
        let (timing, block, streams) = match test {
            TestSpec::Tcp(s) => (&s.timing, s.buffer_bytes.0, s.streams),
            TestSpec::Udp(s) => (&s.timing, u64::from(s.payload_bytes), s.streams),
            _ => return EndRule::EngineDone,
        };
        match (timing.limit.count(), test) {
            (Some(n), _) => EndRule::Received(n.saturating_mul(block).saturating_mul(u64::from(streams))),
            (None, TestSpec::Tcp(_)) => EndRule::Stopped,
            (None, _) => EndRule::After(Duration::from_secs_f64(timing.length_seconds().unwrap_or(0.0))),
        }
    }
}

/// What the watcher learns from the engine's samples: bytes received here, and when the
/// engine's time zero was.
#[derive(Default)]
struct Progress {
    received: AtomicU64,
    /// When the workers were started (no later than time zero), and the earliest instant a
    /// sample puts time zero at (no earlier than it: a sample is taken before it is handed on).
    zero: Mutex<(Option<Instant>, Option<Instant>)>,
}

impl Progress {
    /// Whether `length` since time zero has passed, by the latest estimate of time zero.
    fn past(&self, length: Duration) -> bool {
        let (started, sampled) = *self.zero.lock().expect("no thread panics holding it");
        match (sampled, started) {
            (Some(zero), _) => zero.elapsed() >= length,
            (None, Some(started)) => started.elapsed() >= length + START_MARGIN,
            (None, None) => false,
        }
    }
}

/// The sink the engine is handed: the caller's, with the bytes received and the clock noted.
struct Watching<'a> {
    inner: &'a mut dyn Sink,
    progress: &'a Progress,
    /// By stream number: whether this end receives it.
    receiving: Vec<bool>,
}

impl Sink for Watching<'_> {
    fn start(&mut self, streams: &[(u16, Role)]) {
        self.receiving = vec![false; streams.iter().map(|(id, _)| usize::from(*id) + 1).max().unwrap_or(0)];
        for (id, role) in streams {
            self.receiving[usize::from(*id)] = *role == Role::Receive;
        }
        self.progress.zero.lock().expect("no thread panics holding it").0 = Some(Instant::now());
        self.inner.start(streams);
    }

    fn interval(&mut self, samples: &[IntervalSample]) {
        let now = Instant::now();
        let mut received = 0;
        for s in samples {
            if self.receiving.get(usize::from(s.stream)).copied().unwrap_or(false) {
                received += s.bytes;
            }
            let zero = now.checked_sub(Duration::from_nanos(s.end_ns));
            let mut z = self.progress.zero.lock().expect("no thread panics holding it");
            z.1 = match (z.1, zero) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        self.progress.received.fetch_add(received, Ordering::Relaxed);
        self.inner.interval(samples);
    }
}

/// Watches the control connection while the engine runs, and sends TEST_END when the end rule
/// says (or when the engine is done, or on Ctrl-C). A server that closes, terminates or fails
/// meanwhile aborts the engine; its error is returned.
fn watch(
    s: &mut Server,
    control: &Control,
    engine_done: &AtomicBool,
    end: &EndRule,
    progress: &Progress,
    senders: &[std::net::TcpStream],
) -> Result<(), Iperf3Error> {
    let what = "the test ran";
    let fail = |e: Iperf3Error| {
        control.abort();
        e
    };
    loop {
        match s.ctl.poll_state(WATCH_SLICE, what) {
            Ok(None) => {}
            Ok(Some(state)) => return Err(fail(s.refusal(state, what))),
            Err(e) => return Err(fail(e)),
        }
        let done = engine_done.load(Ordering::Relaxed);
        let due = done
            || control.sending_stopped() && !matches!(end, EndRule::EngineDone)
            || match end {
                EndRule::EngineDone | EndRule::Stopped => false,
                EndRule::After(length) => progress.past(*length),
                EndRule::Received(bytes) => progress.received.load(Ordering::Relaxed) >= *bytes,
            };
        if due {
            drain(senders, control);
            s.ctl.send_state(State::TestEnd).map_err(fail)?;
            // A UDP receiver in iperf3's framing ends once it hears the test is over; the
            // server closes its TCP streams on TEST_END, so TCP receivers see their end.
            if !matches!(end, EndRule::Stopped) {
                control.stop_send();
            }
            return Ok(());
        }
    }
}

/// Waits (at most [`DRAIN_MAX`]) until the server has acknowledged every byte the sending TCP
/// streams wrote: the server stops counting at TEST_END, and bytes still queued here would be
/// counted sent by this end and never received by that one.
fn drain(senders: &[std::net::TcpStream], control: &Control) {
    let until = Instant::now() + DRAIN_MAX;
    while !control.aborted()
        && Instant::now() < until
        && senders.iter().any(|s| sockopt::send_queue_bytes(s).is_some_and(|q| q > 0))
    {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// After TEST_END: EXCHANGE_RESULTS (this end's results sent first, the server's read, bounded
/// by the test's streams and length), DISPLAY_RESULTS, IPERF_DONE.
fn exchange(s: &mut Server, local: &SideReport, udp: bool, streams: usize, seconds: f64) -> Result<Results, Iperf3Error> {
    s.expect(State::ExchangeResults, STEP_TIMEOUT, "waiting to exchange the results")?;
    s.ctl.send_json(&summary::iperf3::results_of(local, udp))?;
    let bytes = s.ctl.recv_json(
        wire::results_limit(streams, seconds),
        STEP_TIMEOUT,
        "reading the server's results",
    )?;
    let results = Results::parse(&bytes, s.peer, streams)?;
    s.expect(State::DisplayResults, STEP_TIMEOUT, "waiting for the results to be displayed")?;
    s.ctl.send_state(State::IperfDone)?;
    // iperf3 closes its end after IPERF_DONE; a short wait lets it read the byte first.
    let _ = s.ctl.stream().shutdown(std::net::Shutdown::Write);
    let _ = s.ctl.stream().set_read_timeout(Some(Duration::from_millis(200)));
    let mut rest = s.ctl.stream();
    let _ = rest.read(&mut [0u8; 1]);
    Ok(results)
}

/// The document: the local report joined with the server's side as its one far end, and the
/// server as iperf3 said it. A server lost before its results came leaves the run partial (or
/// failed, when nothing was counted here either).
fn assemble(
    e: Ended<'_>,
    exchanged: Result<Results, Iperf3Error>,
    server: &Target,
    ours: &[Role],
    udp: bool,
    old_udp_reply: bool,
) -> TestResult {
    let (results, failure) = match exchanged {
        Ok(r) => (Some(r), None),
        Err(err) => (None, Some(err.to_string())),
    };
    let side = results.as_ref().map(|r| summary::iperf3::side_of(r, ours, udp));
    let far = AgentOutcome {
        name: &server.name,
        host: None,
        report: side.as_ref(),
        client: e.local,
    };
    let mut notes = e.notes;
    if let Some(f) = &failure {
        notes.push(format!("iperf3 server {}: {f}", server.addr));
    }
    let ipv6 = server.addr.is_ipv6();
    let mut result = summary::assemble(e.spec, HostInfo::read(), &[far], e.started_unix_ms, notes, ipv6);
    if let Some(f) = failure {
        result.partial = true;
        let counted = |x: &crate::result::SideSummary| x.ops > 0 || x.bytes > 0;
        if !counted(&result.summary.sent) && !counted(&result.summary.received) {
            result.error = Some(format!("iperf3 server {}: {f}", server.addr));
        }
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
    use crate::spec::Limit;
    use crate::units::ByteSize;

    #[test]
    fn issue_26_targets_take_the_scheme_and_default_port() {
        let t = iperf3_target("iperf3://127.0.0.1").expect("the scheme").expect("resolves");
        assert_eq!(t.addr.to_string(), "127.0.0.1:5201");
        assert_eq!(t.name, "iperf3://127.0.0.1");
        let t = iperf3_target("iperf3://[::1]:6000").expect("the scheme").expect("resolves");
        assert_eq!(t.addr.to_string(), "[::1]:6000");
        assert!(iperf3_target("127.0.0.1").is_none());
        assert!(iperf3_target("iperf3://").expect("the scheme").is_err());
    }

    #[test]
    fn issue_26_parameters_map_linerate_flags_to_iperf3s() {
        let mut spec = TcpSpec::new();
        spec.streams = 4;
        spec.direction = Direction::Bidir;
        spec.timing.limit = Limit::Seconds(2.5);
        spec.timing.warmup_seconds = 1.0;
        spec.window_bytes = Some(ByteSize(1 << 20));
        spec.congestion = Some("cubic".into());
        let p = tcp_params(&spec);
        assert_eq!((p.tcp, p.parallel, p.bidirectional, p.reverse), (Some(true), Some(4.0), Some(true), None));
        assert_eq!((p.time, p.omit, p.blockcount), (Some(2.0), Some(1.0), Some(0.0)), "2.5 s less 1 s of omit, whole");
        assert_eq!((p.window, p.congestion.as_deref()), (Some(1_048_576.0), Some("cubic")));
        spec.timing.limit = Limit::Buffers(100);
        spec.timing.warmup_seconds = 0.0;
        let p = tcp_params(&spec);
        assert_eq!((p.time, p.blockcount), (Some(0.0), Some(400.0)), "-n is per stream here, all streams there");
        let mut u = UdpSpec::new();
        u.payload_bytes = 1000;
        u.gap_ns = 80_000;
        let p = udp_params(&u);
        assert_eq!((p.udp, p.len, p.bandwidth), (Some(true), Some(1000.0), Some(100_000_000.0)));
        assert!(p.check().is_ok(), "a server takes it: {:?}", p.check());
    }
}
