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

use super::turn::{Accepted, Turn};
use crate::agent::budget::{Reservation, spec_bytes};
use crate::agent::config::{AgentEvent, DATA_TIMEOUT};
use crate::agent::session::Quiet;
use crate::agent::state::{Slot, State};
use crate::engine::{self, sockopt, tcp, udp};
use crate::metrics::host::{self, HostInfo};
use crate::proto::ErrorKind;
use crate::proto::iperf3::{
    Checked, Control, IEAUTHTEST, IENEWTEST, IERECVPARAMS, IERECVRESULTS, IESTREAMACCEPT, Iperf3Error,
    MAX_PARAMS_BYTES, Params, Results, STEP_TIMEOUT, State as Step, UDP_REPLY, results_limit, spec_of,
};
use crate::result::{Role, SideReport};
use crate::spec::TestSpec;
use crate::summary::iperf3::{peer_of, results_of, side_of};
use crate::summary::{self, AgentOutcome};
use socket2::{Domain, Protocol, Socket, Type};
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

/// Why a test ended early: what the client is told (`i_errno` and `errno` after SERVER_ERROR; 0:
/// nothing, the connection just closes) and what the agent's owner hears.
struct Failure {
    i_errno: i32,
    errno: i32,
    kind: ErrorKind,
    message: String,
}

fn failure(i_errno: i32, errno: i32, kind: ErrorKind, message: impl Into<String>) -> Failure {
    Failure {
        i_errno,
        errno,
        kind,
        message: message.into(),
    }
}

