//! The linerate process's own CPU time, from getrusage(2) (RUSAGE_SELF: all threads).

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
            user_seconds: (self.user_seconds - earlier.user_seconds).max(0.0),
            system_seconds: (self.system_seconds - earlier.system_seconds).max(0.0),
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
