//! What every kind's run shares on the client's end: reaching an agent (`reach`: [`Target`],
//! [`ClientOptions`], `connect`, `data_connection`; `handshake`), the test's acceptance
//! ([`Session`], `open_sessions`), `start`, and [`drive`]: the local engine run while every
//! agent is watched, the agents' reports checked, and the document assembled with the notes,
//! Ctrl-C and the lab in one place. It imports no kind: each kind (`tcp`, `udp`, `rr`, `http`)
//! is one file that opens its data streams and says how its document is assembled.

use super::handshake::authenticated;
pub(crate) use super::reach::START_WAIT_MAX;
pub use super::reach::{ClientError, ClientOptions, StartAt, Target};
pub(super) use super::reach::{REPLY_TIMEOUT, connect, data_connection};
use crate::engine::{Control, EngineError};
use crate::metrics::host::{HostInfo, ReadHostInfo};
use crate::proto::Message;
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::frame::COOKIE_LEN;
use crate::result::{SideReport, TestResult};
use crate::spec::TestSpec;
use crate::summary::{self, AgentOutcome};
use crate::unixtime::{now_unix_ms, unix_ns};
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long an agent may take to send its result once the local engine has finished.
const RESULT_TIMEOUT: Duration = Duration::from_secs(20);
/// A control connection that has passed the handshake and had its test accepted.
pub(super) struct Session {
    pub target: Target,
    pub conn: Conn,
    pub cookie: [u8; COOKIE_LEN],
    pub host: HostInfo,
    /// The agent's UDP data sockets (UDP tests).
    pub udp_ports: Vec<u16>,
    /// How long the agent may be silent after the local engine is done before its result is
    /// given up (longer under a profile: its undo runs first).
    pub result_timeout: Duration,
}

impl Session {
    /// Tells the agent this end's UDP data sockets, one per stream of its own.
    pub(super) fn send_ports(&mut self, udp_ports: Vec<u16>) -> Result<(), ClientError> {
        Ok(self.conn.send(&Message::Ports { udp_ports })?)
    }
}

/// Connects, exchanges preambles, authenticates and asks for `spec`.
pub(super) fn open_session(target: &Target, spec: &TestSpec, opts: &ClientOptions) -> Result<Session, ClientError> {
    let peer = target.addr;
    let mut conn = authenticated(target, opts)?;
    conn.send(&Message::Request {
        spec: spec.clone(),
        profile: opts.profile.clone(),
    })?;
    // Under a profile the agent runs its command before it accepts, and its undo before it
    // sends its result.
    let allowance = opts
        .profile
        .as_ref()
        .map_or(Duration::ZERO, |_| crate::proto::PROFILE_TIMEOUT);
    match conn.recv(REPLY_TIMEOUT + allowance, "waiting for the test to be accepted")? {
        Message::Accepted {
            cookie,
            host,
            udp_ports,
        } => {
            let bytes = crate::codec::from_hex(&cookie).ok_or(ClientError::Malformed { peer, what: "cookie" })?;
            let cookie: [u8; COOKIE_LEN] = bytes
                .try_into()
                .map_err(|_| ClientError::Malformed { peer, what: "cookie" })?;
            Ok(Session {
                target: target.clone(),
                conn,
                cookie,
                // The agent's host name and OS reach the report: no escape sequence in them.
                host: summary::check::escape_controls(host),
                udp_ports,
                result_timeout: RESULT_TIMEOUT + allowance,
            })
        }
        other => Err(conn.unexpected("accepted", &other).into()),
    }
}

/// Opens a session with every target for `test`, after checking what can be checked here.
pub(super) fn open_sessions(
    test: &TestSpec,
    cpus: &[usize],
    targets: &[Target],
    opts: &ClientOptions,
) -> Result<Vec<Session>, ClientError> {
    let total = test.streams_per_agent() * targets.len();
    if total > usize::from(u16::MAX) {
        return Err(ClientError::TooManyStreams { streams: total });
    }
    crate::engine::pin::check_cpus(cpus)?;
    open_each(test, targets, opts).into_iter().collect()
}

