//! What an agent's owner sets and hears: its configuration ([`AgentConfig`]), why it could not
//! start ([`AgentError`]), what happened while serving ([`AgentEvent`]), and the time limits
//! every connection is held to. Imports nothing of the agent but the profiles and the budget's
//! default.

use super::budget::default_budget_bytes;
use super::profile::Profiles;
use crate::proto::ErrorKind;
use crate::result::TestResult;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

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
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after `start` the data connections may take to arrive.
pub(super) const DATA_TIMEOUT: Duration = Duration::from_secs(5);
/// When the agent is stopped, how long its running tests have to end and send their reports
/// before the pending undo runs and [`super::Agent::serve`] returns.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How an agent serves: where, whom it lets in, and how much it takes on at once.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Address and port to listen on (port 0: any free port, see [`super::Agent::local_addr`]).
    pub bind: SocketAddr,
    /// The shared secret clients must prove they know; None: anyone may run tests.
    pub secret: Option<crate::proto::auth::Secret>,
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
    /// The node this agent says it runs on (`serve --node-name`, a Kubernetes node), for a
    /// fleet's "only pairs on different nodes".
    pub node: Option<String>,
    /// Nanoseconds this agent adds to its wall clock wherever it tells or reads one (its clock
    /// readings, a synchronised start, when a third-party test started): a hidden test option
    /// that lets tests check a controller's clock estimate (`serve --pretend-clock-offset`).
    pub clock_offset_ns: i64,
    /// Where to serve the agent's counters for Prometheus (`serve --metrics`, docs/metrics.md);
    /// None: nowhere. Unauthenticated: a private address.
    pub metrics: Option<SocketAddr>,
    /// Answer iperf3 clients on this port too (`serve --iperf3-port`; 0: any free
    /// port, see [`super::Agent::iperf3_addr`]); None: not at all.
    pub iperf3_port: Option<u16>,
    /// Who may use the iperf3 port (`--iperf3-allow`): empty, it listens on loopback only;
    /// otherwise on `bind`'s address, and only sources inside one of these get past accept.
    pub iperf3_allow: Vec<Cidr>,
    /// The HTTP servers running beside the agent (`serve --http-port`, `--https-port`): an HTTP
    /// test whose URLs name one of their ports gets that server's counts over its window in the
    /// agent's report. Empty: none.
    pub http_servers: Vec<crate::httpd::HttpdCounters>,
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
            node: None,
            clock_offset_ns: 0,
            metrics: None,
            iperf3_port: None,
            iperf3_allow: Vec::new(),
            http_servers: Vec::new(),
        }
    }
}

/// An address block (`10.0.0.0/8`, `2001:db8::/32`; a bare address is a block of one). An IPv4
/// block also holds the IPv4-mapped IPv6 form of its addresses, as a dual-stack socket sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The block's first address (the bits past the prefix are cleared).
    pub addr: IpAddr,
    /// Leading bits that name the block.
    pub prefix: u8,
}

impl Cidr {
    /// Whether `ip` is inside the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => mask_v4(u32::from(ip), self.prefix) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(ip)) => mask_v6(u128::from(ip), self.prefix) == u128::from(net),
            _ => false,
        }
    }
}

fn mask_v4(bits: u32, prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        bits & !(u32::MAX >> (prefix - 1) >> 1)
    }
}

fn mask_v6(bits: u128, prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        bits & !(u128::MAX >> (prefix - 1) >> 1)
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Cidr, String> {
        let (addr, prefix) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("'{s}' is not an address block (ADDR/PREFIX, e.g. 10.0.0.0/8)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = if prefix.is_empty() {
            max
        } else {
            prefix
                .parse()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("'{s}': the prefix must be a number from 0 to {max}"))?
        };
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4(mask_v4(u32::from(a), prefix).into()),
            IpAddr::V6(a) => IpAddr::V6(mask_v6(u128::from(a), prefix).into()),
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
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
    /// A profile's undo did not succeed (or could not run): the host may still be changed.
    /// `message` names its command and what happened, escaped.
    UndoFailed { profile: String, message: String },
    /// An iperf3 client's test on the iperf3 port is over: its document, this end as
    /// the agent and the iperf3 client's figures as the client's (`result.iperf3` says what it
    /// said). Sent once the results were exchanged; a test that ended before that (the client
    /// gone, the agent stopping) has no document: it is `Refused` and `TestEnded`, not completed.
    Iperf3Result { peer: SocketAddr, result: Box<TestResult> },
}

#[cfg(test)]
mod tests {
    use super::{AgentConfig, Cidr};
    use crate::proto::auth::shows_secret;

    #[test]
    fn an_agent_config_debug_print_shows_none_of_the_secret() {
        let secret = b"correct-horse-battery-staple-02".to_vec();
        let mut config = AgentConfig::new("127.0.0.1:0".parse().expect("an address"));
        config.secret = Some(secret.clone().into());
        let text = format!("{config:?} {config:#?}");
        assert_eq!(shows_secret(&text, &secret), None, "{text}");
    }

    #[test]
    fn issue_26_address_blocks_parse_clear_their_host_bits_and_hold_mapped_addresses() {
        let b: Cidr = "10.1.2.3/16".parse().expect("a block");
        assert_eq!(b.to_string(), "10.1.0.0/16");
        assert!(b.contains("10.1.255.1".parse().expect("ip")));
        assert!(
            b.contains("::ffff:10.1.0.9".parse().expect("ip")),
            "as a dual-stack socket sees it"
        );
        assert!(!b.contains("10.2.0.1".parse().expect("ip")));
        assert!(!b.contains("::1".parse().expect("ip")));
        let one: Cidr = "192.0.2.7".parse().expect("a bare address");
        assert_eq!(one.to_string(), "192.0.2.7/32");
        assert!(one.contains("192.0.2.7".parse().expect("ip")) && !one.contains("192.0.2.8".parse().expect("ip")));
        let all: Cidr = "0.0.0.0/0".parse().expect("everything");
        assert!(all.contains("203.0.113.9".parse().expect("ip")));
        let v6: Cidr = "2001:db8::1/32".parse().expect("v6");
        assert_eq!(v6.to_string(), "2001:db8::/32");
        assert!(v6.contains("2001:db8:ffff::1".parse().expect("ip")));
        assert!(!v6.contains("2001:db9::1".parse().expect("ip")));
        for bad in ["10.0.0.0/33", "::/129", "ten/8", "10.0.0.0/x", ""] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
