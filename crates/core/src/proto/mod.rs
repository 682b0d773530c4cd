//! The control protocol between a client and an agent. docs/protocol.md is its contract and
//! mirrors this module: a change to the wire bumps `VERSION` and the doc in the same commit.
//!
//! A control connection opens with an 8-byte preamble each way (`frame`), then carries
//! length-prefixed JSON messages (`Message`). Data connections open with a 24-byte header that
//! names the test by its cookie and the stream by its index. Authentication (`auth`) is an
//! HMAC-SHA256 challenge-response on a shared secret that never crosses the wire, and before it
//! a client's proof in its first flight (mac1 over a fresh time and nonce) that buys it one of
//! an agent's reserved opening slots.

pub mod auth;
pub(crate) mod conn;
pub(crate) mod frame;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzz;
pub mod iperf3;

use crate::metrics::host::HostInfo;
use crate::result::{SideReport, TestResult};
use crate::spec::TestSpec;
use serde::{Deserialize, Serialize};

/// The protocol version this build speaks. Peers with another version are refused. 2: the TCP
/// spec's `mix` (an agent of version 1 would ignore it and run one-way streams). 3: the
/// request's `profile` (an agent of version 2 would ignore it and test the unchanged host). 4:
/// the client's first flight may carry its proof of the secret after its preamble (an
/// agent of version 3 would read the proof as a message's length). 5: third-party tests and
/// clock readings (`relay`, `clock`; an agent of version 4 would refuse them as out of
/// order, but later in the handshake than a version check).
pub(crate) const VERSION: u16 = 5;

/// How long an agent lets a profile's command (or its undo) run before it kills it
/// (`linerate serve --profile`); a client asking for a profile waits this much longer.
pub const PROFILE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The agent's default control (and data) port.
pub const DEFAULT_PORT: u16 = 5301;

// Peer text made safe to print is the wire crate's, for the report and results crates too.
pub use linerate_wire::text::{PEER_TEXT_CHARS, peer_text, peer_text_cut};

/// One control message. Serialised as JSON with a `type` tag in snake case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Message {
    /// Agent -> client, first message: who it is and, when it wants a secret, a challenge.
    Hello {
        software: String,
        challenge: Option<String>,
    },
    /// Client -> agent: the answer to the challenge.
    Auth { client_nonce: String, mac: String },
    /// Agent -> client: the client is authenticated; `mac` proves the agent knows the secret too.
    AuthOk { mac: String },
    /// Client -> agent: run this test, under the agent's profile of this name when one is given.
    Request {
        spec: TestSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile: Option<String>,
    },
    /// Client -> agent, instead of `request`: which profiles the agent has (`plan check`, issue
    /// 23). Nothing runs; the agent answers `profile_list` and closes.
    Profiles,
    /// Agent -> client: the answer to `profiles`, the names in the order the owner gave them.
    ProfileList { names: Vec<String> },
    /// Client -> agent, instead of `request` and again after each `clock_reading`: the agent's
    /// clock now. The client times each exchange; the session ends when it closes.
    Clock,
    /// Agent -> client: its wall clock when it answered `clock`, Unix nanoseconds, with its host
    /// name and the node it says it runs on.
    ClockReading {
        unix_ns: i64,
        host_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
    },
    /// Client -> agent, instead of `request`: run `spec` from here against the agent at `to`
    /// (`IP:PORT`) and send back the whole run (a third-party test). The agent acts as
    /// the client's half, proving the same secret to `to`; an agent without a secret refuses.
    /// With `start_at_unix_ns` (in the agent's own clock) it opens the test, then starts it at
    /// that instant.
    Relay {
        spec: TestSpec,
        to: std::net::SocketAddr,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_at_unix_ns: Option<i64>,
    },
    /// Agent -> client: the third-party run's document, and (its own clock, Unix nanoseconds)
    /// when it sent `start` and when its `to` agent had answered `started`; last message of a
    /// relay.
    RelayResult {
        result: Box<TestResult>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_sent_unix_ns: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_unix_ns: Option<i64>,
    },
    /// Agent -> client: the test is set up; data connections must carry `cookie`. For UDP,
    /// `udp_ports` are the agent's data sockets, one per stream in stream order.
    Accepted {
        cookie: String,
        host: HostInfo,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        udp_ports: Vec<u16>,
    },
    /// Client -> agent, UDP only, before `start`: the client's data sockets, one per stream.
    Ports { udp_ports: Vec<u16> },
    /// Client -> agent: all data connections are open; start measuring.
    Start,
    /// Agent -> client: the agent's clock has started (its time zero).
    Started,
    /// Client -> agent: stop sending now (Ctrl-C); receivers finish at end of stream.
    Stop,
    /// Agent -> client: what the agent measured; last message of a test.
    Result { report: Box<SideReport> },
    /// Either way: the test cannot go on. The connection closes after it.
    Error { kind: ErrorKind, message: String },
}

/// Why a peer refused or ended a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Protocol versions differ.
    Version,
    /// Missing or wrong secret.
    Auth,
    /// The agent runs as many tests as it allows.
    Busy,
    /// The spec failed validation on the agent.
    BadSpec,
    /// A message out of order or unreadable.
    Protocol,
    /// The test failed while running (sockets, CPUs that do not exist, ...).
    Failed,
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            ErrorKind::Version => "version mismatch",
            ErrorKind::Auth => "authentication failed",
            ErrorKind::Busy => "busy",
            ErrorKind::BadSpec => "bad test spec",
            ErrorKind::Protocol => "protocol error",
            ErrorKind::Failed => "test failed",
        };
        f.write_str(s)
    }
}

impl Message {
    /// The tag as it appears on the wire, for error messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "hello",
            Message::Auth { .. } => "auth",
            Message::AuthOk { .. } => "auth_ok",
            Message::Request { .. } => "request",
            Message::Profiles => "profiles",
            Message::ProfileList { .. } => "profile_list",
            Message::Clock => "clock",
            Message::ClockReading { .. } => "clock_reading",
            Message::Relay { .. } => "relay",
            Message::RelayResult { .. } => "relay_result",
            Message::Accepted { .. } => "accepted",
            Message::Ports { .. } => "ports",
            Message::Start => "start",
            Message::Started => "started",
            Message::Stop => "stop",
            Message::Result { .. } => "result",
            Message::Error { .. } => "error",
        }
    }
}

pub(crate) use crate::codec::from_hex;
/// Hex text for nonces, proofs and cookies (the codec lives below the engines and the protocol).
pub use crate::codec::to_hex;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TcpSpec;

    #[test]
    fn messages_carry_a_snake_case_tag() {
        let text = serde_json::to_string(&Message::AuthOk { mac: "00".into() }).expect("serialises");
        assert_eq!(text, r#"{"type":"auth_ok","mac":"00"}"#);
        let req = Message::Request {
            spec: TestSpec::Tcp(TcpSpec::new()),
            profile: None,
        };
        let text = serde_json::to_string(&req).expect("serialises");
        assert!(!text.contains("profile"), "no profile, no field: {text}");
        let asked = Message::Request {
            spec: TestSpec::Tcp(TcpSpec::new()),
            profile: Some("toe-off".into()),
        };
        let back: Message = serde_json::from_str(&serde_json::to_string(&asked).expect("ok")).expect("parses");
        assert_eq!(back, asked);
        let back: Message = serde_json::from_str(&serde_json::to_string(&req).expect("ok")).expect("parses");
        assert_eq!(back, req);
        assert_eq!(back.name(), "request");
    }
}