/// The most sessions opened at once, each on a thread of its own (a thread per target
/// failed to spawn at 3,000 targets, and the client panicked).
const OPEN_THREADS: usize = 128;

/// Opens a session with every target for `test`, each with its own outcome (an HTTP load goes on
/// without an agent it only tried).
pub(super) fn open_each(
    test: &TestSpec,
    targets: &[Target],
    opts: &ClientOptions,
) -> Vec<Result<Session, ClientError>> {
    // Many at once: under a profile each agent runs its command before it accepts, and an agent
    // that has accepted waits for `start` only so long. Up to [`OPEN_THREADS`] threads (this one
    // among them) take the next target until none is left; a thread the system refuses is one
    // fewer, never a panic.
    let next = AtomicUsize::new(0);
    let opened: Vec<Mutex<Option<Result<Session, ClientError>>>> = targets.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(t) = targets.get(i) else { break };
            let session = open_session(t, test, opts);
            *opened[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..OPEN_THREADS.min(targets.len()) {
            if std::thread::Builder::new().spawn_scoped(scope, work).is_err() {
                break;
            }
        }
        work();
    });
    opened
        .into_iter()
        .map(|o| {
            o.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every target was taken by a thread that ran to its end")
        })
        .collect()
}

/// Tells every agent to start (at `opts.start_at` when given), then waits until each has.
pub(super) fn start_all(sessions: &mut [Session], opts: &ClientOptions) -> Result<(), ClientError> {
    if let Some(start) = &opts.start_at {
        // An agent that accepted waits for `start` only so long (its idle timeout): a start
        // further off than that is the caller's error, refused before it costs a test.
        if let Ok(wait) = start.at.duration_since(SystemTime::now()) {
            std::thread::sleep(wait.min(START_WAIT_MAX));
        }
        start.sent_unix_ns.store(unix_ns(SystemTime::now()), Ordering::Relaxed);
    }
    for s in sessions.iter_mut() {
        s.conn.send(&Message::Start)?;
    }
    for s in sessions.iter_mut() {
        match s.conn.recv(REPLY_TIMEOUT, "waiting for the agent to start")? {
            Message::Started => {}
            other => return Err(s.conn.unexpected("started", &other).into()),
        }
    }
    if let Some(start) = &opts.start_at {
        start
            .started_unix_ns
            .store(unix_ns(SystemTime::now()), Ordering::Relaxed);
    }
    Ok(())
}

