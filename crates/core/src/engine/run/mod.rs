//! The one engine runner: every engine (tcp, udp, rr, http) hands it its streams, a [`Deadlines`] and
//! a worker function, and gets back this end's [`SideReport`] and what each worker returned.
//!
//! The [`Deadlines`] is made from the spec's [`Timing`] and is the only place it becomes durations,
//! deadlines and counts: engines ask it for theirs. The runner owns what the engines share: the
//! per-stream [`Counters`] workers write and the sampler reads, the start [`Gate`] where pinned
//! workers wait for time zero, worker threads (named, pinned), and the sampling thread
//! ([`sampler`]): interval samples, the measurement window (warm-up, cool-down), the deadline,
//! and the stop rules every kind follows alike (a gate that gives up, a drain after the senders
//! stop, an idle run given up, a cap on kept samples, and, where the plan has an [`Unblock`],
//! waking workers blocked in reads), each noted in the report when it acts. What is particular to a kind (TCP_INFO, datagram and
//! transaction reports) stays with its engine, passed in as a hook or added after the run.

mod sampler;
/// A run's CPU between two host snapshots: what an engine with its own clock (rpm) reports too.
pub(crate) use sampler::cpu_over;
#[cfg(test)]
mod tests;

use super::{Control, EngineError, Sink, pin};
use crate::result::{Role, SideReport, SocketGrant, StreamEnd, TcpSnapshot};
use crate::spec::{Sched, Timing};
use std::fmt;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// The most interval samples one end keeps; past it the rest are counted but not stored.
pub(crate) const MAX_SAMPLES: usize = crate::spec::MAX_INTERVAL_SAMPLES;
/// After senders stop, how long receivers may take to see the end of their streams.
pub(crate) const DRAIN: Duration = Duration::from_secs(10);
/// How long a run may move no byte at all before it is given up.
pub(crate) const IDLE: Duration = Duration::from_secs(30);
/// How long the sampler waits for every worker to be ready at the start gate.
pub(crate) const GATE_TIMEOUT: Duration = Duration::from_secs(15);

/// Counters of one stream, written by its worker only, read by the sampling thread.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Counters {
    pub bytes: AtomicU64,
    pub ops: AtomicU64,
    /// Nanoseconds since time zero when the stream ended; 0 while it runs.
    pub end_ns: AtomicU64,
    pub end: AtomicU8,
    pub resets: AtomicU64,
    pub other_errors: AtomicU64,
}

/// The [`StreamEnd`] stored in [`Counters::end`].
pub(crate) fn end_from(v: u8) -> StreamEnd {
    match v {
        x if x == StreamEnd::Deadline as u8 => StreamEnd::Deadline,
        x if x == StreamEnd::Count as u8 => StreamEnd::Count,
        x if x == StreamEnd::Eof as u8 => StreamEnd::Eof,
        x if x == StreamEnd::Error as u8 => StreamEnd::Error,
        _ => StreamEnd::Stopped,
    }
}

/// Whether a socket error means the peer reset or closed the connection.
pub(crate) fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted
    )
}

/// What every worker of a run shares.
pub(crate) struct Shared<'a> {
    pub counters: &'a [Counters],
    pub control: &'a Control,
    /// Set when the time limit, not a user, ended the sending (by the runner for TCP, by the
    /// senders themselves for the kinds that watch the clock).
    pub deadline_hit: &'a AtomicBool,
    pub t0: &'a OnceLock<Instant>,
    /// The sampling thread: workers unpark it when a stream ends.
    pub sampler: Thread,
    /// TCP: bytes per read or write.
    pub buffer_bytes: usize,
    /// TCP: buffers per stream in count mode.
    pub count: Option<u64>,
    /// Datagrams a receiver saw that were not this test's (stray traffic), all streams.
    pub stray: &'a AtomicU64,
}

impl Shared<'_> {
    /// Nanoseconds since time zero (at least 1, so 0 can mean "not yet").
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

    /// Why a sender stopped when told to: the time limit, or someone else.
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

/// What a run's [`Shared`] points at, owned by the sampling thread for the run.
pub(crate) struct RunState {
    counters: Vec<Counters>,
    t0: OnceLock<Instant>,
    deadline_hit: AtomicBool,
    stray: AtomicU64,
}

impl RunState {
    /// Counters for `streams` streams (or workers, where the runner samples workers).
    pub fn new(streams: usize) -> RunState {
        RunState {
            counters: (0..streams).map(|_| Counters::default()).collect(),
            t0: OnceLock::new(),
            deadline_hit: AtomicBool::new(false),
            stray: AtomicU64::new(0),
        }
    }

