//! The TCP throughput engine: drives connected data sockets from worker threads and counts.
//!
//! Before the clock starts, workers are pinned and their buffers allocated and touched. In the
//! loop a worker does one read or write, adds to counters only it writes (each on its own cache
//! line), and looks at two flags. This thread (the caller's) samples the counters at interval
//! boundaries and at the edges of the measurement window, reads CPU and TCP_INFO there, and
//! decides when senders stop; workers never lock, allocate or format.

use super::sockopt::{self, POLL_SLICE};
use super::{Control, EngineError, Sink, event, pin, uring};
use crate::metrics::host::online_cpus;
use crate::metrics::sample::{HostSnapshot, HostTimeline, HostUsage, IrqGroups, read_clock_mhz};
use crate::result::{CpuUsage, ErrorCounts, IntervalSample, Role, SideReport, SocketGrant, StreamEnd, StreamReport};
use crate::spec::{Limit, TcpSpec};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// After senders stop, how long receivers may take to see the end of their streams.
const DRAIN: Duration = Duration::from_secs(10);
/// How long receivers may see no byte at all before the run is given up.
const IDLE: Duration = Duration::from_secs(30);

/// One connected data socket and what this end does with it.
pub struct DataStream {
    /// Stream number reported for it.
    pub id: u16,
    pub role: Role,
    pub socket: TcpStream,
    /// What [`sockopt::configure`] read back.
    pub grant: SocketGrant,
}

/// Counters of one stream, written by its worker only, read by the sampling thread.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Counters {
    pub bytes: AtomicU64,
    pub ops: AtomicU64,
    /// Nanoseconds since time zero when the stream ended; 0 while it runs.
    pub end_ns: AtomicU64,
    pub end: AtomicU8,
    pub resets: AtomicU64,
    pub other_errors: AtomicU64,
}

/// What every worker shares.
pub(super) struct Shared<'a> {
    pub counters: &'a [Counters],
    pub control: &'a Control,
    /// Set (before `stop_send`) when the time limit, not a user, stopped the senders.
    pub deadline_hit: &'a AtomicBool,
    pub t0: &'a OnceLock<Instant>,
    pub sampler: Thread,
    pub buffer_bytes: usize,
    /// Buffers per stream in count mode.
    pub count: Option<u64>,
}

impl Shared<'_> {
    pub fn now_ns(&self) -> u64 {
        self.t0.get().map_or(0, |t| t.elapsed().as_nanos() as u64).max(1)
    }

    /// The end of a stream: record when and why, and wake the sampler.
    pub fn finish(&self, idx: usize, end: StreamEnd) {
        let c = &self.counters[idx];
        c.end.store(end as u8, Relaxed);
        c.end_ns.store(self.now_ns(), Relaxed);
        self.sampler.unpark();
    }

    pub fn stop_reason(&self) -> StreamEnd {
        if self.deadline_hit.load(Relaxed) {
            StreamEnd::Deadline
        } else {
            StreamEnd::Stopped
        }
    }

    /// Counts a socket error by kind.
    pub fn count_error(&self, idx: usize, e: &io::Error) {
        let c = &self.counters[idx];
        let counter = if is_reset(e) { &c.resets } else { &c.other_errors };
        counter.store(counter.load(Relaxed) + 1, Relaxed);
    }
}

pub(super) fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted
    )
}

fn is_again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

pub(super) fn end_from(v: u8) -> StreamEnd {
    match v {
        x if x == StreamEnd::Deadline as u8 => StreamEnd::Deadline,
        x if x == StreamEnd::Count as u8 => StreamEnd::Count,
        x if x == StreamEnd::Eof as u8 => StreamEnd::Eof,
        x if x == StreamEnd::Error as u8 => StreamEnd::Error,
        _ => StreamEnd::Stopped,
    }
}

/// Where workers wait, ready, for the clock to start: the sampler waits until every worker has
/// arrived, then opens it. Unlike a barrier it can be opened with workers missing (a failed
/// spawn), so nobody waits forever.
pub(super) struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    pub arrived: AtomicUsize,
}

impl Gate {
    pub fn new() -> Gate {
        Gate {
            open: Mutex::new(false),
            cv: Condvar::new(),
            arrived: AtomicUsize::new(0),
        }
    }

