//! The sampling thread of a run, the same for every kind: waits for the workers at the gate and
//! starts the clock, takes interval samples and the window's edges, stops the senders at the
//! deadline where the plan says so, follows a receiving side's data with its window where the plan
//! asks (`Plan::window_follows_data`), and steps in (with a note) when workers never get ready,
//! when the streams do not end after the senders stopped, or when no byte moves; where the plan
//! has an [`Unblock`](super::Unblock) rule, it wakes workers blocked in reads. At the end it
//! reads CPU over the window ([`cpu_over`]) and builds the report's streams.
//!
//! In: a [`Runner`] (plan, streams, hooks), the workers' [`Shared`] counters and the [`Gate`].
//! Out: a [`SideReport`]; samples also go to the [`Sink`] as they are taken.

use super::{Counters, Gate, Runner, STOP_GRACE, Shared, end_from};
use crate::engine::Sink;
use crate::engine::sockopt::POLL_SLICE;
use crate::metrics::host::online_cpus;
use crate::metrics::rusage::percent_of_host;
use crate::metrics::sample::{HostSnapshot, HostTimeline, HostUsage, IrqGroups, read_clock_mhz};
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
/// bytes that are neither queued nor counted, up to a buffer of them at an edge (issue 38:
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
/// the sampled count misses and the window would then claim (issue 38: an incast of four flows
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

