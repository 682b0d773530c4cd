//! The responsiveness test (`linerate rpm`, draft-ietf-ippm-responsiveness-09) as a client of
//! any server that follows the draft: working conditions made by load-generating HTTP/2
//! connections (GETs of the large object, POSTs to the upload URL) added at each interval (ID),
//! foreign probes on new connections (their TCP handshake, TLS handshake per round trip and a
//! 1-byte GET timed) and self probes (a 1-byte GET on a load-generating connection), the
//! goodput's and then the responsiveness's stability over MAD intervals within SDT, and the
//! trimmed means (TMP) of the last MAD intervals' probes.
//!
//! One current-thread tokio runtime runs it all (the `h2` crate's client over
//! `crate::tlsio::Io`, as the server's lanes run its server half); a stage's connections are
//! tasks of a `LocalSet`, ended with the stage. Before the load, a few probes on the idle link
//! give the idle latency. The draft's arithmetic is [`stats`]'s, with no I/O. This engine keeps
//! its own clock of intervals rather than the runner's: the draft's intervals decide the load
//! itself (a connection added, the test ended), which no other kind does.

mod config;
mod conn;
pub mod stats;

pub use config::{RpmUrls, parse as parse_config};
pub use conn::Endpoint;

use crate::engine::run::cpu_over;
use crate::metrics::sample::{HostSnapshot, HostUsage, IrqGroups};
use crate::result::CpuUsage;
use crate::spec::RpmSpec;
use conn::{Open, get, open, upload};
use rustls::ClientConfig;
use stats::Means;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// Bytes a probe pair costs the link, as the draft estimates them: a foreign probe about 5000
/// (TCP, TLS, HTTP/2), a self probe about 1000.
const PROBE_PAIR_BYTES: f64 = 6000.0;
/// The probe pairs per second of the first interval, before any goodput is known.
const FIRST_INTERVAL_PROBES_PER_SECOND: f64 = 10.0;
/// How often the loop wakes to start probes and look at the stop flags.
const TICK: Duration = Duration::from_millis(20);

/// The server to test: its URLs and where its connections go.
#[derive(Clone, Debug)]
pub struct RpmServer {
    pub urls: RpmUrls,
    pub endpoint: Endpoint,
}

/// A foreign probe answered: when it began and ended, and its three figures, ms.
#[derive(Clone, Copy, Debug)]
pub struct ForeignProbe {
    pub at: Instant,
    pub done: Instant,
    pub tcp_ms: f64,
    /// Per round trip; None in cleartext.
    pub tls_ms: Option<f64>,
    pub http_ms: f64,
}

/// A self probe answered: when it began and ended, and its GET's time, ms.
#[derive(Clone, Copy, Debug)]
pub struct SelfProbe {
    pub at: Instant,
    pub done: Instant,
    pub http_ms: f64,
}

/// The probes of a phase: those answered, and the counts sent and lost (unanswered within the
/// timeout, or failed); sent = answered + lost + in flight at the end.
#[derive(Clone, Debug, Default)]
pub struct Probes {
    pub foreign: Vec<ForeignProbe>,
    pub own: Vec<SelfProbe>,
    pub foreign_sent: u64,
    pub foreign_lost: u64,
    pub own_sent: u64,
    pub own_lost: u64,
}

/// One interval of a stage: its bounds and the load's bytes each way in it.
#[derive(Clone, Copy, Debug)]
pub struct IntervalBytes {
    pub start: Instant,
    pub end: Instant,
    pub down_bytes: u64,
    pub up_bytes: u64,
    /// Load-generating connections open at its end, each way.
    pub connections_down: u32,
    pub connections_up: u32,
    /// Whether it ran its whole ID (the last may be cut by the time limit or a stop).
    pub whole: bool,
}

/// One stage as it ran.
#[derive(Clone, Debug)]
pub struct StageRun {
    pub down: bool,
    pub up: bool,
    pub start: Instant,
    pub end: Instant,
    pub intervals: Vec<IntervalBytes>,
    pub probes: Probes,
    /// The goodput's moving averages, bits/s, one per whole interval until it was stable.
    pub goodput_averages: Vec<f64>,
    /// The responsiveness at each interval after the goodput was stable, RPM.
    pub responsiveness: Vec<f64>,
    pub goodput_stable: bool,
    pub stable: bool,
    /// The trimmed means over the last MAD intervals, and the probes they were made of.
    pub means: Means,
    pub foreign_in_means: u64,
    pub own_in_means: u64,
}

