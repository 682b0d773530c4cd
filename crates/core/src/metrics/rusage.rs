//! The linerate process's own CPU time, from getrusage(2) (RUSAGE_SELF: all threads), and the
//! one rule that turns CPU seconds over a window into a share of the host ([`percent_of_host`]).

use serde::{Deserialize, Serialize};

/// CPU seconds this process has used so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessTimes {
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// Context switches: waits (voluntary) and preemptions (involuntary).
    #[serde(default)]
    pub voluntary_context_switches: u64,
    #[serde(default)]
    pub involuntary_context_switches: u64,
}

/// The shortest window a process's CPU share is given for: the kernel accounts a process's CPU
/// time in clock ticks (10 ms at USER_HZ 100, proc(5)), so a share over fewer than ten ticks can
/// read several hundred percent (431.84 % on a 2-CPU host for `tcp -n 1 -l 1`).
pub(crate) const MIN_CPU_WINDOW_SECONDS: f64 = 0.1;

/// `seconds` of CPU time over `window_seconds` on `cpus` CPUs, as a percent of the whole host
/// (100 = every online CPU busy); None for a window too short to mean anything
/// ([`MIN_CPU_WINDOW_SECONDS`]) or no CPUs.
pub(crate) fn percent_of_host(seconds: f64, window_seconds: f64, cpus: usize) -> Option<f64> {
    (window_seconds >= MIN_CPU_WINDOW_SECONDS && cpus > 0)
        .then(|| (100.0 * seconds / (window_seconds * cpus as f64)).clamp(0.0, 100.0))
}

/// `a - b` for CPU seconds, never negative and never -0.0 (`process_user_seconds: -0.0`).
fn seconds_since(a: f64, b: f64) -> f64 {
    let d = a - b;
    if d > 0.0 { d } else { 0.0 }
}

impl ProcessTimes {
    pub(crate) fn read() -> ProcessTimes {
        // SAFETY: getrusage writes a plain-data struct that we zero-initialise and own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_SELF with a valid pointer cannot fail (getrusage(2)).
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        ProcessTimes {
            user_seconds: secs(usage.ru_utime),
            system_seconds: secs(usage.ru_stime),
            voluntary_context_switches: usage.ru_nvcsw as u64,
            involuntary_context_switches: usage.ru_nivcsw as u64,
        }
    }

    pub(crate) fn since(&self, earlier: &ProcessTimes) -> ProcessTimes {
        ProcessTimes {
            user_seconds: seconds_since(self.user_seconds, earlier.user_seconds),
            system_seconds: seconds_since(self.system_seconds, earlier.system_seconds),
            voluntary_context_switches: self
                .voluntary_context_switches
                .saturating_sub(earlier.voluntary_context_switches),
            involuntary_context_switches: self
                .involuntary_context_switches
                .saturating_sub(earlier.involuntary_context_switches),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_a_window_too_short_gives_no_share() {
        assert_eq!(percent_of_host(0.0086, 0.002, 2), None);
        assert_eq!(percent_of_host(0.5, 0.099, 2), None);
        assert_eq!(percent_of_host(1.0, 1.0, 0), None);
        assert_eq!(percent_of_host(1.0, 1.0, 2), Some(50.0));
        // Tick rounding can put a little more time in than the window holds: never over 100.
        assert_eq!(percent_of_host(0.23, 0.1, 2), Some(100.0));
    }

    #[test]
    fn issue_13_seconds_never_negative_zero() {
        let a = ProcessTimes {
            user_seconds: 1.0,
            ..Default::default()
        };
        let d = a.since(&a);
        assert!(d.user_seconds.is_sign_positive() && d.user_seconds == 0.0);
        assert!(
            a.since(&ProcessTimes { user_seconds: 2.0, ..a })
                .user_seconds
                .is_sign_positive()
        );
    }

    #[test]
    fn time_only_grows_while_busy() {
        let a = ProcessTimes::read();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let d = ProcessTimes::read().since(&a);
        assert!(d.user_seconds + d.system_seconds > 0.0);
    }
}
