//! `linerate serve`: accept, authenticate, run the spec, reply, keep serving.
//!
//! One listening port carries both control and data connections; the first four bytes tell them
//! apart. Every connection gets its own thread with deadlines on every read, so a silent,
//! half-open or misbehaving client never holds the agent: it is answered with an error message
//! and the agent goes back to listening. Tests from several clients run at once up to
//! `max_tests`; past that a client is told "busy" at once.

use linerate_core::engine::{Control, Sink, pin, rr, sockopt, tcp, udp};
use linerate_core::metrics::host::{self, HostInfo};
use linerate_core::proto::conn::{Conn, ProtoError};
use linerate_core::proto::frame::{self, COOKIE_LEN, DATA_HEADER_LEN, PREAMBLE_LEN};
use linerate_core::proto::{self, ErrorKind, Message, VERSION, auth};
use linerate_core::result::{IntervalSample, Role};
use linerate_core::spec::{RrProto, RrSpec, TcpSpec, TestSpec, UdpSpec};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a new connection may take to say what it is.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a control connection may sit idle between set-up messages.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after `start` the data connections may take to arrive.
const DATA_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct AgentConfig {
    pub bind: SocketAddr,
    pub secret: Option<Vec<u8>>,
    /// Serve without a secret on a non-loopback address.
    pub no_auth: bool,
    pub max_tests: usize,
    /// Connections (control and data) open at once, past which new ones are closed at once.
    pub max_connections: usize,
    /// Multicast groups this agent takes part in (`--join`).
    pub joins: Vec<std::net::IpAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("refusing to serve on {0} without a secret: give --secret-file PATH or LINERATE_SECRET, or --no-auth")]
    NeedsSecret(SocketAddr),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
}