    pub fn arrive_and_wait(&self, sampler: &Thread) {
        self.arrived.fetch_add(1, Relaxed);
        sampler.unpark();
        let mut open = self.open.lock().expect("no thread panics holding the gate");
        while !*open {
            open = self.cv.wait(open).expect("no thread panics holding the gate");
        }
    }

    pub fn open(&self) {
        *self.open.lock().expect("no thread panics holding the gate") = true;
        self.cv.notify_all();
    }
}

/// The most interval samples one end keeps; past it the rest are counted but not stored.
pub const MAX_SAMPLES: usize = crate::spec::MAX_INTERVAL_SAMPLES;

/// One edge of the measurement window: when, every stream's (bytes, ops), and the host's counters.
struct Edge {
    ns: u64,
    counts: Vec<(u64, u64)>,
    host: HostSnapshot,
}

impl Edge {
    fn now(ns: u64, counts: Vec<(u64, u64)>) -> Edge {
        Edge {
            ns,
            counts,
            host: HostSnapshot::read(),
        }
    }
}

/// A stream as a worker holds it.
pub(super) struct WorkerStream<'a> {
    /// Index into the counters and the plan's streams.
    pub idx: usize,
    pub role: Role,
    pub socket: &'a TcpStream,
}

/// Runs the streams until senders reach their limit and receivers their end of stream (or until
/// `control` says stop), and returns what this end counted.
pub fn run(
    spec: &TcpSpec,
    cpus: &[usize],
    streams: Vec<DataStream>,
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<SideReport, EngineError> {
    pin::check_cpus(cpus)?;
    let n = streams.len();
    let workers = worker_count(spec.threads, cpus, n);
    let counters: Vec<Counters> = (0..n).map(|_| Counters::default()).collect();
    let deadline_hit = AtomicBool::new(false);
    let t0 = OnceLock::new();
    let gate = Gate::new();
    let pin_failed = AtomicBool::new(false);
    let uring_failed: OnceLock<String> = OnceLock::new();
    let epoll_failed: OnceLock<String> = OnceLock::new();
    let shared = Shared {
        counters: &counters,
        control,
        deadline_hit: &deadline_hit,
        t0: &t0,
        sampler: thread::current(),
        buffer_bytes: spec.buffer_bytes.0 as usize,
        count: match spec.limit {
            Limit::Buffers(b) => Some(b),
            Limit::Seconds(_) => None,
        },
    };
    let depth = spec.depth as usize;
    let report = thread::scope(|scope| {
        for w in 0..workers {
            let mine: Vec<WorkerStream<'_>> = streams
                .iter()
                .enumerate()
                .filter(|(i, _)| i % workers == w)
                .map(|(idx, s)| WorkerStream {
                    idx,
                    role: s.role,
                    socket: &s.socket,
                })
                .collect();
            let cpu = (!cpus.is_empty()).then(|| cpus[w % cpus.len()]);
            let (shared, gate, pin_failed, uring_failed, epoll_failed) =
                (&shared, &gate, &pin_failed, &uring_failed, &epoll_failed);
            let spawned = thread::Builder::new()
                .name(format!("linerate-w{w}"))
                .spawn_scoped(scope, move || {
                    if let Some(cpu) = cpu
                        && pin::pin_current_thread(cpu).is_err()
                    {
                        pin_failed.store(true, Relaxed);
                    }
                    if depth > 1 {
                        match uring::Worker::new(&mine, depth, shared.buffer_bytes) {
                            Ok(mut u) => {
                                gate.arrive_and_wait(&shared.sampler);
                                u.run(&mine, shared);
                            }
                            Err(e) => {
                                let _ = uring_failed.set(e.to_string());
                                run_syscall_worker(&mine, shared, gate, epoll_failed);
                            }
                        }
                    } else {
                        run_syscall_worker(&mine, shared, gate, epoll_failed);
                    }
                });
            if let Err(e) = spawned {
                // The workers already started see the abort as soon as the gate opens.
                control.abort();
                gate.open();
                return Err(EngineError::Spawn(e));
            }
        }
        Ok(sample_until_done(spec, &streams, &shared, &gate, workers, sink))
    });
    let mut report = report?;
    if pin_failed.load(Relaxed) {
        report
            .notes
            .push("a worker could not be pinned to its CPU and ran unpinned".into());
    }
    report.io = if depth > 1 && uring_failed.get().is_none() {
        "io_uring"
    } else {
        "syscall"
    }
    .into();
    if let Some(e) = uring_failed.get() {
        report.notes.push(format!(
            "io_uring unavailable ({e}): --depth fell back to one blocking call at a time"
        ));
    }
    if let Some(e) = epoll_failed.get() {
        report.notes.push(format!(
            "a worker could not set up epoll ({e}): its streams ended at once"
        ));
    }
    Ok(report)
}

/// Workers on this end: `threads` when the spec sets it, else one per CPU this end may use (the
/// `cpus` it pins to, else this thread's affinity mask); never more than streams, at least one.
fn worker_count(threads: u16, cpus: &[usize], streams: usize) -> usize {
    let wanted = match threads {
        0 if cpus.is_empty() => pin::allowed_cpus().len(),
        0 => cpus.len(),
        t => usize::from(t),
    };
    wanted.min(streams).max(1)
}

/// One stream: plain blocking calls (an event loop adds an epoll_wait per call; at -P 1 on
/// loopback it measured 13.9 Gbit/s against 14.6 blocking, docs/benchmarks.md, issue 12). Several: non-blocking calls from one epoll loop ([`event`]). Either way
/// the buffers are allocated and touched before the gate; streams of one worker share them.
fn run_syscall_worker(mine: &[WorkerStream<'_>], shared: &Shared<'_>, gate: &Gate, epoll_failed: &OnceLock<String>) {
    let len = shared.buffer_bytes;
    // Touched before the clock matters: a byte pattern, not zero pages.
    let pattern = |any: bool| -> Vec<u8> {
        if any {
            (0..len).map(|i| i as u8).collect()
        } else {
            Vec::new()
        }
    };
    if let [one] = mine {
        let mut buf = pattern(true);
        gate.arrive_and_wait(&shared.sampler);
        blocking_stream(one, &mut buf, shared);
        return;
    }
    let send_buf = pattern(mine.iter().any(|s| s.role == Role::Send));
    let mut recv_buf = pattern(mine.iter().any(|s| s.role == Role::Receive));
    match event::EventLoop::new(mine) {
        Ok(mut ev) => {
            gate.arrive_and_wait(&shared.sampler);
            ev.run(mine, &send_buf, &mut recv_buf, shared);
        }
        Err(e) => {
            let _ = epoll_failed.set(e.to_string());
            gate.arrive_and_wait(&shared.sampler);
            for s in mine {
                shared.count_error(s.idx, &e);
                shared.finish(s.idx, StreamEnd::Error);
            }
        }
    }
}

fn blocking_stream(s: &WorkerStream<'_>, buf: &mut [u8], shared: &Shared<'_>) {
    let c = &shared.counters[s.idx];
    let control = shared.control;
    let mut sock = s.socket;
    let (mut bytes, mut ops) = (0u64, 0u64);
    let end = match s.role {
        Role::Send => {
            let mut off = 0usize;
            let end = loop {
                if control.sending_stopped() || control.aborted() {
                    break shared.stop_reason();
                }
                if shared.count == Some(ops) {
                    break StreamEnd::Count;
                }
                match sock.write(&buf[off..]) {
                    Ok(k) => {
                        bytes += k as u64;
                        off += k;
                        if off == buf.len() {
                            off = 0;
                            ops += 1;
                            c.ops.store(ops, Relaxed);
                        }
                        c.bytes.store(bytes, Relaxed);
                    }
                    Err(e) if is_again(&e) => {}
                    Err(e) => {
                        shared.count_error(s.idx, &e);
                        break StreamEnd::Error;
                    }
                }
            };
            let _ = sock.shutdown(Shutdown::Write);
            end
        }
        Role::Receive => loop {
            if control.aborted() {
                break StreamEnd::Stopped;
            }
            match sock.read(buf) {
                Ok(0) => break StreamEnd::Eof,
                Ok(k) => {
                    bytes += k as u64;
                    ops += 1;
                    c.bytes.store(bytes, Relaxed);
                    c.ops.store(ops, Relaxed);
                }
                Err(e) if is_again(&e) => {}
                Err(e) => {
                    shared.count_error(s.idx, &e);
                    break StreamEnd::Error;
                }
            }
        },
    };
    shared.finish(s.idx, end);
}

/// The sampling thread: starts the clock, takes interval samples and the window's edges, stops
/// senders at the deadline, and gives up on receivers that stall.
fn sample_until_done(
    spec: &TcpSpec,
    streams: &[DataStream],
    shared: &Shared<'_>,
    gate: &Gate,
    workers: usize,
    sink: &mut dyn Sink,
) -> SideReport {
    let n = streams.len();
    let counters = shared.counters;
    let control = shared.control;
    let secs = |s: f64| Duration::from_secs_f64(s);
    let deadline = match spec.limit {
        Limit::Seconds(s) => Some(secs(s)),
        Limit::Buffers(_) => None,
    };
    let warmup = secs(spec.warmup_seconds);
    let cooldown_mark = deadline
        .filter(|_| spec.cooldown_seconds > 0.0)
        .map(|d| d - secs(spec.cooldown_seconds));
    let interval = (spec.interval_seconds > 0.0).then(|| secs(spec.interval_seconds));

    let mut notes = Vec::new();
    let mut intervals: Vec<IntervalSample> = Vec::with_capacity(
        MAX_SAMPLES.min(
            n * deadline
                .zip(interval)
                .map_or(64, |(d, i)| (d.as_secs_f64() / i.as_secs_f64()) as usize + 2),
        ),
    );
    let mut last: Vec<(u64, u64)> = vec![(0, 0); n];
    let mut last_tick_ns = 0u64;
    let mut tick = 1u32;
    let read_counts = || -> Vec<(u64, u64)> {
        counters
            .iter()
            .map(|c| (c.bytes.load(Relaxed), c.ops.load(Relaxed)))
            .collect()
    };

    let first = HostSnapshot::read();
    let groups = IrqGroups::discover(first.interrupts.as_ref(), &first.interfaces);
    // Time zero: workers are pinned, buffers touched, and waiting at the gate.
    while gate.arrived.load(Relaxed) < workers {
        thread::park_timeout(Duration::from_millis(10));
    }
    let first = HostSnapshot {
        at: Instant::now(),
        ..first
    };
    let start = first.at;
    let _ = shared.t0.set(start);
    let mut window_start = warmup.is_zero().then(|| Edge {
        ns: 0,
        counts: vec![(0, 0); n],
        host: first.clone(),
    });
    let mut timeline = HostTimeline::new(first, 0, groups.clone());
    gate.open();

    let mut window_end: Option<Edge> = None;
    let mut stop_seen: Option<Instant> = None;
    let mut stopped_early = false;
    let mut idle_since = (start, 0u64);
    let done = |c: &Counters| c.end_ns.load(Relaxed) != 0;

    let mut tick_buf: Vec<IntervalSample> = Vec::with_capacity(n);
    let mut samples_dropped = false;
    let mut emit = |now_ns: u64,
                    counts: &[(u64, u64)],
                    last: &mut Vec<(u64, u64)>,
                    last_tick_ns: &mut u64,
                    intervals: &mut Vec<IntervalSample>| {
        tick_buf.clear();
        for (i, s) in streams.iter().enumerate() {
            tick_buf.push(IntervalSample {
                stream: s.id,
                start_ns: *last_tick_ns,
                end_ns: now_ns,
                bytes: counts[i].0 - last[i].0,
                ops: counts[i].1 - last[i].1,
                tcp: if s.role == Role::Send {
                    sockopt::tcp_info(&s.socket)
                } else {
                    None
                },
            });
        }
        sink.interval(&tick_buf);
        timeline.tick(now_ns);
        if intervals.len() + tick_buf.len() <= MAX_SAMPLES {
            intervals.extend_from_slice(&tick_buf);
        } else {
            samples_dropped = true;
        }
        *last = counts.to_vec();
        *last_tick_ns = now_ns;
    };

    loop {
        let now = Instant::now();
        let el = now - start;
        let all_done = counters.iter().all(done);
        if all_done {
            break;
        }
        if window_start.is_none() && el >= warmup {
            window_start = Some(Edge::now(el.as_nanos() as u64, read_counts()));
        }
        if let Some(mark) = cooldown_mark
            && window_end.is_none()
            && el >= mark
            && !control.aborted()
        {
            window_end = Some(Edge::now(el.as_nanos() as u64, read_counts()));
        }
        if let Some(d) = deadline
            && el >= d
            && !shared.deadline_hit.load(Relaxed)
        {
            shared.deadline_hit.store(true, Relaxed);
            control.stop_send();
        }
        if stop_seen.is_none() && control.sending_stopped() {
            stop_seen = Some(now);
            if !shared.deadline_hit.load(Relaxed) {
                stopped_early = true;
            }
        }
        if let Some(at) = stop_seen
            && now - at >= DRAIN
            && !control.aborted()
        {
            notes.push(format!(
                "receivers saw no end of stream within {} s of the senders stopping",
                DRAIN.as_secs()
            ));
            control.abort();
        }
        // A peer that neither reads nor sends (gone without closing, or stopped reading)
        // would hold this run for ever.
        let moved: u64 = counters.iter().map(|c| c.bytes.load(Relaxed)).sum();
        if moved != idle_since.1 {
            idle_since = (now, moved);
        } else if now - idle_since.0 >= IDLE && !control.aborted() {
            notes.push(format!("no data moved for {} s: the run was given up", IDLE.as_secs()));
            control.abort();
        }
        if let Some(iv) = interval {
            let due = iv * tick;
            if el >= due {
                emit(
                    el.as_nanos() as u64,
                    &read_counts(),
                    &mut last,
                    &mut last_tick_ns,
                    &mut intervals,
                );
                // Behind by several intervals (a stalled machine): one longer sample covers
                // them, and the next boundary is the next one still ahead.
                tick = (el.as_secs_f64() / iv.as_secs_f64()) as u32 + 1;
            }
        }
        // Sleep to the next event; workers unpark us when a stream ends.
        let mut next = el + Duration::from_secs(1);
        if let Some(iv) = interval {
            next = next.min(iv * tick);
        }
        if window_start.is_none() {
            next = next.min(warmup);
        }
        if let (Some(m), None) = (cooldown_mark, &window_end) {
            next = next.min(m);
        }
        if let Some(d) = deadline.filter(|_| !shared.deadline_hit.load(Relaxed)) {
            next = next.min(d);
        }
        let wait = next.saturating_sub(start.elapsed()).min(POLL_SLICE);
        if !wait.is_zero() {
            thread::park_timeout(wait);
        }
    }

    let end_ns = start.elapsed().as_nanos() as u64;
    let final_counts = read_counts();
    if interval.is_none() || final_counts != last {
        emit(end_ns, &final_counts, &mut last, &mut last_tick_ns, &mut intervals);
    }
    if samples_dropped {
        notes.push(format!(
            "only the first {MAX_SAMPLES} interval samples were kept; raise -i for longer runs"
        ));
    }
    // Workers can end on an outside stop before this loop saw the flag.
    if control.aborted() || (control.sending_stopped() && !shared.deadline_hit.load(Relaxed)) {
        stopped_early = true;
    }
    let ws = window_start.unwrap_or_else(|| {
        notes.push("stopped during warm-up: nothing was measured".into());
        Edge::now(end_ns, final_counts.clone())
    });
    let we = window_end.unwrap_or_else(|| Edge::now(end_ns, final_counts.clone()));
    let (ws_ns, we_ns) = (ws.ns, we.ns);
    let window_seconds = we_ns.saturating_sub(ws_ns) as f64 / 1e9;
    let proc = we.host.process.since(&ws.host.process);
    let host = HostUsage {
        clock_mhz: read_clock_mhz(),
        ..HostUsage::between(&ws.host, &we.host, &groups, true)
    };
    let cpu = CpuUsage {
        host_percent: host.cpu.map(|c| c.busy),
        process_percent: (window_seconds > 0.0)
            .then(|| 100.0 * (proc.user_seconds + proc.system_seconds) / (window_seconds * online_cpus() as f64)),
        process_user_seconds: proc.user_seconds,
        process_system_seconds: proc.system_seconds,
        split: host.cpu,
        per_cpu: host.per_cpu.clone(),
    };
    let stream_reports = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let c = &counters[i];
            let stream_end = c.end_ns.load(Relaxed).min(we_ns);
            StreamReport {
                stream: s.id,
                role: s.role,
                bytes: we.counts[i].0.saturating_sub(ws.counts[i].0),
                ops: we.counts[i].1.saturating_sub(ws.counts[i].1),
                seconds: stream_end.saturating_sub(ws_ns) as f64 / 1e9,
                total_bytes: final_counts[i].0,
                socket: s.grant.clone(),
                tcp: if s.role == Role::Send {
                    sockopt::tcp_info(&s.socket)
                } else {
                    None
                },
                errors: ErrorCounts {
                    resets: c.resets.load(Relaxed),
                    other: c.other_errors.load(Relaxed),
                },
                end: end_from(c.end.load(Relaxed)),
                udp_send: None,
                udp_receive: None,
                rr: None,
            }
        })
        .collect();
    SideReport {
        window_start_ns: ws_ns,
        window_end_ns: we_ns,
        streams: stream_reports,
        intervals,
        cpu,
        host: Some(host),
        timeline: timeline.into_entries(),
        config: None,
        io: String::new(),
        partial: stopped_early,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NullSink;
    use crate::units::ByteSize;
    use std::net::TcpListener;

    /// `n` connected pairs on loopback: (sending end, receiving end).
    fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        (0..n)
            .map(|_| {
                let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
                (c, l.accept().expect("accept").0)
            })
            .collect()
    }

    fn run_pairs(spec: &TcpSpec, n: usize) -> (SideReport, SideReport) {
        let (tx, rx): (Vec<_>, Vec<_>) = pairs(n)
            .into_iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let ga = sockopt::configure(&a, spec, Role::Send).expect("configure");
                let gb = sockopt::configure(&b, spec, Role::Receive).expect("configure");
                (
                    DataStream {
                        id: i as u16,
                        role: Role::Send,
                        socket: a,
                        grant: ga,
                    },
                    DataStream {
                        id: i as u16,
                        role: Role::Receive,
                        socket: b,
                        grant: gb,
                    },
                )
            })
            .unzip();
        let control_rx = Control::default();
        thread::scope(|s| {
            let h = s.spawn(|| run(spec, &[], rx, &mut NullSink, &control_rx).expect("receiver"));
            let sent = run(spec, &[], tx, &mut NullSink, &Control::default()).expect("sender");
            (sent, h.join().expect("join"))
        })
    }

    #[test]
    fn count_mode_moves_exactly_the_buffers_asked_for() {
        let mut spec = TcpSpec::new();
        spec.limit = Limit::Buffers(50);
        spec.buffer_bytes = ByteSize(10_000);
        spec.threads = 1; // two streams on one worker: the epoll path
        let (sent, received) = run_pairs(&spec, 2);
        for r in [&sent, &received] {
            assert_eq!(r.streams.iter().map(|s| s.bytes).sum::<u64>(), 2 * 50 * 10_000, "{r:?}");
            assert!(!r.partial);
        }
        assert!(sent.streams.iter().all(|s| s.end == StreamEnd::Count && s.ops == 50));
        assert!(received.streams.iter().all(|s| s.end == StreamEnd::Eof));
    }

    #[test]
    fn sixteen_streams_over_two_workers_move_exactly_the_bytes_asked() {
        let mut spec = TcpSpec::new();
        spec.streams = 16;
        spec.threads = 2;
        spec.limit = Limit::Buffers(40);
        spec.buffer_bytes = ByteSize(7_000); // not a multiple of any socket buffer: partial writes
        let (sent, received) = run_pairs(&spec, 16);
        for r in [&sent, &received] {
            assert_eq!(r.streams.len(), 16);
            assert!(r.streams.iter().all(|s| s.bytes == 40 * 7_000), "{r:?}");
            assert!(!r.partial);
        }
        assert!(sent.streams.iter().all(|s| s.end == StreamEnd::Count && s.ops == 40));
        assert!(received.streams.iter().all(|s| s.end == StreamEnd::Eof));
    }

    #[test]
    fn eight_streams_on_one_worker_stop_at_the_deadline() {
        let mut spec = TcpSpec::new();
        spec.streams = 8;
        spec.threads = 1;
        spec.limit = Limit::Seconds(0.5);
        spec.interval_seconds = 0.0;
        let (sent, received) = run_pairs(&spec, 8);
        for (s, r) in sent.streams.iter().zip(&received.streams) {
            assert_eq!(s.end, StreamEnd::Deadline);
            assert!((0.45..1.5).contains(&s.seconds), "{s:?}");
            assert!(s.bytes > 0, "every stream moved data: {s:?}");
            assert_eq!(r.end, StreamEnd::Eof);
            assert_eq!(r.bytes, s.bytes, "receiver counts every byte sent");
        }
        assert!(!sent.partial && !received.partial);
    }

    #[test]
    fn abort_ends_an_event_loop_worker_promptly() {
        let spec = TcpSpec::new();
        let pairs = pairs(4);
        let streams: Vec<DataStream> = pairs
            .iter()
            .enumerate()
            .map(|(i, (_, b))| DataStream {
                id: i as u16,
                role: Role::Receive,
                socket: b.try_clone().expect("clone"),
                grant: sockopt::configure(b, &spec, Role::Receive).expect("configure"),
            })
            .collect();
        let control = Control::default();
        let mut one = TcpSpec::new();
        one.threads = 1;
        let (report, took) = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(200));
                control.abort();
            });
            let started = Instant::now();
            let r = run(&one, &[], streams, &mut NullSink, &control).expect("run");
            (r, started.elapsed())
        });
        // The abort comes at 200 ms; the loop sees it within one epoll_wait slice.
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(report.partial);
        assert!(report.streams.iter().all(|s| s.end == StreamEnd::Stopped), "{report:?}");
    }

    #[test]
    fn default_workers_are_one_per_allowed_cpu_and_never_more_than_streams() {
        let allowed = pin::allowed_cpus().len();
        assert_eq!(worker_count(0, &[], 1_000), allowed);
        assert_eq!(worker_count(0, &[], 1), 1);
        assert_eq!(worker_count(0, &[0, 1, 0], 16), 3, "one per listed CPU");
        assert_eq!(worker_count(0, &[0, 1, 0], 2), 2);
        assert_eq!(worker_count(5, &[0], 16), 5, "--threads overrides");
        assert_eq!(worker_count(5, &[], 3), 3);
    }

    #[test]
    fn time_mode_stops_at_the_deadline_and_samples_intervals() {
        let mut spec = TcpSpec::new();
        spec.limit = Limit::Seconds(0.6);
        spec.interval_seconds = 0.2;
        let (sent, received) = run_pairs(&spec, 1);
        let s = &sent.streams[0];
        assert_eq!(s.end, StreamEnd::Deadline);
        assert!((0.55..1.5).contains(&s.seconds), "{s:?}");
        assert_eq!(received.streams[0].bytes, s.bytes, "receiver counts every byte sent");
        assert!(sent.intervals.len() >= 3, "{:?}", sent.intervals);
        let summed: u64 = sent.intervals.iter().map(|i| i.bytes).sum();
        assert_eq!(summed, s.total_bytes, "intervals add up to the whole run");
        assert!(sent.intervals.iter().all(|i| i.tcp.is_some()));
        assert!(sent.cpu.host_percent.is_some());
    }

    #[test]
    fn warmup_is_left_out_of_the_window() {
        let mut spec = TcpSpec::new();
        spec.limit = Limit::Seconds(0.8);
        spec.warmup_seconds = 0.3;
        let (sent, _) = run_pairs(&spec, 1);
        let s = &sent.streams[0];
        assert!(s.bytes < s.total_bytes);
        assert!(sent.window_start_ns >= 300_000_000);
        assert!((0.45..1.4).contains(&s.seconds), "{s:?}");
    }

    #[test]
    fn abort_ends_a_run_that_would_never_end() {
        let spec = TcpSpec::new();
        let (_a, b) = pairs(1).pop().expect("pair");
        let g = sockopt::configure(&b, &spec, Role::Receive).expect("configure");
        let control = Control::default();
        let started = Instant::now();
        let report = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(200));
                control.abort();
            });
            let streams = vec![DataStream {
                id: 0,
                role: Role::Receive,
                socket: b,
                grant: g,
            }];
            let mut c = TcpSpec::new();
            c.limit = Limit::Buffers(1);
            run(&c, &[], streams, &mut NullSink, &control).expect("run")
        });
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(report.partial);
        assert_eq!(report.streams[0].end, StreamEnd::Stopped);
    }
}