/// What a responsiveness test measured.
#[derive(Clone, Debug)]
pub struct RpmRun {
    /// The load's time zero: the first stage's start.
    pub zero: Instant,
    pub idle: Probes,
    pub stages: Vec<StageRun>,
    /// A load-generating connection that failed (the draft aborts the test then): why.
    pub failure: Option<String>,
    pub interrupted: bool,
    /// This host's and this process's CPU from the first stage's start to the last one's end
    /// (the runner's `cpu_over`), and the host's samplers over it.
    pub cpu: CpuUsage,
    pub host: Option<HostUsage>,
}

/// What every task of a run shares.
struct Ctx {
    spec: RpmSpec,
    server: RpmServer,
    tls: Option<Arc<ClientConfig>>,
    timeout: Duration,
}

/// A current-thread runtime with its timers and sockets.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// Fetches the configuration document at `url` over a connection to `endpoint` (HTTP/2, as the
/// draft requires of the server) and reads it; the error says why, in one line.
pub fn fetch_config(
    url: &http::Uri,
    endpoint: &Endpoint,
    tls: Option<&Arc<ClientConfig>>,
    timeout: Duration,
) -> Result<RpmUrls, String> {
    let rt = runtime().map_err(|e| format!("starting the rpm client's runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let body = local.block_on(&rt, async {
        let fetch = async {
            let c = open(endpoint, tls).await?;
            get(&c.send, url, conn::MAX_SMALL_BODY, None).await
        };
        match tokio::time::timeout(timeout, fetch).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "no configuration from {url} within {} s",
                timeout.as_secs_f64()
            )),
        }
    })?;
    parse_config(&body).map_err(|why| format!("{url}: {why}"))
}

/// Runs the test: the idle probes, then each stage. Only setting the runtime up fails; a
/// server that fails mid-test ends it with what was measured (`failure`).
pub fn run(
    spec: &RpmSpec,
    server: &RpmServer,
    tls: Option<Arc<ClientConfig>>,
    interrupt: &AtomicBool,
) -> Result<RpmRun, crate::engine::EngineError> {
    let rt = runtime().map_err(|source| crate::engine::EngineError::Io {
        what: "starting the rpm client's runtime",
        source,
    })?;
    let ctx = Rc::new(Ctx {
        spec: spec.clone(),
        server: server.clone(),
        tls,
        timeout: Duration::from_millis(u64::from(spec.timeout_ms)),
    });
    let local = tokio::task::LocalSet::new();
    Ok(local.block_on(&rt, async move {
        let idle = idle_probes(&ctx).await;
        let before = HostSnapshot::read();
        let zero = Instant::now();
        let mut run = RpmRun {
            zero,
            idle,
            stages: Vec::new(),
            failure: None,
            interrupted: false,
            cpu: CpuUsage::default(),
            host: None,
        };
        for (down, up) in ctx.spec.stages() {
            let (stage, failure) = stage(&ctx, down, up, interrupt).await;
            run.stages.push(stage);
            run.interrupted = interrupt.load(Ordering::Relaxed);
            if failure.is_some() || run.interrupted {
                run.failure = failure;
                break;
            }
        }
        let seconds = zero.elapsed().as_secs_f64();
        let (cpu, host) = cpu_over(&before, &HostSnapshot::read(), &IrqGroups::default(), seconds);
        (run.cpu, run.host) = (cpu, Some(host));
        run
    }))
}

/// A foreign probe: a new connection, its handshakes timed, then a GET of the small object
/// timed. None: it failed or timed out.
async fn foreign_probe(ctx: &Ctx) -> Option<ForeignProbe> {
    let at = Instant::now();
    let probe = async {
        let c = open(&ctx.server.endpoint, ctx.tls.as_ref()).await.ok()?;
        let began = Instant::now();
        get(&c.send, &ctx.server.urls.small, conn::MAX_SMALL_BODY, None)
            .await
            .ok()?;
        Some(ForeignProbe {
            at,
            done: Instant::now(),
            tcp_ms: c.tcp_ms,
            tls_ms: c.tls_ms,
            http_ms: began.elapsed().as_secs_f64() * 1e3,
        })
    };
    tokio::time::timeout(ctx.timeout, probe).await.ok().flatten()
}