    /// The view the workers share; the calling thread is the sampler they wake.
    pub fn shared<'a>(&'a self, control: &'a Control) -> Shared<'a> {
        Shared {
            counters: &self.counters,
            control,
            deadline_hit: &self.deadline_hit,
            t0: &self.t0,
            sampler: thread::current(),
            buffer_bytes: 0,
            count: None,
            stray: &self.stray,
        }
    }
}

/// Where workers wait, ready, for the clock to start: the sampler waits until every worker has
/// arrived, then opens it. Unlike a barrier it can be opened with workers missing (a failed
/// spawn, a worker that never got ready), so nobody waits forever.
pub(crate) struct Gate {
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

/// When a run's window and intervals fall, and when the runner steps in: the one place a spec's
/// [`Timing`] becomes deadlines, counts and durations. Engines and checks ask it
/// ([`Deadlines::deadline`], [`Deadlines::count`], [`Deadlines::measure_window`], [`Deadlines::interval`]) rather
/// than reading the spec's seconds.
#[derive(Clone, Debug)]
pub(crate) struct Deadlines {
    /// From time zero to the window's start (the warm-up, or http's ramp).
    warmup: Duration,
    /// How long the run lasts from time zero (ramp included); None for a count.
    length: Option<Duration>,
    /// Where the runner acts on the time limit (marks it hit, stops TCP's senders): the length,
    /// or None for a count or a side that only samples until told to stop.
    watched_deadline: Option<Duration>,
    /// The window ends this long before the deadline (`--cooldown`); zero: at the run's end.
    cooldown: Duration,
    interval: Option<Duration>,
    /// Operations per stream (`-n`); None for a time limit.
    count: Option<u64>,
    /// At the deadline the runner tells the senders to stop (TCP: its workers do not read the
    /// clock); otherwise senders watch the deadline themselves.
    pub deadline_stops_senders: bool,
    /// This side ends when the client says the run is over (an answering or sampling agent):
    /// that stop is its normal end, not a cut, so only an abort makes the report partial.
    pub ends_on_stop: bool,
    /// After the senders stop, how long the streams may take to end before the run is aborted.
    pub drain: Duration,
    /// How long no byte may move before the run is aborted (every kind's plan has it; None
    /// only where a test sets it so).
    pub idle: Option<Duration>,
    /// How long the sampler waits for the workers at the start gate before it gives up.
    pub gate_timeout: Duration,
    /// The most interval samples kept.
    pub max_samples: usize,
    /// Workers that block in reads with no timeout of their own, and how the runner wakes them.
    pub unblock: Option<Unblock>,
    /// On a side whose streams all receive, with no warm-up or cool-down, the window is the
    /// data's: from the runner's last look before the first byte arrived to its last look at
    /// which bytes were still arriving (a UDP receiver starts before its sender and
    /// waits for stragglers after it, and its interfaces were rated over that wait too).
    pub window_follows_data: bool,
}

/// A stop rule for workers blocked in a read with no timeout (rr over TCP): the runner calls
/// `wake` once, when the run is aborted; when the senders are told to stop (at once on a side
/// that ends on stop, [`STOP_GRACE`] later on one that asks); or when the time is up and no
/// operation has moved for `quiet` (a peer gone silent).
#[derive(Clone)]
pub(crate) struct Unblock {
    pub wake: Arc<dyn Fn() + Send + Sync>,
    pub quiet: Duration,
}

impl fmt::Debug for Unblock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unblock")
            .field("quiet", &self.quiet)
            .finish_non_exhaustive()
    }
}

/// How long an asking side's blocked workers get to finish their transaction after the stop.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(1);

impl Deadlines {
    /// The plan of `timing`, the runner's rules at their defaults.
    pub fn new(timing: &Timing) -> Deadlines {
        let length = timing.length_seconds().map(Duration::from_secs_f64);
        Deadlines {
            warmup: Duration::from_secs_f64(timing.warmup_seconds),
            length,
            watched_deadline: length,
            cooldown: Duration::from_secs_f64(timing.cooldown_seconds),
            interval: (timing.interval_seconds > 0.0).then(|| Duration::from_secs_f64(timing.interval_seconds)),
            count: timing.limit.count(),
            deadline_stops_senders: false,
            ends_on_stop: false,
            drain: DRAIN,
            idle: Some(IDLE),
            gate_timeout: GATE_TIMEOUT,
            max_samples: MAX_SAMPLES,
            unblock: None,
            window_follows_data: false,
        }
    }