/// Ctrl-C reaches the local engine while it runs, even when no watcher is left to pass it on.
fn forward_interrupt(interrupt: &AtomicBool, control: &Control, engine_done: &AtomicBool) {
    while !engine_done.load(Ordering::Relaxed) {
        if interrupt.load(Ordering::Relaxed) {
            control.stop_send();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// This host's configuration with the interfaces toward `peers` (read after the window).
fn config_towards(peers: impl Iterator<Item = IpAddr>) -> crate::metrics::host::HostConfig {
    let mut used: Vec<String> = Vec::new();
    for p in peers {
        if let Some(i) = crate::metrics::host::interface_towards(p)
            && !used.contains(&i)
        {
            used.push(i);
        }
    }
    crate::metrics::host::read_config(&used)
}

/// One run of any kind, as its kind's file hands it to [`drive`].
pub(super) struct Run<'a> {
    pub spec: &'a TestSpec,
    /// The agents' sessions, accepted and started (HTTP: none, or the server host's agent).
    pub sessions: &'a mut [Session],
    pub opts: &'a ClientOptions,
    /// Ctrl-C (or SIGTERM): stops the senders and marks the result partial.
    pub interrupt: &'a AtomicBool,
    /// Where this host's interfaces are read toward after the window: the agents, or an HTTP
    /// load's servers.
    pub towards: Vec<IpAddr>,
    /// Notes from setting the run up, before any of the run's own.
    pub notes: Vec<String>,
    /// The peer decides when the run ends (an iperf3 server's TEST_END): the
    /// engine's [`Control::peer_ends`], so its stop is the normal end, not a cut.
    pub peer_ends: bool,
}

impl<'a> Run<'a> {
    /// A run against the agents of `sessions`, whose interfaces are read toward them.
    pub(super) fn agents(
        spec: &'a TestSpec,
        sessions: &'a mut [Session],
        opts: &'a ClientOptions,
        interrupt: &'a AtomicBool,
    ) -> Run<'a> {
        Run {
            spec,
            towards: sessions.iter().map(|s| s.target.addr.ip()).collect(),
            sessions,
            opts,
            interrupt,
            notes: Vec::new(),
            peer_ends: false,
        }
    }
}

/// What a kind's file assembles its document from once a run is over: the local report, each
/// agent's outcome (its report checked and cleaned), and the notes so far.
pub(super) struct Ended<'a> {
    pub spec: &'a TestSpec,
    pub local: &'a SideReport,
    pub agents: &'a [AgentOutcome<'a>],
    /// Per agent: its control connection was lost while the local engine still ran.
    pub lost: Vec<bool>,
    /// Some agent's report came but could not be the answer to this test.
    pub refused: bool,
    /// The first agent's failure, in the words of its note.
    pub first_error: Option<String>,
    pub notes: Vec<String>,
    pub started_unix_ms: u64,
}