/// A GET of the small object on an open connection, timed. None: failed or timed out.
async fn self_probe(ctx: &Ctx, send: &h2::client::SendRequest<bytes::Bytes>) -> Option<SelfProbe> {
    let at = Instant::now();
    let probe = get(send, &ctx.server.urls.small, conn::MAX_SMALL_BODY, None);
    match tokio::time::timeout(ctx.timeout, probe).await {
        Ok(Ok(_)) => Some(SelfProbe {
            at,
            done: Instant::now(),
            http_ms: at.elapsed().as_secs_f64() * 1e3,
        }),
        _ => None,
    }
}

/// The idle link's latency: `idle_probes` foreign probes one after another, then as many self
/// probes on one connection that carries nothing else.
async fn idle_probes(ctx: &Ctx) -> Probes {
    let mut p = Probes::default();
    for _ in 0..ctx.spec.idle_probes {
        p.foreign_sent += 1;
        match foreign_probe(ctx).await {
            Some(f) => p.foreign.push(f),
            None => p.foreign_lost += 1,
        }
    }
    if ctx.spec.idle_probes == 0 {
        return p;
    }
    let opened = tokio::time::timeout(ctx.timeout, open(&ctx.server.endpoint, ctx.tls.as_ref())).await;
    let conn: Option<Open> = opened.ok().and_then(Result::ok);
    for _ in 0..ctx.spec.idle_probes {
        p.own_sent += 1;
        let answered = match &conn {
            Some(c) => self_probe(ctx, &c.send).await,
            None => None,
        };
        match answered {
            Some(s) => p.own.push(s),
            None => p.own_lost += 1,
        }
    }
    p
}

/// What a stage's tasks share: the load's byte counts, the open load connections (for self
/// probes), the first failure, and the probes.
#[derive(Default)]
struct Shared {
    down_bytes: Rc<Cell<u64>>,
    up_bytes: Rc<Cell<u64>>,
    connections_down: Cell<u32>,
    connections_up: Cell<u32>,
    sends: RefCell<Vec<h2::client::SendRequest<bytes::Bytes>>>,
    /// The upload connections' sockets, whose unsent limit follows their rate.
    upload_sockets: RefCell<Vec<std::os::fd::OwnedFd>>,
    failure: RefCell<Option<String>>,
    probes: RefCell<Probes>,
}

impl Shared {
    fn fail(&self, why: String) {
        self.failure.borrow_mut().get_or_insert(why);
    }
}

/// One load-generating connection: opened, then its download or upload until the stage ends
/// (the task is aborted) or it fails (the stage's failure).
async fn load(ctx: Rc<Ctx>, shared: Rc<Shared>, down: bool) {
    let c = match tokio::time::timeout(ctx.timeout, open(&ctx.server.endpoint, ctx.tls.as_ref())).await {
        Ok(Ok(c)) => c,
        Ok(Err(why)) => return shared.fail(why),
        Err(_) => return shared.fail("a load-generating connection was not open within the timeout".into()),
    };
    shared.sends.borrow_mut().push(c.send.clone());
    if !down && let Ok(socket) = c.socket.try_clone() {
        shared.upload_sockets.borrow_mut().push(socket);
    }
    let opened = if down {
        &shared.connections_down
    } else {
        &shared.connections_up
    };
    opened.set(opened.get() + 1);
    let why = if down {
        let count = Rc::clone(&shared.down_bytes);
        match get(&c.send, &ctx.server.urls.large, 0, Some(&count)).await {
            Ok(_) => format!("the server ended the large object {} early", ctx.server.urls.large),
            Err(why) => why,
        }
    } else {
        upload(&c.send, &ctx.server.urls.upload, &shared.up_bytes).await
    };
    shared.fail(why);
}

