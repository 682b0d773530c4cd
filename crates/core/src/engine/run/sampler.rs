//! The sampling thread of a run, the same for every kind: waits for the workers at the gate and
//! starts the clock, takes interval samples and the window's edges, stops the senders at the
//! deadline where the plan says so, follows a receiving side's data with its window where the plan
//! asks (`Deadlines::window_follows_data`), and steps in (with a note) when workers never get ready,
//! when the streams do not end after the senders stopped, or when no byte moves; where the plan
//! has an [`Unblock`](super::Unblock) rule, it wakes workers blocked in reads. At the end it
//! reads CPU over the window ([`cpu_over`]) and builds the report's streams.
//!
//! In: a [`Runner`] (plan, streams, hooks), the workers' [`Shared`] counters and the [`Gate`].
//! Out: a [`SideReport`]; samples also go to the [`Sink`] as they are taken.

use super::{Counters, Gate, Runner, STOP_GRACE, Shared, end_from};
use crate::engine::sockopt::POLL_SLICE;
use crate::engine::{Control, Sink};
use crate::metrics::host::online_cpus;
use crate::metrics::rusage::percent_of_host;
use crate::metrics::sample::{HostSnapshot, HostTimeline, HostUsage, IrqGroups, UsageBetween, read_clock_mhz};
use crate::result::{CpuUsage, ErrorCounts, IntervalSample, Role, SideReport, StreamReport};
use std::sync::atomic::Ordering::Relaxed;
use std::thread;
use std::time::{Duration, Instant};

/// How often the sampler looks at the unblock rule: a blocked worker is woken within this of its
/// condition.
const UNBLOCK_POLL: Duration = Duration::from_millis(20);
/// How often the sampler looks at the counters of a side whose window follows its data: the
/// window's edges fall within this of the first and last byte.
const DATA_EDGE_POLL: Duration = Duration::from_millis(10);

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

/// Process and host CPU between two snapshots `window_seconds` apart: the one place a run's
/// [`CpuUsage`] (and the host's usage it comes from) is computed.
pub(crate) fn cpu_over(
    start: &HostSnapshot,
    end: &HostSnapshot,
    groups: &IrqGroups,
    window_seconds: f64,
) -> (CpuUsage, HostUsage) {
    let proc = end.process.since(&start.process);
    let host = HostUsage {
        clock_mhz: read_clock_mhz(),
        ..HostUsage::between(start, end, groups, true)
    };
    let cpu = CpuUsage {
        host_percent: host.cpu.map(|c| c.busy),
        process_percent_of_host: percent_of_host(
            proc.user_seconds + proc.system_seconds,
            window_seconds,
            online_cpus(),
        ),
        process_user_seconds: proc.user_seconds,
        process_system_seconds: proc.system_seconds,
        split: host.cpu,
        per_cpu: host.per_cpu.clone(),
    };
    (cpu, host)
}

/// A receiving TCP stream's kept interval samples, counted again from the bytes its kernel had
/// received by each edge (TCP_INFO's tcpi_bytes_received), aligned so that the end is what its
/// reader counted: a reader inside a read that waits for a whole buffer (SO_RCVLOWAT) holds
/// bytes that are neither queued nor counted, up to a buffer of them at an edge (seen:
/// 12.97 Mbit/s in one second of a steady 11.94 flow). The kernel's count and the reader's
/// differ by a constant (bytes before the data: none, or a header), known once the stream has
/// ended; each edge's count is the kernel's less that constant, kept between the edge before
/// and the end. Streams without the kernel's figure at every edge keep their samples.
fn exact_receive_counts(
    intervals: &mut [IntervalSample],
    kernel_at: &[Option<u64>],
    final_counts: &[(u64, u64)],
    n: usize,
    run: &Runner<'_>,
    samples_dropped: bool,
) {
    let Some(received) = run.received else { return };
    if n == 0 || intervals.len() != kernel_at.len() {
        return;
    }
    let ticks = intervals.len() / n;
    for i in 0..n {
        let (Some(kernel_end), reader_end) = (received(i), final_counts[i].0) else {
            continue;
        };
        let Some(before_data) = kernel_end.checked_sub(reader_end) else {
            continue;
        };
        let counts: Option<Vec<u64>> = (0..ticks).map(|t| kernel_at[t * n + i]).collect();
        let Some(counts) = counts else { continue };
        let mut prev = 0u64;
        for (t, k) in counts.into_iter().enumerate() {
            let at = if t + 1 == ticks && !samples_dropped {
                reader_end
            } else {
                k.saturating_sub(before_data).clamp(prev, reader_end.max(prev))
            };
            intervals[t * n + i].bytes = at - prev;
            prev = at;
        }
    }
}

