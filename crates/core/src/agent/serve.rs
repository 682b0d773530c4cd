//! The listening socket and its accept loop: each connection past the caps on opening ones
//! (`admit`) gets its own thread (`connection`); a data connection of a running test is let in
//! past them. A [`Stopper`] ends the loop: the listener closes, running tests get
//! [`STOP_GRACE`] to end and report, the pending undo runs, and `serve` returns.

use super::admit;
use super::budget::Budget;
use super::config::{AgentConfig, AgentError, AgentEvent, MAX_OPENING_PER_SOURCE, STOP_GRACE};
use super::connection;
use super::pending::{Pending, expected_from, is_known_data};
use super::state::State;
use crate::metrics::host::{HostInfo, ReadHostInfo};
use crate::proto::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the accept loop looks whether the agent was stopped.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Waits until `listener` has a connection to accept, at most `timeout`.
fn wait_for_connection(listener: &TcpListener, timeout: Duration) {
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) reads and writes the one pollfd it is given, which lives across the call.
    unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) };
}

fn is_loopback(addr: &SocketAddr) -> bool {
    match addr.ip() {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// A bound agent, ready to serve.
pub struct Agent {
    listener: TcpListener,
    /// `--iperf3-port`: the iperf3 port's sockets.
    iperf3: Option<super::iperf3::Listeners>,
    /// `--metrics`: the listener of the counters' endpoint.
    metrics: Option<TcpListener>,
    state: Arc<State>,
}

impl Agent {
    /// Listens on `config.bind`; refuses a non-loopback address without a secret unless
    /// `no_auth` says so.
    pub fn bind(config: AgentConfig) -> Result<Agent, AgentError> {
        if config.secret.is_none() && !config.no_auth && !is_loopback(&config.bind) {
            return Err(AgentError::NeedsSecret(config.bind));
        }
        let listener = TcpListener::bind(config.bind).map_err(|source| AgentError::Bind {
            addr: config.bind,
            source,
        })?;
        let metrics = match config.metrics {
            None => None,
            Some(addr) => Some(TcpListener::bind(addr).map_err(|source| AgentError::Bind { addr, source })?),
        };
        let iperf3 = super::iperf3::Listeners::bind(&config)?;
        let state = State {
            budget: Budget::new(config.max_memory),
            config,
            host: HostInfo::read(),
            tests: AtomicUsize::new(0),
            probes: AtomicUsize::new(0),
            clocks: AtomicUsize::new(0),
            opening: admit::Opening::default(),
            pending: Pending::default(),
            fd_limit: admit::raise_fd_limit(),
            profile_running: Default::default(),
            stopping: AtomicBool::new(false),
            metrics: Default::default(),
        };
        Ok(Agent {
            listener,
            iperf3,
            metrics,
            state: Arc::new(state),
        })
    }

    /// The address it listens on (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// The address the counters are served on (`--metrics`), with the port the kernel chose.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The address the iperf3 port listens on (`--iperf3-port`, with the port the kernel chose
    /// for port 0; the first of its addresses); None without one.
    pub fn iperf3_addr(&self) -> Option<SocketAddr> {
        self.iperf3.as_ref().and_then(|l| l.local_addr())
    }

    /// Whether clients must prove they know the secret.
    pub fn auth_required(&self) -> bool {
        self.state.config.secret.is_some()
    }

    /// What stops this agent, from another thread (a signal handler's).
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.state))
    }

    /// Serves until its [`Stopper`] stops it, telling `on_event` what happens; then ends its
    /// tests, runs the pending undo and returns.
    pub fn serve(mut self, on_event: impl Fn(&AgentEvent) + Send + Sync + 'static) {
        let counted = Arc::clone(&self.state);
        let events: connection::Events = Arc::new(move |e: &AgentEvent| {
            counted.metrics.event(e);
            on_event(e);
        });
        // `--metrics`: its own thread, which ends when the agent stops.
        if let Some(listener) = self.metrics.take() {
            let state = Arc::clone(&self.state);
            let _ = std::thread::Builder::new()
                .name("linerate-metrics".into())
                .spawn(move || super::exporter::serve(&listener, &state.metrics, &state.stopping));
        }
        // `--iperf3-port`: its accept loop on its own thread, which ends when the agent stops.
        if let Some(listeners) = self.iperf3.take() {
            let (state, events) = (Arc::clone(&self.state), Arc::clone(&events));
            let _ = std::thread::Builder::new()
                .name("linerate-iperf3".into())
                .spawn(move || listeners.serve(state, events));
        }
        {
            let events = Arc::clone(&events);
            self.state.profile_running.on_failed_undo(move |profile, message| {
                events(&AgentEvent::UndoFailed {
                    profile: profile.to_string(),
                    message,
                });
            });
        }
        // Connections the caps turn away still get a moment for a proof.
        let proofs = connection::ProofWait::start(&self.state, &events);
        // Non-blocking, so that the loop sees a stop within `STOP_POLL`; an accepted stream is
        // made blocking again (Linux does not pass the flag on, but that is not promised).
        let waits = self.listener.set_nonblocking(true).is_ok();
        while !self.state.stopping.load(Ordering::SeqCst) {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    wait_for_connection(&self.listener, STOP_POLL);
                    continue;
                }
                Err(_) => {
                    // Out of file descriptors or memory: the pending connection stays queued,
                    // so wait a little instead of spinning on it.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            if waits && stream.set_nonblocking(false).is_err() {
                continue;
            }
            let Ok(peer) = stream.peer_addr() else { continue };
            // A first flight that proves the secret takes a reserved slot past the caps below; a
            // wrong or copied one is refused before any slot is spent.
            let Some(stream) = connection::admit_proven(&self.state, &events, stream, peer) else {
                continue;
            };
            let source = admit::Source::of(&peer);
            let state = Arc::clone(&self.state);
            let config = &state.config;
            // Over a cap: closed at once, before any thread is spent on it, unless it is a data
            // connection of a running test (its test bounds those). The data connections running
            // tests still expect come on top of the caps, and their source is held to its own
            // cap only (`Caps::for_source`). At the total cap a connection may make room by
            // closing the oldest opening connection past its grace (`admit`); a data
            // connection of a running test is neither closed for that nor needs to.
            let (mine, all) = expected_from(&state.pending, source);
            let caps = admit::Caps::for_source(mine, all, MAX_OPENING_PER_SOURCE, config.max_connections);
            let now = Instant::now();
            let entered = match state.opening.enter(&stream, peer, now, caps, None) {
                Err(admit::Shed::Total(_)) if !is_known_data(&state.pending, &stream) => {
                    let spare = |s: &TcpStream| is_known_data(&state.pending, s);
                    let evict = admit::Evict {
                        grace: config.eviction_grace,
                        spare: &spare,
                    };
                    state.opening.enter(&stream, peer, now, caps, Some(evict))
                }
                other => other,
            };
            let ticket = match entered {
                Ok((ticket, evicted)) => {
                    if let Some(e) = evicted {
                        state.metrics.handshake_failed(ErrorKind::Busy);
                        events(&AgentEvent::Refused {
                            peer: e.peer,
                            kind: ErrorKind::Busy,
                            message: format!(
                                "closed after {} ms of its handshake to make room: {} connections were opening, the limit",
                                e.opening_for.as_millis(),
                                e.opening
                            ),
                        });
                    }
                    Some(ticket)
                }
                Err(_) if is_known_data(&state.pending, &stream) => None,
                Err(shed) => {
                    let message = match shed {
                        admit::Shed::Source(n) => {
                            format!("{n} connections from this address are still opening, its limit")
                        }
                        admit::Shed::Total(n) => format!(
                            "{n} connections are still opening, the limit, none for {} ms yet",
                            config.eviction_grace.as_millis()
                        ),
                    };
                    state.metrics.handshake_failed(ErrorKind::Busy);
                    events(&AgentEvent::Refused {
                        peer,
                        kind: ErrorKind::Busy,
                        message,
                    });
                    if let Some(proofs) = &proofs {
                        proofs.offer(stream, peer);
                    }
                    continue;
                }
            };
            let events = Arc::clone(&events);
            let spawned = std::thread::Builder::new().name("linerate-conn".into()).spawn(move || {
                let mut slot = admit::OpeningSlot::new(&state.opening, ticket);
                connection::handle_connection(&state, &*events, stream, peer, &mut slot);
            });
            if spawned.is_err() {
                // Out of threads: this connection is dropped, the agent keeps listening.
                if let Some(t) = ticket {
                    self.state.opening.leave(&t);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // Stopped: no new connection from here (the kernel refuses them once the listener is
        // closed); running tests end and report, then the undo still pending runs.
        drop(self.listener);
        let until = Instant::now() + STOP_GRACE;
        while self.state.tests.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.state.profile_running.undo_pending();
    }
}

/// Stops an agent from another thread: see [`Stopper::stop`].
#[derive(Clone)]
pub struct Stopper(Arc<State>);

impl Stopper {
    /// The agent accepts no more connections; its running tests end (the client gets a partial
    /// result noting that the agent is stopping), tests being set up are refused with that
    /// message, no profile runs any more; once the tests have reported (at most
    /// [`STOP_GRACE`]) the undo still pending runs and [`Agent::serve`] returns.
    pub fn stop(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
        self.0.profile_running.close();
    }

    /// Stops now, for an owner that will exit on return: runs the undo still pending at once
    /// (one another thread is running already is left to finish in its own process group).
    pub fn abandon(&self) {
        self.stop();
        self.0.profile_running.undo_now();
    }
}