/// A probe pair: a foreign probe, and a self probe on a load-generating connection chosen at
/// random (none open yet: no self probe).
fn launch_pair(ctx: &Rc<Ctx>, shared: &Rc<Shared>, tasks: &mut Vec<JoinHandle<()>>) {
    let (c, s) = (Rc::clone(ctx), Rc::clone(shared));
    s.probes.borrow_mut().foreign_sent += 1;
    tasks.push(tokio::task::spawn_local(async move {
        let answered = foreign_probe(&c).await;
        let mut p = s.probes.borrow_mut();
        match answered {
            Some(f) => p.foreign.push(f),
            None => p.foreign_lost += 1,
        }
    }));
    let send = {
        let sends = shared.sends.borrow();
        (!sends.is_empty()).then(|| {
            let mut pick = [0u8; 8];
            rand::fill(&mut pick);
            sends[(u64::from_le_bytes(pick) % sends.len() as u64) as usize].clone()
        })
    };
    if let Some(send) = send {
        let (c, s) = (Rc::clone(ctx), Rc::clone(shared));
        s.probes.borrow_mut().own_sent += 1;
        tasks.push(tokio::task::spawn_local(async move {
            let answered = self_probe(&c, &send).await;
            let mut p = s.probes.borrow_mut();
            match answered {
                Some(o) => p.own.push(o),
                None => p.own_lost += 1,
            }
        }));
    }
}

/// The trimmed means of the probes completed at or after `from` (the draft: "the last MAD
/// intervals worth of completed responsiveness probes"), and how many went in.
fn means_since(probes: &Probes, from: Instant, keep_percent: f64, tls: bool) -> (Means, u64, u64) {
    let foreign: Vec<&ForeignProbe> = probes.foreign.iter().filter(|p| p.done >= from).collect();
    let own: Vec<f64> = probes
        .own
        .iter()
        .filter(|p| p.done >= from)
        .map(|p| p.http_ms)
        .collect();
    let of = |f: &dyn Fn(&ForeignProbe) -> Option<f64>| {
        let v: Vec<f64> = foreign.iter().filter_map(|p| f(p)).collect();
        stats::trimmed_mean(&v, keep_percent)
    };
    let means = Means {
        tcp_ms: of(&|p| Some(p.tcp_ms)),
        tls_ms: if tls { of(&|p| p.tls_ms) } else { None },
        http_ms: of(&|p| Some(p.http_ms)),
        self_ms: stats::trimmed_mean(&own, keep_percent),
    };
    (means, foreign.len() as u64, own.len() as u64)
}

/// Where the stage stands at the end of each interval: the goodput's history and stability,
/// then the responsiveness's.
#[derive(Default)]
struct Progress {
    goodputs: Vec<f64>,
    goodput_averages: Vec<f64>,
    responsiveness: Vec<f64>,
    goodput_stable: bool,
    stable: bool,
}

impl Progress {
    /// The draft's step at the end of a whole interval: the goodput's moving average and its
    /// stability; once stable, the responsiveness over the last MAD intervals and its
    /// stability.
    fn step(&mut self, spec: &RpmSpec, goodput_bps: f64, responsiveness: impl FnOnce() -> Option<f64>) {
        let mad = spec.mad as usize;
        self.goodputs.push(goodput_bps);
        if !self.goodput_stable {
            let average = stats::moving_average(&self.goodputs, mad).unwrap_or(0.0);
            self.goodput_averages.push(average);
            self.goodput_stable = stats::stable(&self.goodput_averages, mad, spec.sdt_percent);
        }
        if self.goodput_stable
            && let Some(r) = responsiveness()
        {
            self.responsiveness.push(r);
            self.stable = stats::stable(&self.responsiveness, mad, spec.sdt_percent);
        }
    }
}