/// Runs the local engine (`run_local`, which returns its report and what else its kind keeps)
/// while watching every agent, checks what each agent sent against the test and the client's
/// own counts, and hands it all to `assemble`. In one place for every kind: the agents' notes,
/// Ctrl-C (the result marked partial), and the lab the run ran in.
pub(super) fn drive<R>(
    run: Run<'_>,
    run_local: impl FnOnce(&Control) -> Result<(SideReport, R), EngineError>,
    assemble: impl FnOnce(Ended<'_>, R) -> TestResult,
) -> Result<TestResult, ClientError> {
    let Run {
        spec,
        sessions,
        opts,
        interrupt,
        towards,
        mut notes,
        peer_ends,
    } = run;
    let per_agent = spec.streams_per_agent();
    let stop_when_done = spec.agent_waits_for_stop();
    let started_unix_ms = now_unix_ms();
    let control = Control {
        peer_ends,
        ..Control::default()
    };
    let engine_done = AtomicBool::new(false);
    let started = Instant::now();
    let (local, watched) = std::thread::scope(|scope| {
        let watchers: Vec<_> = sessions
            .iter_mut()
            .map(|s| {
                let (control, engine_done) = (&control, &engine_done);
                let watch = Watch {
                    control,
                    interrupt,
                    engine_done,
                    stop_when_done,
                    bound: ResultBound {
                        spec,
                        cores: s.host.cores,
                        started,
                        silent: s.result_timeout,
                    },
                };
                scope.spawn(move || watch.agent(&mut s.conn))
            })
            .collect();
        // Ctrl-C reaches the local engine even when every watcher has already returned.
        scope.spawn(|| forward_interrupt(interrupt, &control, &engine_done));
        let local = run_local(&control);
        engine_done.store(true, Ordering::Relaxed);
        let watched: Vec<_> = watchers
            .into_iter()
            .map(|w| w.join().expect("watcher thread does not panic"))
            .collect();
        (local, watched)
    });
    let (mut local, kept) = local?;
    // The interfaces towards the peers, read after the window.
    local.config = Some(config_towards(towards.into_iter()));

    notes.extend(local.notes.iter().cloned());
    // A multicast sender's streams serve every agent: each agent's part is the same.
    let shared = matches!(spec, TestSpec::Udp(u) if u.multicast.is_some());
    let client_parts: Vec<SideReport> = (0..sessions.len())
        .map(|a| part_for_agent(&local, if shared { 0 } else { a }, per_agent))
        .collect();
    let mut reports = Vec::with_capacity(sessions.len());
    let mut lost = Vec::with_capacity(sessions.len());
    let (mut refused, mut first_error) = (false, None);
    // Agents that did not apply the profile asked for.
    let mut profile_faults = Vec::new();
    for ((s, (r, lost_mid_run)), mine) in sessions.iter().zip(watched).zip(&client_parts) {
        lost.push(lost_mid_run);
        // A report that cannot be the answer to this test is dropped whole.
        let r = r.map_err(|e| e.to_string()).and_then(|report| {
            summary::check::check_report(spec, &report, mine, started.elapsed())
                .map(|()| report)
                .map_err(|e| {
                    refused = true;
                    format!("result refused: {e}")
                })
        });
        match r {
            Ok(report) => {
                let report = summary::check::escape_controls(report);
                notes.extend(
                    report
                        .notes
                        .iter()
                        .map(|n| format!("agent {}: {}", s.target.name, crate::proto::peer_text(n))),
                );
                let asked = opts.profile.as_deref();
                if let Some(why) = super::profile::fault(asked, report.profile.as_ref()) {
                    profile_faults.push(format!("agent {}: {why}", s.target.name));
                }
                if let Some(note) = super::profile::undo_note(report.profile.as_ref()) {
                    notes.push(format!("agent {}: {note}", s.target.name));
                }
                reports.push(Some(report));
            }
            Err(e) => {
                notes.push(format!("agent {}: {e}", s.target.name));
                first_error.get_or_insert_with(|| format!("agent {}: {e}", s.target.name));
                reports.push(None);
            }
        }
    }
    let outcomes: Vec<AgentOutcome<'_>> = sessions
        .iter()
        .zip(&reports)
        .zip(&client_parts)
        .map(|((s, r), c)| AgentOutcome {
            name: &s.target.name,
            host: Some(&s.host),
            report: r.as_ref(),
            client: c,
        })
        .collect();
    let ended = Ended {
        spec,
        local: &local,
        agents: &outcomes,
        lost,
        refused,
        first_error,
        notes,
        started_unix_ms,
    };
    let mut result = assemble(ended, kept);
    // Figures from a host not under the profile asked for are not the ones the user meant to
    // measure: the run failed, saying which agent and why.
    if let Some(first) = profile_faults.first() {
        result.partial = true;
        result.error = Some(first.clone());
        result.notes.extend(profile_faults.iter().cloned());
    }
    // Ctrl-C cut the run short, whatever the engines made of their stop: a sweep stops here.
    if interrupt.load(Ordering::Relaxed) {
        result.partial = true;
        result.notes.push("stopped early by Ctrl-C".into());
    }
    result.lab.clone_from(&opts.lab);
    summary::line_rate_in_lab(&mut result);
    Ok(result)
}

/// The document of a run whose streams the agents count too (TCP, UDP, request-response): the
/// reports joined by [`summary::assemble`]; with no agent's result and nothing counted here
/// either, the run failed as a whole. `ipv6`: the path the TCP line-rate figure is taken over.
pub(super) fn joined(e: Ended<'_>, ipv6: bool) -> TestResult {
    let mut result = summary::assemble(e.spec, HostInfo::read(), e.agents, e.started_unix_ms, e.notes, ipv6);
    let counted = |x: &crate::result::SideSummary| x.ops > 0 || x.bytes > 0;
    if e.agents.iter().all(|a| a.report.is_none())
        && !counted(&result.summary.sent)
        && !counted(&result.summary.received)
    {
        result.error = e.first_error;
    }
    result
}

/// The client's report cut down to one agent's streams, renumbered from 0.
fn part_for_agent(local: &SideReport, agent: usize, per_agent: usize) -> SideReport {
    let range = (agent * per_agent) as u16..((agent + 1) * per_agent) as u16;
    let base = range.start;
    let mut part = local.clone();
    part.streams.retain(|s| range.contains(&s.stream));
    part.streams.iter_mut().for_each(|s| s.stream -= base);
    part.intervals.retain(|s| range.contains(&s.stream));
    part.intervals.iter_mut().for_each(|s| s.stream -= base);
    part
}

/// What bounds an agent's result message: the test, the agent's CPUs, and when the run began.
#[derive(Clone, Copy)]
struct ResultBound<'a> {
    pub spec: &'a TestSpec,
    pub cores: usize,
    pub started: Instant,
    /// How long the agent may be silent after the local engine is done (`Session::result_timeout`).
    pub silent: Duration,
}