/// The control connection failed: nothing more is sent.
fn gone(e: Iperf3Error) -> Failure {
    failure(0, 0, ErrorKind::Protocol, e.to_string())
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
    control.send_state(Step::ParamExchange).map_err(gone)?;
    let refuse = |i_errno: i32, errno: i32, kind: ErrorKind, message: String| {
        state.metrics.refused(kind);
        failure(i_errno, errno, kind, message)
    };
    let bytes = control
        .recv_json(MAX_PARAMS_BYTES, STEP_TIMEOUT, "sending its parameters")
        .map_err(|e| refuse(IERECVPARAMS, libc::EINVAL, ErrorKind::Protocol, e.to_string()))?;
    let params = Params::parse(&bytes, peer)
        .map_err(|e| refuse(IERECVPARAMS, libc::EINVAL, ErrorKind::BadSpec, e.to_string()))?;
    let checked = params.check().map_err(|m| match params.authtoken {
        Some(_) => refuse(IEAUTHTEST, 0, ErrorKind::Auth, m),
        None => refuse(IERECVPARAMS, libc::EINVAL, ErrorKind::BadSpec, m),
    })?;
    let spec = spec_of(&checked);
    spec.validate()
        .map_err(|e| refuse(IENEWTEST, libc::EINVAL, ErrorKind::BadSpec, e.to_string()))?;
    let memory = state.budget.reserve(spec_bytes(&spec)).map_err(|over| {
        let kind = if over.never_fits() {
            ErrorKind::BadSpec
        } else {
            ErrorKind::Busy
        };
        refuse(IENEWTEST, libc::ENOMEM, kind, over.to_string())
    })?;
    hold._memory = Some(memory);
    let test = spec.kind();
    events(&AgentEvent::TestStarted { peer, test });
    let began = Instant::now();
    let outcome = run_test(state, sockets, hold, control, &checked, &spec);
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

/// This end's streams, ready for the engine.
enum Streams {
    Tcp(Vec<tcp::DataStream>),
    Udp(Vec<udp::UdpStream>),
}

/// From CREATE_STREAMS to the results and the document.
fn run_test(
    state: &State,
    sockets: &Sockets,
    hold: Hold<'_>,
    control: &mut Control,
    checked: &Checked,
    spec: &TestSpec,
) -> Result<crate::result::TestResult, Failure> {
    let peer = control.peer();
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
    let streams = match spec {
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
    };
    let started_unix_ms = crate::unixtime::now_unix_ms();
    control.send_state(Step::TestStart).map_err(gone)?;
    control.send_state(Step::TestRunning).map_err(gone)?;
    let (mut report, mut notes) = run_engine(state, control, spec, streams)?;
    state.metrics.test_report(spec.kind(), &report);
    let used: Vec<String> = host::interface_towards(peer.ip()).into_iter().collect();
    report.config = Some(host::read_config(&used));
    // The results, as iperf3's server exchanges them: the client's first, then this end's.
    let udp = checked.udp;
    control.send_state(Step::ExchangeResults).map_err(gone)?;
    let seconds = report.window_end_ns.saturating_sub(report.window_start_ns) as f64 / 1e9;
    let theirs = control
        .recv_json(results_limit(n, seconds), STEP_TIMEOUT, "sending its results")
        .map_err(|e| failure(IERECVRESULTS, libc::EINVAL, ErrorKind::Protocol, e.to_string()))?;
    let results = Results::parse(&theirs, peer, n)
        .map_err(|e| failure(IERECVRESULTS, libc::EINVAL, ErrorKind::Protocol, e.to_string()))?;
    control.send_json(&results_of(&report, udp)).map_err(gone)?;
    control.send_state(Step::DisplayResults).map_err(gone)?;
    match control.recv_state(STEP_TIMEOUT, "closing its test") {
        Ok(Step::IperfDone) => {}
        Ok(other) => notes.push(format!("the iperf3 client ended with state {other:?}, not IPERF_DONE")),
        Err(e) => notes.push(format!("the iperf3 client did not say IPERF_DONE: {e}")),
    }
    drop(hold);
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
    Ok(result)
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

/// How the watcher saw the test end.
enum Watched {
    /// The client said TEST_END.
    Ended,
    /// The engine ended before the client said so.
    EngineFirst,
    /// The client went away or spoke out of turn; the engine was aborted.
    Gone(String),
    /// The agent is stopping; the engine was aborted.
    Stopping,
}

/// Runs the engine while a thread watches the control connection: TEST_END stops the senders
/// and wakes the TCP receivers (iperf3's client keeps its data sockets open until the end, so
/// they are shut for reading here: what is in their buffers is still read, then the end).
fn run_engine(
    state: &State,
    control: &mut Control,
    spec: &TestSpec,
    streams: Streams,
) -> Result<(SideReport, Vec<String>), Failure> {
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
    let (report, watched) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch(control, &flags, &engine_done, &state.stopping, &unblock));
        let report = match (streams, spec) {
            (Streams::Tcp(s), TestSpec::Tcp(t)) => tcp::run(t, &[], s, &mut Quiet, &flags),
            (Streams::Udp(s), TestSpec::Udp(u)) => udp::run(u, &[], s, &mut Quiet, &flags),
            _ => unreachable!("the streams are made from the spec"),
        };
        engine_done.store(true, Ordering::SeqCst);
        (
            report,
            watcher.join().unwrap_or(Watched::Gone("its watcher failed".into())),
        )
    });
    let mut notes = Vec::new();
    match watched {
        Watched::Ended => {}
        Watched::EngineFirst => {
            // Its idle rule, or every stream ended on its own: the client still says when.
            match control.recv_state(STEP_TIMEOUT, "ending its test") {
                Ok(Step::TestEnd) => {}
                Ok(other) => {
                    return Err(failure(
                        0,
                        0,
                        ErrorKind::Protocol,
                        format!("sent {other:?} while its test ran"),
                    ));
                }
                Err(e) => return Err(gone(e)),
            }
            notes.push("this end's streams ended before the iperf3 client said the test was over".into());
        }
        Watched::Gone(why) => return Err(failure(0, 0, ErrorKind::Failed, why)),
        Watched::Stopping => {
            let _ = control.send_state(Step::ServerTerminate);
            return Err(failure(
                0,
                0,
                ErrorKind::Failed,
                "the agent is stopping: the test was ended early",
            ));
        }
    }
    let report = report.map_err(|e| failure(IENEWTEST, libc::EIO, ErrorKind::Failed, e.to_string()))?;
    Ok((report, notes))
}

/// Reads the control connection while the engine runs (see [`run_engine`]).
fn watch(
    control: &mut Control,
    flags: &engine::Control,
    engine_done: &AtomicBool,
    stopping: &AtomicBool,
    unblock: &[TcpStream],
) -> Watched {
    loop {
        if engine_done.load(Ordering::SeqCst) {
            return Watched::EngineFirst;
        }
        if stopping.load(Ordering::SeqCst) {
            flags.abort();
            return Watched::Stopping;
        }
        match control.poll_state(STOP_POLL, "running its test") {
            Ok(None) => continue,
            Ok(Some(Step::TestEnd)) => break,
            Ok(Some(other)) => {
                flags.abort();
                return Watched::Gone(format!("sent {other:?} while its test ran"));
            }
            Err(e) => {
                flags.abort();
                return Watched::Gone(e.to_string());
            }
        }
    }
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
    Watched::Ended
}
