//! One iperf3 client's test on the iperf3 port, this end as iperf3's server (esnet/iperf
//! `iperf_server_api.c`; the steps as Debian's 3.12 takes them): PARAM_EXCHANGE and the
//! parameters (bounded, checked, made into a linerate spec that the agent's limits apply to:
//! its test slots, its memory budget, its idle rule), CREATE_STREAMS and the data connections
//! (TCP: each with the cookie; UDP: a hello on the port's UDP socket, answered from a socket of
//! the stream's own), TEST_START and TEST_RUNNING, linerate's engines in iperf3's framing while
//! the control connection is watched (the client says when the test ends: TEST_END), then the
//! results both ways, DISPLAY_RESULTS and IPERF_DONE. Out: the document, through
//! [`AgentEvent::Iperf3Result`]; a refusal is answered as iperf3 answers one (SERVER_ERROR and
//! its `i_errno`, or ACCESS_DENIED) and told as [`AgentEvent::Refused`].

use super::sequence::{Action, Event, Failure, Sequence, failure, gone};
use super::turn::{Accepted, Turn};
use crate::agent::budget::{Reservation, spec_bytes};
use crate::agent::config::{AgentEvent, DATA_TIMEOUT};
use crate::agent::session::Quiet;
use crate::agent::state::{Slot, State};
use crate::engine::{self, sockopt, tcp, udp};
use crate::metrics::host::{self, HostInfo};
use crate::proto::ErrorKind;
use crate::proto::iperf3::{
    Checked, Control, IENEWTEST, IESTREAMACCEPT, Iperf3Error, MAX_PARAMS_BYTES, Results, STEP_TIMEOUT, State as Step,
    UDP_REPLY, results_limit,
};
use crate::result::{Role, SideReport};
use crate::spec::TestSpec;
use crate::summary::iperf3::{peer_of, results_of, side_of};
use crate::summary::{self, AgentOutcome};
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::VecDeque;
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// After TEST_END, how long the engine may take to end (its receivers to drain) before it is
/// aborted.
const END_WAIT: Duration = Duration::from_secs(5);
/// How often the watcher looks whether the agent is stopping.
const STOP_POLL: Duration = Duration::from_millis(100);

/// The UDP sockets of the iperf3 port, one per address it listens on: they take UDP streams'
/// hellos.
pub(super) struct Sockets {
    pub(super) udp: Vec<UdpSocket>,
}

/// A UDP socket with SO_REUSEADDR bound to `addr`: the port's hello socket, or a stream's socket
/// on the same address and port (connected to its client, the kernel prefers it for that
/// client's datagrams, as iperf3's own `iperf_udp_accept` relies on).
pub(super) fn reusable_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// What a test holds until its client says IPERF_DONE: the port, one of the agent's test slots
/// and its memory. Let go then, before the document is made and handed on (the owner may store
/// it), so that a script's next `iperf3 -c` finds the port free, as iperf3's own server is.
struct Hold<'a> {
    _turn: Turn<'a>,
    _slot: Slot<'a>,
    _memory: Option<Reservation<'a>>,
}

/// Runs one test on `control` (its cookie read), the port's `turn` its own.
pub(super) fn run(
    state: &State,
    events: &dyn Fn(&AgentEvent),
    sockets: &Sockets,
    turn: Turn<'_>,
    mut control: Control,
) {
    let peer = control.peer();
    let refused = |kind: ErrorKind, message: String| {
        events(&AgentEvent::Refused {
            peer,
            kind,
            message: format!("iperf3 client: {message}"),
        })
    };
    if state.stopping.load(Ordering::SeqCst) {
        let _ = control.send_state(Step::ServerTerminate);
        return refused(ErrorKind::Failed, "the agent is stopping".into());
    }
    let Some(slot) = Slot::take(&state.tests, state.config.max_tests) else {
        state.metrics.refused(ErrorKind::Busy);
        let _ = control.send_state(Step::AccessDenied);
        return refused(
            ErrorKind::Busy,
            format!(
                "this agent is running {} test(s), its limit; told the server is busy",
                state.config.max_tests
            ),
        );
    };
    let hold = Hold {
        _turn: turn,
        _slot: slot,
        _memory: None,
    };
    if let Err(f) = session(state, events, sockets, hold, &mut control) {
        if f.i_errno != 0 {
            let mut answer = vec![Step::ServerError.byte()];
            answer.extend_from_slice(&f.i_errno.to_be_bytes());
            answer.extend_from_slice(&f.errno.to_be_bytes());
            let _ = control.send_bytes(&answer, "sending an error");
        }
        refused(f.kind, f.message);
    }
}

