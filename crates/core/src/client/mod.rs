//! Running a test from the client's end: connect to each agent, authenticate, agree on the test,
//! open the data connections, start every agent and then the local engine, watch the control
//! connections while it runs, and join everyone's measurements into one [`TestResult`].

use crate::engine::{Control, EngineError, rr, sockopt, tcp, udp};
use crate::metrics::host::HostInfo;
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::frame::{self, COOKIE_LEN};
use crate::proto::{Message, auth};
use crate::result::{Role, SideReport, SocketGrant, TestResult};
use crate::spec::{RrProto, RrSpec, TcpSpec, TestSpec, UdpSpec};
use crate::summary::{self, AgentOutcome};
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What a caller of the client names: the sink its live lines implement, the HTTP targets it
/// builds, and the agent's port (the engine and the protocol stay behind the client).
pub use crate::engine::Sink;
pub use crate::engine::http::{HttpTarget, HttpUrl};
pub use crate::proto::DEFAULT_PORT;
pub use http::{HttpAgent, http_targets, run_http};

mod http;

/// How long an agent may take to send its result once the local engine has finished.
const RESULT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long an agent may take to answer a set-up message.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest message read from an agent before its result (hello, auth_ok, accepted,
/// started, an error): they are small, and a larger one is refused from its length prefix
/// rather than parsed (issue 14). The result has its own bound, from the test.
const MAX_SETUP_MESSAGE_BYTES: u32 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("'{0}' is not a host name or address")]
    BadHost(String),
    #[error("cannot resolve '{host}'")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot connect to {peer}")]
    Connect {
        peer: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("no answer from {peer} within {seconds} s (connect timeout)")]
    ConnectTimeout { peer: SocketAddr, seconds: f64 },
    #[error(transparent)]
    Proto(#[from] ProtoError),
    #[error("{peer} requires a secret: give --secret-file PATH or set LINERATE_SECRET")]
    NeedSecret { peer: SocketAddr },
    #[error("{peer} sent a malformed {what}")]
    Malformed { peer: SocketAddr, what: &'static str },
    #[error("{peer} could not prove it knows the secret: not the agent you meant")]
    AgentProof { peer: SocketAddr },
    /// The client holds a secret but the agent asked for none: it cannot prove who it is, so an
    /// impostor would skip authentication this way (issue 14, item 9).
    #[error(
        "{peer} asked for no secret, so it cannot prove it is the agent you meant; give --allow-unauthenticated-agent to run against it anyway"
    )]
    Unauthenticated { peer: SocketAddr },
    #[error("{streams} streams in all is more than the 65535 one client can number")]
    TooManyStreams { streams: usize },
    #[error("data connection to {peer}")]
    Data {
        peer: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// An agent to run against: as the user wrote it, and where that resolved to.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub addr: SocketAddr,
}

impl Target {
    /// `HOST`, `HOST:PORT`, `ADDR`, `[V6ADDR]:PORT` or a bare IPv6 address; the port defaults to
    /// `default_port` (normally [`DEFAULT_PORT`]).
    pub fn resolve(text: &str, default_port: u16) -> Result<Target, ClientError> {
        let bad = || ClientError::BadHost(text.to_string());
        if text.trim().is_empty() || text.chars().any(char::is_whitespace) {
            return Err(bad());
        }
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(Target {
                name: text.to_string(),
                addr,
            });
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(Target {
                name: text.to_string(),
                addr: SocketAddr::new(ip, default_port),
            });
        }
        let with_port = match text.rsplit_once(':') {
            Some((_, port)) if port.parse::<u16>().is_ok() => text.to_string(),
            Some(_) => return Err(bad()),
            None => format!("{text}:{default_port}"),
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|source| ClientError::Resolve {
                host: text.to_string(),
                source,
            })?
            .next()
            .ok_or_else(bad)?;
        Ok(Target {
            name: text.to_string(),
            addr,
        })
    }
}