    /// A side with no data of its own that samples its host until the client says the run is
    /// over (the agent beside an HTTP server): the warm-up and intervals of `timing`, no
    /// deadline, no cool-down (the host's samples cover it). The idle rule holds as for every
    /// kind, over what its worker counts as moving (the agent: the bytes of its
    /// interface toward the client).
    pub fn sampling(timing: &Timing) -> Deadlines {
        Deadlines {
            watched_deadline: None,
            cooldown: Duration::ZERO,
            ends_on_stop: true,
            ..Deadlines::new(timing)
        }
    }

    /// The time limit from time zero (ramp included); None for a count.
    pub fn deadline(&self) -> Option<Duration> {
        self.length
    }

    /// [`Deadlines::deadline`] in nanoseconds since time zero, as senders compare it.
    pub fn deadline_ns(&self) -> Option<u64> {
        self.length.map(|d| d.as_nanos() as u64)
    }

    /// Operations per stream (`-n`); None for a time limit.
    pub fn count(&self) -> Option<u64> {
        self.count
    }

    /// Where the figures' window starts and ends, from time zero: after the warm-up, and
    /// `--cooldown` before the deadline (None: at the run's end).
    pub fn measure_window(&self) -> (Duration, Option<Duration>) {
        let end = self
            .watched_deadline
            .filter(|_| !self.cooldown.is_zero())
            .map(|d| d - self.cooldown);
        (self.warmup, end)
    }

    /// Time between interval samples; None for one sample over the whole run.
    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }
}

/// What the sampler reports of each stream.
pub(crate) struct StreamInfo {
    pub id: u16,
    pub role: Role,
    pub grant: SocketGrant,
}

impl StreamInfo {
    /// One per stream, from each stream's (id, role, granted socket options).
    pub fn all<'g>(streams: impl Iterator<Item = (u16, Role, &'g SocketGrant)>) -> Vec<StreamInfo> {
        streams
            .map(|(id, role, grant)| StreamInfo {
                id,
                role,
                grant: grant.clone(),
            })
            .collect()
    }
}

/// TCP_INFO of stream `idx` now: the TCP engine's hook, read for its interval samples and its
/// report.
pub(crate) type TcpInfoHook<'a> = &'a (dyn Fn(usize) -> Option<TcpSnapshot> + Sync);

/// Bytes stream `idx`'s socket holds received and not yet read: the TCP engine's hook for
/// receiving streams, added to the stream's count at every edge (interval and window), so a
/// receiver counts what arrived by then rather than the whole reads its reader has finished
/// (a 12 Mbit/s flow read in 128 KiB reads read 11.53, 12.58 or 13.63 Mbit/s a
/// second). Over a stream's whole life the two counts agree: its queue is empty at its start
/// and at its end.
pub(crate) type QueuedHook<'a> = &'a (dyn Fn(usize) -> u64 + Sync);

/// Bytes stream `idx`'s socket has received from its peer, read or not (tcpi_bytes_received):
/// the TCP engine's hook for receiving streams (None for others), from which the report's
/// interval samples are counted exactly at the end of the run (`sampler::exact_receive_counts`).
pub(crate) type ReceivedHook<'a> = &'a (dyn Fn(usize) -> Option<u64> + Sync);

/// One run as the runner drives it: the plan, the streams it reports, and the workers.
pub(crate) struct Runner<'a> {
    pub deadlines: Deadlines,
    pub streams: Vec<StreamInfo>,
    /// Worker threads; each arrives at the gate once.
    pub workers: usize,
    /// Thread names: this prefix and the worker's number.
    pub name: &'static str,
    /// Worker `w` is pinned to `cpus[w % cpus.len()]`; empty: unpinned.
    pub cpus: &'a [usize],
    /// Every worker's scheduling policy.
    pub sched: Sched,
    pub tcp_info: Option<TcpInfoHook<'a>>,
    pub queued: Option<QueuedHook<'a>>,
    pub received: Option<ReceivedHook<'a>>,
}

/// What each stream's worker of a run is handed: its kind's spec `S`, the runner's deadlines
/// (limit, deadline), the counters the workers share and the start gate.
pub(crate) struct StreamRun<'r, 's, S> {
    pub spec: &'r S,
    pub deadlines: &'r Deadlines,
    pub shared: &'r Shared<'s>,
    pub gate: &'r Gate,
}

