//! The agent: the server half of the control protocol, beside [`crate::client`]. It accepts,
//! authenticates, runs the spec it is sent, replies with its report and keeps serving.
//!
//! One listening port carries both control and data connections; the first four bytes tell them
//! apart (`connection`). Every connection gets its own thread with deadlines on every read, so a
//! silent, half-open or misbehaving client never holds the agent: it is answered with an error
//! message and the agent goes back to listening. Tests from several clients run at once up to
//! `max_tests`; past that a client is told "busy" at once. The handshake (`handshake`) stands
//! apart from the toolkit every test uses (`session`); each kind's half of a test is one file
//! (`tcp`, `udp`, `rr`, `http`) that imports only the toolkit.
//!
//! What an unauthenticated peer can cost is bounded (issue 14, docs/security.md): connections
//! still opening are capped per source and in all and must finish their whole handshake within
//! [`HANDSHAKE_TIMEOUT`] (`admit`); at the total cap a new connection closes the oldest one
//! opening for at least [`EVICTION_GRACE`], so many addresses together cannot hold every slot
//! either; a test's data connections are bounded by its spec; every
//! test's memory is counted against `max_memory` before it is accepted (`budget`).
//!
//! A client may ask for one of the profiles the owner named at start (`profile`): a command
//! run before its test and undone after, recorded in the agent's report.
//!
//! It prints nothing: what its owner may want to tell a user (a refused client, a test started
//! or ended) comes to the callback given to [`Agent::serve`] as an [`AgentEvent`].

mod admit;
mod budget;
mod connection;
mod handshake;
mod http;
mod profile;
mod refusal;
mod rr;
mod session;
mod tcp;
mod udp;

use crate::metrics::host::HostInfo;
use crate::proto::ErrorKind;
use crate::proto::frame::COOKIE_LEN;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use budget::default_budget_bytes;
pub use profile::{Profile, ProfileError, Profiles};

/// How long a new connection has, in all, to say what it is and (a control connection) to send
/// its preamble, authenticate and send its request, however the bytes trickle.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections still opening from one source (an IPv4 address, an IPv6 /64) at once.
pub const MAX_OPENING_PER_SOURCE: usize = 8;
/// At the total cap of opening connections, a new one closes the oldest (by accept time) if it
/// has been opening at least this long, else it is closed itself. An honest handshake needs one
/// round trip from accept to its `request` (to its `auth` with a secret; once authenticated a
/// connection is never closed to make room), so this lets clients on paths of up to 250 ms round
/// trip through however fast a many-address flood turns over; a longer grace would let more
/// through but lower the rate (slots / grace) past which such a flood turns new clients away at
/// accept, and their odds past it (docs/security.md).
pub const EVICTION_GRACE: Duration = Duration::from_millis(250);
/// How long a control connection may sit idle between set-up messages.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after `start` the data connections may take to arrive.
const DATA_TIMEOUT: Duration = Duration::from_secs(5);

/// How an agent serves: where, whom it lets in, and how much it takes on at once.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Address and port to listen on (port 0: any free port, see [`Agent::local_addr`]).
    pub bind: SocketAddr,
    /// The shared secret clients must prove they know; None: anyone may run tests.
    pub secret: Option<Vec<u8>>,
    /// Serve without a secret on a non-loopback address.
    pub no_auth: bool,
    /// Tests run at once; past this a client is told the agent is busy.
    pub max_tests: usize,
    /// Connections (control and data) still opening at once; past it a new one closes the oldest
    /// opening for at least [`EVICTION_GRACE`], or is closed at once if none has been;
    /// [`MAX_OPENING_PER_SOURCE`] of them from any one source.
    pub max_connections: usize,
    /// How long the oldest opening connection is left to finish its handshake before a new one
    /// at the `max_connections` cap may close it ([`EVICTION_GRACE`]).
    pub eviction_grace: Duration,
    /// Multicast groups this agent takes part in (`--join`).
    pub joins: Vec<IpAddr>,
    /// Memory all running tests may take at once, bytes (`--max-memory`).
    pub max_memory: u64,
    /// How long no byte may move before a test is given up; None: the runner's 30 s.
    pub idle: Option<Duration>,
    /// Commands a client may ask to run around its test, by name (`--profile`, `profile`).
    pub profiles: Profiles,
}