/// Stream `i`'s bytes over the window: its count at the end edge less its count at the start
/// edge, each edge's count the kernel's received bytes there less the bytes before the data
/// (as [`exact_receive_counts`] takes them) where the kernel's figure was read, else the
/// sampled count. A reader inside a whole-buffer read at the warm-up's edge holds bytes that
/// the sampled count misses and the window would then claim (an incast of four flows
/// into 50 Mbit/s summed 48.26 over its window, above TCP's 47.82 through that link).
fn exact_window_bytes(
    run: &Runner<'_>,
    i: usize,
    reader_end: u64,
    (start_count, start_kernel): (u64, Option<u64>),
    (end_count, end_kernel): (u64, Option<u64>),
) -> u64 {
    let before_data = run.received.and_then(|f| f(i)).and_then(|k| k.checked_sub(reader_end));
    let at = |count: u64, kernel: Option<u64>| match (kernel, before_data) {
        (Some(k), Some(b)) => k.saturating_sub(b).min(reader_end),
        _ => count,
    };
    at(end_count, end_kernel).saturating_sub(at(start_count, start_kernel))
}

/// Starts the clock, samples until every stream has ended, and reports. The phases, each its
/// own: the gate and time zero ([`Sampler::start`]); one look per wake-up at the counters, the
/// clock and the stop rules ([`Sampler::look`]) and the sleep to the next event
/// ([`Sampler::sleep`]), until every stream has ended; then the window and the report
/// ([`Sampler::report`]). An interval's sample allocates nothing: its buffers are kept from tick
/// to tick.
pub(super) fn sample_until_done(run: &Runner<'_>, shared: &Shared<'_>, gate: &Gate, sink: &mut dyn Sink) -> SideReport {
    let mut sampler = Sampler::start(run, shared, gate, sink);
    loop {
        let now = Instant::now();
        if shared.counters.iter().all(done) {
            break;
        }
        sampler.look(now);
        sampler.sleep(now);
    }
    sampler.report()
}

/// Whether a stream has ended (its worker recorded when).
fn done(c: &Counters) -> bool {
    c.end_ns.load(Relaxed) != 0
}

/// A stream's count at an edge, into `out`: what its workers counted, and for a receiving TCP
/// stream what its socket holds unread (Runner::queued), so intervals count bytes, not whole
/// reads.
fn read_counts_into(run: &Runner<'_>, counters: &[Counters], out: &mut Vec<(u64, u64)>) {
    out.clear();
    out.extend(counters.iter().enumerate().map(|(i, c)| {
        let bytes = c.bytes.load(Relaxed);
        let queued = match (run.queued, c.end_ns.load(Relaxed)) {
            (Some(q), 0) => q(i),
            _ => 0,
        };
        (bytes + queued, c.ops.load(Relaxed))
    }));
}

/// Waits for the workers at the gate, at most the plan's `gate_timeout`. A worker that never gets
/// there (stuck in setup) must not hold the run, nor the others, for ever: past the timeout the
/// run is aborted and the note returned says why.
fn wait_at_gate(run: &Runner<'_>, gate: &Gate, control: &Control) -> Option<String> {
    let deadlines = &run.deadlines;
    let gate_given_up = Instant::now() + deadlines.gate_timeout;
    while gate.arrived.load(Relaxed) < run.workers {
        if Instant::now() >= gate_given_up {
            control.abort();
            return Some(format!(
                "{} of {} workers were not ready within {} s: the run was given up",
                run.workers - gate.arrived.load(Relaxed).min(run.workers),
                run.workers,
                deadlines.gate_timeout.as_secs_f64()
            ));
        }
        thread::park_timeout(Duration::from_millis(10));
    }
    None
}

/// A receiving side's window that follows its data (Deadlines::window_follows_data): the edges are
/// looks at the counters with the host read beside them, so the interfaces and the streams are
/// counted over the same stretch. Before the first byte, the start is the look before the latest
/// look that found nothing read (the first: the host as read before the gate): the readers count
/// a datagram only once they have read it, and datagrams that arrive before (the client sends
/// once told `started`, while the workers are still starting) fill a small receive buffer and
/// are dropped there, where the host's counters must see them (a 4 KiB window's run
/// of 75 ms lost 29 % of its receive-buffer drops from its counters to a start one look too
/// late). After bytes stop, the first still look reads the host, dated to the last look that
/// saw bytes move (nothing arrived between the two).
struct Follow {
    before_data: Edge,
    last_empty: Option<Edge>,
    after_data: Option<Edge>,
    last_moving: Option<Instant>,
    moved_before: u64,
}