/// The parameters, the limits, then the test between TestStarted and TestEnded.
fn session<'a>(
    state: &'a State,
    events: &dyn Fn(&AgentEvent),
    sockets: &Sockets,
    mut hold: Hold<'a>,
    control: &mut Control,
) -> Result<(), Failure> {
    let peer = control.peer();
    let (mut seq, first) = Sequence::start(peer);
    let (checked, spec) = admit(state, &mut seq, &mut hold, control, first)?;
    let test = spec.kind();
    events(&AgentEvent::TestStarted { peer, test });
    let began = Instant::now();
    let outcome = run_test(state, sockets, hold, control, &mut seq, &checked, &spec);
    state.metrics.duration(test, began.elapsed());
    events(&AgentEvent::TestEnded {
        peer,
        test,
        completed: outcome.is_ok(),
    });
    let result = outcome?;
    events(&AgentEvent::Iperf3Result {
        peer,
        result: Box::new(result),
    });
    Ok(())
}

/// PARAM_EXCHANGE, the parameters and the agent's limits (its memory budget), as the sequence
/// says: the test admitted, or refused and counted so.
fn admit<'a>(
    state: &'a State,
    seq: &mut Sequence,
    hold: &mut Hold<'a>,
    control: &mut Control,
    first: Vec<Action>,
) -> Result<(Checked, TestSpec), Failure> {
    let mut queue = VecDeque::from(first);
    while let Some(action) = queue.pop_front() {
        match action {
            Action::Send(step) => control.send_state(step).map_err(gone)?,
            Action::ReadParams => {
                let mut bytes = Vec::new();
                let message = read_json(control, MAX_PARAMS_BYTES, "sending its parameters", &mut bytes);
                queue.extend(seq.handle(Event::Params(message)));
            }
            Action::Refuse(f) => {
                state.metrics.refused(f.kind);
                return Err(f);
            }
            Action::Admit(admitted) => {
                let (checked, spec) = *admitted;
                let memory = state.budget.reserve(spec_bytes(&spec)).map_err(|over| {
                    let kind = if over.never_fits() {
                        ErrorKind::BadSpec
                    } else {
                        ErrorKind::Busy
                    };
                    state.metrics.refused(kind);
                    failure(IENEWTEST, libc::ENOMEM, kind, over.to_string())
                })?;
                hold._memory = Some(memory);
                return Ok((checked, spec));
            }
            other => unreachable!("the sequence says {other:?} before a test is admitted"),
        }
    }
    unreachable!("the sequence admits or refuses the parameters")
}

/// From CREATE_STREAMS to the results and the document, as the sequence says: the streams, the
/// engine with the control connection watched, the results both ways (the client's first),
/// IPERF_DONE.
fn run_test(
    state: &State,
    sockets: &Sockets,
    hold: Hold<'_>,
    control: &mut Control,
    seq: &mut Sequence,
    checked: &Checked,
    spec: &TestSpec,
) -> Result<crate::result::TestResult, Failure> {
    let n = spec.streams_per_agent();
    let roles: Vec<Role> = (0..n)
        .map(|i| {
            Role::of_agent(match spec {
                TestSpec::Tcp(t) => t.stream_flows_forward(i),
                TestSpec::Udp(u) => u.stream_flows_forward(i),
                _ => true,
            })
        })
        .collect();
    let mut notes = Vec::new();
    let (mut streams, mut engine, mut local, mut results) = (None, None, None, None);
    let mut started_unix_ms = 0;
    let mut queue = VecDeque::from(seq.handle(Event::Admitted));
    loop {
        let Some(action) = queue.pop_front() else {
            // The run's own steps are done (only the run leaves nothing queued): the engine's
            // report, then the results.
            let report: Result<SideReport, engine::EngineError> =
                engine.take().expect("the queue empties only after the run");
            let mut report = report.map_err(|e| failure(IENEWTEST, libc::EIO, ErrorKind::Failed, e.to_string()))?;
            state.metrics.test_report(spec.kind(), &report);
            let used: Vec<String> = host::interface_towards(control.peer().ip()).into_iter().collect();
            report.config = Some(host::read_config(&used));
            local = Some(report);
            queue.extend(seq.handle(Event::Reported));
            continue;
        };
        match action {
            Action::Send(step) => control.send_state(step).map_err(gone)?,
            Action::Note(note) => notes.push(note),
            Action::Fail(f) | Action::Refuse(f) => return Err(f),
            Action::OpenStreams => {
                streams = Some(open_streams(&hold, sockets, control, checked, spec, &roles)?);
                started_unix_ms = crate::unixtime::now_unix_ms();
                queue.extend(seq.handle(Event::StreamsOpen));
            }
            Action::Run => {
                let opened = streams.take().expect("the sequence opens the streams before the run");
                let (report, rest) = run_engine(state, control, seq, spec, opened);
                engine = Some(report);
                queue.extend(rest);
            }
            Action::ReadEnd => queue.extend(seq.handle(read_state(control, "ending its test"))),
            Action::ReadResults => {
                let ours: &SideReport = local.as_ref().expect("the report comes before the results");
                let seconds = ours.window_end_ns.saturating_sub(ours.window_start_ns) as f64 / 1e9;
                let mut bytes = Vec::new();
                let message = read_json(control, results_limit(n, seconds), "sending its results", &mut bytes);
                queue.extend(seq.handle(Event::Results(message)));
            }
            Action::SendResults(theirs) => {
                let ours = local.as_ref().expect("the report comes before the results");
                control.send_json(&results_of(ours, checked.udp)).map_err(gone)?;
                results = Some(*theirs);
            }
            Action::ReadDone => queue.extend(seq.handle(read_state(control, "closing its test"))),
            Action::Finish => break,
            other => unreachable!("the sequence says {other:?} once the test is admitted"),
        }
    }
    drop(hold);
    let ran = Ran {
        report: local.expect("the report comes before the results"),
        results: results.expect("the client's results come before IPERF_DONE"),
        roles,
        notes,
        started_unix_ms,
    };
    Ok(document(state, control, checked, spec, ran))
}