impl ResultBound<'_> {
    /// The largest result message the client reads now.
    fn limit_bytes(&self) -> u32 {
        summary::check::result_limit_bytes(self.spec, self.cores, self.started.elapsed())
    }
}

/// How one agent is watched while the local engine runs: the run's flags and its result bound.
struct Watch<'a> {
    control: &'a Control,
    interrupt: &'a AtomicBool,
    engine_done: &'a AtomicBool,
    /// The agent runs until told: `stop` goes out once the local engine is done.
    stop_when_done: bool,
    bound: ResultBound<'a>,
}

impl Watch<'_> {
    /// Watches one agent's control connection while the local engine runs: passes on a Ctrl-C
    /// as `stop`, and waits for the agent's result. A connection lost (or an agent's error)
    /// while the local engine still runs stops that engine at once, since a UDP sender or an
    /// HTTP user has no reset to tell it; the second value says that happened.
    fn agent(&self, conn: &mut Conn) -> (Result<SideReport, ProtoError>, bool) {
        let result = self.await_result(conn);
        let lost_mid_run = result.is_err() && !self.engine_done.load(Ordering::Relaxed);
        if lost_mid_run {
            self.control.abort();
        }
        (result, lost_mid_run)
    }

    /// The loop of [`Watch::agent`].
    fn await_result(&self, conn: &mut Conn) -> Result<SideReport, ProtoError> {
        let Watch {
            control,
            interrupt,
            engine_done,
            stop_when_done,
            bound,
        } = self;
        let mut stop_sent = false;
        // Since when the agent has sent nothing while the local engine was done: a large result
        // arriving slowly keeps resetting it.
        let mut silent_since: Option<(Instant, usize)> = None;
        loop {
            if interrupt.load(Ordering::Relaxed) && !stop_sent {
                control.stop_send();
                stop_sent = true;
                conn.send(&Message::Stop)?;
            }
            if *stop_when_done && engine_done.load(Ordering::Relaxed) && !stop_sent {
                stop_sent = true;
                conn.send(&Message::Stop)?;
            }
            if engine_done.load(Ordering::Relaxed) {
                let have = conn.buffered();
                match silent_since {
                    Some((_, n)) if n == have => {}
                    _ => silent_since = Some((Instant::now(), have)),
                }
            }
            if silent_since.is_some_and(|(t, _)| t.elapsed() > bound.silent) {
                return Err(ProtoError::Timeout {
                    peer: conn.peer(),
                    what: "waiting for its result",
                    seconds: bound.silent.as_secs_f64(),
                });
            }
            // A result larger than the test can fill is refused at its length prefix, unread.
            conn.set_max_message(bound.limit_bytes());
            match conn.try_recv(Duration::from_millis(100))? {
                None => {}
                Some(Message::Result { report }) => return Ok(*report),
                Some(Message::Error { kind, message }) => {
                    return Err(ProtoError::Refused {
                        peer: conn.peer(),
                        kind,
                        message: crate::proto::peer_text(&message),
                    });
                }
                Some(other) => return Err(conn.unexpected("result", &other)),
            }
        }
    }
}