/// How the client reaches agents.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub secret: Option<Vec<u8>>,
    pub connect_timeout: Duration,
    /// The local address control and data connections leave from (`-B`); None: the kernel's.
    pub bind: Option<IpAddr>,
    /// With a secret, still run against an agent that asks for none (and so proves nothing).
    /// Without a secret this changes nothing: such an agent is the only kind reachable.
    pub allow_unauthenticated_agent: bool,
    /// The agents' profile to run the test under (`--profile`); every agent must have it.
    pub profile: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            secret: None,
            connect_timeout: Duration::from_secs(5),
            bind: None,
            allow_unauthenticated_agent: false,
            profile: None,
        }
    }
}

fn connect(
    addr: SocketAddr,
    opts: &ClientOptions,
    before: impl FnOnce(&socket2::Socket) -> Result<(), EngineError>,
) -> Result<TcpStream, ClientError> {
    let timeout = opts.connect_timeout;
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .map_err(|source| ClientError::Connect { peer: addr, source })?;
    if let Some(ip) = opts.bind {
        sock.bind(&SocketAddr::new(ip, 0).into())
            .map_err(|source| ClientError::Connect { peer: addr, source })?;
    }
    before(&sock)?;
    match sock.connect_timeout(&addr.into(), timeout) {
        Ok(()) => Ok(sock.into()),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {
            Err(ClientError::ConnectTimeout {
                peer: addr,
                seconds: timeout.as_secs_f64(),
            })
        }
        Err(source) => Err(ClientError::Connect { peer: addr, source }),
    }
}

/// Stream `index`'s data connection to the agent at `peer` for the test `cookie` names:
/// connected (`before` sets the socket's options first) and its header sent, each within the
/// connect timeout.
fn data_connection(
    peer: SocketAddr,
    opts: &ClientOptions,
    cookie: &[u8; COOKIE_LEN],
    index: u16,
    before: impl FnOnce(&socket2::Socket) -> Result<(), EngineError>,
) -> Result<TcpStream, ClientError> {
    let mut sock = connect(peer, opts, before)?;
    let data = |source| ClientError::Data { peer, source };
    sock.set_write_timeout(Some(opts.connect_timeout)).map_err(data)?;
    sock.write_all(&frame::data_header(cookie, index)).map_err(data)?;
    Ok(sock)
}

/// A control connection that has passed the handshake and had its test accepted.
pub(crate) struct Session {
    pub target: Target,
    pub conn: Conn,
    pub cookie: [u8; COOKIE_LEN],
    pub host: HostInfo,
    /// The agent's UDP data sockets (UDP tests).
    pub udp_ports: Vec<u16>,
    /// How long the agent may be silent after the local engine is done before its result is
    /// given up (longer under a profile: its undo runs first).
    pub result_timeout: Duration,
}