fn is_loopback(addr: &SocketAddr) -> bool {
    match addr.ip() {
        std::net::IpAddr::V4(v4) => v4.is_loopback(),
        std::net::IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

type Pending = Mutex<HashMap<[u8; COOKIE_LEN], Sender<(u16, TcpStream)>>>;

struct State {
    config: AgentConfig,
    host: HostInfo,
    tests: AtomicUsize,
    connections: AtomicUsize,
    pending: Pending,
}

pub struct Agent {
    listener: TcpListener,
    state: Arc<State>,
}

/// Gives a counted slot back when dropped, however the holder ends.
struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    fn take(counter: &'a AtomicUsize, max: usize) -> Option<Slot<'a>> {
        let prev = counter.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(counter);
        (prev < max).then_some(slot)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Agent {
    pub fn bind(config: AgentConfig) -> Result<Agent, AgentError> {
        if config.secret.is_none() && !config.no_auth && !is_loopback(&config.bind) {
            return Err(AgentError::NeedsSecret(config.bind));
        }
        let listener = TcpListener::bind(config.bind).map_err(|source| AgentError::Bind {
            addr: config.bind,
            source,
        })?;
        let state = State {
            config,
            host: HostInfo::read(),
            tests: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            pending: Mutex::new(HashMap::new()),
        };
        Ok(Agent {
            listener,
            state: Arc::new(state),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    pub fn auth_required(&self) -> bool {
        self.state.config.secret.is_some()
    }

    /// Serves until the process ends.
    pub fn serve(self) {
        for conn in self.listener.incoming() {
            let stream = match conn {
                Ok(s) => s,
                Err(_) => {
                    // Out of file descriptors or memory: the pending connection stays queued,
                    // so wait a little instead of spinning on it.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            let state = Arc::clone(&self.state);
            // Over the connection limit: closed at once, before any thread is spent on it.
            if state.connections.load(Ordering::SeqCst) >= state.config.max_connections {
                continue;
            }
            state.connections.fetch_add(1, Ordering::SeqCst);
            let spawned = std::thread::Builder::new().name("linerate-conn".into()).spawn(move || {
                let _slot = Slot(&state.connections);
                handle_connection(&state, stream);
            });
            if spawned.is_err() {
                // Out of threads: this connection is dropped (and its slot given back, as the
                // closure holding it is dropped unrun), the agent keeps listening.
                self.state.connections.fetch_sub(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

fn read_exact_timeout(stream: &mut TcpStream, buf: &mut [u8], timeout: Duration) -> io::Result<()> {
    stream.set_read_timeout(Some(timeout))?;
    stream.read_exact(buf)
}

fn handle_connection(state: &State, mut stream: TcpStream) {
    let Ok(peer) = stream.peer_addr() else { return };
    let mut magic = [0u8; 4];
    if read_exact_timeout(&mut stream, &mut magic, OPEN_TIMEOUT).is_err() {
        return;
    }
    if magic == frame::DATA_MAGIC {
        let mut rest = [0u8; DATA_HEADER_LEN - 4];
        if read_exact_timeout(&mut stream, &mut rest, OPEN_TIMEOUT).is_err() {
            return;
        }
        let mut header = [0u8; DATA_HEADER_LEN];
        header[..4].copy_from_slice(&magic);
        header[4..].copy_from_slice(&rest);
        if let Some((cookie, index)) = frame::parse_data_header(&header) {
            let tx = state
                .pending
                .lock()
                .expect("no thread panics holding the lock")
                .get(&cookie)
                .cloned();
            if let Some(tx) = tx {
                let _ = tx.send((index, stream));
            }
        }
        // Unknown cookie, or not a data header: dropped.
        return;
    }
    if magic != frame::CONTROL_MAGIC {
        return;
    }
    let mut version = [0u8; PREAMBLE_LEN - 4];
    if read_exact_timeout(&mut stream, &mut version, OPEN_TIMEOUT).is_err() {
        return;
    }
    if stream.write_all(&frame::preamble(VERSION)).is_err() {
        return;
    }
    let mut conn = Conn::accepted(stream, peer);
    let theirs = u16::from_be_bytes([version[0], version[1]]);
    if theirs != VERSION {
        conn.send_error(
            ErrorKind::Version,
            format!("this agent speaks protocol {VERSION}, the client {theirs}"),
        );
        return;
    }
    if let Err((kind, message)) = control_session(state, &mut conn) {
        eprintln!("linerate serve: {peer}: {kind}: {message}");
        conn.send_error(kind, message);
    }
}

type Refusal = (ErrorKind, String);

fn proto_refusal(e: ProtoError) -> Refusal {
    (ErrorKind::Protocol, e.to_string())
}

fn control_session(state: &State, conn: &mut Conn) -> Result<(), Refusal> {
    let secret = state.config.secret.as_deref();
    let nonce = secret.map(|_| auth::nonce());
    let hello = Message::Hello {
        software: format!("linerate {}", linerate_core::VERSION),
        challenge: nonce.map(|n| proto::to_hex(&n)),
    };
    conn.send(&hello).map_err(proto_refusal)?;
    if let (Some(secret), Some(agent_nonce)) = (secret, nonce) {
        match conn
            .recv(IDLE_TIMEOUT, "waiting for authentication")
            .map_err(proto_refusal)?
        {
            Message::Auth { client_nonce, mac } => {
                let (Some(cn), Some(mac)) = (proto::from_hex(&client_nonce), proto::from_hex(&mac)) else {
                    return Err((ErrorKind::Auth, "malformed authentication".into()));
                };
                if !auth::verify_client(secret, &agent_nonce, &cn, &mac) {
                    return Err((ErrorKind::Auth, "wrong secret".into()));
                }
                let proof = auth::agent_proof(secret, &agent_nonce, &cn);
                conn.send(&Message::AuthOk {
                    mac: proto::to_hex(&proof),
                })
                .map_err(proto_refusal)?;
            }
            other => {
                return Err((
                    ErrorKind::Auth,
                    format!("this agent requires a secret; got '{}'", other.name()),
                ));
            }
        }
    }
    let spec = match conn
        .recv(IDLE_TIMEOUT, "waiting for a test request")
        .map_err(proto_refusal)?
    {
        Message::Request { spec } => spec,
        other => {
            return Err((
                ErrorKind::Protocol,
                format!("expected 'request', got '{}'", other.name()),
            ));
        }
    };
    spec.validate().map_err(|e| (ErrorKind::BadSpec, e.to_string()))?;
    let Some(_test) = Slot::take(&state.tests, state.config.max_tests) else {
        return Err((
            ErrorKind::Busy,
            format!("this agent is running {} test(s), its limit", state.config.max_tests),
        ));
    };
    match spec {
        TestSpec::Tcp(tcp) => run_tcp(state, conn, &tcp),
        TestSpec::Udp(udp) => run_udp(state, conn, &udp),
        TestSpec::Rr(rr) => run_rr(state, conn, &rr),
        TestSpec::Http(http) => run_http(state, conn, &http),
    }
}

/// Removes a test's cookie from the pending table when the test ends, however it ends.
struct Registration<'a> {
    pending: &'a Pending,
    cookie: [u8; COOKIE_LEN],
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&self.cookie);
        }
    }
}

fn collect_streams(rx: &Receiver<(u16, TcpStream)>, wanted: usize) -> Result<Vec<Option<TcpStream>>, Refusal> {
    let mut got: Vec<Option<TcpStream>> = (0..wanted).map(|_| None).collect();
    let deadline = Instant::now() + DATA_TIMEOUT;
    let mut have = 0;
    while have < wanted {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((index, stream)) = rx.recv_timeout(left) else {
            return Err((
                ErrorKind::Failed,
                format!(
                    "{have} of {wanted} data connections arrived within {} s",
                    DATA_TIMEOUT.as_secs()
                ),
            ));
        };
        let slot = got.get_mut(usize::from(index)).filter(|s| s.is_none());
        let Some(slot) = slot else {
            return Err((
                ErrorKind::Protocol,
                format!("data connection for stream {index}, which is not expected"),
            ));
        };
        *slot = Some(stream);
        have += 1;
    }
    Ok(got)
}

/// Ignores interval samples: the agent returns them all with its result.
struct Quiet;

fn new_cookie() -> [u8; COOKIE_LEN] {
    auth::nonce()[..COOKIE_LEN]
        .try_into()
        .expect("nonce is longer than a cookie")
}

/// Data connections that arrive with `cookie` go to `tx` (until the registration drops).
fn expect_streams(state: &State, cookie: [u8; COOKIE_LEN], tx: Sender<(u16, TcpStream)>) {
    state
        .pending
        .lock()
        .expect("no thread panics holding the lock")
        .insert(cookie, tx);
}

fn send_accepted(
    conn: &mut Conn,
    state: &State,
    cookie: &[u8; COOKIE_LEN],
    udp_ports: Vec<u16>,
) -> Result<(), Refusal> {
    conn.send(&Message::Accepted {
        cookie: proto::to_hex(cookie),
        host: state.host.clone(),
        udp_ports,
    })
    .map_err(proto_refusal)
}

fn await_start(conn: &mut Conn) -> Result<(), Refusal> {
    match conn.recv(IDLE_TIMEOUT, "waiting for start").map_err(proto_refusal)? {
        Message::Start => Ok(()),
        other => Err((ErrorKind::Protocol, format!("expected 'start', got '{}'", other.name()))),
    }
}

/// Runs this end's engine while watching the client's control connection, then sends the
/// report with the configuration of the interface toward `peer`, read after the window
/// (netlink and sysfs cost a few milliseconds). The client may be gone (killed mid-test): then
/// there is no one to tell, and that is fine.
fn run_and_report(
    conn: &mut Conn,
    peer: Option<IpAddr>,
    run: impl FnOnce(&Control) -> Result<linerate_core::result::SideReport, linerate_core::engine::EngineError>,
) -> Result<(), Refusal> {
    let control = Control::default();
    let engine_done = AtomicBool::new(false);
    let report = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch_client(conn, &control, &engine_done));
        let report = run(&control);
        engine_done.store(true, Ordering::Relaxed);
        let _ = watcher.join();
        report
    });
    let mut report = report.map_err(|e| (ErrorKind::Failed, e.to_string()))?;
    let used: Vec<String> = peer.and_then(host::interface_towards).into_iter().collect();
    report.config = Some(host::read_config(&used));
    let _ = conn.send(&Message::Result {
        report: Box::new(report),
    });
    Ok(())
}

impl Sink for Quiet {
    fn interval(&mut self, _: &[IntervalSample]) {}
}

fn run_tcp(state: &State, conn: &mut Conn, spec: &TcpSpec) -> Result<(), Refusal> {
    pin::check_cpus(&spec.peer_cpus).map_err(|e| (ErrorKind::BadSpec, format!("--peer-cpus: {e}")))?;
    let cookie = new_cookie();
    let (tx, rx) = mpsc::channel();
    expect_streams(state, cookie, tx);
    let registration = Registration {
        pending: &state.pending,
        cookie,
    };
    send_accepted(conn, state, &cookie, Vec::new())?;
    await_start(conn)?;
    let sockets = collect_streams(&rx, spec.streams_per_agent())?;
    drop(registration);
    let mut streams = Vec::with_capacity(sockets.len());
    for (i, s) in sockets.into_iter().enumerate() {
        let socket = s.expect("collect_streams fills every slot");
        let role = if spec.stream_flows_forward(i) {
            Role::Receive
        } else {
            Role::Send
        };
        let grant = sockopt::configure(&socket, spec, role)
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
    run_and_report(conn, peer, |control| {
        tcp::run(spec, &spec.peer_cpus, streams, &mut Quiet, control)
    })
}

/// A request-response test: this end answers. TCP streams come as data connections (one each,
/// or a new one per transaction with `connect`); UDP as for a UDP test.
fn run_rr(state: &State, conn: &mut Conn, spec: &RrSpec) -> Result<(), Refusal> {
    pin::check_cpus(&spec.peer_cpus).map_err(|e| (ErrorKind::BadSpec, format!("--peer-cpus: {e}")))?;
    let cookie = new_cookie();
    let failed = |what: &str, e: std::io::Error| (ErrorKind::Failed, format!("{what}: {e}"));
    let per_agent = usize::from(spec.streams);
    let peer_ip = conn.peer().ip();
    let (tx, rx) = mpsc::channel();
    let mut udp_sockets = Vec::new();
    let mut udp_ports = Vec::new();
    if spec.proto == RrProto::Udp {
        let local_ip = conn
            .stream()
            .local_addr()
            .map_err(|e| failed("control socket", e))?
            .ip();
        for _ in 0..per_agent {
            let s = UdpSocket::bind((local_ip, 0)).map_err(|e| failed("binding a UDP data socket", e))?;
            udp_ports.push(s.local_addr().map_err(|e| failed("UDP data socket", e))?.port());
            udp_sockets.push(s);
        }
    } else {
        expect_streams(state, cookie, tx);
    }
    // Held for the whole run: TCP_CRR connections keep arriving with this cookie.
    let _registration = Registration {
        pending: &state.pending,
        cookie,
    };
    send_accepted(conn, state, &cookie, udp_ports)?;
    if spec.proto == RrProto::Udp {
        let client_ports = match conn
            .recv(IDLE_TIMEOUT, "waiting for the client's ports")
            .map_err(proto_refusal)?
        {
            Message::Ports { udp_ports } if udp_ports.len() == per_agent => udp_ports,
            other => return Err((ErrorKind::Protocol, format!("expected 'ports', got '{}'", other.name()))),
        };
        for (s, port) in udp_sockets.iter().zip(client_ports) {
            s.connect((peer_ip, port))
                .map_err(|e| failed("connecting a UDP data socket", e))?;
        }
    }
    await_start(conn)?;
    let mut accept = None;
    let sockets: Vec<rr::RrSocket> = match (spec.proto, spec.connect) {
        (RrProto::Udp, _) => udp_sockets.into_iter().map(rr::RrSocket::Udp).collect(),
        (RrProto::Tcp, false) => collect_streams(&rx, per_agent)?
            .into_iter()
            .map(|s| rr::RrSocket::Tcp(s.expect("collect_streams fills every slot")))
            .collect(),
        (RrProto::Tcp, true) => {
            accept = Some(rx);
            (0..per_agent).map(|_| rr::RrSocket::Accept).collect()
        }
    };
    let mut streams = Vec::with_capacity(per_agent);
    for (i, socket) in sockets.into_iter().enumerate() {
        let grant = match rr::raw_fd(&socket) {
            Some(fd) => rr::configure_socket(fd, spec, spec.proto == RrProto::Tcp)
                .map_err(|e| (ErrorKind::Failed, format!("{e}: {}", source_of(&e))))?,
            None => Default::default(),
        };
        streams.push(rr::RrStream {
            id: i as u16,
            role: Role::Receive,
            socket,
            grant,
        });
    }
    conn.send(&Message::Started).map_err(proto_refusal)?;
    run_and_report(conn, Some(peer_ip), |control| {
        rr::run(spec, &spec.peer_cpus, streams, accept, &mut Quiet, control)
    })
}

/// An HTTP test: the client loads an HTTP server on this host; the agent samples the host from
/// `started` until the client says the run is over.
fn run_http(state: &State, conn: &mut Conn, spec: &linerate_core::spec::HttpSpec) -> Result<(), Refusal> {
    let cookie = new_cookie();
    send_accepted(conn, state, &cookie, Vec::new())?;
    await_start(conn)?;
    conn.send(&Message::Started).map_err(proto_refusal)?;
    run_and_report(conn, Some(conn.peer().ip()), |control| {
        Ok(linerate_core::engine::http::sample_host(spec, &mut Quiet, control))
    })
}

/// A socket bound to `group:port` that has joined the group on the interface holding `local`.
fn join_group(group: IpAddr, port: u16, local: IpAddr) -> io::Result<UdpSocket> {
    let domain = if group.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.bind(&SocketAddr::new(group, port).into())?;
    match (group, local) {
        (IpAddr::V4(g), IpAddr::V4(l)) => s.join_multicast_v4(&g, &l)?,
        (IpAddr::V6(g), _) => s.join_multicast_v6(&g, 0)?,
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an IPv4 group needs an IPv4 agent address",
            ));
        }
    }
    Ok(s.into())
}

/// A UDP test: a socket per stream on the control connection's address, connected to the
/// client's socket for that stream once the client says which.
fn run_udp(state: &State, conn: &mut Conn, spec: &UdpSpec) -> Result<(), Refusal> {
    pin::check_cpus(&spec.peer_cpus).map_err(|e| (ErrorKind::BadSpec, format!("--peer-cpus: {e}")))?;
    let cookie = new_cookie();
    let failed = |what: &str, e: std::io::Error| (ErrorKind::Failed, format!("{what}: {e}"));
    let local_ip = conn
        .stream()
        .local_addr()
        .map_err(|e| failed("control socket", e))?
        .ip();
    let peer_ip = conn.peer().ip();
    let per_agent = spec.streams_per_agent();
    let mut sockets = Vec::with_capacity(per_agent);
    let mut ports = Vec::with_capacity(per_agent);
    for i in 0..per_agent {
        let s = match &spec.multicast {
            Some(m) => {
                if !state.config.joins.contains(&m.group) {
                    return Err((
                        ErrorKind::BadSpec,
                        format!(
                            "this agent takes no multicast tests to {0} (start it with --join {0})",
                            m.group
                        ),
                    ));
                }
                join_group(m.group, m.port + i as u16, local_ip)
                    .map_err(|e| failed("joining the multicast group", e))?
            }
            None => UdpSocket::bind((local_ip, 0)).map_err(|e| failed("binding a UDP data socket", e))?,
        };
        ports.push(s.local_addr().map_err(|e| failed("UDP data socket", e))?.port());
        sockets.push(s);
    }
    let test_id = spec
        .multicast
        .map_or_else(|| linerate_core::client::udp_test_id(&cookie), |m| m.test_id);
    send_accepted(conn, state, &cookie, ports)?;
    let client_ports = match conn
        .recv(IDLE_TIMEOUT, "waiting for the client's ports")
        .map_err(proto_refusal)?
    {
        Message::Ports { udp_ports } if udp_ports.len() == per_agent => udp_ports,
        Message::Ports { udp_ports } => {
            return Err((
                ErrorKind::Protocol,
                format!("{} UDP ports for {per_agent} streams", udp_ports.len()),
            ));
        }
        other => return Err((ErrorKind::Protocol, format!("expected 'ports', got '{}'", other.name()))),
    };
    let mut streams = Vec::with_capacity(per_agent);
    for (i, (socket, port)) in sockets.into_iter().zip(client_ports).enumerate() {
        socket
            .connect((peer_ip, port))
            .map_err(|e| failed("connecting a UDP data socket", e))?;
        let role = if spec.stream_flows_forward(i) {
            Role::Receive
        } else {
            Role::Send
        };
        let grant =
            udp::configure(&socket, spec, role).map_err(|e| (ErrorKind::Failed, format!("{e}: {}", source_of(&e))))?;
        streams.push(udp::UdpStream {
            id: i as u16,
            wire_id: i as u16,
            test_id,
            role,
            socket,
            grant,
        });
    }
    await_start(conn)?;
    conn.send(&Message::Started).map_err(proto_refusal)?;
    run_and_report(conn, Some(peer_ip), |control| {
        udp::run(spec, &spec.peer_cpus, streams, &mut Quiet, control)
    })
}

fn source_of(e: &dyn std::error::Error) -> String {
    e.source().map(|s| s.to_string()).unwrap_or_default()
}

/// Reads the control connection while a test runs: `stop` stops the senders; a closed or broken
/// connection means the client is gone, and the test is aborted at once.
fn watch_client(conn: &mut Conn, control: &Control, engine_done: &AtomicBool) {
    while !engine_done.load(Ordering::Relaxed) {
        match conn.try_recv(Duration::from_millis(100)) {
            Ok(None) => {}
            Ok(Some(Message::Stop)) => control.stop_send(),
            Ok(Some(_)) | Err(_) => {
                control.abort();
                return;
            }
        }
    }
}
