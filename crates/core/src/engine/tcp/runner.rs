//! The one TCP run: one-way streams and mixed transfers are two [`Workload`]s of [`run`], which
//! owns what they share. It sizes the workers (`--threads`, else one per CPU), deals the sockets
//! out to them, counts each socket's streams, reads TCP_INFO for the sending ones, chooses each
//! worker's style once ([`Style`]: io_uring, blocking calls, or an epoll loop) and falls back
//! from io_uring when the ring cannot be set up, then notes what happened. The loops themselves
//! are the workload's; the runner (`engine::run`) samples and stops them.

use super::stream::DataStream;
use crate::engine::run::{Deadlines, Gate, RunState, Runner, Shared, StreamInfo};
use crate::engine::{Control, EngineError, Sink, pin, sockopt};
use crate::result::{Role, SideReport};
use crate::spec::TcpSpec;
use std::io;
use std::sync::OnceLock;

/// What a TCP run moves over its sockets. Generic, not dynamic: each workload's loops are
/// compiled for it, so no call in a loop goes through a vtable.
///
/// Contract for the styles: each allocates and touches its buffers, then arrives at the gate
/// (`gate.arrive_and_wait(&shared.sampler)`) once, then drives its units to their ends, calling
/// [`Shared::finish`] for every counted stream. `event_loop` and `uring` return Err only before
/// they arrive at the gate (the runner then arrives for them).
pub(super) trait Workload: Sync {
    /// What a worker drives: a one-way stream, or a mixed connection and its two streams.
    type Unit<'a>;
    /// Worker thread names: this prefix and the worker's number.
    const NAME: &'static str;
    /// Whether `--depth` above 1 runs on io_uring ([`Workload::uring`]).
    const URING: bool;