/// A JSON message the client sent (at most `max` bytes, kept in `into`), or why none came, as
/// the sequence is fed it.
fn read_json<'b>(
    control: &mut Control,
    max: usize,
    what: &'static str,
    into: &'b mut Vec<u8>,
) -> Result<&'b [u8], Iperf3Error> {
    *into = control.recv_json(max, STEP_TIMEOUT, what)?;
    Ok(into)
}

/// A state the client sent, or why none came, as the sequence is fed it.
fn read_state(control: &mut Control, what: &'static str) -> Event<'static> {
    match control.recv_state(STEP_TIMEOUT, what) {
        Ok(step) => Event::Received(step),
        Err(e) => Event::Lost(e),
    }
}

/// CREATE_STREAMS and the data streams: UDP, a socket of its own for each hello on the port's
/// UDP socket; TCP, the port's data connections with the cookie, in the order iperf3 made them.
fn open_streams(
    hold: &Hold<'_>,
    sockets: &Sockets,
    control: &mut Control,
    checked: &Checked,
    spec: &TestSpec,
    roles: &[Role],
) -> Result<Streams, Failure> {
    let (peer, n) = (control.peer(), roles.len());
    Ok(match spec {
        TestSpec::Udp(u) => {
            let hello = hello_socket(sockets, control)?;
            control.send_state(Step::CreateStreams).map_err(gone)?;
            let connected = udp_streams(hello, peer, n)?;
            let mut streams = Vec::with_capacity(n);
            for (i, socket) in connected.into_iter().enumerate() {
                let grant = udp::configure(&socket, u, roles[i]).map_err(stream_failure)?;
                streams.push(udp::UdpStream {
                    id: i as u16,
                    wire_id: i as u16,
                    test_id: 0,
                    role: roles[i],
                    socket,
                    grant,
                    framing: udp::Framing::Iperf3 {
                        counters_64bit: checked.udp_counters_64bit,
                    },
                });
            }
            Streams::Udp(streams)
        }
        TestSpec::Tcp(t) => {
            let rx = hold._turn.expect(n);
            control.send_state(Step::CreateStreams).map_err(gone)?;
            let connected = tcp_streams(&rx, n);
            hold._turn.expect_none();
            let mut streams = Vec::with_capacity(n);
            for (i, socket) in connected?.into_iter().enumerate() {
                let grant = sockopt::configure(&socket, t, roles[i]).map_err(stream_failure)?;
                streams.push(tcp::DataStream {
                    id: i as u16,
                    role: roles[i],
                    socket,
                    grant,
                });
            }
            Streams::Tcp(streams)
        }
        _ => unreachable!("spec_of makes TCP and UDP specs only"),
    })
}

/// This end's streams, ready for the engine.
enum Streams {
    Tcp(Vec<tcp::DataStream>),
    Udp(Vec<udp::UdpStream>),
}

/// What the test left for its document: this end's report, the client's results, each stream's
/// role here, the notes, and when the streams were made.
struct Ran {
    report: SideReport,
    results: Results,
    roles: Vec<Role>,
    notes: Vec<String>,
    started_unix_ms: u64,
}

/// The document: this end's report joined with the client's results as its far end, and the
/// client as iperf3 said it.
fn document(
    state: &State,
    control: &Control,
    checked: &Checked,
    spec: &TestSpec,
    ran: Ran,
) -> crate::result::TestResult {
    let Ran {
        report,
        results,
        roles,
        mut notes,
        started_unix_ms,
    } = ran;
    let peer = control.peer();
    let udp = checked.udp;
    if !udp && checked.bandwidth.is_some() && roles.contains(&Role::Send) {
        notes.push("iperf3's -b on TCP was not applied: this end sent unpaced".into());
    }
    let client = side_of(&results, &roles, udp);
    let local = control
        .stream()
        .local_addr()
        .map_or_else(|_| "agent".into(), |a| a.to_string());
    let agents = [AgentOutcome {
        name: &local,
        host: Some(&state.host),
        report: Some(&report),
        client: &client,
    }];
    let ipv6 = peer.ip().to_canonical().is_ipv6();
    // The client's host is not known (iperf3 does not say): its record stays empty, never this
    // host's.
    let mut result = summary::assemble(spec, HostInfo::default(), &agents, started_unix_ms, notes, ipv6);
    result.iperf3 = Some(peer_of(
        &results,
        &roles,
        udp,
        "client",
        peer.to_string(),
        checked.client_version.clone(),
        None,
    ));
    result
}

/// A data socket that could not be set up.
fn stream_failure(e: engine::EngineError) -> Failure {
    let source = std::error::Error::source(&e)
        .map(|s| format!(": {s}"))
        .unwrap_or_default();
    failure(IENEWTEST, libc::EINVAL, ErrorKind::Failed, format!("{e}{source}"))
}

/// The `wanted` TCP data connections (their cookies read by the port's connection threads), in
/// the order they were accepted: the order iperf3 made them in.
fn tcp_streams(rx: &Receiver<Accepted>, wanted: usize) -> Result<Vec<TcpStream>, Failure> {
    let deadline = Instant::now() + DATA_TIMEOUT;
    let mut got = Vec::with_capacity(wanted);
    while got.len() < wanted {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(s) => got.push(s),
            Err(_) => {
                return Err(failure(
                    IESTREAMACCEPT,
                    libc::ETIMEDOUT,
                    ErrorKind::Failed,
                    format!(
                        "{} of {wanted} data connections arrived within {} s",
                        got.len(),
                        DATA_TIMEOUT.as_secs()
                    ),
                ));
            }
        }
    }
    got.sort_by_key(|(order, _)| *order);
    Ok(got.into_iter().map(|(_, s)| s).collect())
}

