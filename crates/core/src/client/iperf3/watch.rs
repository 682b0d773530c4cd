//! The run's end as the client decides it (iperf3's servers wait for TEST_END in every mode):
//! the end rule, what the engine's samples tell of its clock and of the bytes received, and the
//! watch over the control connection that sends TEST_END, or aborts the engine when the server
//! closes, terminates or fails.

use super::sequence::{Action, Event};
use super::server::Server;
use crate::engine::{Control, Sink, sockopt};
use crate::proto::iperf3::{Iperf3Error, State};
use crate::result::{IntervalSample, Role};
use crate::spec::TestSpec;
use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often the control connection is looked at during the run: a server's end is noticed
/// within this, and the end of the test is decided at this resolution.
const WATCH_SLICE: Duration = Duration::from_millis(20);
/// The longest TEST_END waits for the sending TCP streams' queues to be acknowledged.
const DRAIN_MAX: Duration = Duration::from_secs(2);
/// A UDP run's end is taken from the interval samples' clock; before the first sample, only
/// from when the workers were started, so this much later to be past the senders' deadline.
const START_MARGIN: Duration = Duration::from_millis(50);

/// When the client ends the test (sends TEST_END): iperf3's servers wait for it in every mode.
pub(super) enum EndRule {
    /// Every local stream sends: when the engine is done (its senders reached their limit).
    EngineDone,
    /// TCP with local receivers, timed: when the runner stops the senders at the deadline.
    Stopped,
    /// UDP with local receivers, timed: this long after the engine's time zero.
    After(Duration),
    /// A count with local receivers: when this many bytes were received here in all.
    Received(u64),
}

impl EndRule {
    pub(super) fn of(test: &TestSpec, ours: &[Role]) -> EndRule {
        if !ours.contains(&Role::Receive) {
            return EndRule::EngineDone;
        }
        let (timing, block, streams) = match test {
            TestSpec::Tcp(s) => (&s.timing, s.buffer_bytes.0, s.streams),
            TestSpec::Udp(s) => (&s.timing, u64::from(s.payload_bytes), s.streams),
            _ => return EndRule::EngineDone,
        };
        match (timing.limit.count(), test) {
            (Some(n), _) => EndRule::Received(n.saturating_mul(block).saturating_mul(u64::from(streams))),
            (None, TestSpec::Tcp(_)) => EndRule::Stopped,
            (None, _) => EndRule::After(Duration::from_secs_f64(timing.length_seconds().unwrap_or(0.0))),
        }
    }
}

/// What the watcher learns from the engine's samples: bytes received here, and when the
/// engine's time zero was.
#[derive(Default)]
pub(super) struct Progress {
    pub received: AtomicU64,
    /// When the workers were started (no later than time zero), and the earliest instant a
    /// sample puts time zero at (no earlier than it: a sample is taken before it is handed on).
    zero: Mutex<(Option<Instant>, Option<Instant>)>,
}

impl Progress {
    /// Whether `length` since time zero has passed, by the latest estimate of time zero.
    fn past(&self, length: Duration) -> bool {
        let (started, sampled) = *self.zero.lock().expect("no thread panics holding it");
        match (sampled, started) {
            (Some(zero), _) => zero.elapsed() >= length,
            (None, Some(started)) => started.elapsed() >= length + START_MARGIN,
            (None, None) => false,
        }
    }
}

/// The sink the engine is handed: the caller's, with the bytes received and the clock noted.
pub(super) struct Watching<'a> {
    pub inner: &'a mut dyn Sink,
    pub progress: &'a Progress,
    /// By stream number: whether this end receives it.
    pub receiving: Vec<bool>,
}

