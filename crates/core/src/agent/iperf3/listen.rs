//! The iperf3 port's sockets and its accept loop (`serve --iperf3-port`): a TCP
//! listener and a UDP socket (for UDP streams' hellos) on each address it binds; loopback only
//! unless `--iperf3-allow` names who may use it. Each accepted connection past the allow list and
//! the agent's caps on opening connections gets a thread that reads its cookie within the
//! handshake deadline and places it ([`Port::arrive`]): the running test's data connection, a
//! new test (run on that thread, `test`), or a second client told the server is busy.

use super::test::{self, Sockets, reusable_udp};
use super::turn::{Accepted, Arrival, Port};
use crate::agent::admit::{Caps, OpeningSlot};
use crate::agent::config::{AgentConfig, AgentError, AgentEvent, HANDSHAKE_TIMEOUT, MAX_OPENING_PER_SOURCE};
use crate::agent::connection::Events;
use crate::agent::state::State;
use crate::proto::ErrorKind;
use crate::proto::iperf3::{COOKIE_LEN, Control, State as Step, is_cookie};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often the accept loop looks whether the agent was stopped.
const STOP_POLL: Duration = Duration::from_millis(100);

/// The iperf3 port's sockets, bound before the agent serves.
pub(in crate::agent) struct Listeners {
    tcp: Vec<TcpListener>,
    sockets: Arc<Sockets>,
}

fn bind_pair(addr: SocketAddr) -> std::io::Result<(TcpListener, UdpSocket)> {
    let tcp = TcpListener::bind(addr)?;
    let addr = tcp.local_addr()?;
    let udp = reusable_udp(addr)?;
    Ok((tcp, udp))
}

