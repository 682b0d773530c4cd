//! CPU time from /proc/stat, in clock ticks (USER_HZ), for all CPUs together and for each online
//! CPU under its own number (an offline CPU has no line, so positions are not CPU numbers).
//! Busy = user + nice + system + irq + softirq + steal; idle = idle + iowait (proc(5)). Guest time
//! is already inside user and nice and is not added again.

use serde::{Deserialize, Serialize};

pub use linerate_wire::metrics::cpu::CpuSplit;

/// The fewest ticks (10 ms each at USER_HZ 100) a CPU figure is given for: fewer is noise.
pub(crate) const MIN_TICKS: u64 = 10;

/// One CPU's (or all CPUs') counters, in ticks since boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    pub(crate) fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq + self.steal
    }

    pub(crate) fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait
    }

    /// The split between two readings in percent of the time that passed; `None` when fewer
    /// than [`MIN_TICKS`] passed or a counter went backwards (a CPU that went offline and back:
    /// its idle and iowait can be recounted).
    pub(crate) fn split_since(&self, earlier: &CpuTicks) -> Option<CpuSplit> {
        let d = |a: u64, b: u64| a.checked_sub(b);
        let delta = CpuTicks {
            user: d(self.user, earlier.user)?,
            nice: d(self.nice, earlier.nice)?,
            system: d(self.system, earlier.system)?,
            idle: d(self.idle, earlier.idle)?,
            iowait: d(self.iowait, earlier.iowait)?,
            irq: d(self.irq, earlier.irq)?,
            softirq: d(self.softirq, earlier.softirq)?,
            steal: d(self.steal, earlier.steal)?,
        };
        let total = delta.total();
        if total < MIN_TICKS {
            return None;
        }
        let pct = |t: u64| 100.0 * t as f64 / total as f64;
        Some(CpuSplit {
            cpu: None,
            busy: pct(delta.busy()),
            user: pct(delta.user + delta.nice),
            system: pct(delta.system),
            irq: pct(delta.irq),
            softirq: pct(delta.softirq),
            iowait: pct(delta.iowait),
            steal: pct(delta.steal),
            idle: pct(delta.idle),
        })
    }
}

/// One reading of /proc/stat's CPU lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatReading {
    pub all: CpuTicks,
    /// (CPU number, its ticks), online CPUs only.
    pub per_cpu: Vec<(u32, CpuTicks)>,
}

impl StatReading {
    pub(crate) fn read() -> Option<StatReading> {
        parse_stat(&std::fs::read_to_string("/proc/stat").ok()?)
    }
}

fn parse_ticks(fields: &str) -> Option<CpuTicks> {
    let mut v = [0u64; 8];
    let mut n = 0;
    for (slot, f) in v.iter_mut().zip(fields.split_whitespace()) {
        *slot = f.parse().ok()?;
        n += 1;
    }
    (n >= 4).then_some(CpuTicks {
        user: v[0],
        nice: v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        steal: v[7],
    })
}

/// Parses the `cpu` and `cpuN` lines of /proc/stat; `None` without an aggregate line.
pub(crate) fn parse_stat(text: &str) -> Option<StatReading> {
    let mut all = None;
    let mut per_cpu = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else { continue };
        let (id, fields) = rest.split_once(char::is_whitespace)?;
        if id.is_empty() {
            all = parse_ticks(fields);
        } else if let (Ok(n), Some(t)) = (id.parse::<u32>(), parse_ticks(fields)) {
            per_cpu.push((n, t));
        }
    }
    Some(StatReading { all: all?, per_cpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str =
        "cpu  100 5 50 800 10 3 2 0 0 0\ncpu0 50 2 25 400 5 1 1 0 0 0\ncpu3 50 3 25 400 5 2 1 0 0 0\nintr 1 2 3\n";

    #[test]
    fn parses_all_cpus_and_each_under_its_number() {
        let r = parse_stat(STAT).expect("parses");
        assert_eq!(r.all.busy(), 160);
        assert_eq!(r.all.total(), 970);
        let ids: Vec<u32> = r.per_cpu.iter().map(|(n, _)| *n).collect();
        assert_eq!(ids, [0, 3], "an offline CPU leaves a gap, not a shift");
        assert_eq!(r.per_cpu[1].1.irq, 2);
    }

    #[test]
    fn split_between_readings() {
        let a = parse_ticks("100 0 100 700 100 0 0 0").expect("ticks");
        let b = parse_ticks("150 10 120 800 100 10 10 0").expect("ticks");
        let s = b.split_since(&a).expect("enough ticks");
        assert!((s.busy - 100.0 * 100.0 / 200.0).abs() < 1e-9);
        assert!((s.user - 30.0).abs() < 1e-9, "user includes nice");
        assert!((s.idle - 50.0).abs() < 1e-9);
        assert_eq!(a.split_since(&b), None, "counters going backwards give no figure");
        assert_eq!(a.split_since(&a), None, "no time passed");
    }

    #[test]
    fn reads_this_host() {
        let r = StatReading::read().expect("/proc/stat is readable on Linux");
        assert!(r.all.total() >= r.all.busy() && r.all.total() > 0);
        assert!(!r.per_cpu.is_empty());
    }
}
