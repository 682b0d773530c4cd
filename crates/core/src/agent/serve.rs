//! The listening socket and its accept loop: each connection past the caps on opening ones
//! (`admit`) gets its own thread (`connection`); a data connection of a running test is let in
//! past them.

use super::admit;
use super::budget::Budget;
use super::config::{AgentConfig, AgentError, AgentEvent, MAX_OPENING_PER_SOURCE};
use super::connection;
use super::pending::{Pending, expected_from, is_known_data};
use super::state::State;
use crate::metrics::host::HostInfo;
use crate::proto::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn is_loopback(addr: &SocketAddr) -> bool {
    match addr.ip() {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// A bound agent, ready to serve.
pub struct Agent {
    listener: TcpListener,
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
        let state = State {
            budget: Budget::new(config.max_memory),
            config,
            host: HostInfo::read(),
            tests: AtomicUsize::new(0),
            opening: admit::Opening::default(),
            pending: Pending::default(),
            fd_limit: admit::raise_fd_limit(),
            profile_running: Mutex::new(None),
        };
        Ok(Agent {
            listener,
            state: Arc::new(state),
        })
    }

    /// The address it listens on (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// Whether clients must prove they know the secret.
    pub fn auth_required(&self) -> bool {
        self.state.config.secret.is_some()
    }

    /// Serves until the process ends, telling `on_event` what happens.
    pub fn serve(self, on_event: impl Fn(&AgentEvent) + Send + Sync + 'static) {
        let events: connection::Events = Arc::new(on_event);
        // Connections the caps turn away still get a moment for a proof (issue 22).
        let proofs = connection::ProofWait::start(&self.state, &events);
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
            let Ok(peer) = stream.peer_addr() else { continue };
            // A first flight that proves the secret takes a reserved slot past the caps below; a
            // wrong or copied one is refused before any slot is spent (issue 22).
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
    }
}