impl AgentConfig {
    /// Listens on `bind`, no secret, one test at a time, the default limits.
    pub fn new(bind: SocketAddr) -> AgentConfig {
        AgentConfig {
            bind,
            secret: None,
            no_auth: false,
            max_tests: 1,
            max_connections: 256,
            eviction_grace: EVICTION_GRACE,
            joins: Vec::new(),
            max_memory: default_budget_bytes(),
            idle: None,
            profiles: Profiles::default(),
        }
    }
}

/// Why an agent could not start serving.
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

/// What happened while serving, for the agent's owner to show or count; the agent prints nothing.
/// Events come from the connection threads, so the callback must not block for long.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// A client's control session was answered with this error and closed; the agent serves on.
    Refused {
        peer: SocketAddr,
        kind: ErrorKind,
        message: String,
    },
    /// A client's request was accepted: a test of this kind ("tcp", "udp", "rr", "http") begins.
    TestStarted { peer: SocketAddr, test: &'static str },
    /// That test is over: `completed` when this end ran it to its end and sent its report (a
    /// test that failed is also `Refused`).
    TestEnded {
        peer: SocketAddr,
        test: &'static str,
        completed: bool,
    },
}

fn is_loopback(addr: &SocketAddr) -> bool {
    match addr.ip() {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Tests waiting for their data connections, by cookie.
type Pending = Mutex<HashMap<[u8; COOKIE_LEN], session::Expecting>>;

/// What every connection thread of one agent shares.
struct State {
    config: AgentConfig,
    host: HostInfo,
    tests: AtomicUsize,
    opening: admit::Opening,
    pending: Pending,
    budget: budget::Budget,
    /// The soft descriptor limit in force (raised to the hard one at bind).
    fd_limit: u64,
    /// The profile whose test runs now, if any: one profiled test at a time.
    profile_running: Mutex<Option<String>>,
}

/// A bound agent, ready to serve.
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
            budget: budget::Budget::new(config.max_memory),
            config,
            host: HostInfo::read(),
            tests: AtomicUsize::new(0),
            opening: admit::Opening::default(),
            pending: Mutex::new(HashMap::new()),
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
        let events: Arc<dyn Fn(&AgentEvent) + Send + Sync> = Arc::new(on_event);
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
            let source = admit::Source::of(&peer);
            let state = Arc::clone(&self.state);
            let config = &state.config;
            // Over a cap: closed at once, before any thread is spent on it, unless it is a data
            // connection of a running test (its test bounds those). The data connections running
            // tests still expect come on top of the caps, and their source is held to its own
            // cap only (`Caps::for_source`). At the total cap a connection may make room by
            // closing the oldest opening connection past its grace (`admit`); a data
            // connection of a running test is neither closed for that nor needs to.
            let (mine, all) = session::expected_from(&state, source);
            let caps = admit::Caps::for_source(mine, all, MAX_OPENING_PER_SOURCE, config.max_connections);
            let now = Instant::now();
            let entered = match state.opening.enter(&stream, peer, now, caps, None) {
                Err(admit::Shed::Total(_)) if !admit::is_known_data(&state, &stream) => {
                    let spare = |s: &TcpStream| admit::is_known_data(&state, s);
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
                Err(_) if admit::is_known_data(&state, &stream) => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Message;
    use crate::proto::conn::{Conn, ProtoError};
    use std::net::Ipv4Addr;
    use std::sync::mpsc;

    /// An agent on 127.0.0.1:0 serving on its own thread, its events sent to the returned channel.
    fn start(secret: Option<&[u8]>) -> (SocketAddr, mpsc::Receiver<AgentEvent>) {
        start_with(AgentConfig {
            secret: secret.map(<[u8]>::to_vec),
            max_connections: 8,
            ..AgentConfig::new(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
        })
    }

    fn start_with(config: AgentConfig) -> (SocketAddr, mpsc::Receiver<AgentEvent>) {
        let agent = Agent::bind(config).expect("bind on loopback");
        let addr = agent.local_addr();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            agent.serve(move |e| {
                let _ = tx.send(e.clone());
            })
        });
        (addr, rx)
    }

    /// A control connection past the preambles and the agent's hello.
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect to the agent");
        let mut conn = Conn::new(stream, addr);
        conn.exchange_preambles(Duration::from_secs(10)).expect("preambles");
        let hello = conn.recv(Duration::from_secs(10), "waiting for hello").expect("hello");
        assert!(matches!(hello, Message::Hello { .. }), "{hello:?}");
        conn
    }

    #[test]
    fn a_client_out_of_turn_is_refused_through_the_callback() {
        let (addr, events) = start(None);
        let mut conn = open(addr);
        conn.send(&Message::Stop).expect("send");
        let event = events.recv_timeout(Duration::from_secs(10)).expect("an event");
        let AgentEvent::Refused { peer, kind, message } = event else {
            panic!("expected a refusal, got {event:?}");
        };
        assert_eq!(peer.ip(), addr.ip());
        assert_eq!(kind, ErrorKind::Protocol);
        assert_eq!(message, "expected 'request', got 'stop'");
        // The client is told the same, and the agent serves the next one.
        match conn.recv(Duration::from_secs(10), "waiting for the error") {
            Err(ProtoError::Refused { kind, message: m, .. }) => assert_eq!((kind, m), (ErrorKind::Protocol, message)),
            other => panic!("expected an error message, got {other:?}"),
        }
        open(addr).send(&Message::Stop).expect("send");
        let again = events.recv_timeout(Duration::from_secs(10)).expect("an event");
        assert!(matches!(again, AgentEvent::Refused { .. }), "{again:?}");
    }

    #[test]
    fn issue_14_past_its_sources_cap_a_connection_is_closed_at_once() {
        use std::io::Read;
        let (addr, events) = start(None);
        let held: Vec<TcpStream> = (0..MAX_OPENING_PER_SOURCE)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let mut extra = TcpStream::connect(addr).expect("connect");
        extra.set_read_timeout(Some(Duration::from_secs(3))).expect("timeout");
        let mut b = [0u8; 8];
        assert!(
            match extra.read(&mut b) {
                Ok(n) => n == 0,
                Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
            },
            "closed on arrival, not held"
        );
        let event = events.recv_timeout(Duration::from_secs(10)).expect("an event");
        assert!(
            matches!(&event, AgentEvent::Refused { kind: ErrorKind::Busy, message, .. } if message.contains("still opening")),
            "{event:?}"
        );
        drop(held);
    }

    /// A connection from `source` (a loopback address) to `to`.
    fn connect_from(source: Ipv4Addr, to: SocketAddr) -> TcpStream {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
        sock.bind(&SocketAddr::new(IpAddr::V4(source), 0).into())
            .expect("bind the source");
        sock.connect(&to.into()).expect("connect to the agent");
        sock.into()
    }

    #[test]
    fn at_the_total_cap_a_new_client_closes_the_oldest_opening_connection() {
        // No grace, so that the test does not hang on the clock: the grace's own rule is tested
        // in `admit`.
        let (addr, events) = start_with(AgentConfig {
            max_connections: 4,
            eviction_grace: Duration::ZERO,
            ..AgentConfig::new(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
        });
        // The oldest past its hello (its thread waits for a request), then idle connections
        // from three more addresses, within their per-source caps, fill the table.
        let mut oldest = open(addr);
        let _idle: Vec<TcpStream> = (1..=3)
            .map(|i| connect_from(Ipv4Addr::new(127, 0, 1, i), addr))
            .collect();
        // A client from a fifth gets its hello all the same (accepted after them: the queue is
        // first in, first out).
        let stream = connect_from(Ipv4Addr::new(127, 0, 0, 2), addr);
        let mut conn = Conn::new(stream, addr);
        conn.exchange_preambles(Duration::from_secs(10)).expect("preambles");
        let hello = conn.recv(Duration::from_secs(10), "waiting for hello").expect("hello");
        assert!(matches!(hello, Message::Hello { .. }), "{hello:?}");
        assert!(
            matches!(
                oldest.recv(Duration::from_secs(10), "waiting"),
                Err(ProtoError::Io { .. } | ProtoError::Closed { .. })
            ),
            "the oldest opening connection was closed without a word"
        );
        let event = events.recv_timeout(Duration::from_secs(10)).expect("an event");
        let AgentEvent::Refused { peer, kind, message } = event else {
            panic!("expected an eviction, got {event:?}");
        };
        assert_eq!(peer.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(kind, ErrorKind::Busy);
        assert!(
            message.contains("to make room: 4 connections were opening"),
            "{message}"
        );
        // Its thread, woken in its wait for the request, ends without a second report.
        assert!(events.recv_timeout(Duration::from_millis(500)).is_err());
    }

    #[test]
    fn an_authenticated_connection_is_not_closed_to_make_room() {
        use crate::proto::auth;
        let (addr, events) = start_with(AgentConfig {
            secret: Some(b"right".to_vec()),
            max_connections: 2,
            eviction_grace: Duration::ZERO,
            ..AgentConfig::new(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
        });
        // The oldest connection authenticates and waits before its request.
        let stream = TcpStream::connect(addr).expect("connect");
        let mut oldest = Conn::new(stream, addr);
        oldest.exchange_preambles(Duration::from_secs(10)).expect("preambles");
        let Ok(Message::Hello {
            challenge: Some(challenge),
            ..
        }) = oldest.recv(Duration::from_secs(10), "waiting for hello")
        else {
            panic!("expected a hello with a challenge");
        };
        let agent_nonce = crate::proto::from_hex(&challenge).expect("hex challenge");
        let client_nonce = auth::nonce();
        oldest
            .send(&Message::Auth {
                client_nonce: crate::proto::to_hex(&client_nonce),
                mac: crate::proto::to_hex(&auth::client_proof(b"right", &agent_nonce, &client_nonce)),
            })
            .expect("send auth");
        let ok = oldest.recv(Duration::from_secs(10), "authenticating").expect("auth_ok");
        assert!(matches!(ok, Message::AuthOk { .. }), "{ok:?}");
        // An idle one fills the table; the next one closes the idle one, not the older one.
        let mut idle = connect_from(Ipv4Addr::new(127, 0, 1, 1), addr);
        let _next = connect_from(Ipv4Addr::new(127, 0, 1, 2), addr);
        let event = events.recv_timeout(Duration::from_secs(10)).expect("an event");
        assert!(
            matches!(&event, AgentEvent::Refused { peer, message, .. }
                if peer.ip() == IpAddr::V4(Ipv4Addr::new(127, 0, 1, 1)) && message.contains("to make room")),
            "{event:?}"
        );
        idle.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let read = std::io::Read::read(&mut idle, &mut [0u8; 8]);
        assert!(
            match &read {
                Ok(n) => *n == 0,
                Err(e) => !matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut),
            },
            "the idle one is closed: {read:?}"
        );
        // The authenticated one is still served: a request out of turn is answered.
        oldest.send(&Message::Stop).expect("send");
        assert!(matches!(
            oldest.recv(Duration::from_secs(10), "waiting for the error"),
            Err(ProtoError::Refused {
                kind: ErrorKind::Protocol,
                ..
            })
        ));
    }

    #[test]
    fn a_wrong_secret_is_refused_through_the_callback() {
        let (addr, events) = start(Some(b"right"));
        let mut conn = open(addr);
        conn.send(&Message::Auth {
            client_nonce: crate::proto::to_hex(&[0u8; 32]),
            mac: crate::proto::to_hex(&[0u8; 32]),
        })
        .expect("send");
        let event = events.recv_timeout(Duration::from_secs(10)).expect("an event");
        assert!(
            matches!(&event, AgentEvent::Refused { kind: ErrorKind::Auth, message, .. } if message == "wrong secret"),
            "{event:?}"
        );
    }
}
