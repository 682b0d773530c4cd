//! HTTP/1.1 load: simulated users (closed loop, Avalanche's method) or a request rate (open
//! loop, each request timed from its scheduled start), on a few event-driven workers.
//!
//! Each worker owns its users, its sockets (mio, edge-triggered), its histograms and counters;
//! nothing is shared in the loop but one relaxed store of its running totals per wake-up. Requests
//! are built once per URL before the clock starts; response bodies are read into one scratch
//! buffer per worker and counted, not kept.
//!
//! Here: the run (on the one runner, `engine::run`) and the workers' counts; what it returns,
//! the users' side report, in `report`; the URLs in `url`,
//! the users' state machine in `worker`, response heads in `head`, the client's TLS for https
//! URLs in `tls`, and the agent-side host sampler in `sampler`.

mod bins;
mod h2;
mod h2frame;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod h2fuzz;
mod h2read;
mod head;
mod probe;
mod report;
mod sampler;
// The client's TLS is below the engines, where `engine::rpm` takes it too.
use crate::tlsclient as tls;
mod url;
mod worker;

pub use h2::connection_memory_bytes as h2_connection_memory_bytes;

pub use probe::{ProbeLog, Probing, SentProbe, start_probes};
pub use report::{HttpBucket, HttpReport, ServerCounts, TargetCounts, TlsRun};
pub use sampler::sample_host;
pub use tls::{Refusal as TlsRefusal, client_config as tls_client_config};
pub use url::{HttpTarget, HttpUrl};

use super::run::{Deadlines, Gate, RunState, Runner, StreamInfo};
use super::{Control, EngineError, Sink, pin};
use crate::result::{Role, SideReport};
use crate::spec::HttpSpec;
use hdrhistogram::Histogram;
use std::io;
use std::time::Duration;

const HIST_MAX_NS: u64 = 3_600_000_000_000;

pub use crate::result::HttpErrors;

/// A worker's counts while it runs: the side report it fills, and what the report is made of
/// once the workers are done ([`HttpRun::into_report`]).
#[derive(Clone, Debug)]
pub(super) struct HttpRun {
    pub report: HttpReport,
    /// The same counts per URL, in the order given.
    pub per_target: Vec<TargetCounts>,
    /// Each interval's response times (the first 3600 of the timeline's, `bins::MAX_INTERVALS`),
    /// for its percentiles.
    pub timeline_response_time: Vec<bins::TimeBins>,
}

impl HttpRun {
    /// A complete response to a request of URL `target` (`status`, `body` bytes), ended at
    /// `now`: its response time and time to first byte (ns), counted in the totals when
    /// `in_window`, and in the timeline by `now`. Both HTTP/1.1 and HTTP/2 users end here.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn count_response(
        &mut self,
        now: u64,
        in_window: bool,
        target: usize,
        rt: u64,
        ttfb: u64,
        status: u16,
        body: u64,
    ) {
        let class = usize::from(status / 100).min(5);
        let ok = (200..300).contains(&status);
        if in_window {
            self.report.responses += 1;
            self.report.status[class] += 1;
            self.report.body_bytes += body;
            let _ = self.report.response_time.record(rt);
            let _ = self.report.ttfb.record(ttfb);
            if !ok {
                self.report.errors.bad_status += 1;
            }
            let t = &mut self.per_target[target];
            t.responses += 1;
            if ok {
                t.successful_responses += 1;
            } else {
                t.errors += 1;
            }
        }
        let i = (now / self.report.interval_ns) as usize;
        if let Some(t) = self.timeline_response_time.get_mut(i) {
            t.record(rt);
        }
        if let Some(b) = self.report.timeline.get_mut(i) {
            b.responses += 1;
            b.response_time_sum_ns += rt;
            b.response_time_max_ns = b.response_time_max_ns.max(rt);
            if !ok {
                b.errors += 1;
            }
        }
    }
}

pub(super) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds")
}

/// The soft RLIMIT_NOFILE of this process.
fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// The online CPUs (at least 1).
fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The run's moments in nanoseconds since time zero, as the workers compare their clock with
/// them: taken once from the runner's deadlines.
#[derive(Clone, Copy, Debug)]
pub(super) struct Times {
    /// The end of the ramp: the window's start.
    pub ramp_ns: u64,
    /// The window's end: `end_ns` less the cool-down (the spec keeps the cool-down inside the
    /// duration, so the window is never empty).
    pub window_end_ns: u64,
    /// The end of the load.
    pub end_ns: u64,
    /// One timeline entry; the whole run when there are no interval samples.
    pub interval_ns: u64,
}