/// Starts the clock, samples until every stream has ended, and reports.
pub(super) fn sample_until_done(run: &Runner<'_>, shared: &Shared<'_>, gate: &Gate, sink: &mut dyn Sink) -> SideReport {
    let plan = &run.plan;
    let streams = &run.streams;
    let n = streams.len();
    let counters = shared.counters;
    let control = shared.control;
    // The deadline the runner acts on (none on a side that samples until told to stop).
    let (deadline, interval) = (plan.watched_deadline, plan.interval());
    let (warmup, cooldown_mark) = plan.measure_window();
    let max_samples = plan.max_samples;

    let mut notes = Vec::new();
    let mut intervals: Vec<IntervalSample> = Vec::with_capacity(
        max_samples.min(
            n * deadline
                .zip(interval)
                .map_or(64, |(d, i)| (d.as_secs_f64() / i.as_secs_f64()) as usize + 2),
        ),
    );
    let mut last: Vec<(u64, u64)> = vec![(0, 0); n];
    let mut last_tick_ns = 0u64;
    let mut tick = 1u32;
    // A stream's count at an edge: what its workers counted, and for a receiving TCP stream what
    // its socket holds unread (Runner::queued), so intervals count bytes, not whole reads.
    let read_counts = || -> Vec<(u64, u64)> {
        counters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let bytes = c.bytes.load(Relaxed);
                let queued = match (run.queued, c.end_ns.load(Relaxed)) {
                    (Some(q), 0) => q(i),
                    _ => 0,
                };
                (bytes + queued, c.ops.load(Relaxed))
            })
            .collect()
    };

    let first = HostSnapshot::read();
    let groups = IrqGroups::discover(first.interrupts.as_ref(), &first.interfaces);
    // Time zero: workers are pinned, buffers touched, and waiting at the gate. A worker that
    // never gets there (stuck in setup) must not hold the run, nor the others, for ever.
    let gate_given_up = Instant::now() + plan.gate_timeout;
    while gate.arrived.load(Relaxed) < run.workers {
        if Instant::now() >= gate_given_up {
            notes.push(format!(
                "{} of {} workers were not ready within {} s: the run was given up",
                run.workers - gate.arrived.load(Relaxed).min(run.workers),
                run.workers,
                plan.gate_timeout.as_secs_f64()
            ));
            control.abort();
            break;
        }
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
    // A receiving side's window follows its data (Plan::window_follows_data): the edges are
    // looks at the counters with the host read beside them, so the interfaces and the streams
    // are counted over the same stretch. Before the first byte, the start is the look before
    // the latest look that found nothing read (the first: the host as read before the gate):
    // the readers count a datagram only once they have read it, and datagrams that arrive
    // before (the client sends once told `started`, while the workers are still starting) fill
    // a small receive buffer and are dropped there, where the host's counters must see them
    // (issue 37: a 4 KiB window's run of 75 ms lost 29 % of its receive-buffer drops from its
    // counters to a start one look too late). After bytes stop, the first still look reads
    // the host, dated to the last look that saw bytes move (nothing arrived between the two).
    let follow = plan.window_follows_data
        && warmup.is_zero()
        && cooldown_mark.is_none()
        && streams.iter().all(|s| s.role == Role::Receive);
    let mut before_data: Option<Edge> = follow.then(|| Edge {
        ns: 0,
        counts: vec![(0, 0); n],
        host: first.clone(),
    });
    let mut last_empty: Option<Edge> = None;
    let mut timeline = HostTimeline::new(first, 0, groups.clone());
    let mut after_data: Option<Edge> = None;
    let (mut last_moving, mut moved_before) = (None::<Instant>, 0u64);
    gate.open();

    let mut window_end: Option<Edge> = None;
    // When the senders were seen stopped, and whether it was the runner's own deadline stop.
    let mut stop_seen: Option<Instant> = None;
    let mut stopped_by_runner = false;
    let mut stopped_early = false;
    let mut idle_since = (start, 0u64);
    // The unblock rule's last movement (operations, when) and whether it has woken the workers.
    let mut ops_since = (start, 0u64);
    let mut woken = false;
    let done = |c: &Counters| c.end_ns.load(Relaxed) != 0;

    // What the kernel had received of each receiving TCP stream at the warm-up's and the
    // cool-down's edges (none where those edges are the run's own start and end), for the
    // window's exact counts at the end (`exact_window_bytes`).
    let read_kernel = || -> Vec<Option<u64>> { (0..n).map(|i| run.received.and_then(|f| f(i))).collect() };
    let (mut start_kernel, mut end_kernel) = (vec![None; n], vec![None; n]);
    let mut tick_buf: Vec<IntervalSample> = Vec::with_capacity(n);
    // Beside each sample kept, its stream's bytes as the kernel received them at its end edge
    // (Runner::received), for the exact counts the report keeps (below).
    let mut kernel_at: Vec<Option<u64>> = Vec::with_capacity(intervals.capacity());
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
                // An edge's count is read and queued bytes read one after the other: a read
                // finishing between the two may put one edge a read behind the next.
                bytes: counts[i].0.saturating_sub(last[i].0),
                ops: counts[i].1 - last[i].1,
                tcp: run.tcp_info.and_then(|f| f(i)),
            });
        }
        sink.interval(&tick_buf);
        timeline.tick(now_ns);
        if intervals.len() + tick_buf.len() <= max_samples {
            intervals.extend_from_slice(&tick_buf);
            kernel_at.extend((0..n).map(|i| run.received.and_then(|f| f(i))));
        } else {
            samples_dropped = true;
        }
        *last = counts.to_vec();
        *last_tick_ns = now_ns;
    };

    loop {
        let now = Instant::now();
        let el = now - start;
        if counters.iter().all(done) {
            break;
        }
        if window_start.is_none() && el >= warmup {
            window_start = Some(Edge::now(el.as_nanos() as u64, read_counts()));
            start_kernel = read_kernel();
        }
        if let Some(mark) = cooldown_mark
            && window_end.is_none()
            && el >= mark
            && !control.aborted()
        {
            window_end = Some(Edge::now(el.as_nanos() as u64, read_counts()));
            end_kernel = read_kernel();
        }
        if let Some(d) = deadline
            && el >= d
            && !shared.deadline_hit.load(Relaxed)
        {
            shared.deadline_hit.store(true, Relaxed);
            if plan.deadline_stops_senders {
                stopped_by_runner = !control.sending_stopped();
                control.stop_send();
            }
        }
        if stop_seen.is_none() && control.sending_stopped() {
            stop_seen = Some(now);
            if !stopped_by_runner {
                stopped_early = true;
            }
        }
        if let Some(at) = stop_seen
            && now - at >= plan.drain
            && !control.aborted()
        {
            notes.push(format!(
                "receivers saw no end of stream within {} s of the senders stopping",
                plan.drain.as_secs_f64()
            ));
            control.abort();
        }
        // A peer that neither reads nor sends (gone without closing, or stopped reading) would
        // hold this run for ever: a count-limited run has no deadline to end it.
        let moved: u64 = counters.iter().map(|c| c.bytes.load(Relaxed)).sum();
        if follow {
            let el_ns = el.as_nanos() as u64;
            if moved == 0 {
                let look = Edge {
                    ns: el_ns,
                    counts: vec![(0, 0); n],
                    host: HostSnapshot {
                        at: now,
                        ..HostSnapshot::read()
                    },
                };
                if let Some(earlier) = last_empty.replace(look) {
                    before_data = Some(earlier);
                }
            } else if moved != moved_before {
                last_moving = Some(now);
                after_data = None;
            } else if let (None, Some(at)) = (&after_data, last_moving) {
                after_data = Some(Edge {
                    ns: (at - start).as_nanos() as u64,
                    counts: read_counts(),
                    host: HostSnapshot {
                        at,
                        ..HostSnapshot::read()
                    },
                });
            }
            moved_before = moved;
        }
        if moved != idle_since.1 {
            idle_since = (now, moved);
        } else if let Some(idle) = plan.idle.map(|own| control.idle.unwrap_or(own))
            && now - idle_since.0 >= idle
            && !control.aborted()
        {
            notes.push(format!(
                "no data moved for {} s: the run was given up",
                idle.as_secs_f64()
            ));
            control.abort();
        }
        if let Some(unblock) = &plan.unblock
            && !woken
        {
            let ops: u64 = counters.iter().map(|c| c.ops.load(Relaxed)).sum();
            if ops != ops_since.1 {
                ops_since = (now, ops);
            }
            let stopped = stop_seen.is_some_and(|at| plan.ends_on_stop || now - at >= STOP_GRACE);
            let quiet = deadline.is_some_and(|d| el >= d) && now - ops_since.0 >= unblock.quiet;
            if control.aborted() || stopped || quiet {
                (unblock.wake)();
                woken = true;
            }
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
        let mut wait = next.saturating_sub(start.elapsed()).min(POLL_SLICE);
        if plan.unblock.is_some() && !woken {
            wait = wait.min(UNBLOCK_POLL);
        }
        if follow {
            wait = wait.min(DATA_EDGE_POLL);
        }
        if !wait.is_zero() {
            thread::park_timeout(wait);
        }
    }

    let end_ns = start.elapsed().as_nanos() as u64;
    let final_counts = read_counts();
    if interval.is_none() || final_counts != last {
        emit(end_ns, &final_counts, &mut last, &mut last_tick_ns, &mut intervals);
    }
    exact_receive_counts(&mut intervals, &kernel_at, &final_counts, n, run, samples_dropped);
    if samples_dropped {
        notes.push(format!(
            "only the first {max_samples} interval samples were kept; raise -i for longer runs"
        ));
    }
    // Workers can end on an outside stop before the loop saw the flag.
    if control.sending_stopped() && !stopped_by_runner {
        stopped_early = true;
    }
    let partial = control.aborted() || (stopped_early && !plan.ends_on_stop && !control.peer_ends);
    // Following the data: its edges, once some arrived (with none, the run's own window). Bytes
    // that came after the last still look (the streams ended before another look) end the
    // window at the streams' end.
    if follow && final_counts.iter().any(|c| c.0 > 0) {
        window_start = before_data.or(window_start);
        window_end = after_data.filter(|e| e.counts == final_counts);
    }
    let ws = window_start.unwrap_or_else(|| {
        notes.push("stopped during warm-up: nothing was measured".into());
        Edge::now(end_ns, final_counts.clone())
    });
    let we = window_end.unwrap_or_else(|| Edge::now(end_ns, final_counts.clone()));
    let (ws_ns, we_ns) = (ws.ns, we.ns);
    let (cpu, host) = cpu_over(&ws.host, &we.host, &groups, we_ns.saturating_sub(ws_ns) as f64 / 1e9);
    let stream_reports = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let c = &counters[i];
            let stream_end = c.end_ns.load(Relaxed).min(we_ns);
            StreamReport {
                stream: s.id,
                role: s.role,
                bytes: exact_window_bytes(
                    run,
                    i,
                    final_counts[i].0,
                    (ws.counts[i].0, start_kernel[i]),
                    (we.counts[i].0, end_kernel[i]),
                ),
                ops: we.counts[i].1.saturating_sub(ws.counts[i].1),
                seconds: stream_end.saturating_sub(ws_ns) as f64 / 1e9,
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
        profile: None,
        http_server: None,
        io: String::new(),
        partial,
        notes,
    }
}