impl Follow {
    /// One look at `moved`, the bytes every stream has counted, at `now`.
    fn look(
        &mut self,
        now: Instant,
        start: Instant,
        moved: u64,
        n: usize,
        read_counts: impl FnOnce() -> Vec<(u64, u64)>,
    ) {
        if moved == 0 {
            let look = Edge {
                ns: (now - start).as_nanos() as u64,
                counts: vec![(0, 0); n],
                host: HostSnapshot {
                    at: now,
                    ..HostSnapshot::read()
                },
            };
            if let Some(earlier) = self.last_empty.replace(look) {
                self.before_data = earlier;
            }
        } else if moved != self.moved_before {
            self.last_moving = Some(now);
            self.after_data = None;
        } else if let (None, Some(at)) = (&self.after_data, self.last_moving) {
            self.after_data = Some(Edge {
                ns: (at - start).as_nanos() as u64,
                counts: read_counts(),
                host: HostSnapshot {
                    at,
                    ..HostSnapshot::read()
                },
            });
        }
        self.moved_before = moved;
    }
}

/// The sampling thread's state over one run: the samples taken, the window's edges, and what
/// the stop rules have seen.
struct Sampler<'r, 's> {
    run: &'r Runner<'r>,
    shared: &'r Shared<'r>,
    sink: &'s mut dyn Sink,
    /// Time zero.
    start: Instant,
    groups: IrqGroups,
    notes: Vec<String>,
    // The plan's times, as the runner acts on them: the deadline (none on a side that samples
    // until told to stop), the interval, the warm-up and the cool-down's mark.
    deadline: Option<Duration>,
    interval: Option<Duration>,
    warmup: Duration,
    cooldown_mark: Option<Duration>,

    /// The samples the report keeps, and beside each its stream's bytes as the kernel received
    /// them at its end edge (Runner::received), for the exact counts at the end.
    intervals: Vec<IntervalSample>,
    kernel_at: Vec<Option<u64>>,
    samples_dropped: bool,
    /// One tick's samples, as the sink is given them.
    tick_buf: Vec<IntervalSample>,
    /// The counts read at a tick (kept for the next, so a tick allocates nothing).
    counts: Vec<(u64, u64)>,
    /// Every stream's counts at the last tick, and when it was.
    last: Vec<(u64, u64)>,
    last_tick_ns: u64,
    /// The number of the next interval boundary.
    tick: u32,
    timeline: HostTimeline,

    window_start: Option<Edge>,
    window_end: Option<Edge>,
    /// What the kernel had received of each receiving TCP stream at the warm-up's and the
    /// cool-down's edges (none where those edges are the run's own start and end), for the
    /// window's exact counts at the end (`exact_window_bytes`).
    start_kernel: Vec<Option<u64>>,
    end_kernel: Vec<Option<u64>>,
    follow: Option<Follow>,

    /// When the senders were seen stopped, and whether it was the runner's own deadline stop.
    stop_seen: Option<Instant>,
    stopped_by_runner: bool,
    stopped_early: bool,
    /// The last movement of bytes (when, total), for the idle rule.
    idle_since: (Instant, u64),
    /// The unblock rule's last movement (operations, when) and whether it has woken the workers.
    ops_since: (Instant, u64),
    woken: bool,
}

