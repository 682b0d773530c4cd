//! A controller's two requests of an agent that are not a test with this host: its
//! clock ([`read_clock`]: timestamped exchanges over the control connection, the fastest kept)
//! and a third-party test ([`run_from`]: the agent runs the client's half against another agent
//! and sends the whole run back). `matrix` builds patterns out of them.

mod estimate;

use super::handshake::{answer_challenge, authenticated, authenticated_by};
use super::session::{ClientError, ClientOptions, Target, connect};
use crate::proto::Message;
use crate::proto::conn::Conn;
use crate::proto::conn::ProtoError;
use crate::proto::frame;
use crate::result::{ClockEstimate, TestResult};
use crate::spec::TestSpec;
use crate::summary::relayed::{Asked, check_relayed, relayed_limit_bytes};
use crate::unixtime::unix_ns;
use estimate::{Exchange, Next};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long an agent may take to answer one clock query.
const CLOCK_REPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest one agent's clock reading takes, connecting and authenticating included (issue
/// 39): the exchanges that fit are made (at most the number asked), so an agent far away gives
/// fewer and a round is not held for it; one that cannot give a single reading by then fails
/// its cells. On loopback 32 exchanges take milliseconds; an agent 800 ms away gives four.
pub const CLOCK_READING_MAX: Duration = Duration::from_secs(5);
/// How long past the test's own length a third-party run's result may take: the handshakes of
/// the far agent, a synchronised start's wait, and the far result's own allowance.
const RELAY_ALLOWANCE: Duration = Duration::from_secs(60);
/// A test limited by a count has no length; its third-party run is given this long.
const RELAY_COUNT_LIMIT: Duration = Duration::from_secs(3600);
/// How often the controller looks at Ctrl-C while a third-party run goes on.
const POLL: Duration = Duration::from_millis(100);

/// An agent's clock against this host's, with what it said about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentClock {
    pub estimate: ClockEstimate,
    /// Its host name (uname), control characters escaped.
    pub host_name: String,
    /// The node it says it runs on, control characters escaped.
    pub node: Option<String>,
}

/// Reads `target`'s clock up to `exchanges` times (at least once), all within
/// `CLOCK_READING_MAX`, and keeps the exchange with the shortest round trip (`estimate`: the
/// far clock read at its midpoint, within ± half that round trip). Another exchange is begun
/// only while one as fast as the fastest so far still fits before the deadline; an exchange
/// that fails after the first (the agent ended its session) ends the reading with what it has.
pub fn read_clock(target: &Target, opts: &ClientOptions, exchanges: u32) -> Result<AgentClock, ClientError> {
    let peer = target.addr;
    let deadline = Instant::now() + CLOCK_READING_MAX;
    let too_far = || ClientError::ClockTooFar {
        peer,
        seconds: CLOCK_READING_MAX.as_secs_f64(),
    };
    let past = |e: ClientError| if Instant::now() >= deadline { too_far() } else { e };
    let mut conn = authenticated_by(target, opts, Some(deadline)).map_err(past)?;
    let mut made: Vec<Exchange> = Vec::with_capacity(exchanges.max(1) as usize);
    let mut about = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match estimate::next(&made, exchanges, left) {
            Next::Exchange => {}
            Next::Enough => break,
            Next::TooFar => return Err(too_far()),
        }
        let sent = SystemTime::now();
        let t0 = Instant::now();
        let reply = conn
            .send(&Message::Clock)
            .and_then(|()| conn.recv(CLOCK_REPLY_TIMEOUT.min(left), "waiting for the agent's clock"));
        let reply = match reply {
            Ok(r) => r,
            Err(_) if !made.is_empty() => break,
            Err(e) => return Err(past(e.into())),
        };
        let round_trip = t0.elapsed();
        let Message::ClockReading {
            unix_ns: far,
            host_name,
            node,
        } = reply
        else {
            return Err(conn.unexpected("clock_reading", &reply).into());
        };
        made.push(Exchange {
            sent_unix_ns: unix_ns(sent),
            far_unix_ns: far,
            round_trip,
        });
        about.get_or_insert((host_name, node));
    }
    let estimate = estimate::estimate(&made).ok_or(ClientError::Malformed { peer, what: "clock" })?;
    let (host_name, node) = about.ok_or(ClientError::Malformed { peer, what: "clock" })?;
    let clean = |s: String| crate::proto::peer_text_cut(&s, 64);
    Ok(AgentClock {
        estimate,
        host_name: clean(host_name),
        node: node.map(clean),
    })
}

/// (For a relaying agent, `agent::relay`.) Whether the agent at `target` is a linerate agent that holds the secret, all within `within`
///: the plain preamble (no first-flight proof: whoever listens there has not
/// shown it is an agent yet), its hello, its challenge answered and its proof checked, then
/// `profiles`, so that the agent ends the session as a finished one.
pub(crate) fn proves_itself(target: &Target, opts: &ClientOptions, within: Duration) -> Result<(), ClientError> {
    let deadline = Instant::now() + within;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let opts = ClientOptions {
        connect_timeout: left(),
        ..opts.clone()
    };
    let peer = target.addr;
    let stream = connect(peer, &opts, |_| Ok(()))?;
    let mut conn = Conn::new(stream, peer);
    // A listener that drips bytes is cut at the deadline too, not at a message's own.
    conn.set_message_timeout(left());
    conn.open_with(&frame::preamble(crate::proto::VERSION), left())?;
    let mut conn = answer_challenge(conn, target, &opts, &left)?;
    conn.send(&Message::Profiles)?;
    match conn.recv(left(), "waiting for its profiles")? {
        Message::ProfileList { .. } => Ok(()),
        other => Err(conn.unexpected("profile_list", &other).into()),
    }
}