impl Times {
    fn of(deadlines: &Deadlines) -> Times {
        let ns = |d: Duration| d.as_nanos() as u64;
        let (ramp, window_end) = deadlines.measure_window();
        // A validated http spec always has a time limit.
        let end_ns = deadlines.deadline().map_or(ns(ramp), ns);
        Times {
            ramp_ns: ns(ramp),
            window_end_ns: window_end.map_or(end_ns, ns),
            end_ns,
            interval_ns: deadlines.interval().map_or(end_ns.max(1), ns),
        }
    }
}

/// The test's TLS configuration when a URL is https (None: all cleartext): `--http2` offers h2
/// alone, so a server that cannot speak it fails the handshake's check (`tls_protocol`) and never
/// gets HTTP/2 frames. The load's users and its probes connect alike with it.
fn test_tls(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    refusal: &tls::Refusal,
) -> Result<Option<std::sync::Arc<rustls::ClientConfig>>, EngineError> {
    if !targets.iter().any(|t| t.tls.is_some()) {
        return Ok(None);
    }
    let config = tls::client_config(&spec.tls.clone().unwrap_or_default(), refusal).map_err(EngineError::Tls)?;
    Ok(Some(match spec.http2 {
        Some(_) => {
            let mut c = rustls::ClientConfig::clone(&config);
            c.alpn_protocols = vec![b"h2".to_vec()];
            std::sync::Arc::new(c)
        }
        None => config,
    }))
}

/// Runs the load: users start evenly over the ramp, then the window runs for the duration.
/// Returns this host's report (samplers over the window, per-worker counts) and the users'
/// side report: what they measured.
pub fn run(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<(SideReport, HttpReport), EngineError> {
    pin::check_cpus(&spec.cpus)?;
    let users = spec.users as usize;
    let threads = match spec.threads {
        0 => online_cpus(),
        t => usize::from(t),
    }
    .clamp(1, users);
    // Made once before the clock starts (roots read, parsed); each user clones it.
    let refusal = tls::Refusal::default();
    let tls_config = test_tls(spec, targets, &refusal)?;
    let state = RunState::new(threads);
    let gate = Gate::new();
    let shared = state.shared(control);
    let deadlines = Deadlines::new(&spec.timing);
    let times = Times::of(&deadlines);
    let runner = Runner {
        deadlines,
        // The runner samples workers: one "stream" each.
        streams: (0..threads)
            .map(|i| StreamInfo {
                id: i as u16,
                role: Role::Send,
                grant: Default::default(),
            })
            .collect(),
        workers: threads,
        name: "linerate-h",
        cpus: &spec.cpus,
        sched: spec.sched,
        tcp_info: None,
        queued: None,
        received: None,
    };
    let (mut report, outs) = runner.drive(&shared, &gate, sink, |w| {
        let load = worker::Load {
            spec,
            targets,
            tls: tls_config.as_ref(),
        };
        match spec.http2 {
            None => worker::work(load, w, threads, times, &shared, &gate),
            Some(_) => h2::work(load, w, threads, times, &shared, &gate),
        }
    })?;
    let outs = outs
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(io::Error::other("worker panicked"))));
    report.io = "epoll".into();
    let mut total: Option<HttpRun> = None;
    for o in outs {
        let o = o.map_err(|e| EngineError::Io {
            what: "HTTP worker",
            source: e,
        })?;
        match &mut total {
            None => total = Some(o),
            Some(t) => t.add(&o),
        }
    }
    let mut users = total
        .unwrap_or_else(|| HttpRun::empty(0, times.interval_ns, targets.len()))
        .into_report(targets);
    users.open_files_limit = open_files_limit();
    users.tls_refusal = refusal.first();
    let end = report.window_end_ns.min(times.window_end_ns);
    users.window_seconds = end.saturating_sub(times.ramp_ns.min(end)) as f64 / 1e9;
    Ok((report, users))
}

impl HttpRun {
    /// A worker's counts before it starts: `buckets` intervals of `interval_ns`, `targets` URLs.
    pub(super) fn empty(buckets: usize, interval_ns: u64, targets: usize) -> HttpRun {
        HttpRun {
            report: HttpReport::empty(buckets, interval_ns),
            per_target: vec![TargetCounts::default(); targets],
            timeline_response_time: vec![bins::TimeBins::default(); buckets.min(bins::MAX_INTERVALS)],
        }
    }

    /// Another worker's counts added in.
    fn add(&mut self, o: &HttpRun) {
        self.report.add(&o.report);
        for (a, b) in self.timeline_response_time.iter_mut().zip(&o.timeline_response_time) {
            a.add(b);
        }
        for (a, b) in self.per_target.iter_mut().zip(&o.per_target) {
            a.add(b);
        }
    }
}
