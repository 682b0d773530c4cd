//! A control session after the preamble: the hello and the challenge, the client's proof, its
//! request (validated, and counted against `max_tests`), then the test's own exchange in `tcp`,
//! `udp`, `rr` or `http`. Here too the pieces every test's exchange shares: the pending table for
//! data connections, `accepted`, `start`, and running the engine while watching the client.

use super::admit::{OpeningSlot, Source, near_fd_limit};
use super::budget::spec_bytes;
use super::profile::{self, Applied};
use super::{AgentEvent, DATA_TIMEOUT, IDLE_TIMEOUT, Pending, Slot, State};
use crate::engine::{Control, EngineError, Sink};
use crate::metrics::host;
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::frame::{self, COOKIE_LEN};
use crate::proto::{self, ErrorKind, Message, auth};
use crate::result::{IntervalSample, SideReport};
use crate::spec::TestSpec;
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// Why a session ends early: the error kind and text the client is sent.
pub(super) type Refusal = (ErrorKind, String);

pub(super) fn proto_refusal(e: ProtoError) -> Refusal {
    (ErrorKind::Protocol, e.to_string())
}

/// Time left of the handshake's one deadline (zero once it passed: the next read times out).
fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// A failed handshake read: past the one deadline, say so rather than how long the last wait was.
fn handshake_refusal(e: ProtoError, deadline: Instant) -> Refusal {
    match e {
        ProtoError::Timeout { .. } | ProtoError::Partial { .. } if Instant::now() >= deadline => (
            ErrorKind::Protocol,
            format!(
                "the handshake (preamble, authentication, request) did not finish within {} s",
                super::HANDSHAKE_TIMEOUT.as_secs()
            ),
        ),
        e => proto_refusal(e),
    }
}