/// Connects, exchanges preambles, authenticates and asks for `spec`.
pub(crate) fn open_session(target: &Target, spec: &TestSpec, opts: &ClientOptions) -> Result<Session, ClientError> {
    let peer = target.addr;
    let stream = connect(peer, opts, |_| Ok(()))?;
    let mut conn = Conn::new(stream, peer);
    conn.set_max_message(MAX_SETUP_MESSAGE_BYTES);
    conn.exchange_preambles(opts.connect_timeout)?;
    let challenge = match conn.recv(REPLY_TIMEOUT, "waiting for the agent's hello")? {
        Message::Hello { challenge, .. } => challenge,
        other => return Err(conn.unexpected("hello", &other).into()),
    };
    if let Some(challenge) = challenge {
        let agent_nonce = crate::codec::from_hex(&challenge).ok_or(ClientError::Malformed {
            peer,
            what: "challenge",
        })?;
        let secret = opts.secret.as_deref().ok_or(ClientError::NeedSecret { peer })?;
        let client_nonce = auth::nonce();
        let mac = auth::client_proof(secret, &agent_nonce, &client_nonce);
        conn.send(&Message::Auth {
            client_nonce: crate::codec::to_hex(&client_nonce),
            mac: crate::codec::to_hex(&mac),
        })?;
        match conn.recv(REPLY_TIMEOUT, "authenticating")? {
            Message::AuthOk { mac } => {
                let proof = crate::codec::from_hex(&mac).ok_or(ClientError::Malformed { peer, what: "proof" })?;
                if !auth::verify_agent(secret, &agent_nonce, &client_nonce, &proof) {
                    return Err(ClientError::AgentProof { peer });
                }
            }
            other => return Err(conn.unexpected("auth_ok", &other).into()),
        }
    } else if opts.secret.is_some() && !opts.allow_unauthenticated_agent {
        // Mutual authentication or none: a client that holds a secret expects the agent to
        // prove it knows it, so `challenge: null` is a downgrade, not a shortcut.
        return Err(ClientError::Unauthenticated { peer });
    }
    conn.send(&Message::Request {
        spec: spec.clone(),
        profile: opts.profile.clone(),
    })?;
    // Under a profile the agent runs its command before it accepts, and its undo before it
    // sends its result.
    let allowance = opts
        .profile
        .as_ref()
        .map_or(Duration::ZERO, |_| crate::proto::PROFILE_TIMEOUT);
    match conn.recv(REPLY_TIMEOUT + allowance, "waiting for the test to be accepted")? {
        Message::Accepted {
            cookie,
            host,
            udp_ports,
        } => {
            let bytes = crate::codec::from_hex(&cookie).ok_or(ClientError::Malformed { peer, what: "cookie" })?;
            let cookie: [u8; COOKIE_LEN] = bytes
                .try_into()
                .map_err(|_| ClientError::Malformed { peer, what: "cookie" })?;
            Ok(Session {
                target: target.clone(),
                conn,
                cookie,
                // The agent's host name and OS reach the report: no escape sequence in them.
                host: summary::check::escape_controls(host),
                udp_ports,
                result_timeout: RESULT_TIMEOUT + allowance,
            })
        }
        other => Err(conn.unexpected("accepted", &other).into()),
    }
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

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
    let total = per_agent * targets.len();
    let mut sessions = open_sessions(&test, &spec.cpus, targets, opts)?;

    // Data connections: stream i of agent a is client stream a * per_agent + i (under --mix
    // connection i carries streams i and i + streams of its agent).
    let mut streams = Vec::with_capacity(total);
    for (a, s) in sessions.iter().enumerate() {
        let peer = s.target.addr;
        for i in 0..spec.connections_per_agent() {
            let role = if spec.stream_flows_forward(i) {
                Role::Send
            } else {
                Role::Receive
            };
            let sock = data_connection(peer, opts, &s.cookie, i as u16, |sock| {
                sockopt::before_connect(sock, spec)
            })?;
            let grant = match spec.mix {
                Some(_) => tcp::mix::configure(&sock, spec)?,
                None => sockopt::configure(&sock, spec, role)?,
            };
            streams.push(tcp::DataStream {
                id: (a * per_agent + i) as u16,
                role,
                socket: sock,
                grant,
            });
        }
    }
    start_all(&mut sessions)?;

    let mut r = drive(
        &TestSpec::Tcp(spec.clone()),
        &mut sessions,
        interrupt,
        |control| match spec.mix {
            Some(_) => tcp::mix::run(spec, tcp::mix::MixEnd::Client, &spec.cpus, streams, sink, control),
            None => tcp::run(spec, &spec.cpus, streams, sink, control),
        },
    )?;
    let ipv6 = sessions.first().is_some_and(|s| s.target.addr.is_ipv6());
    add_line_rate(&mut r, spec, ipv6);
    Ok(r)
}

/// The test id UDP datagrams carry: the first 8 bytes of the agent's cookie.
pub(crate) fn udp_test_id(cookie: &[u8; COOKIE_LEN]) -> u64 {
    u64::from_le_bytes(cookie[..8].try_into().expect("a cookie is 16 bytes"))
}

