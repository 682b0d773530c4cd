//! The one lock of the timed target, and the machine's state a failure prints: the load
//! average, the CPUs' busy share over the test, and the copy-loop control that bench/ uses
//! (`benchlib.copy_probe`: GB/s one thread copies through a 16 MiB ring, 128 KiB at a time),
//! read before the test and again at the failure. A slow copy loop or a high load beside a
//! missed bound says the machine, not linerate, was slow.

use macro_rules_attribute::apply;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the copy-loop control runs, each time it is read.
const COPY_WINDOW: Duration = Duration::from_millis(50);

/// The fastest copy-loop figure seen in this process, GB/s as f64 bits: the machine's quiet
/// figure to read a slow one against.
static FASTEST_COPY: AtomicU64 = AtomicU64::new(0);

/// Held for a timed test's length: the test runs alone, and on a failure the guard prints the
/// machine's state to the test's captured output.
pub struct Alone {
    _turn: MutexGuard<'static, ()>,
    name: &'static str,
    started: Instant,
    before: State,
}

/// Waits until no other timed test runs, then reads the machine's state.
pub fn alone(name: &'static str) -> Alone {
    static TURN: Mutex<()> = Mutex::new(());
    // A test that failed while holding the lock poisons it; the next one still runs alone.
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    Alone {
        _turn: turn,
        name,
        started: Instant::now(),
        before: State::now(),
    }
}

impl Drop for Alone {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let now = State::now();
        let fastest = f64::from_bits(FASTEST_COPY.load(Ordering::Relaxed));
        let busy = now.cpu.busy_percent_since(&self.before.cpu);
        eprintln!(
            "{}: the machine, {:.1} s into the test: {}; CPUs {} busy over the test (all CPUs, \
             this test's own work included). Before it: {}. Fastest copy loop in this run: {fastest:.1} GB/s.",
            self.name,
            self.started.elapsed().as_secs_f64(),
            now,
            busy.map_or("n/a".to_string(), |b| format!("{b:.0} %")),
            self.before,
        );
    }
}

/// The machine at one moment.
struct State {
    /// /proc/loadavg: the 1, 5 and 15 minute load averages and the tasks runnable now.
    load: Option<(f64, f64, f64, u32)>,
    /// The copy loop's GB/s over [`COPY_WINDOW`].
    copy_gbps: f64,
    cpu: CpuTimes,
}

impl State {
    fn now() -> State {
        let copy_gbps = copy_probe(COPY_WINDOW);
        FASTEST_COPY.fetch_max(copy_gbps.to_bits(), Ordering::Relaxed);
        State {
            load: std::fs::read_to_string("/proc/loadavg").ok().and_then(|t| load_of(&t)),
            copy_gbps,
            cpu: CpuTimes::now(),
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.load {
            Some((one, five, fifteen, runnable)) => {
                write!(f, "load average {one:.2} {five:.2} {fifteen:.2}, {runnable} runnable")?
            }
            None => write!(f, "load average unknown")?,
        }
        write!(f, ", copy loop {:.1} GB/s", self.copy_gbps)
    }
}

/// `1.63 1.18 0.52 2/125 30498` → (1.63, 1.18, 0.52, 2).
fn load_of(text: &str) -> Option<(f64, f64, f64, u32)> {
    let mut w = text.split_whitespace();
    let mut avg = || w.next()?.parse::<f64>().ok();
    let (one, five, fifteen) = (avg()?, avg()?, avg()?);
    let runnable = w.next()?.split('/').next()?.parse().ok()?;
    Some((one, five, fifteen, runnable))
}

/// The machine's CPU time from /proc/stat's `cpu` line, in clock ticks: busy and all.
#[derive(Clone, Copy)]
struct CpuTimes {
    busy: u64,
    total: u64,
}

impl CpuTimes {
    fn now() -> CpuTimes {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        cpu_times_of(&text).unwrap_or(CpuTimes { busy: 0, total: 0 })
    }

    /// Busy share of all CPUs between `earlier` and this reading, percent; None without ticks.
    fn busy_percent_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|t| *t > 0)?;
        let busy = self.busy.saturating_sub(earlier.busy);
        Some(100.0 * busy as f64 / total as f64)
    }
}

/// proc(5): `cpu user nice system idle iowait irq softirq steal guest guest_nice`; idle and
/// iowait are not busy, guest time is already in user.
fn cpu_times_of(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|t| t.parse().ok())
        .collect();
    if ticks.len() < 8 {
        return None;
    }
    let total: u64 = ticks.iter().sum();
    Some(CpuTimes {
        busy: total - ticks[3] - ticks[4],
        total,
    })
}

/// GB/s one thread copies in `window`: 128 KiB at a time from a hot buffer into a 16 MiB ring and
/// back out (a loopback stream's two copies, without the kernel), each 128 KiB counted once, as
/// bench/benchlib.py's `copy_probe` counts.
fn copy_probe(window: Duration) -> f64 {
    const LENGTH: usize = 128 << 10;
    const RING: usize = 16 << 20;
    let src = vec![7u8; LENGTH];
    let mut ring = vec![0u8; RING];
    let mut out = vec![0u8; LENGTH];
    let (mut copied, mut off) = (0u64, 0usize);
    let start = Instant::now();
    while start.elapsed() < window {
        for _ in 0..16 {
            ring[off..off + LENGTH].copy_from_slice(&src);
            out.copy_from_slice(&ring[off..off + LENGTH]);
            off = (off + LENGTH) % RING;
        }
        copied += 16 * LENGTH as u64;
        std::hint::black_box(&out);
    }
    copied as f64 / start.elapsed().as_secs_f64() / 1e9
}

#[apply(timed!)]
fn the_machines_state_reads_proc() {
    assert_eq!(load_of("1.63 1.18 0.52 2/125 30498\n"), Some((1.63, 1.18, 0.52, 2)));
    assert_eq!(load_of("garbage"), None);
    let t = cpu_times_of("cpu  10 1 5 100 4 1 2 0 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n").expect("cpu line");
    assert_eq!((t.busy, t.total), (19, 123));
    let later = CpuTimes { busy: 69, total: 223 };
    assert_eq!(later.busy_percent_since(&t), Some(50.0));
    assert_eq!(t.busy_percent_since(&t), None);
    assert!(copy_probe(Duration::from_millis(5)) > 0.0);
}