    /// The counted streams in the order of the run's counters: (reported id, role, index of the
    /// socket in `sockets`).
    fn streams(&self, sockets: &[DataStream]) -> Vec<(u16, Role, usize)>;
    /// The unit of socket `i` (of `sockets`), for a worker.
    fn unit<'a>(&self, i: usize, socket: &'a DataStream, shared: &'a Shared<'a>) -> Self::Unit<'a>;
    /// One unit on plain blocking calls (the sockets' [`sockopt::POLL_SLICE`] timeouts let the
    /// worker see its flags).
    fn blocking(&self, unit: &Self::Unit<'_>, shared: &Shared<'_>, gate: &Gate);
    /// Several units on one epoll loop.
    fn event_loop(&self, units: &[Self::Unit<'_>], shared: &Shared<'_>, gate: &Gate) -> io::Result<()>;
    /// `depth` operations in flight per unit through io_uring (only where [`Workload::URING`]).
    fn uring(&self, units: &[Self::Unit<'_>], depth: usize, shared: &Shared<'_>, gate: &Gate) -> io::Result<()> {
        let _ = (units, depth, shared, gate);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    /// Ends a unit whose worker could not start its loop: the error counted, its streams ended.
    fn fail(&self, unit: &Self::Unit<'_>, shared: &Shared<'_>, e: &io::Error);
}

/// How a worker drives its units, chosen once per worker by [`Style::of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    /// `--depth` above 1: operations kept in flight through io_uring.
    Uring,
    /// One unit: plain blocking calls (an event loop adds an epoll_wait per call; at -P 1 on
    /// loopback it measured 13.9 Gbit/s against 14.6 blocking, docs/benchmarks.md).
    Blocking,
    /// Several units: non-blocking calls from one epoll loop.
    Epoll,
}

impl Style {
    fn of(depth: usize, units: usize) -> Style {
        match (depth, units) {
            (2.., _) => Style::Uring,
            (_, 1) => Style::Blocking,
            _ => Style::Epoll,
        }
    }
}

/// Runs `sockets` under `workload` until its streams end (or `control` says stop), and returns
/// what this end counted.
pub(super) fn run<W: Workload>(
    spec: &TcpSpec,
    workload: &W,
    cpus: &[usize],
    sockets: &[DataStream],
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<SideReport, EngineError> {
    pin::check_cpus(cpus)?;
    let n = sockets.len();
    let workers = worker_count(spec.threads, cpus, n);
    let counted = workload.streams(sockets);
    let state = RunState::new(counted.len());
    let gate = Gate::new();
    let uring_failed: OnceLock<String> = OnceLock::new();
    let epoll_failed: OnceLock<String> = OnceLock::new();
    let shared = shared_for(spec, &state, control);
    let depth = if W::URING { spec.depth as usize } else { 1 };
    // Sending streams report TCP_INFO (cwnd, RTT, retransmits) in each interval and at the end.
    let tcp_info = |i: usize| {
        let (_, role, k) = counted[i];
        (role == Role::Send)
            .then(|| sockopt::tcp_info(&sockets[k].socket))
            .flatten()
    };
    // Receiving streams count what arrived by each edge: read, or queued in the socket.
    let queued = |i: usize| {
        let (_, role, k) = counted[i];
        if role == Role::Receive {
            sockopt::receive_queue_bytes(&sockets[k].socket).unwrap_or(0)
        } else {
            0
        }
    };
    // And what their kernel received, for the report's exact interval counts.
    let received = |i: usize| {
        let (_, role, k) = counted[i];
        (role == Role::Receive)
            .then(|| sockopt::tcp_bytes_received(&sockets[k].socket))
            .flatten()
    };
    let runner = Runner {
        deadlines: deadlines_for(spec),
        streams: StreamInfo::all(counted.iter().map(|&(id, role, k)| (id, role, &sockets[k].grant))),
        workers,
        name: W::NAME,
        cpus,
        sched: crate::spec::Sched::Normal,
        tcp_info: Some(&tcp_info),
        queued: Some(&queued),
        received: Some(&received),
    };
    let (mut report, _) = runner.drive(&shared, &gate, sink, |w| {
        let shared = &shared;
        let mine: Vec<W::Unit<'_>> = sockets
            .iter()
            .enumerate()
            .filter(|(i, _)| i % workers == w)
            .map(|(i, s)| workload.unit(i, s, shared))
            .collect();
        let mut style = Style::of(depth, mine.len());
        if style == Style::Uring {
            match workload.uring(&mine, depth, shared, &gate) {
                Ok(()) => return,
                Err(e) => {
                    let _ = uring_failed.set(e.to_string());
                    style = Style::of(1, mine.len());
                }
            }
        }
        match (style, &mine[..]) {
            (Style::Blocking, [one]) => workload.blocking(one, shared, &gate),
            _ => {
                if let Err(e) = workload.event_loop(&mine, shared, &gate) {
                    let _ = epoll_failed.set(e.to_string());
                    gate.arrive_and_wait(&shared.sampler);
                    for u in &mine {
                        workload.fail(u, shared, &e);
                    }
                }
            }
        }
    })?;
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
    let asked = sockopt::Asked {
        window: spec.window_bytes,
        sndbuf: spec.sndbuf_bytes,
        mss_bytes: spec.mss_bytes,
    };
    report.notes.extend(sockopt::grant_notes(asked, &report.streams));
    Ok(report)
}

/// The counters and flags of a TCP run: buffers of `-l` bytes, a count per stream with `-n`.
fn shared_for<'a>(spec: &TcpSpec, state: &'a RunState, control: &'a Control) -> Shared<'a> {
    Shared {
        buffer_bytes: spec.buffer_bytes.0 as usize,
        count: spec.timing.limit.count(),
        ..state.shared(control)
    }
}

/// The runner's plan for a TCP run: the spec's windows; the deadline stops the senders (a
/// mixed run's client checks it between transfers, its agent ends when the client closes).
fn deadlines_for(spec: &TcpSpec) -> Deadlines {
    let mut deadlines = Deadlines::new(&spec.timing);
    deadlines.deadline_stops_senders = true;
    deadlines
}

/// Workers on this end: `threads` when the spec sets it, else one per CPU this end may use (the
/// `cpus` it pins to, else this thread's affinity mask); never more than sockets, at least one.
fn worker_count(threads: u16, cpus: &[usize], sockets: usize) -> usize {
    let wanted = match threads {
        0 if cpus.is_empty() => pin::allowed_cpus().len(),
        0 => cpus.len(),
        t => usize::from(t),
    };
    wanted.min(sockets).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_style_is_chosen_once_from_depth_and_units() {
        assert_eq!(Style::of(4, 1), Style::Uring);
        assert_eq!(Style::of(1, 1), Style::Blocking);
        assert_eq!(Style::of(1, 3), Style::Epoll);
        assert_eq!(Style::of(0, 2), Style::Epoll);
    }
}