/// Runs a UDP test against every target at once and returns the joined result.
pub fn run_udp(
    spec: &UdpSpec,
    targets: &[Target],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    let test = TestSpec::Udp(spec.clone());
    let per_agent = test.streams_per_agent();
    let total = per_agent * targets.len();
    let mut sessions = open_sessions(&test, &spec.cpus, targets, opts)?;
    let mut streams = Vec::with_capacity(total);
    let mut multicast_ports: Vec<u16> = Vec::new();
    for (a, s) in sessions.iter_mut().enumerate() {
        let peer = s.target.addr;
        if s.udp_ports.len() != per_agent {
            return Err(ClientError::Malformed {
                peer,
                what: "list of UDP ports",
            });
        }
        let data = |source| ClientError::Data { peer, source };
        let local_ip = s.conn.stream().local_addr().map_err(data)?.ip();
        if let Some(m) = &spec.multicast {
            // One sender per stream for every agent: made once, its ports told to each.
            if a == 0 {
                for i in 0..per_agent {
                    let socket = UdpSocket::bind((local_ip, 0)).map_err(data)?;
                    match local_ip {
                        IpAddr::V4(l) => {
                            socket2::SockRef::from(&socket).set_multicast_if_v4(&l).map_err(data)?;
                            socket.set_multicast_ttl_v4(u32::from(m.ttl)).map_err(data)?;
                        }
                        IpAddr::V6(_) => socket2::SockRef::from(&socket)
                            .set_multicast_hops_v6(u32::from(m.ttl))
                            .map_err(data)?,
                    }
                    socket.connect((m.group, m.port + i as u16)).map_err(data)?;
                    let grant = udp::configure(&socket, spec, Role::Send)?;
                    multicast_ports.push(socket.local_addr().map_err(data)?.port());
                    streams.push(udp::UdpStream {
                        id: i as u16,
                        wire_id: i as u16,
                        test_id: m.test_id,
                        role: Role::Send,
                        socket,
                        grant,
                    });
                }
            }
            s.conn.send(&Message::Ports {
                udp_ports: multicast_ports.clone(),
            })?;
            continue;
        }
        let mut ports = Vec::with_capacity(per_agent);
        for (i, port) in s.udp_ports.iter().enumerate() {
            let socket = UdpSocket::bind((local_ip, 0)).map_err(data)?;
            socket.connect((peer.ip(), *port)).map_err(data)?;
            let role = if spec.stream_flows_forward(i) {
                Role::Send
            } else {
                Role::Receive
            };
            let grant = udp::configure(&socket, spec, role)?;
            ports.push(socket.local_addr().map_err(data)?.port());
            streams.push(udp::UdpStream {
                id: (a * per_agent + i) as u16,
                wire_id: i as u16,
                test_id: udp_test_id(&s.cookie),
                role,
                socket,
                grant,
            });
        }
        s.conn.send(&Message::Ports { udp_ports: ports })?;
    }
    start_all(&mut sessions)?;
    drive(&test, &mut sessions, interrupt, |control| {
        udp::run(spec, &spec.cpus, streams, sink, control)
    })
}

/// Runs a request-response test against every target at once and returns the joined result.
pub fn run_rr(
    spec: &RrSpec,
    targets: &[Target],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    let test = TestSpec::Rr(spec.clone());
    let per_agent = test.streams_per_agent();
    let total = per_agent * targets.len();
    let mut sessions = open_sessions(&test, &spec.cpus, targets, opts)?;
    let mut streams = Vec::with_capacity(total);
    for (a, s) in sessions.iter_mut().enumerate() {
        let peer = s.target.addr;
        let data = |source| ClientError::Data { peer, source };
        let mut udp_ports = Vec::new();
        for i in 0..per_agent {
            let id = (a * per_agent + i) as u16;
            let socket = match (spec.proto, spec.connect) {
                (RrProto::Tcp, true) => rr::RrSocket::Connect {
                    addr: peer,
                    header: frame::data_header(&s.cookie, i as u16),
                    from: opts.bind,
                },
                (RrProto::Tcp, false) => {
                    rr::RrSocket::Tcp(data_connection(peer, opts, &s.cookie, i as u16, |_| Ok(()))?)
                }
                (RrProto::Udp, _) => {
                    let port = *s.udp_ports.get(i).ok_or(ClientError::Malformed {
                        peer,
                        what: "list of UDP ports",
                    })?;
                    let local_ip = s.conn.stream().local_addr().map_err(data)?.ip();
                    let u = UdpSocket::bind((local_ip, 0)).map_err(data)?;
                    u.connect((peer.ip(), port)).map_err(data)?;
                    udp_ports.push(u.local_addr().map_err(data)?.port());
                    rr::RrSocket::Udp(u)
                }
            };
            let grant = match rr::raw_fd(&socket) {
                Some(fd) => rr::configure_socket(fd, spec, spec.proto == RrProto::Tcp)?,
                None => SocketGrant {
                    nodelay: true,
                    ..Default::default()
                },
            };
            streams.push(rr::RrStream {
                id,
                role: Role::Send,
                socket,
                grant,
            });
        }
        if spec.proto == RrProto::Udp {
            s.conn.send(&Message::Ports { udp_ports })?;
        }
    }
    start_all(&mut sessions)?;
    drive(&test, &mut sessions, interrupt, |control| {
        rr::run(spec, &spec.cpus, streams, None, sink, control)
    })
}