/// The port's UDP socket on the address the client reached, emptied of hellos left over.
fn hello_socket<'s>(sockets: &'s Sockets, control: &Control) -> Result<&'s UdpSocket, Failure> {
    let local = control.stream().local_addr().map_err(|e| {
        failure(
            IENEWTEST,
            e.raw_os_error().unwrap_or(0),
            ErrorKind::Failed,
            e.to_string(),
        )
    })?;
    let hello = sockets
        .udp
        .iter()
        .find(|u| {
            u.local_addr()
                .is_ok_and(|a| a.ip() == local.ip() || a.ip().is_unspecified())
        })
        .ok_or_else(|| {
            failure(
                IENEWTEST,
                libc::EADDRNOTAVAIL,
                ErrorKind::Failed,
                "no UDP socket on this address",
            )
        })?;
    let _ = hello.set_nonblocking(true);
    let mut buf = [0u8; 64];
    while hello.recv_from(&mut buf).is_ok() {}
    let _ = hello.set_nonblocking(false);
    Ok(hello)
}

/// The `wanted` UDP streams: each hello from the client's address gets a socket of its own on
/// the port, connected to where the hello came from, which answers it.
fn udp_streams(hello: &UdpSocket, peer: SocketAddr, wanted: usize) -> Result<Vec<UdpSocket>, Failure> {
    let local = hello.local_addr().map_err(|e| {
        failure(
            IESTREAMACCEPT,
            e.raw_os_error().unwrap_or(0),
            ErrorKind::Failed,
            e.to_string(),
        )
    })?;
    let deadline = Instant::now() + DATA_TIMEOUT;
    let mut got: Vec<UdpSocket> = Vec::with_capacity(wanted);
    let mut from_seen: Vec<SocketAddr> = Vec::with_capacity(wanted);
    let mut buf = [0u8; 64];
    while got.len() < wanted {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(failure(
                IESTREAMACCEPT,
                libc::ETIMEDOUT,
                ErrorKind::Failed,
                format!(
                    "{} of {wanted} UDP streams said hello within {} s",
                    got.len(),
                    DATA_TIMEOUT.as_secs()
                ),
            ));
        }
        let _ = hello.set_read_timeout(Some(left.min(STOP_POLL)));
        let Ok((len, from)) = hello.recv_from(&mut buf) else {
            continue;
        };
        // A hello is four bytes (iperf3 sends "9876"); others, and other addresses', are strays.
        if len != 4 || from.ip().to_canonical() != peer.ip().to_canonical() || from_seen.contains(&from) {
            continue;
        }
        let io = |e: std::io::Error| {
            failure(
                IESTREAMACCEPT,
                e.raw_os_error().unwrap_or(0),
                ErrorKind::Failed,
                format!("a UDP stream's socket: {e}"),
            )
        };
        let socket = reusable_udp(local).map_err(io)?;
        socket.connect(from).map_err(io)?;
        socket.send(&UDP_REPLY).map_err(io)?;
        from_seen.push(from);
        got.push(socket);
    }
    Ok(got)
}

