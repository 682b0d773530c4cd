//! HTTP/1.1 load: simulated users (closed loop, Avalanche's method) or a request rate (open
//! loop, each request timed from its scheduled start), on a few event-driven workers.
//!
//! Each worker owns its users, its sockets (mio, edge-triggered), its histograms and counters;
//! nothing is shared in the loop but one relaxed store of its running totals per wake-up. Requests
//! are built once per URL before the clock starts; response bodies are read into one scratch
//! buffer per worker and counted, not kept.
//!
//! Here: the run (on the one runner, `engine::run`) and what it returns; the URLs in `url`,
//! the users' state machine in `worker`, response heads in `head`, the client's TLS for https
//! URLs in `tls`, and the agent-side host sampler in `sampler`.

mod bins;
mod h2;
mod h2frame;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod h2fuzz;
mod h2read;
mod head;
mod sampler;
mod tls;
mod url;
mod worker;

pub use h2::connection_memory_bytes as h2_connection_memory_bytes;

pub use sampler::sample_host;
pub use tls::{
    Refusal as TlsRefusal, SYSTEM_ROOTS, TlsSetupError, client_config as tls_client_config, provider as tls_provider,
    ticketer as tls_ticketer,
};
pub use url::{HttpTarget, HttpUrl};

use super::run::{Gate, Plan, RunState, Runner, StreamInfo};
use super::{Control, EngineError, Sink, pin};
use crate::result::{Role, SideReport};
use crate::spec::HttpSpec;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::io;
use std::time::Duration;

const HIST_MAX_NS: u64 = 3_600_000_000_000;

pub use crate::result::HttpErrors;

/// Counts over one interval of the run (by the time each event happened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpBucket {
    pub responses: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Connections begun in the interval (attempted), and of those, by outcome whenever it came.
    pub connections: u64,
    #[serde(default)]
    pub connections_successful: u64,
    #[serde(default)]
    pub connections_unsuccessful: u64,
    pub response_time_sum_ns: u64,
    pub response_time_max_ns: u64,
}

impl HttpBucket {
    fn add(&mut self, o: &HttpBucket) {
        self.responses += o.responses;
        self.errors += o.errors;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.connections += o.connections;
        self.connections_successful += o.connections_successful;
        self.connections_unsuccessful += o.connections_unsuccessful;
        self.response_time_sum_ns += o.response_time_sum_ns;
        self.response_time_max_ns = self.response_time_max_ns.max(o.response_time_max_ns);
    }
}

/// What the client counted of one URL (one server's share of the totals), in the window: each
/// count as its total in [`HttpRun`] counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TargetCounts {
    pub requests_started: u64,
    /// Complete responses, any status; of those, 2xx.
    pub responses: u64,
    pub successful_responses: u64,
    /// Failed requests of every class (a status other than 2xx included).
    pub errors: u64,
    pub bytes_in: u64,
    pub connections_attempted: u64,
    pub connections_successful: u64,
    pub connections_unsuccessful: u64,
    pub connections_in_flight_at_end: u64,
}

impl TargetCounts {
    pub fn add(&mut self, o: &TargetCounts) {
        self.requests_started += o.requests_started;
        self.responses += o.responses;
        self.successful_responses += o.successful_responses;
        self.errors += o.errors;
        self.bytes_in += o.bytes_in;
        self.connections_attempted += o.connections_attempted;
        self.connections_successful += o.connections_successful;
        self.connections_unsuccessful += o.connections_unsuccessful;
        self.connections_in_flight_at_end += o.connections_in_flight_at_end;
    }
}

