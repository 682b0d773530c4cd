//! Host CPU time from /proc/stat, in clock ticks (USER_HZ), summed over all CPUs.
//! Busy = user + nice + system + irq + softirq + steal; idle = idle + iowait (proc(5)).

use serde::{Deserialize, Serialize};

/// The fewest ticks (summed over CPUs, 10 ms each at USER_HZ 100) a CPU figure is given for.
pub const MIN_TICKS: u64 = 10;

/// One reading of the aggregate `cpu` line of /proc/stat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub busy_ticks: u64,
    pub total_ticks: u64,
}

impl CpuTimes {
    /// Reads /proc/stat now; `None` where it cannot be read (then no host CPU figure is reported).
    pub fn read() -> Option<CpuTimes> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        parse_proc_stat(&text)
    }

    /// Busy share of all CPUs between two readings, in percent (0-100); `None` if fewer than
    /// [`MIN_TICKS`] passed (the figure would be noise) or a counter went backwards.
    pub fn busy_percent_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total_ticks.checked_sub(earlier.total_ticks)?;
        let busy = self.busy_ticks.checked_sub(earlier.busy_ticks)?;
        if total < MIN_TICKS {
            return None;
        }
        Some((100.0 * busy as f64 / total as f64).min(100.0))
    }
}

/// Parses the first (aggregate) `cpu ` line of /proc/stat.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already
    // inside user and nice, so it is not added again.
    let get = |i: usize| fields.get(i).copied().unwrap_or(0);
    if fields.len() < 4 {
        return None;
    }
    let idle = get(3) + get(4);
    let busy = get(0) + get(1) + get(2) + get(5) + get(6) + get(7);
    Some(CpuTimes {
        busy_ticks: busy,
        total_ticks: busy + idle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 800 10 3 2 0 0 0\ncpu0 50 2 25 400 5 1 1 0 0 0\nintr 1 2 3\n";

    #[test]
    fn parses_the_aggregate_line() {
        let t = parse_proc_stat(STAT).expect("parses");
        assert_eq!(
            t,
            CpuTimes {
                busy_ticks: 160,
                total_ticks: 970
            }
        );
    }

    #[test]
    fn busy_percent_between_readings() {
        let a = CpuTimes {
            busy_ticks: 100,
            total_ticks: 1000,
        };
        let b = CpuTimes {
            busy_ticks: 150,
            total_ticks: 1200,
        };
        assert_eq!(b.busy_percent_since(&a), Some(25.0));
        assert_eq!(
            a.busy_percent_since(&b),
            None,
            "counters going backwards give no figure"
        );
        assert_eq!(a.busy_percent_since(&a), None);
        let c = CpuTimes {
            busy_ticks: 101,
            total_ticks: 1005,
        };
        assert_eq!(c.busy_percent_since(&a), None, "5 ticks are too few to give a figure");
    }

    #[test]
    fn reads_this_host() {
        let t = CpuTimes::read().expect("/proc/stat is readable on Linux");
        assert!(t.total_ticks >= t.busy_ticks && t.total_ticks > 0);
    }
}