impl<'r, 's> Sampler<'r, 's> {
    /// Reads the host, waits for the workers at the gate, starts the clock (time zero: workers
    /// are pinned, buffers touched, and waiting at the gate) and opens the gate.
    fn start(run: &'r Runner<'r>, shared: &'r Shared<'r>, gate: &Gate, sink: &'s mut dyn Sink) -> Self {
        let deadlines = &run.deadlines;
        let n = run.streams.len();
        let (deadline, interval) = (deadlines.watched_deadline, deadlines.interval());
        let (warmup, cooldown_mark) = deadlines.measure_window();
        let expected = n * deadline
            .zip(interval)
            .map_or(64, |(d, i)| (d.as_secs_f64() / i.as_secs_f64()) as usize + 2);
        let intervals = Vec::with_capacity(deadlines.max_samples.min(expected));

        let first = HostSnapshot::read();
        let groups = IrqGroups::discover(first.interrupts.as_ref(), &first.interfaces);
        let notes: Vec<String> = wait_at_gate(run, gate, shared.control).into_iter().collect();
        let first = HostSnapshot {
            at: Instant::now(),
            ..first
        };
        let start = first.at;
        let _ = shared.t0.set(start);
        sink.zero(start);
        let at_zero = |host: &HostSnapshot| Edge {
            ns: 0,
            counts: vec![(0, 0); n],
            host: host.clone(),
        };
        let window_start = warmup.is_zero().then(|| at_zero(&first));
        let follows = deadlines.window_follows_data
            && warmup.is_zero()
            && cooldown_mark.is_none()
            && run.streams.iter().all(|s| s.role == Role::Receive);
        let follow = follows.then(|| Follow {
            before_data: at_zero(&first),
            last_empty: None,
            after_data: None,
            last_moving: None,
            moved_before: 0,
        });
        let timeline = HostTimeline::new(first, 0, groups.clone());
        gate.open();

        Sampler {
            run,
            shared,
            sink,
            start,
            groups,
            notes,
            deadline,
            interval,
            warmup,
            cooldown_mark,
            kernel_at: Vec::with_capacity(intervals.capacity()),
            intervals,
            samples_dropped: false,
            tick_buf: Vec::with_capacity(n),
            counts: Vec::with_capacity(n),
            last: vec![(0, 0); n],
            last_tick_ns: 0,
            tick: 1,
            timeline,
            window_start,
            window_end: None,
            start_kernel: vec![None; n],
            end_kernel: vec![None; n],
            follow,
            stop_seen: None,
            stopped_by_runner: false,
            stopped_early: false,
            idle_since: (start, 0),
            ops_since: (start, 0),
            woken: false,
        }
    }

