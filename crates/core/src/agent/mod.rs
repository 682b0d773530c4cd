//! The agent: the server half of the control protocol, beside [`crate::client`]. It accepts,
//! authenticates, runs the spec it is sent, replies with its report and keeps serving.
//!
//! One listening port (`serve`) carries both control and data connections; the first four bytes
//! tell them apart (`connection`). Every connection gets its own thread with deadlines on every read, so a
//! silent, half-open or misbehaving client never holds the agent: it is answered with an error
//! message and the agent goes back to listening. Tests from several clients run at once up to
//! `max_tests`; past that a client is told "busy" at once. The handshake (`handshake`) stands
//! apart from the toolkit every test uses (`session`); each kind's half of a test is one file
//! (`tcp`, `udp`, `rr`, `http`) that imports only the toolkit.
//!
//! What an unauthenticated peer can cost is bounded (docs/security.md): connections
//! still opening are capped per source and in all and must finish their whole handshake within
//! [`HANDSHAKE_TIMEOUT`] (`admit`); at the total cap a new connection closes the oldest one
//! opening for at least [`EVICTION_GRACE`], so many addresses together cannot hold every slot
//! either; a test's data connections are bounded by its spec (`pending`); every
//! test's memory is counted against `max_memory` before it is accepted (`budget`).
//!
//! A client may ask for one of the profiles the owner named at start (`profile`): a command
//! run before its test and undone after, recorded in the agent's report.
//!
//! Its owner stops it through a [`Stopper`] (`serve` does on SIGTERM, SIGINT and SIGHUP): it
//! accepts no more, ends the running tests (their clients get a partial result saying the agent
//! is stopping), runs the undo still pending and returns.
//!
//! Its counters (`metrics`) change on events and once per test, from its report; with
//! `AgentConfig::metrics` set, one thread of its own serves them on `GET /metrics` for Prometheus.
//!
//! With `AgentConfig::iperf3_port` set it also answers `iperf3 -c` clients on a port of their own
//! (`iperf3`), under the same limits, one test at a time; each test's document comes to
//! the owner as an [`AgentEvent::Iperf3Result`].
//!
//! This file only names the parts: the owner's settings and events are in `config`, what every
//! connection thread shares in `state`; no file here imports one that imports it.
//!
//! It prints nothing: what its owner may want to tell a user (a refused client, a test started
//! or ended) comes to the callback given to [`Agent::serve`] as an [`AgentEvent`].

mod admit;
mod budget;
mod clock;
mod config;
mod connection;
mod exporter;
mod handshake;
mod http;
mod iperf3;
mod pending;
mod profile;
mod refusal;
mod relay;
mod rr;
mod serve;
mod session;
mod state;
mod tcp;
mod udp;

pub use crate::proto::auth::fresh_secret;
pub use budget::default_budget_bytes;
pub use config::{
    AgentConfig, AgentError, AgentEvent, Cidr, EVICTION_GRACE, HANDSHAKE_TIMEOUT, MAX_OPENING_PER_SOURCE, STOP_GRACE,
};
pub use exporter::{OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE};
pub use profile::{Profile, ProfileError, Profiles};
pub use serve::{Agent, Stopper};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ErrorKind;
    use crate::proto::Message;
    use crate::proto::conn::{Conn, ProtoError};
    use std::io;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
    use std::sync::mpsc;
    use std::time::Duration;

    /// An agent on 127.0.0.1:0 serving on its own thread, its events sent to the returned channel.
    fn start(secret: Option<&[u8]>) -> (SocketAddr, mpsc::Receiver<AgentEvent>) {
        start_with(AgentConfig {
            secret: secret.map(crate::proto::auth::Secret::from),
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
            secret: Some(b"right".to_vec().into()),
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