/// Opens a session with every target for `test`, after checking what can be checked here.
fn open_sessions(
    test: &TestSpec,
    cpus: &[usize],
    targets: &[Target],
    opts: &ClientOptions,
) -> Result<Vec<Session>, ClientError> {
    let total = test.streams_per_agent() * targets.len();
    if total > usize::from(u16::MAX) {
        return Err(ClientError::TooManyStreams { streams: total });
    }
    crate::engine::pin::check_cpus(cpus)?;
    // At once: under a profile each agent runs its command before it accepts, and an agent that
    // has accepted waits for `start` only so long.
    std::thread::scope(|scope| {
        let opening: Vec<_> = targets
            .iter()
            .map(|t| scope.spawn(move || open_session(t, test, opts)))
            .collect();
        opening
            .into_iter()
            .map(|o| o.join().expect("opening a session does not panic"))
            .collect()
    })
}

/// Tells every agent to start, then waits until each has.
fn start_all(sessions: &mut [Session]) -> Result<(), ClientError> {
    for s in sessions.iter_mut() {
        s.conn.send(&Message::Start)?;
    }
    for s in sessions.iter_mut() {
        match s.conn.recv(REPLY_TIMEOUT, "waiting for the agent to start")? {
            Message::Started => {}
            other => return Err(s.conn.unexpected("started", &other).into()),
        }
    }
    Ok(())
}