    /// Every stream's count now, as an edge keeps it.
    fn read_counts(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.shared.counters.len());
        read_counts_into(self.run, self.shared.counters, &mut out);
        out
    }

    /// What the kernel has received of each stream now (Runner::received).
    fn read_kernel(&self) -> Vec<Option<u64>> {
        (0..self.run.streams.len())
            .map(|i| self.run.received.and_then(|f| f(i)))
            .collect()
    }

    /// One look, at `now`: the window's edges as they fall due, the deadline and the stop rules,
    /// the data's edges where the window follows them, and an interval sample when one is due.
    fn look(&mut self, now: Instant) {
        let el = now - self.start;
        self.take_window_edges(el);
        self.watch_deadline_and_stop(now, el);
        // A peer that neither reads nor sends (gone without closing, or stopped reading) would
        // hold this run for ever: a count-limited run has no deadline to end it.
        let moved: u64 = self.shared.counters.iter().map(|c| c.bytes.load(Relaxed)).sum();
        if let Some(follow) = &mut self.follow {
            let (run, counters) = (self.run, self.shared.counters);
            follow.look(now, self.start, moved, run.streams.len(), || {
                let mut out = Vec::with_capacity(counters.len());
                read_counts_into(run, counters, &mut out);
                out
            });
        }
        self.watch_idle(now, moved);
        self.unblock(now, el);
        self.sample_if_due(el);
    }

    /// The warm-up's edge once it is past, and the cool-down's (unless the run was aborted).
    fn take_window_edges(&mut self, el: Duration) {
        if self.window_start.is_none() && el >= self.warmup {
            self.window_start = Some(Edge::now(el.as_nanos() as u64, self.read_counts()));
            self.start_kernel = self.read_kernel();
        }
        if let Some(mark) = self.cooldown_mark
            && self.window_end.is_none()
            && el >= mark
            && !self.shared.control.aborted()
        {
            self.window_end = Some(Edge::now(el.as_nanos() as u64, self.read_counts()));
            self.end_kernel = self.read_kernel();
        }
    }

    /// The deadline (marked hit; the senders told to stop where the plan says so), the senders'
    /// stop as it is first seen, and the drain rule: streams that do not end within the plan's
    /// drain of the stop abort the run.
    fn watch_deadline_and_stop(&mut self, now: Instant, el: Duration) {
        let (deadlines, control) = (&self.run.deadlines, self.shared.control);
        if let Some(d) = self.deadline
            && el >= d
            && !self.shared.deadline_hit.load(Relaxed)
        {
            self.shared.deadline_hit.store(true, Relaxed);
            if deadlines.deadline_stops_senders {
                self.stopped_by_runner = !control.sending_stopped();
                control.stop_send();
            }
        }
        if self.stop_seen.is_none() && control.sending_stopped() {
            self.stop_seen = Some(now);
            if !self.stopped_by_runner {
                self.stopped_early = true;
            }
        }
        if let Some(at) = self.stop_seen
            && now - at >= deadlines.drain
            && !control.aborted()
        {
            self.notes.push(format!(
                "receivers saw no end of stream within {} s of the senders stopping",
                deadlines.drain.as_secs_f64()
            ));
            control.abort();
        }
    }

    /// The idle rule: no byte moved for the plan's idle time (or the agent's own) aborts the run.
    fn watch_idle(&mut self, now: Instant, moved: u64) {
        let control = self.shared.control;
        if moved != self.idle_since.1 {
            self.idle_since = (now, moved);
        } else if let Some(idle) = self.run.deadlines.idle.map(|own| control.idle.unwrap_or(own))
            && now - self.idle_since.0 >= idle
            && !control.aborted()
        {
            self.notes.push(format!(
                "no data moved for {} s: the run was given up",
                idle.as_secs_f64()
            ));
            control.abort();
        }
    }

    /// The unblock rule, where the plan has one: wakes workers blocked in reads, once.
    fn unblock(&mut self, now: Instant, el: Duration) {
        let deadlines = &self.run.deadlines;
        let Some(unblock) = &deadlines.unblock else { return };
        if self.woken {
            return;
        }
        let ops: u64 = self.shared.counters.iter().map(|c| c.ops.load(Relaxed)).sum();
        if ops != self.ops_since.1 {
            self.ops_since = (now, ops);
        }
        let stopped = self
            .stop_seen
            .is_some_and(|at| deadlines.ends_on_stop || now - at >= STOP_GRACE);
        let quiet = self.deadline.is_some_and(|d| el >= d) && now - self.ops_since.0 >= unblock.quiet;
        if self.shared.control.aborted() || stopped || quiet {
            (unblock.wake)();
            self.woken = true;
        }
    }

    /// An interval sample when a boundary has passed. Behind by several intervals (a stalled
    /// machine): one longer sample covers them, and the next boundary is the next one still
    /// ahead.
    fn sample_if_due(&mut self, el: Duration) {
        let Some(iv) = self.interval else { return };
        if el < iv * self.tick {
            return;
        }
        let mut counts = std::mem::take(&mut self.counts);
        read_counts_into(self.run, self.shared.counters, &mut counts);
        self.emit(el.as_nanos() as u64, &counts);
        self.counts = counts;
        self.tick = (el.as_secs_f64() / iv.as_secs_f64()) as u32 + 1;
    }

    /// One sample per stream from the last tick to `now_ns`: to the sink, to the host's
    /// timeline, and to the report while it has room for them.
    fn emit(&mut self, now_ns: u64, counts: &[(u64, u64)]) {
        let run = self.run;
        self.tick_buf.clear();
        for (i, s) in run.streams.iter().enumerate() {
            self.tick_buf.push(IntervalSample {
                stream: s.id,
                start_ns: self.last_tick_ns,
                end_ns: now_ns,
                // An edge's count is read and queued bytes read one after the other: a read
                // finishing between the two may put one edge a read behind the next.
                bytes: counts[i].0.saturating_sub(self.last[i].0),
                ops: counts[i].1 - self.last[i].1,
                tcp: run.tcp_info.and_then(|f| f(i)),
            });
        }
        self.sink.interval(&self.tick_buf);
        self.timeline.tick(now_ns);
        if self.intervals.len() + self.tick_buf.len() <= run.deadlines.max_samples {
            self.intervals.extend_from_slice(&self.tick_buf);
            self.kernel_at
                .extend((0..run.streams.len()).map(|i| run.received.and_then(|f| f(i))));
        } else {
            self.samples_dropped = true;
        }
        self.last.clear();
        self.last.extend_from_slice(counts);
        self.last_tick_ns = now_ns;
    }

    /// Sleeps to the next event (an interval boundary, a window edge, the deadline, at most a
    /// second; shorter where a rule polls); workers unpark the sampler when a stream ends.
    fn sleep(&self, now: Instant) {
        let el = now - self.start;
        let mut next = el + Duration::from_secs(1);
        if let Some(iv) = self.interval {
            next = next.min(iv * self.tick);
        }
        if self.window_start.is_none() {
            next = next.min(self.warmup);
        }
        if let (Some(m), None) = (self.cooldown_mark, &self.window_end) {
            next = next.min(m);
        }
        if let Some(d) = self.deadline.filter(|_| !self.shared.deadline_hit.load(Relaxed)) {
            next = next.min(d);
        }
        let mut wait = next.saturating_sub(self.start.elapsed()).min(POLL_SLICE);
        if self.run.deadlines.unblock.is_some() && !self.woken {
            wait = wait.min(UNBLOCK_POLL);
        }
        if self.follow.is_some() {
            wait = wait.min(DATA_EDGE_POLL);
        }
        if !wait.is_zero() {
            thread::park_timeout(wait);
        }
    }

    /// Every stream has ended: the last sample, the exact counts, the window, the CPU over it and
    /// the report.
    fn report(mut self) -> SideReport {
        let (run, control) = (self.run, self.shared.control);
        let end_ns = self.start.elapsed().as_nanos() as u64;
        let final_counts = self.read_counts();
        if self.interval.is_none() || final_counts != self.last {
            self.emit(end_ns, &final_counts);
        }
        let n = run.streams.len();
        exact_receive_counts(
            &mut self.intervals,
            &self.kernel_at,
            &final_counts,
            n,
            run,
            self.samples_dropped,
        );
        if self.samples_dropped {
            self.notes.push(format!(
                "only the first {} interval samples were kept; raise -i for longer runs",
                run.deadlines.max_samples
            ));
        }
        // Workers can end on an outside stop before the loop saw the flag.
        if control.sending_stopped() && !self.stopped_by_runner {
            self.stopped_early = true;
        }
        let partial = control.aborted() || (self.stopped_early && !run.deadlines.ends_on_stop && !control.peer_ends);
        let (ws, we) = self.window(end_ns, &final_counts);
        let (cpu, host) = cpu_over(
            &ws.host,
            &we.host,
            &self.groups,
            we.ns.saturating_sub(ws.ns) as f64 / 1e9,
        );
        let streams = self.stream_reports(&ws, &we, &final_counts);
        SideReport {
            window_start_ns: ws.ns,
            window_end_ns: we.ns,
            streams,
            intervals: self.intervals,
            cpu,
            host: Some(host),
            timeline: self.timeline.into_entries(),
            config: None,
            profile: None,
            http_server: None,
            io: String::new(),
            partial,
            notes: self.notes,
        }
    }

    /// The window's edges: the warm-up's and the cool-down's, or the run's own start and end.
    /// Following the data: its edges, once some arrived (with none, the run's own window). Bytes
    /// that came after the last still look (the streams ended before another look) end the
    /// window at the streams' end.
    fn window(&mut self, end_ns: u64, final_counts: &[(u64, u64)]) -> (Edge, Edge) {
        let (mut window_start, mut window_end) = (self.window_start.take(), self.window_end.take());
        if let Some(follow) = self.follow.take()
            && final_counts.iter().any(|c| c.0 > 0)
        {
            window_start = Some(follow.before_data);
            window_end = follow.after_data.filter(|e| e.counts == final_counts);
        }
        let ws = window_start.unwrap_or_else(|| {
            self.notes.push("stopped during warm-up: nothing was measured".into());
            Edge::now(end_ns, final_counts.to_vec())
        });
        let we = window_end.unwrap_or_else(|| Edge::now(end_ns, final_counts.to_vec()));
        (ws, we)
    }

    /// Each stream's report over the window from `ws` to `we`.
    fn stream_reports(&self, ws: &Edge, we: &Edge, final_counts: &[(u64, u64)]) -> Vec<StreamReport> {
        let run = self.run;
        run.streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let c = &self.shared.counters[i];
                let stream_end = c.end_ns.load(Relaxed).min(we.ns);
                StreamReport {
                    stream: s.id,
                    role: s.role,
                    bytes: exact_window_bytes(
                        run,
                        i,
                        final_counts[i].0,
                        (ws.counts[i].0, self.start_kernel[i]),
                        (we.counts[i].0, self.end_kernel[i]),
                    ),
                    ops: we.counts[i].1.saturating_sub(ws.counts[i].1),
                    seconds: stream_end.saturating_sub(ws.ns) as f64 / 1e9,
                    total_bytes: final_counts[i].0,
                    socket: s.grant.clone(),
                    tcp: run.tcp_info.and_then(|f| f(i)),
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
            .collect()
    }
}