impl Listeners {
    /// Binds the iperf3 port when the configuration asks for it: 127.0.0.1 (and ::1 where this
    /// host has it) without an allow list, else the agent's address.
    pub(in crate::agent) fn bind(config: &AgentConfig) -> Result<Option<Listeners>, AgentError> {
        let Some(port) = config.iperf3_port else {
            return Ok(None);
        };
        let first = if config.iperf3_allow.is_empty() {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        } else {
            SocketAddr::new(config.bind.ip(), port)
        };
        let fallback = (first.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED))
            .then(|| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port));
        let (tcp, udp) = match (bind_pair(first), fallback) {
            (Ok(pair), _) => pair,
            // No IPv6 on this host: every IPv4 address, as the agent falls back.
            (Err(_), Some(v4)) => bind_pair(v4).map_err(|source| AgentError::Bind { addr: v4, source })?,
            (Err(source), None) => return Err(AgentError::Bind { addr: first, source }),
        };
        let mut tcps = vec![tcp];
        let mut udps = vec![udp];
        if config.iperf3_allow.is_empty() {
            let port = tcps[0]
                .local_addr()
                .map_err(|source| AgentError::Bind { addr: first, source })?
                .port();
            // ::1 too, where this host has it (a host without IPv6 serves 127.0.0.1 alone).
            if let Ok((tcp, udp)) = bind_pair(SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port)) {
                tcps.push(tcp);
                udps.push(udp);
            }
        }
        Ok(Some(Listeners {
            tcp: tcps,
            sockets: Arc::new(Sockets { udp: udps }),
        }))
    }

    /// The first address it listens on, with the port the kernel chose for port 0.
    pub(in crate::agent) fn local_addr(&self) -> Option<SocketAddr> {
        self.tcp.first().and_then(|l| l.local_addr().ok())
    }

    /// Accepts until the agent stops; a connection thread per accepted connection. A test still
    /// running when the agent stops is aborted by its own watcher.
    pub(in crate::agent) fn serve(self, state: Arc<State>, events: Events) {
        let port = Arc::new(Port::default());
        let mut accepted = 0u64;
        for l in &self.tcp {
            let _ = l.set_nonblocking(true);
        }
        let mut fds: Vec<libc::pollfd> = self
            .tcp
            .iter()
            .map(|l| libc::pollfd {
                fd: l.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        while !state.stopping.load(Ordering::SeqCst) {
            // SAFETY: poll(2) reads and writes the pollfds of `fds`, which lives across the call.
            unsafe {
                libc::poll(
                    fds.as_mut_ptr(),
                    fds.len() as libc::nfds_t,
                    STOP_POLL.as_millis() as libc::c_int,
                )
            };
            for l in &self.tcp {
                let (stream, peer) = match l.accept() {
                    Ok(accepted) => accepted,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => {
                        // Out of descriptors or memory: the connection stays queued (and poll
                        // says so at once), so wait a little instead of spinning on it.
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                };
                if stream.set_nonblocking(false).is_err() {
                    continue;
                }
                accepted += 1;
                self.admit(&state, &events, &port, (accepted, stream), peer);
            }
            for f in &mut fds {
                f.revents = 0;
            }
        }
    }

    /// One accepted connection: outside the allow list or over the caps it is closed at once
    /// (a refusal event); otherwise its own thread reads its cookie.
    fn admit(&self, state: &Arc<State>, events: &Events, port: &Arc<Port>, accepted: Accepted, peer: SocketAddr) {
        let (order, stream) = accepted;
        let config = &state.config;
        let refuse = |kind: ErrorKind, message: String| {
            state.metrics.handshake_failed(kind);
            events(&AgentEvent::Refused { peer, kind, message });
        };
        if !config.iperf3_allow.is_empty() && !config.iperf3_allow.iter().any(|c| c.contains(peer.ip())) {
            refuse(
                ErrorKind::Auth,
                "iperf3 port: this address is outside every --iperf3-allow block".into(),
            );
            return;
        }
        let mine = port.expected_from(peer.ip());
        let caps = Caps::for_source(mine, 0, MAX_OPENING_PER_SOURCE, config.max_connections);
        let ticket = match state.opening.enter(&stream, peer, Instant::now(), caps, None) {
            Ok((ticket, _)) => ticket,
            Err(_) => {
                refuse(
                    ErrorKind::Busy,
                    "iperf3 port: too many connections from this address are still opening".into(),
                );
                return;
            }
        };
        let state_for_spawn_failure = Arc::clone(state);
        let (state, events, port, sockets) = (
            Arc::clone(state),
            Arc::clone(events),
            Arc::clone(port),
            Arc::clone(&self.sockets),
        );
        let spawned = std::thread::Builder::new()
            .name("linerate-iperf3".into())
            .spawn(move || {
                let mut slot = OpeningSlot::new(&state.opening, Some(ticket));
                let mut control = Control::new(stream, peer);
                let mut cookie = [0u8; COOKIE_LEN];
                let read = control.read_exact_within(&mut cookie, HANDSHAKE_TIMEOUT, "sending its cookie");
                let refuse = |kind: ErrorKind, message: String| {
                    state.metrics.handshake_failed(kind);
                    events(&AgentEvent::Refused { peer, kind, message });
                };
                if let Err(e) = read {
                    return refuse(ErrorKind::Protocol, format!("iperf3 port: {e}"));
                }
                if !is_cookie(&cookie) || !slot.settle() {
                    return refuse(
                        ErrorKind::Protocol,
                        "iperf3 port: not an iperf3 client (its first 37 bytes are not a cookie)".into(),
                    );
                }
                let Ok(stream) = control.stream().try_clone() else {
                    return;
                };
                match port.arrive(cookie, peer.ip(), (order, stream)) {
                    Arrival::Data => {}
                    Arrival::Unexpected => refuse(
                        ErrorKind::Protocol,
                        "iperf3 port: a data connection its test does not expect".into(),
                    ),
                    Arrival::Busy => {
                        // iperf3's own answer: the client says "the server is busy running a test".
                        let _ = control.send_state(Step::AccessDenied);
                        refuse(
                            ErrorKind::Busy,
                            "iperf3 port: a test is running; told the server is busy".into(),
                        );
                    }
                    Arrival::Control(turn) => test::run(&state, &*events, &sockets, turn, control),
                }
            });
        if spawned.is_err() {
            // Out of threads: this connection is dropped, the port serves on.
            state_for_spawn_failure.opening.leave(&ticket);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