/// Ctrl-C reaches the local engine while it runs, even when no watcher is left to pass it on.
fn forward_interrupt(interrupt: &AtomicBool, control: &Control, engine_done: &AtomicBool) {
    while !engine_done.load(Ordering::Relaxed) {
        if interrupt.load(Ordering::Relaxed) {
            control.stop_send();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// This host's configuration with the interfaces toward `peers` (read after the window).
fn config_towards(peers: impl Iterator<Item = IpAddr>) -> crate::metrics::host::HostConfig {
    let mut used: Vec<String> = Vec::new();
    for p in peers {
        if let Some(i) = crate::metrics::host::interface_towards(p)
            && !used.contains(&i)
        {
            used.push(i);
        }
    }
    crate::metrics::host::read_config(&used)
}

/// Runs the local engine while watching every agent, then joins the reports into the document.
fn drive(
    spec: &TestSpec,
    sessions: &mut [Session],
    interrupt: &AtomicBool,
    run_local: impl FnOnce(&Control) -> Result<SideReport, EngineError>,
) -> Result<TestResult, ClientError> {
    let per_agent = spec.streams_per_agent();
    let stop_when_done = spec.agent_waits_for_stop();
    let started_unix_ms = now_unix_ms();
    let control = Control::default();
    let engine_done = AtomicBool::new(false);
    let started = Instant::now();
    let (local, agent_results) = std::thread::scope(|scope| {
        let watchers: Vec<_> = sessions
            .iter_mut()
            .map(|s| {
                let (control, engine_done) = (&control, &engine_done);
                let bound = ResultBound {
                    spec,
                    cores: s.host.cores,
                    started,
                    silent: s.result_timeout,
                };
                scope.spawn(move || watch_agent(&mut s.conn, control, interrupt, engine_done, stop_when_done, bound).0)
            })
            .collect();
        // Ctrl-C reaches the local engine even when every watcher has already returned.
        scope.spawn(|| forward_interrupt(interrupt, &control, &engine_done));
        let local = run_local(&control);
        engine_done.store(true, Ordering::Relaxed);
        let results: Vec<_> = watchers
            .into_iter()
            .map(|w| w.join().expect("watcher thread does not panic"))
            .collect();
        (local, results)
    });
    let mut local = local?;
    // The interfaces towards the agents, read after the window.
    local.config = Some(config_towards(sessions.iter().map(|s| s.target.addr.ip())));

    let mut notes = local.notes.clone();
    let mut client_parts = Vec::with_capacity(sessions.len());
    // A multicast sender's streams serve every agent: each agent's part is the same.
    let shared = matches!(spec, TestSpec::Udp(u) if u.multicast.is_some());
    for a in 0..sessions.len() {
        client_parts.push(part_for_agent(&local, if shared { 0 } else { a }, per_agent));
    }
    let mut reports = Vec::with_capacity(sessions.len());
    let mut first_error = None;
    for ((s, r), mine) in sessions.iter().zip(agent_results).zip(&client_parts) {
        // A report that cannot be the answer to this test is dropped whole (issue 14).
        let r = r.map_err(|e| e.to_string()).and_then(|report| {
            summary::check::check_report(spec, &report, mine, started.elapsed())
                .map(|()| report)
                .map_err(|e| format!("result refused: {e}"))
        });
        match r {
            Ok(report) => {
                let report = summary::check::escape_controls(report);
                notes.extend(
                    report
                        .notes
                        .iter()
                        .map(|n| format!("agent {}: {}", s.target.name, crate::proto::peer_text(n))),
                );
                reports.push(Some(report));
            }
            Err(e) => {
                notes.push(format!("agent {}: {e}", s.target.name));
                first_error.get_or_insert_with(|| format!("agent {}: {e}", s.target.name));
                reports.push(None);
            }
        }
    }
    let outcomes: Vec<AgentOutcome<'_>> = sessions
        .iter()
        .zip(&reports)
        .zip(&client_parts)
        .map(|((s, r), c)| AgentOutcome {
            name: &s.target.name,
            host: Some(&s.host),
            report: r.as_ref(),
            client: c,
        })
        .collect();
    let mut result = summary::assemble(spec, HostInfo::read(), &outcomes, started_unix_ms, notes);
    // Ctrl-C cut the run short, whatever the engines made of their stop: a sweep stops here.
    if interrupt.load(Ordering::Relaxed) {
        mark_interrupted(&mut result);
    }
    // No agent's result and nothing counted here either: the run failed as a whole.
    let counted = |x: &crate::result::SideSummary| x.ops > 0 || x.bytes > 0;
    if reports.iter().all(Option::is_none) && !counted(&result.summary.sent) && !counted(&result.summary.received) {
        result.error = first_error;
    }
    Ok(result)
}

/// Marks a run stopped by Ctrl-C (or SIGTERM) as partial, with a note saying why.
pub fn mark_interrupted(result: &mut TestResult) {
    result.partial = true;
    result.notes.push("stopped early by Ctrl-C".into());
}

/// The line-rate figure: against `--link-speed` (and `--mtu`, else the path MTU the senders saw).
fn add_line_rate(r: &mut TestResult, spec: &TcpSpec, ipv6: bool) {
    let path_mtu = r
        .summary
        .streams
        .iter()
        .find_map(|s| s.tcp.map(|t| t.pmtu_bytes))
        .filter(|m| *m > 0);
    // A physical interface's link speed (a veth's or a bridge's "speed" is made up).
    let detected = r.hosts.get("client").and_then(|h| h.config.as_ref()).and_then(|c| {
        c.interfaces
            .iter()
            .find(|i| i.kind.is_none() && !i.loopback && i.speed_mbit_per_second.is_some_and(|s| s > 0))
            .cloned()
    });
    let (speed, mtu, source) = match (spec.link_speed, &detected) {
        (Some(speed), _) => (speed.0, spec.link_mtu_bytes.or(path_mtu), "given".to_string()),
        (None, Some(i)) => (
            f64::from(i.speed_mbit_per_second.unwrap_or(0)) * 1e6,
            spec.link_mtu_bytes.or(i.mtu_bytes).or(path_mtu),
            format!("detected: {} on client", i.name),
        ),
        (None, None) => return,
    };
    let Some(mtu) = mtu else { return };
    match crate::goodput::goodput(speed, mtu, crate::goodput::Transport::Tcp, ipv6) {
        Some(g) => summary::add_line_rate(r, &g, &source),
        None => r
            .notes
            .push(format!("MTU {mtu} leaves no room for TCP payload: no line-rate figure")),
    }
}

/// The client's report cut down to one agent's streams, renumbered from 0.
fn part_for_agent(local: &SideReport, agent: usize, per_agent: usize) -> SideReport {
    let range = (agent * per_agent) as u16..((agent + 1) * per_agent) as u16;
    let base = range.start;
    let mut part = local.clone();
    part.streams.retain(|s| range.contains(&s.stream));
    part.streams.iter_mut().for_each(|s| s.stream -= base);
    part.intervals.retain(|s| range.contains(&s.stream));
    part.intervals.iter_mut().for_each(|s| s.stream -= base);
    part
}

/// What bounds an agent's result message: the test, the agent's CPUs, and when the run began.
#[derive(Clone, Copy)]
pub(crate) struct ResultBound<'a> {
    pub spec: &'a TestSpec,
    pub cores: usize,
    pub started: Instant,
    /// How long the agent may be silent after the local engine is done (`Session::result_timeout`).
    pub silent: Duration,
}

impl ResultBound<'_> {
    /// The largest result message the client reads now.
    fn limit_bytes(&self) -> u32 {
        summary::check::result_limit_bytes(self.spec, self.cores, self.started.elapsed())
    }
}

/// Watches one agent's control connection while the local engine runs: passes on a Ctrl-C as
/// `stop`, and waits for the agent's result. A connection lost (or an agent's error) while the
/// local engine still runs stops that engine at once, since a UDP sender or an HTTP user has no
/// reset to tell it (issue 13); the second value says that happened.
fn watch_agent(
    conn: &mut Conn,
    control: &Control,
    interrupt: &AtomicBool,
    engine_done: &AtomicBool,
    stop_when_done: bool,
    bound: ResultBound<'_>,
) -> (Result<SideReport, ProtoError>, bool) {
    let result = await_result(conn, control, interrupt, engine_done, stop_when_done, bound);
    let lost_mid_run = result.is_err() && !engine_done.load(Ordering::Relaxed);
    if lost_mid_run {
        control.abort();
    }
    (result, lost_mid_run)
}

/// The loop of [`watch_agent`].
fn await_result(
    conn: &mut Conn,
    control: &Control,
    interrupt: &AtomicBool,
    engine_done: &AtomicBool,
    stop_when_done: bool,
    bound: ResultBound<'_>,
) -> Result<SideReport, ProtoError> {
    let mut stop_sent = false;
    // Since when the agent has sent nothing while the local engine was done: a large result
    // arriving slowly keeps resetting it.
    let mut silent_since: Option<(Instant, usize)> = None;
    loop {
        if interrupt.load(Ordering::Relaxed) && !stop_sent {
            control.stop_send();
            stop_sent = true;
            conn.send(&Message::Stop)?;
        }
        if stop_when_done && engine_done.load(Ordering::Relaxed) && !stop_sent {
            stop_sent = true;
            conn.send(&Message::Stop)?;
        }
        if engine_done.load(Ordering::Relaxed) {
            let have = conn.buffered();
            match silent_since {
                Some((_, n)) if n == have => {}
                _ => silent_since = Some((Instant::now(), have)),
            }
        }
        if silent_since.is_some_and(|(t, _)| t.elapsed() > bound.silent) {
            return Err(ProtoError::Timeout {
                peer: conn.peer(),
                what: "waiting for its result",
                seconds: bound.silent.as_secs_f64(),
            });
        }
        // A result larger than the test can fill is refused at its length prefix, unread.
        conn.set_max_message(bound.limit_bytes());
        match conn.try_recv(Duration::from_millis(100))? {
            None => {}
            Some(Message::Result { report }) => return Ok(*report),
            Some(Message::Error { kind, message }) => {
                return Err(ProtoError::Refused {
                    peer: conn.peer(),
                    kind,
                    message: crate::proto::peer_text(&message),
                });
            }
            Some(other) => return Err(conn.unexpected("result", &other)),
        }
    }
}