impl<S> Clone for StreamRun<'_, '_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for StreamRun<'_, '_, S> {}

impl<'r, 's, S> StreamRun<'r, 's, S> {
    /// What `runner`'s workers are handed, for a run of `spec`.
    pub fn new(spec: &'r S, runner: &'r Runner<'_>, shared: &'r Shared<'s>, gate: &'r Gate) -> Self {
        StreamRun {
            spec,
            deadlines: &runner.deadlines,
            shared,
            gate,
        }
    }
}

impl<'a> Runner<'a> {
    /// A run of one worker per stream at normal priority, without the TCP engine's hooks: how
    /// the kinds that count their own operations (udp, rr) run. Fails on a CPU this machine
    /// lacks.
    pub fn one_worker_per_stream<'g>(
        deadlines: Deadlines,
        streams: impl Iterator<Item = (u16, Role, &'g SocketGrant)>,
        name: &'static str,
        cpus: &'a [usize],
    ) -> Result<Runner<'a>, EngineError> {
        pin::check_cpus(cpus)?;
        let streams = StreamInfo::all(streams);
        Ok(Runner {
            deadlines,
            workers: streams.len(),
            streams,
            name,
            cpus,
            sched: Sched::Normal,
            tcp_info: None,
            queued: None,
            received: None,
        })
    }
}

impl Runner<'_> {
    /// Starts the workers (`work(w)` on worker `w`), samples until every stream has ended, and
    /// returns this end's report and each worker's return value (None where it panicked). A
    /// worker that cannot be started aborts the run.
    pub fn drive<T: Send>(
        &self,
        shared: &Shared<'_>,
        gate: &Gate,
        sink: &mut dyn Sink,
        work: impl Fn(usize) -> T + Sync,
    ) -> Result<(SideReport, Vec<Option<T>>), EngineError> {
        // The sink learns each stream's role from the streams themselves, before any sample.
        let roles: Vec<(u16, Role)> = self.streams.iter().map(|s| (s.id, s.role)).collect();
        sink.start(&roles);
        let pin_failed = AtomicBool::new(false);
        let sched_failed = AtomicBool::new(false);
        let placement = Placement {
            sched: self.sched,
            pin_failed: &pin_failed,
            sched_failed: &sched_failed,
        };
        let (report, outcomes) = thread::scope(|scope| {
            let mut handles = Vec::with_capacity(self.workers);
            for w in 0..self.workers {
                let cpu = (!self.cpus.is_empty()).then(|| self.cpus[w % self.cpus.len()]);
                let work = &work;
                match spawn_worker(scope, format!("{}{w}", self.name), cpu, placement, move || work(w)) {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        // The workers already started see the abort as soon as the gate opens.
                        shared.control.abort();
                        gate.open();
                        return (Err(EngineError::Spawn(e)), Vec::new());
                    }
                }
            }
            let report = sampler::sample_until_done(self, shared, gate, sink);
            let outcomes: Vec<Option<T>> = handles.into_iter().map(|h| h.join().ok()).collect();
            (Ok(report), outcomes)
        });
        let mut report = report?;
        if pin_failed.load(Relaxed) {
            report
                .notes
                .push("a worker could not be pinned to its CPU and ran unpinned".into());
        }
        if sched_failed.load(Relaxed) {
            report.notes.push(format!(
                "a worker could not take the {} scheduling policy and ran with the kernel's default",
                self.sched
            ));
        }
        Ok((report, outcomes))
    }
}

/// How a worker thread is placed: its scheduling policy, and where a pin or the policy that
/// failed is flagged (the worker runs on either way).
#[derive(Clone, Copy)]
struct Placement<'a> {
    sched: Sched,
    pin_failed: &'a AtomicBool,
    sched_failed: &'a AtomicBool,
}

/// Starts a worker thread named `name` in `scope`, pinned to `cpu` when given, with the
/// placement's policy (the kernel's default one is left as it is).
fn spawn_worker<'scope, T: Send + 'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    name: String,
    cpu: Option<usize>,
    placement: Placement<'scope>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> io::Result<thread::ScopedJoinHandle<'scope, T>> {
    thread::Builder::new().name(name).spawn_scoped(scope, move || {
        if let Some(cpu) = cpu
            && pin::pin_current_thread(cpu).is_err()
        {
            placement.pin_failed.store(true, Relaxed);
        }
        if placement.sched != Sched::Normal && pin::schedule_current_thread(placement.sched).is_err() {
            placement.sched_failed.store(true, Relaxed);
        }
        work()
    })
}