/// A third-party run as it came back.
#[derive(Clone, Debug)]
pub struct Relayed {
    /// The run, `from` set to the name the controller gave the agent that ran it.
    pub result: TestResult,
    /// When the `from` agent sent `start`, in its own clock (Unix nanoseconds); None without a
    /// synchronised start.
    pub start_sent_far_unix_ns: Option<i64>,
    /// When the far agent had answered `started`, in the `from` agent's clock; None likewise.
    pub started_far_unix_ns: Option<i64>,
}

/// Exchanges of the clock reading a third-party run outside a matrix makes of its `from` agent,
/// to judge when the run it sends back started (a matrix has its own reading).
const RELAY_CLOCK_EXCHANGES: u32 = 4;

/// Asks `from` to run `spec` against the agent at `to` and send the run back; with
/// `start_at_far_unix_ns` (in `from`'s own clock) the test starts at that instant. `far_clock`
/// is what this host knows of `from`'s clock (a matrix's reading); without it, `from`'s clock is
/// read first. Ctrl-C (`interrupt`) is passed on as `stop`: what was measured comes back,
/// marked partial.
///
/// The run comes back bounded and checked as a direct client bounds and checks an agent's
/// report: read only up to what its test can fill
/// (`summary::relayed::relayed_limit_bytes`), then refused whole
/// ([`ClientError::RelayedRefused`]) unless it is a run of `spec`, started after the request,
/// with possible figures and the receiving end's counts
/// ([`crate::summary::relayed::check_relayed`]).
pub fn run_from(
    from: &Target,
    to: SocketAddr,
    spec: &TestSpec,
    opts: &ClientOptions,
    start_at_far_unix_ns: Option<i64>,
    far_clock: Option<ClockEstimate>,
    interrupt: &AtomicBool,
) -> Result<Relayed, ClientError> {
    if opts.secret.is_none() {
        return Err(ClientError::NeedSecretForRelay);
    }
    let far_clock = match far_clock {
        Some(c) => c,
        None => read_clock(from, opts, RELAY_CLOCK_EXCHANGES)?.estimate,
    };
    let mut conn = authenticated(from, opts)?;
    let sent_unix_ms = unix_ns(SystemTime::now()) / 1_000_000;
    conn.send(&Message::Relay {
        spec: spec.clone(),
        to,
        start_at_unix_ns: start_at_far_unix_ns,
    })?;
    let asked = Instant::now();
    let length = spec
        .timing()
        .length_seconds()
        .map_or(RELAY_COUNT_LIMIT, Duration::from_secs_f64);
    let deadline = asked + length + crate::client::START_WAIT_MAX + RELAY_ALLOWANCE;
    let mut stop_sent = false;
    loop {
        if interrupt.load(Ordering::Relaxed) && !stop_sent {
            stop_sent = true;
            conn.send(&Message::Stop)?;
        }
        if Instant::now() >= deadline {
            return Err(ProtoError::Timeout {
                peer: from.addr,
                what: "waiting for the third-party run's result",
                seconds: (length + crate::client::START_WAIT_MAX + RELAY_ALLOWANCE).as_secs_f64(),
            }
            .into());
        }
        // The run's document is larger than a set-up message, but no larger than its test can
        // fill: a larger one is refused at its length prefix, unread.
        conn.set_max_message(relayed_limit_bytes(spec, asked.elapsed()));
        match conn.try_recv(POLL)? {
            None => {}
            Some(Message::RelayResult {
                result,
                start_sent_unix_ns,
                started_unix_ns,
            }) => {
                let answered_unix_ms = unix_ns(SystemTime::now()) / 1_000_000;
                let checked = Asked {
                    spec,
                    // As the `from` agent names it: the canonical address.
                    to: SocketAddr::new(to.ip().to_canonical(), to.port()),
                    sent_unix_ms,
                    answered_unix_ms,
                    offset_ns: far_clock.offset_ns,
                    uncertainty_ns: far_clock.uncertainty_ns,
                };
                if let Err(why) = check_relayed(&result, &checked) {
                    return Err(ClientError::RelayedRefused {
                        peer: from.addr,
                        why: why.to_string(),
                    });
                }
                let mut result = crate::summary::check::escape_controls(*result);
                result.from = Some(from.name.clone());
                return Ok(Relayed {
                    result,
                    start_sent_far_unix_ns: start_sent_unix_ns,
                    started_far_unix_ns: started_unix_ns,
                });
            }
            Some(Message::Error { kind, message }) => {
                return Err(ProtoError::Refused {
                    peer: from.addr,
                    kind,
                    message: crate::proto::peer_text(&message),
                }
                .into());
            }
            Some(other) => return Err(conn.unexpected("relay_result", &other).into()),
        }
    }
}