/// What the client counted, inside the steady-state window unless said otherwise.
#[derive(Clone, Debug)]
pub struct HttpRun {
    /// Complete responses (any status).
    pub responses: u64,
    /// By status class: index = status / 100 (1xx to 5xx; 0 = other).
    pub status: [u64; 6],
    pub requests_started: u64,
    /// Bytes read (heads and bodies) and written (requests).
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Body bytes of complete responses.
    pub body_bytes: u64,
    pub connections_attempted: u64,
    pub connections_successful: u64,
    pub connections_unsuccessful: u64,
    /// Connections begun in the window and still connecting at the end.
    pub connections_in_flight_at_end: u64,
    pub errors: HttpErrors,
    /// Round trip of each complete response: from the request's intended start to its last byte.
    pub response_time: Histogram<u64>,
    /// From the request's intended start to the response's first byte, for the same responses
    /// as `response_time` (issue 23).
    pub ttfb: Histogram<u64>,
    /// connect() to established, new connections.
    pub connect: Histogram<u64>,
    /// https: the handshakes of connections begun in the window.
    pub tls: TlsRun,
    /// Requests still unanswered when the time was up (not errors).
    pub in_flight_at_end: u64,
    /// Open loop: requests that waited for a free connection past their scheduled start.
    pub queued_late: u64,
    /// This process's soft limit on open files when the run began (RLIMIT_NOFILE); absent
    /// when it could not be read. Named in the note when connections failed for want of one.
    pub open_files_limit: Option<u64>,
    /// The window: from the end of the ramp to the end, seconds.
    pub window_seconds: f64,
    /// Every interval of the run, ramp included, `interval_seconds` long.
    pub timeline: Vec<HttpBucket>,
    /// Each interval's response times (the first 3600 of `timeline`'s, `bins::MAX_INTERVALS`), for
    /// its percentiles.
    pub timeline_response_time: Vec<bins::TimeBins>,
    pub interval_ns: u64,
    /// The same counts per URL, in the order given.
    pub per_target: Vec<TargetCounts>,
    /// The same per server (URLs of one authority added up), in the order first named; filled
    /// in by [`run`] once the workers are done.
    pub per_server: Vec<ServerCounts>,
    /// HTTP/2: the lowest SETTINGS_MAX_CONCURRENT_STREAMS a server sent (None: none sent one),
    /// and the most streams in flight at once on one connection, over the whole run.
    pub h2_peer_max_streams: Option<u64>,
    pub h2_max_in_flight: u64,
    /// HTTP/2: connections ended because the server broke the protocol or went past one of the
    /// client's bounds (issue 39), by cause (`h2read::Violation::key`), over the whole run.
    pub h2_protocol_errors: std::collections::BTreeMap<&'static str, u64>,
    /// Why the first server certificate of the run was refused, in words with the fix (every
    /// refusal is counted in `errors.tls_certificate`).
    pub tls_refusal: Option<String>,
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
            self.responses += 1;
            self.status[class] += 1;
            self.body_bytes += body;
            let _ = self.response_time.record(rt);
            let _ = self.ttfb.record(ttfb);
            if !ok {
                self.errors.bad_status += 1;
            }
            let t = &mut self.per_target[target];
            t.responses += 1;
            if ok {
                t.successful_responses += 1;
            } else {
                t.errors += 1;
            }
        }
        let i = (now / self.interval_ns) as usize;
        if let Some(t) = self.timeline_response_time.get_mut(i) {
            t.record(rt);
        }
        if let Some(b) = self.timeline.get_mut(i) {
            b.responses += 1;
            b.response_time_sum_ns += rt;
            b.response_time_max_ns = b.response_time_max_ns.max(rt);
            if !ok {
                b.errors += 1;
            }
        }
    }
}

/// The TLS handshakes an https run completed, of connections begun in the window (as the
/// connection counts count them); failed ones are errors of their class (`tls_*`).
#[derive(Clone, Debug)]
pub struct TlsRun {
    pub full: u64,
    pub resumed: u64,
    /// From TCP connected to the handshake done, ns.
    pub full_time: Histogram<u64>,
    pub resumed_time: Histogram<u64>,
    /// The client thread's CPU time spent in the handshakes (rustls's work and the socket
    /// calls it made), ns (CLOCK_THREAD_CPUTIME_ID around each step).
    pub full_cpu_ns: u64,
    pub resumed_cpu_ns: u64,
}

impl TlsRun {
    fn new() -> TlsRun {
        TlsRun {
            full: 0,
            resumed: 0,
            full_time: histogram(),
            resumed_time: histogram(),
            full_cpu_ns: 0,
            resumed_cpu_ns: 0,
        }
    }

    /// A completed handshake: resumed or full, `took` ns from TCP connected, `cpu_ns` of this
    /// thread's CPU in it.
    pub(super) fn count(&mut self, resumed: bool, took: u64, cpu_ns: u64) {
        let (count, time, cpu) = if resumed {
            (&mut self.resumed, &mut self.resumed_time, &mut self.resumed_cpu_ns)
        } else {
            (&mut self.full, &mut self.full_time, &mut self.full_cpu_ns)
        };
        *count += 1;
        *cpu += cpu_ns;
        let _ = time.record(took.clamp(1, HIST_MAX_NS));
    }

    fn add(&mut self, o: &TlsRun) {
        self.full += o.full;
        self.resumed += o.resumed;
        let _ = self.full_time.add(&o.full_time);
        let _ = self.resumed_time.add(&o.resumed_time);
        self.full_cpu_ns += o.full_cpu_ns;
        self.resumed_cpu_ns += o.resumed_cpu_ns;
    }
}

/// One server's share of the load: its URLs' counts added up.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerCounts {
    /// `HOST[:PORT]` as the URLs name it.
    pub server: String,
    pub addr: std::net::SocketAddr,
    pub counts: TargetCounts,
}

/// The per-URL counts added up per server, in the order first named.
fn per_server(targets: &[HttpTarget], per_target: &[TargetCounts]) -> Vec<ServerCounts> {
    let mut out: Vec<ServerCounts> = Vec::new();
    for (t, c) in targets.iter().zip(per_target) {
        match out.iter_mut().find(|s| s.server == t.server) {
            Some(s) => s.counts.add(c),
            None => out.push(ServerCounts {
                server: t.server.clone(),
                addr: t.addr,
                counts: *c,
            }),
        }
    }
    out
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
/// them: taken once from the runner's plan.
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
    fn of(plan: &Plan) -> Times {
        let ns = |d: Duration| d.as_nanos() as u64;
        let (ramp, window_end) = plan.measure_window();
        // A validated http spec always has a time limit.
        let end_ns = plan.deadline().map_or(ns(ramp), ns);
        Times {
            ramp_ns: ns(ramp),
            window_end_ns: window_end.map_or(end_ns, ns),
            end_ns,
            interval_ns: plan.interval().map_or(end_ns.max(1), ns),
        }
    }
}