impl Sink for Watching<'_> {
    fn start(&mut self, streams: &[(u16, Role)]) {
        self.receiving = vec![false; streams.iter().map(|(id, _)| usize::from(*id) + 1).max().unwrap_or(0)];
        for (id, role) in streams {
            self.receiving[usize::from(*id)] = *role == Role::Receive;
        }
        self.progress.zero.lock().expect("no thread panics holding it").0 = Some(Instant::now());
        self.inner.start(streams);
    }

    fn zero(&mut self, at: Instant) {
        self.inner.zero(at);
    }

    fn interval(&mut self, samples: &[IntervalSample]) {
        let now = Instant::now();
        let mut received = 0;
        for s in samples {
            if self.receiving.get(usize::from(s.stream)).copied().unwrap_or(false) {
                received += s.bytes;
            }
            let zero = now.checked_sub(Duration::from_nanos(s.end_ns));
            let mut z = self.progress.zero.lock().expect("no thread panics holding it");
            z.1 = match (z.1, zero) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        self.progress.received.fetch_add(received, Ordering::Relaxed);
        self.inner.interval(samples);
    }
}

/// Watches the control connection while the engine runs, and sends TEST_END when the end rule
/// says (or when the engine is done, or on Ctrl-C). A server that closes, terminates or fails
/// meanwhile aborts the engine; its error is returned.
pub(super) fn watch(
    s: &mut Server,
    control: &Control,
    engine_done: &AtomicBool,
    end: &EndRule,
    progress: &Progress,
    sockets: &TcpSockets,
) -> Result<(), Iperf3Error> {
    let what = "the test ran";
    let fail = |e: Iperf3Error| {
        control.abort();
        e
    };
    loop {
        match s.ctl.poll_state(WATCH_SLICE, what) {
            Ok(None) => {}
            // Every state is out of turn while the test runs: the sequence says which error.
            Ok(Some(state)) => {
                s.received(state, what).map_err(fail)?;
            }
            Err(e) => return Err(fail(e)),
        }
        let done = engine_done.load(Ordering::Relaxed);
        let due = done
            || control.sending_stopped() && !matches!(end, EndRule::EngineDone)
            || match end {
                EndRule::EngineDone | EndRule::Stopped => false,
                EndRule::After(length) => progress.past(*length),
                EndRule::Received(bytes) => progress.received.load(Ordering::Relaxed).max(sockets.received()) >= *bytes,
            };
        if due {
            drain(&sockets.senders, control);
            if s.seq.handle(Event::EndDue) == Action::SendTestEnd {
                s.ctl.send_state(State::TestEnd).map_err(fail)?;
            }
            // A UDP receiver in iperf3's framing ends once it hears the test is over; the
            // server closes its TCP streams on TEST_END, so TCP receivers see their end.
            if !matches!(end, EndRule::Stopped) {
                control.stop_send();
            }
            return Ok(());
        }
    }
}

/// Second handles on the TCP data streams (the engine owns the first), for what the kernel
/// counts of them: the sending ones' queues, the receiving ones' bytes.
#[derive(Default)]
pub(super) struct TcpSockets {
    pub senders: Vec<TcpStream>,
    pub receivers: Vec<TcpStream>,
}

impl TcpSockets {
    /// Bytes the receiving streams' sockets have received, read yet or not: a count's end is
    /// seen here at once, with no interval sample needed (`-i 0`).
    fn received(&self) -> u64 {
        self.receivers.iter().filter_map(sockopt::tcp_bytes_received).sum()
    }
}

/// Waits (at most [`DRAIN_MAX`]) until the server has acknowledged every byte the sending TCP
/// streams wrote: the server stops counting at TEST_END, and bytes still queued here would be
/// counted sent by this end and never received by that one.
fn drain(senders: &[TcpStream], control: &Control) {
    let until = Instant::now() + DRAIN_MAX;
    while !control.aborted()
        && Instant::now() < until
        && senders
            .iter()
            .any(|s| sockopt::send_queue_bytes(s).is_some_and(|q| q > 0))
    {
        std::thread::sleep(Duration::from_millis(2));
    }
}