/// Runs the engine while a thread watches the control connection and feeds the sequence what
/// it reads: TEST_END stops the senders and wakes the TCP receivers (iperf3's client keeps its
/// data sockets open until the end, so they are shut for reading here: what is in their
/// buffers is still read, then the end). The engine's report, and the sequence's steps left
/// for after the run.
fn run_engine(
    state: &State,
    control: &mut Control,
    seq: &mut Sequence,
    spec: &TestSpec,
    streams: Streams,
) -> (Result<SideReport, engine::EngineError>, Vec<Action>) {
    let flags = engine::Control {
        idle: state.config.idle,
        peer_ends: true,
        ..engine::Control::default()
    };
    let unblock: Vec<TcpStream> = match &streams {
        Streams::Tcp(s) => s
            .iter()
            .filter(|d| d.role == Role::Receive)
            .filter_map(|d| d.socket.try_clone().ok())
            .collect(),
        Streams::Udp(_) => Vec::new(),
    };
    let engine_done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch(control, seq, &flags, &engine_done, &state.stopping, &unblock));
        let report = match (streams, spec) {
            (Streams::Tcp(s), TestSpec::Tcp(t)) => tcp::run(t, &[], s, &mut Quiet, &flags),
            (Streams::Udp(s), TestSpec::Udp(u)) => udp::run(u, &[], s, &mut Quiet, &flags),
            _ => unreachable!("the streams are made from the spec"),
        };
        engine_done.store(true, Ordering::SeqCst);
        let rest = watcher
            .join()
            .unwrap_or_else(|_| vec![Action::Fail(failure(0, 0, ErrorKind::Failed, "its watcher failed"))]);
        (report, rest)
    })
}

/// Reads the control connection while the engine runs (see [`run_engine`]) until the sequence
/// has its end: does what it says of the engine (stop sending, abort) and returns the rest.
fn watch(
    control: &mut Control,
    seq: &mut Sequence,
    flags: &engine::Control,
    engine_done: &AtomicBool,
    stopping: &AtomicBool,
    unblock: &[TcpStream],
) -> Vec<Action> {
    let event = loop {
        if engine_done.load(Ordering::SeqCst) {
            break Event::EngineDone;
        }
        if stopping.load(Ordering::SeqCst) {
            break Event::Stopping;
        }
        match control.poll_state(STOP_POLL, "running its test") {
            Ok(None) => continue,
            Ok(Some(step)) => break Event::Received(step),
            Err(e) => break Event::Lost(e),
        }
    };
    let mut rest = Vec::new();
    for action in seq.handle(event) {
        match action {
            Action::Abort => flags.abort(),
            Action::StopSending => stop_sending(flags, engine_done, unblock),
            other => rest.push(other),
        }
    }
    rest
}

/// TEST_END: the senders stop, the TCP receivers are woken, and the engine has [`END_WAIT`] to
/// end (its receivers to drain) before it is aborted.
fn stop_sending(flags: &engine::Control, engine_done: &AtomicBool, unblock: &[TcpStream]) {
    flags.stop_send();
    for s in unblock {
        let _ = s.shutdown(Shutdown::Read);
    }
    let until = Instant::now() + END_WAIT;
    while !engine_done.load(Ordering::SeqCst) {
        if Instant::now() >= until {
            flags.abort();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