/// One stage: connections added at each interval, probes spread over it, until stable, the
/// time limit, a failure or a stop. Returns the stage and the failure, if one ended it.
async fn stage(ctx: &Rc<Ctx>, down: bool, up: bool, interrupt: &AtomicBool) -> (StageRun, Option<String>) {
    let spec = &ctx.spec;
    let shared = Rc::new(Shared::default());
    let mut loads: Vec<JoinHandle<()>> = Vec::new();
    let mut probes: Vec<JoinHandle<()>> = Vec::new();
    let add = |n: u32, loads: &mut Vec<JoinHandle<()>>| {
        for (on, is_down) in [(down, true), (up, false)] {
            let open_now = loads.len() as u32 / (u32::from(down) + u32::from(up)).max(1);
            for _ in 0..n.min(spec.max_connections.saturating_sub(open_now)) {
                if on {
                    loads.push(tokio::task::spawn_local(load(
                        Rc::clone(ctx),
                        Rc::clone(&shared),
                        is_down,
                    )));
                }
            }
        }
    };
    add(spec.initial_connections, &mut loads);
    let id = Duration::from_secs_f64(spec.timing.interval_seconds);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(spec.timing.limit.seconds().unwrap_or(60.0));
    let mut progress = Progress::default();
    let mut intervals: Vec<IntervalBytes> = Vec::new();
    let mut gap =
        Duration::from_secs_f64(1.0 / FIRST_INTERVAL_PROBES_PER_SECOND.min(f64::from(spec.probes_per_second)));
    let mut next_probe = start;
    let (mut counted_down, mut counted_up) = (0u64, 0u64);
    let tls = ctx.server.endpoint.tls.is_some();
    'stage: loop {
        let began = intervals.last().map_or(start, |i| i.end);
        let ends = (began + id).min(deadline);
        let mut stopped = false;
        while Instant::now() < ends {
            if interrupt.load(Ordering::Relaxed) || shared.failure.borrow().is_some() {
                stopped = true;
                break;
            }
            // A loop woken late starts the probes it owes from now, not as a burst.
            next_probe = next_probe.max(Instant::now().checked_sub(gap).unwrap_or(start));
            while next_probe <= Instant::now() {
                launch_pair(ctx, &shared, &mut probes);
                next_probe += gap;
            }
            probes.retain(|t| !t.is_finished());
            let wake = next_probe.min(ends).min(Instant::now() + TICK);
            tokio::time::sleep_until(wake.into()).await;
        }
        let end = Instant::now();
        let (down_now, up_now) = (shared.down_bytes.get(), shared.up_bytes.get());
        let interval = IntervalBytes {
            start: began,
            end,
            down_bytes: down_now - counted_down,
            up_bytes: up_now - counted_up,
            connections_down: shared.connections_down.get(),
            connections_up: shared.connections_up.get(),
            whole: !stopped && end >= began + id,
        };
        (counted_down, counted_up) = (down_now, up_now);
        intervals.push(interval);
        if !interval.whole {
            break 'stage;
        }
        let seconds = end.duration_since(began).as_secs_f64();
        let goodput_bps = (interval.down_bytes + interval.up_bytes) as f64 * 8.0 / seconds;
        let window_start = intervals[intervals.len().saturating_sub(spec.mad as usize)].start;
        progress.step(spec, goodput_bps, || {
            let (m, _, _) = means_since(&shared.probes.borrow(), window_start, spec.trim_percent, tls);
            stats::responsiveness(&m).2
        });
        if progress.stable || end >= deadline {
            break 'stage;
        }
        // The probes take at most PTC of the goodput, and never more than MPS pairs a second.
        let rate = (spec.probe_capacity_percent / 100.0 * goodput_bps / 8.0 / PROBE_PAIR_BYTES)
            .clamp(1.0, f64::from(spec.probes_per_second));
        gap = Duration::from_secs_f64(1.0 / rate);
        let sockets = shared.upload_sockets.borrow();
        if !sockets.is_empty() {
            let each = interval.up_bytes as f64 * 8.0 / seconds / sockets.len() as f64;
            for s in sockets.iter() {
                Open::unsent_for(s, each);
            }
        }
        drop(sockets);
        add(spec.add_connections, &mut loads);
    }
    let end = Instant::now();
    for t in loads.iter().chain(&probes) {
        t.abort();
    }
    shared.sends.borrow_mut().clear();
    shared.upload_sockets.borrow_mut().clear();
    let probes = std::mem::take(&mut *shared.probes.borrow_mut());
    let window_start = intervals[intervals.len().saturating_sub(spec.mad as usize)].start;
    let (means, foreign_in_means, own_in_means) = means_since(&probes, window_start, spec.trim_percent, tls);
    let failure = shared.failure.borrow_mut().take();
    let run = StageRun {
        down,
        up,
        start,
        end,
        intervals,
        probes,
        goodput_averages: progress.goodput_averages,
        responsiveness: progress.responsiveness,
        goodput_stable: progress.goodput_stable,
        stable: progress.stable,
        means,
        foreign_in_means,
        own_in_means,
    };
    (run, failure)
}

#[cfg(test)]
pub(crate) mod tests;