/// Runs the load: users start evenly over the ramp, then the window runs for the duration.
/// Returns this host's report (samplers over the window, per-worker counts) and what the users
/// measured.
pub fn run(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<(SideReport, HttpRun), EngineError> {
    pin::check_cpus(&spec.cpus)?;
    let users = spec.users as usize;
    let threads = match spec.threads {
        0 => online_cpus(),
        t => usize::from(t),
    }
    .clamp(1, users);
    // Made once before the clock starts (roots read, parsed); each user clones it.
    let refusal = tls::Refusal::default();
    let tls_config = match targets.iter().any(|t| t.tls.is_some()) {
        true => {
            let config =
                tls::client_config(&spec.tls.clone().unwrap_or_default(), &refusal).map_err(EngineError::Tls)?;
            // --http2 offers h2 alone: a server that cannot speak it fails the handshake's
            // check (tls_protocol), never gets HTTP/2 frames.
            Some(match spec.http2 {
                Some(_) => {
                    let mut c = rustls::ClientConfig::clone(&config);
                    c.alpn_protocols = vec![b"h2".to_vec()];
                    std::sync::Arc::new(c)
                }
                None => config,
            })
        }
        false => None,
    };
    let state = RunState::new(threads);
    let gate = Gate::new();
    let shared = state.shared(control);
    let plan = Plan::new(&spec.timing);
    let times = Times::of(&plan);
    let runner = Runner {
        plan,
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
            Some(t) => merge(t, &o),
        }
    }
    let mut total = total.unwrap_or_else(|| empty_run(0, times.interval_ns, targets.len()));
    total.open_files_limit = open_files_limit();
    total.tls_refusal = refusal.first();
    total.per_server = per_server(targets, &total.per_target);
    let end = report.window_end_ns.min(times.window_end_ns);
    total.window_seconds = end.saturating_sub(times.ramp_ns.min(end)) as f64 / 1e9;
    Ok((report, total))
}

pub(super) fn empty_run(buckets: usize, interval_ns: u64, targets: usize) -> HttpRun {
    HttpRun {
        responses: 0,
        status: [0; 6],
        requests_started: 0,
        bytes_in: 0,
        bytes_out: 0,
        body_bytes: 0,
        connections_attempted: 0,
        connections_successful: 0,
        connections_unsuccessful: 0,
        connections_in_flight_at_end: 0,
        errors: HttpErrors::default(),
        response_time: histogram(),
        ttfb: histogram(),
        connect: histogram(),
        tls: TlsRun::new(),
        in_flight_at_end: 0,
        queued_late: 0,
        open_files_limit: None,
        window_seconds: 0.0,
        timeline: vec![HttpBucket::default(); buckets],
        timeline_response_time: vec![bins::TimeBins::default(); buckets.min(bins::MAX_INTERVALS)],
        interval_ns,
        per_target: vec![TargetCounts::default(); targets],
        per_server: Vec::new(),
        h2_peer_max_streams: None,
        h2_max_in_flight: 0,
        h2_protocol_errors: Default::default(),
        tls_refusal: None,
    }
}

fn merge(t: &mut HttpRun, o: &HttpRun) {
    t.responses += o.responses;
    for (a, b) in t.status.iter_mut().zip(o.status) {
        *a += b;
    }
    t.requests_started += o.requests_started;
    t.bytes_in += o.bytes_in;
    t.bytes_out += o.bytes_out;
    t.body_bytes += o.body_bytes;
    t.connections_attempted += o.connections_attempted;
    t.connections_successful += o.connections_successful;
    t.connections_unsuccessful += o.connections_unsuccessful;
    t.connections_in_flight_at_end += o.connections_in_flight_at_end;
    t.errors.add(&o.errors);
    let _ = t.response_time.add(&o.response_time);
    let _ = t.ttfb.add(&o.ttfb);
    let _ = t.connect.add(&o.connect);
    t.tls.add(&o.tls);
    t.in_flight_at_end += o.in_flight_at_end;
    t.queued_late += o.queued_late;
    for (a, b) in t.timeline.iter_mut().zip(&o.timeline) {
        a.add(b);
    }
    for (a, b) in t.timeline_response_time.iter_mut().zip(&o.timeline_response_time) {
        a.add(b);
    }
    for (a, b) in t.per_target.iter_mut().zip(&o.per_target) {
        a.add(b);
    }
    t.h2_peer_max_streams = match (t.h2_peer_max_streams, o.h2_peer_max_streams) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    t.h2_max_in_flight = t.h2_max_in_flight.max(o.h2_max_in_flight);
    for (k, n) in &o.h2_protocol_errors {
        *t.h2_protocol_errors.entry(k).or_default() += n;
    }
}
