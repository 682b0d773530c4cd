//! Sending on a schedule: datagram `i` is due at `i x gap` after the start, an absolute schedule
//! that a late send does not shift. The wait sleeps until shortly before the moment, then spins
//! on the monotonic clock for the rest (a sleep alone overshoots by tens of microseconds). What
//! was achieved (the spacing between sends, and how many went out late) is kept as it goes,
//! without allocating.

use crate::result::SendSpacing;
use std::time::{Duration, Instant};

/// The last stretch before a send is spun, not slept: a sleep's wake-up is late by up to this
/// much on a loaded virtual machine, even with a timer slack of 1 ns.
pub(crate) const SPIN: Duration = Duration::from_micros(200);

/// Gaps shorter than this are below the cost of one send: datagrams that fall due together go
/// out in one batch.
pub(crate) const MIN_UNBATCHED_GAP_NS: u64 = 5_000;

/// The schedule of one stream.
pub(crate) struct Pacer {
    start: Instant,
    gap_ns: u64,
    /// The next datagram's number.
    next: u64,
    late_after_ns: u64,
    late: u64,
    last_ns: Option<u64>,
    // Welford's running mean and sum of squares of the spacing between datagrams.
    n: u64,
    mean: f64,
    m2: f64,
}

impl Pacer {
    /// A schedule from `start`, one datagram every `gap_ns` (0: no schedule).
    pub fn new(start: Instant, gap_ns: u64) -> Pacer {
        // Sleeps of 1 ns precision need a timer slack of 1 ns (prctl(2)); best effort.
        // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
        Pacer {
            start,
            gap_ns,
            next: 0,
            late_after_ns: (gap_ns / 10).max(1_000),
            late: 0,
            last_ns: None,
            n: 0,
            mean: 0.0,
            m2: 0.0,
        }
    }

    fn due_ns(&self, i: u64) -> u64 {
        i.saturating_mul(self.gap_ns)
    }

    /// Waits until the next datagram is due, or until `until_ns` (the deadline) if that comes
    /// first, and returns how many datagrams are due now, at most `max`: one while the schedule
    /// keeps up, more only when the gap is shorter than a send ([`MIN_UNBATCHED_GAP_NS`]) and
    /// several fell due together. With no gap, `max`. 0 when the deadline came first.
    pub fn wait(&mut self, max: u64, until_ns: Option<u64>) -> u64 {
        if self.gap_ns == 0 {
            return max;
        }
        let due = self.due_ns(self.next);
        loop {
            let now = self.start.elapsed().as_nanos() as u64;
            if until_ns.is_some_and(|u| now >= u && u < due) {
                return 0;
            }
            if now >= due {
                if self.gap_ns >= MIN_UNBATCHED_GAP_NS {
                    return 1;
                }
                let fell_due = (now - due) / self.gap_ns + 1;
                return fell_due.min(max).max(1);
            }
            // Wake for whichever comes first, the datagram or the deadline.
            let wake = until_ns.map_or(due, |u| u.min(due));
            let left = Duration::from_nanos(wake.saturating_sub(now));
            if left > SPIN {
                std::thread::sleep(left - SPIN);
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Records that `n` datagrams went out at `now_ns` (since the start).
    pub fn sent(&mut self, n: u64, now_ns: u64) {
        for i in 0..n {
            let seq = self.next + i;
            if self.gap_ns > 0 && now_ns > self.due_ns(seq) + self.late_after_ns {
                self.late += 1;
            }
            if let Some(last) = self.last_ns {
                // A batch's datagrams leave together: spacing 0 within it.
                let x = if i == 0 {
                    now_ns.saturating_sub(last) as f64
                } else {
                    0.0
                };
                self.n += 1;
                let d = x - self.mean;
                self.mean += d / self.n as f64;
                self.m2 += d * (x - self.mean);
            }
            self.last_ns = Some(now_ns);
        }
        self.next += n;
    }

    pub fn spacing(&self) -> SendSpacing {
        let sent = self.next.max(1) as f64;
        SendSpacing {
            mean_us: self.mean / 1e3,
            stddev_us: if self.n > 1 {
                (self.m2 / (self.n - 1) as f64).sqrt() / 1e3
            } else {
                0.0
            },
            late_percent: 100.0 * self.late as f64 / sent,
            requested_us: self.gap_ns as f64 / 1e3,
        }
    }
}

/// `clock` now (clock_gettime(2)), ns: CLOCK_REALTIME since the Unix epoch, a CPU-time clock
/// since its thread or process began.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule is absolute: datagram i never leaves before i x gap, however late an
    /// earlier one was. Only that lower bound is asserted: how close to the moment a send comes
    /// depends on the machine's load, which a unit test must not (pacing accuracy is measured
    /// by bench/udp_vs_iperf3.py and the lab tests).
    #[test]
    fn never_sends_before_its_moment() {
        let start = Instant::now();
        let gap_ns = 200_000;
        let mut p = Pacer::new(start, gap_ns);
        for i in 0..50u64 {
            assert_eq!(p.wait(64, None), 1, "a 200 us gap never batches");
            let now = start.elapsed().as_nanos() as u64;
            assert!(
                now >= i * gap_ns,
                "datagram {i} left at {now} ns, before {} ns",
                i * gap_ns
            );
            p.sent(1, now);
        }
        let s = p.spacing();
        assert_eq!(s.requested_us, 200.0);
        assert!(s.mean_us > 0.0, "{s:?}");
    }

    #[test]
    fn short_gaps_batch_what_fell_due() {
        let start = Instant::now() - Duration::from_micros(100);
        let mut p = Pacer::new(start, 1_000);
        let n = p.wait(64, None);
        assert!(n >= 50, "100 µs behind a 1 µs schedule: {n} due");
        assert_eq!(Pacer::new(start, 0).wait(64, None), 64, "no gap: as fast as possible");
    }

    #[test]
    fn stops_waiting_at_the_deadline() {
        let start = Instant::now();
        let mut p = Pacer::new(start, 1_000_000_000);
        p.sent(1, 0);
        assert_eq!(p.wait(1, Some(1_000_000)), 0);
        assert!(start.elapsed() < Duration::from_millis(500));
    }

    #[test]
    fn counts_late_datagrams() {
        let start = Instant::now();
        let mut p = Pacer::new(start, 100_000);
        p.sent(1, 0);
        p.sent(1, 100_000);
        p.sent(1, 400_000);
        let s = p.spacing();
        assert!((s.late_percent - 100.0 / 3.0).abs() < 1e-9, "{s:?}");
        assert!((s.mean_us - 200.0).abs() < 1e-9);
    }
}