pub(super) fn control_session(
    state: &State,
    events: &dyn Fn(&AgentEvent),
    conn: &mut Conn,
    deadline: Instant,
    opening: &mut OpeningSlot<'_>,
) -> Result<(), Refusal> {
    let secret = state.config.secret.as_deref();
    let nonce = secret.map(|_| auth::nonce());
    let hello = Message::Hello {
        software: format!("linerate {}", crate::VERSION),
        challenge: nonce.map(|n| proto::to_hex(&n)),
    };
    conn.send(&hello).map_err(proto_refusal)?;
    if let (Some(secret), Some(agent_nonce)) = (secret, nonce) {
        conn.set_max_message(frame::MAX_AUTH_BYTES);
        let answer = conn.recv(left(deadline), "waiting for authentication");
        conn.set_max_message(frame::MAX_REQUEST_BYTES);
        match answer.map_err(|e| handshake_refusal(e, deadline))? {
            Message::Auth { client_nonce, mac } => {
                let (Some(cn), Some(mac)) = (proto::from_hex(&client_nonce), proto::from_hex(&mac)) else {
                    return Err((ErrorKind::Auth, "malformed authentication".into()));
                };
                if !auth::verify_client(secret, &agent_nonce, &cn, &mac) {
                    return Err((ErrorKind::Auth, "wrong secret".into()));
                }
                // It knows the secret: no flood connection may close it to make room.
                if !opening.authenticated() {
                    return Err((ErrorKind::Busy, "closed to make room for a newer connection".into()));
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
    let (spec, profile) = match conn
        .recv(left(deadline), "waiting for a test request")
        .map_err(|e| handshake_refusal(e, deadline))?
    {
        Message::Request { spec, profile } => (spec, profile),
        other => {
            return Err((
                ErrorKind::Protocol,
                format!("expected 'request', got '{}'", other.name()),
            ));
        }
    };
    // The handshake is over: this connection no longer counts as opening (unless it was closed
    // to make room for a newer one just before).
    if !opening.settle() {
        return Err((ErrorKind::Busy, "closed to make room for a newer connection".into()));
    }
    spec.validate().map_err(|e| (ErrorKind::BadSpec, e.to_string()))?;
    if let Some(name) = &profile {
        state.config.profiles.find(name)?;
    }
    let Some(_test) = Slot::take(&state.tests, state.config.max_tests) else {
        return Err((
            ErrorKind::Busy,
            format!("this agent is running {} test(s), its limit", state.config.max_tests),
        ));
    };
    let _memory = state.budget.reserve(spec_bytes(&spec)).map_err(|over| {
        let kind = if over.never_fits() {
            ErrorKind::BadSpec
        } else {
            ErrorKind::Busy
        };
        (kind, over.to_string())
    })?;
    // The profile's command runs before the test is accepted, outside any measurement; its undo
    // runs when the report is made or, however the test ends, when `applied` drops.
    let mut applied = match &profile {
        Some(name) => Some(profile::apply(&state.config.profiles, &state.profile_running, name)?),
        None => None,
    };
    let (peer, test) = (conn.peer(), spec.kind());
    events(&AgentEvent::TestStarted { peer, test });
    let outcome = match spec {
        TestSpec::Tcp(tcp) => super::tcp::run(state, conn, &tcp, &mut applied),
        TestSpec::Udp(udp) => super::udp::run(state, conn, &udp, &mut applied),
        TestSpec::Rr(rr) => super::rr::run(state, conn, &rr, &mut applied),
        TestSpec::Http(http) => super::http::run(state, conn, &http, &mut applied),
    };
    drop(applied);
    events(&AgentEvent::TestEnded {
        peer,
        test,
        completed: outcome.is_ok(),
    });
    outcome
}

/// A test waiting for data connections with its cookie, and how many it takes (issue 14: a
/// test's own cookie must not let its client queue connections without limit).
pub(super) struct Expecting {
    tx: SyncSender<(u16, TcpStream)>,
    /// Stream indexes below this are valid.
    streams: u16,
    /// One connection per stream: how many may still come. None: a new connection per
    /// transaction (TCP_CRR), bounded by the queue and by `rate`.
    left: Option<usize>,
    rate: Option<ConnectionRate>,
    /// Where the test's control connection came from: its data connections, expected from
    /// there, do not count against that source's cap of opening connections.
    source: Source,
}

/// New connections a CRR test may open: twice its declared transaction rate over any second
/// (a token bucket), plus one per stream.
struct ConnectionRate {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl ConnectionRate {
    fn admit(&mut self, now: Instant) -> bool {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + gained).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Expecting {
    /// Data connections this test may still see opening at once: those it still expects, or for
    /// CRR two per stream.
    fn still_expected(&self) -> usize {
        self.left.unwrap_or(2 * usize::from(self.streams))
    }

    /// One data connection per stream, `streams` of them, queued in a channel of that size.
    pub(super) fn per_stream(streams: usize, source: Source) -> (Expecting, Receiver<(u16, TcpStream)>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(streams.max(1));
        let e = Expecting {
            tx,
            streams: u16::try_from(streams).unwrap_or(u16::MAX),
            left: Some(streams),
            rate: None,
            source,
        };
        (e, rx)
    }

    /// TCP_CRR: a new connection per transaction on `streams` streams; at most two per stream
    /// wait to be answered, and with a declared `rate` (transactions per second per stream) no
    /// more than twice that arrive over any second.
    pub(super) fn per_transaction(
        streams: usize,
        rate: Option<f64>,
        source: Source,
    ) -> (Expecting, Receiver<(u16, TcpStream)>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(2 * streams.max(1));
        let rate = rate.map(|r| {
            let per_second = 2.0 * r * streams as f64;
            let burst = per_second + streams as f64;
            ConnectionRate {
                per_second,
                burst,
                tokens: burst,
                at: Instant::now(),
            }
        });
        let e = Expecting {
            tx,
            streams: u16::try_from(streams).unwrap_or(u16::MAX),
            left: None,
            rate,
            source,
        };
        (e, rx)
    }
}

/// Data connections the running tests still expect: from `source`, and from anywhere.
pub(super) fn expected_from(state: &State, source: Source) -> (usize, usize) {
    let pending = state.pending.lock().unwrap_or_else(|e| e.into_inner());
    pending.values().fold((0, 0), |(mine, all), e| {
        let n = e.still_expected();
        (mine + if e.source == source { n } else { 0 }, all + n)
    })
}

/// Hands a data connection to the test that waits for `cookie`, or drops it at once: no such
/// test, a stream it does not have, more connections than it declared, faster than it declared,
/// its queue full, or too few descriptors left for the control port.
pub(super) fn deliver(state: &State, cookie: [u8; COOKIE_LEN], index: u16, stream: TcpStream) {
    if near_fd_limit(&stream, state.fd_limit) {
        return;
    }
    let mut pending = state.pending.lock().unwrap_or_else(|e| e.into_inner());
    let Some(e) = pending.get_mut(&cookie) else { return };
    if index >= e.streams || e.left == Some(0) {
        return;
    }
    if let Some(rate) = &mut e.rate
        && !rate.admit(Instant::now())
    {
        return;
    }
    match e.tx.try_send((index, stream)) {
        Ok(()) => {
            if let Some(n) = &mut e.left {
                *n -= 1;
            }
        }
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {}
    }
}

/// Removes a test's cookie from the pending table when the test ends, however it ends.
pub(super) struct Registration<'a> {
    pub(super) pending: &'a Pending,
    pub(super) cookie: [u8; COOKIE_LEN],
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&self.cookie);
        }
    }
}

pub(super) fn collect_streams(
    rx: &Receiver<(u16, TcpStream)>,
    wanted: usize,
) -> Result<Vec<Option<TcpStream>>, Refusal> {
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
pub(super) struct Quiet;

impl Sink for Quiet {
    fn interval(&mut self, _: &[IntervalSample]) {}
}

pub(super) fn new_cookie() -> [u8; COOKIE_LEN] {
    auth::nonce()[..COOKIE_LEN]
        .try_into()
        .expect("nonce is longer than a cookie")
}

/// Data connections that arrive with `cookie` go to the test's queue, as far as `expecting`
/// allows (until the registration drops).
pub(super) fn expect_streams(state: &State, cookie: [u8; COOKIE_LEN], expecting: Expecting) {
    state
        .pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(cookie, expecting);
}

pub(super) fn send_accepted(
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

/// Waits for `start`; under a profile longer, while the client's other agents run theirs.
pub(super) fn await_start(conn: &mut Conn, profile: &Option<Applied<'_>>) -> Result<(), Refusal> {
    let wait = IDLE_TIMEOUT
        + if profile.is_some() {
            proto::PROFILE_TIMEOUT
        } else {
            Duration::ZERO
        };
    match conn.recv(wait, "waiting for start").map_err(proto_refusal)? {
        Message::Start => Ok(()),
        other => Err((ErrorKind::Protocol, format!("expected 'start', got '{}'", other.name()))),
    }
}

/// Runs this end's engine while watching the client's control connection, then sends the
/// report with the configuration of the interface toward `peer`, read after the window
/// (netlink and sysfs cost a few milliseconds), and with the profile's record, its undo run
/// after that reading. The client may be gone (killed mid-test): then
/// there is no one to tell, and that is fine.
pub(super) fn run_and_report(
    state: &State,
    conn: &mut Conn,
    peer: Option<IpAddr>,
    profile: &mut Option<Applied<'_>>,
    run: impl FnOnce(&Control) -> Result<SideReport, EngineError>,
) -> Result<(), Refusal> {
    let control = Control {
        idle: state.config.idle,
        ..Control::default()
    };
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
    report.profile = profile.take().map(Applied::finish);
    let _ = conn.send(&Message::Result {
        report: Box::new(report),
    });
    // The client may have sent `stop` after this end finished on its own: read it rather than
    // close over it, or the reset that follows can cost the client the result.
    conn.close_gracefully(Duration::from_secs(2));
    Ok(())
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

pub(super) fn source_of(e: &dyn std::error::Error) -> String {
    e.source().map(|s| s.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_14_crr_connections_are_held_to_twice_the_declared_rate() {
        let source = Source::of(&"127.0.0.1:1".parse().expect("address"));
        let (mut e, _rx) = Expecting::per_transaction(2, Some(10.0), source);
        assert_eq!(e.still_expected(), 4, "two per stream may be opening");
        let rate = e.rate.as_mut().expect("a declared rate");
        let t0 = rate.at;
        // A burst of one second's worth (2 x 10/s x 2 streams) plus one per stream...
        let burst = (0..100).filter(|_| rate.admit(t0)).count();
        assert_eq!(burst, 42);
        // ...then 40 a second.
        let next = (1..=100)
            .filter(|i| rate.admit(t0 + Duration::from_millis(10 * i)))
            .count();
        assert_eq!(next, 40);
        let (plain, _rx) = Expecting::per_stream(3, source);
        assert_eq!(plain.still_expected(), 3);
        assert!(plain.rate.is_none());
    }
}
