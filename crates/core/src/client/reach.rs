//! Reaching an agent, below the handshake and the session: who the client talks to
//! ([`Target`]), how ([`ClientOptions`]), what can go wrong ([`ClientError`]), the control and
//! data connections' connect, and the clock conversions every half of a fleet run shares.

use crate::engine::EngineError;
use crate::proto::conn::ProtoError;
use crate::proto::frame::{self, COOKIE_LEN};
use crate::result::lab::LabRecord;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, SystemTime};

/// How long an agent may take to answer a set-up message.
pub(super) const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a test opened for a synchronised start waits for it: under the agents' idle
/// timeout between set-up messages.
pub(crate) const START_WAIT_MAX: Duration = Duration::from_secs(8);
/// The largest message read from an agent before its result (hello, auth_ok, accepted,
/// started, an error): they are small, and a larger one is refused from its length prefix
/// rather than parsed. The result has its own bound, from the test.
pub(super) const MAX_SETUP_MESSAGE_BYTES: u32 = 1 << 20;

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
    /// impostor would skip authentication this way.
    #[error(
        "{peer} asked for no secret, so it cannot prove it is the agent you meant; give --allow-unauthenticated-agent to run against it anyway"
    )]
    Unauthenticated { peer: SocketAddr },
    /// An agent whose clock could not be read within the whole reading's deadline.
    #[error("{peer}: no clock reading within {seconds} s (connecting, authenticating and one exchange)")]
    ClockTooFar { peer: SocketAddr, seconds: f64 },
    #[error("a third-party test needs the fleet's secret: give --secret-file PATH or set LINERATE_SECRET")]
    NeedSecretForRelay,
    /// A third-party run came back but cannot be the answer to the test asked.
    #[error("the run {peer} sent back was refused: {why}")]
    RelayedRefused { peer: SocketAddr, why: String },
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
    /// An iperf3 server's refusal or failure.
    #[error(transparent)]
    Iperf3(#[from] crate::proto::iperf3::Iperf3Error),
}

/// An agent to run against: as the user wrote it, and where that resolved to.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub addr: SocketAddr,
}

impl Target {
    /// `HOST`, `HOST:PORT`, `ADDR`, `[V6ADDR]:PORT` or a bare IPv6 address; the port defaults to
    /// `default_port` (normally [`crate::proto::DEFAULT_PORT`]).
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
    pub secret: Option<crate::proto::auth::Secret>,
    pub connect_timeout: Duration,
    /// The local address control and data connections leave from (`-B`); None: the kernel's.
    pub bind: Option<IpAddr>,
    /// With a secret, still run against an agent that asks for none (and so proves nothing).
    /// Without a secret this changes nothing: such an agent is the only kind reachable.
    pub allow_unauthenticated_agent: bool,
    /// The agents' profile to run the test under (`--profile`); every agent must have it.
    pub profile: Option<String>,
    /// The lab the run runs in (`linerate lab exec`), recorded in its result; None: no lab.
    pub lab: Option<LabRecord>,
    /// A synchronised start: the test is opened, then started at this instant.
    pub start_at: Option<StartAt>,
}

/// When to start a test that has been opened, and where to say when it did: a
/// third-party test that runs beside others starts at one instant agreed through each agent's
/// clock.
#[derive(Clone, Debug)]
pub struct StartAt {
    /// When `start` goes out (this host's clock).
    pub at: SystemTime,
    /// Set when `start` goes out: Unix nanoseconds, this host's clock.
    pub sent_unix_ns: std::sync::Arc<std::sync::atomic::AtomicI64>,
    /// Set once every agent has answered `started`: Unix nanoseconds, this host's clock.
    pub started_unix_ns: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            secret: None,
            connect_timeout: Duration::from_secs(5),
            bind: None,
            allow_unauthenticated_agent: false,
            profile: None,
            lab: None,
            start_at: None,
        }
    }
}

pub(super) fn connect(
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
pub(super) fn data_connection(
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

#[cfg(test)]
mod tests {
    use super::ClientOptions;
    use crate::proto::auth::shows_secret;

    #[test]
    fn a_client_options_debug_print_shows_none_of_the_secret() {
        let secret = b"correct-horse-battery-staple-01".to_vec();
        let opts = ClientOptions {
            secret: Some(secret.clone().into()),
            ..ClientOptions::default()
        };
        let text = format!("{opts:?} {opts:#?}");
        assert_eq!(shows_secret(&text, &secret), None, "{text}");
    }
}
