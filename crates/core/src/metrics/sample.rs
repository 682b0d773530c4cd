//! A host's counters read together ([`HostSnapshot`]) and what changed between two readings
//! ([`HostUsage`]): CPU split per CPU, interrupts and softirqs per second, interface traffic, the
//! stack's drop and retransmit counters, memory, and this process's own CPU. Engines take a
//! snapshot at each edge of the measurement window and keep a `HostTimeline` at the interval.
//!
//! Counters that wrap (the kernel's 32-bit interrupt, softirq and softnet counts, 32-bit driver
//! counters) are unwrapped; a counter that restarted (an interface made anew) counts from zero;
//! a CPU seen in only one of the two readings (it went offline or came online) gives no figure
//! and a note. Nothing here allocates per packet: it runs at the interval, off the hot path.

use super::cpu::StatReading;
use super::irq::{Interrupts, Softirqs};
use super::netdev::{self, IfCounters};
use super::rusage::{ProcessTimes, percent_of_host};
use super::snmp::{self, SoftnetCpu, StackCounters};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

pub use linerate_wire::metrics::sample::{
    CpuRate, HostInterval, HostUsage, InterfaceUsage, InterruptRates, IrqRate, MemoryUsage, ProcessUsage, SoftirqRate,
    StackUsage,
};

/// The change in a counter between two readings. `wraps_32`: the kernel keeps it in 32 bits, so
/// a smaller second reading means it wrapped; otherwise a smaller reading means it restarted
/// from zero (and the second reading is the whole change).
pub(crate) fn counter_delta(before: u64, after: u64, wraps_32: bool) -> u64 {
    if after >= before {
        after - before
    } else if wraps_32 && before <= u64::from(u32::MAX) {
        after + (1u64 << 32) - before
    } else {
        after
    }
}

/// Parses MemTotal and MemAvailable (kB) from /proc/meminfo.
pub(crate) fn parse_meminfo(text: &str) -> Option<MemoryUsage> {
    let kb = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim_start_matches(':').split_whitespace().next()?.parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    let total_bytes = kb("MemTotal")?;
    let available_bytes = kb("MemAvailable").or_else(|| kb("MemFree"))?;
    Some(MemoryUsage {
        total_bytes,
        available_bytes,
        used_bytes: total_bytes.saturating_sub(available_bytes),
    })
}

/// Every counter the samplers read, at one moment.
#[derive(Clone, Debug)]
pub struct HostSnapshot {
    pub at: Instant,
    pub stat: Option<StatReading>,
    pub interrupts: Option<Interrupts>,
    pub softirqs: Option<Softirqs>,
    pub interfaces: Vec<IfCounters>,
    pub stack: Option<StackCounters>,
    pub softnet: Option<Vec<SoftnetCpu>>,
    pub memory: Option<MemoryUsage>,
    pub process: ProcessTimes,
}

impl HostSnapshot {
    /// Reads every counter now; a file that cannot be read leaves its part empty.
    pub fn read() -> HostSnapshot {
        HostSnapshot {
            at: Instant::now(),
            stat: StatReading::read(),
            interrupts: Interrupts::read(),
            softirqs: Softirqs::read(),
            interfaces: netdev::read(),
            stack: StackCounters::read(),
            softnet: snmp::read_softnet(),
            memory: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|t| parse_meminfo(&t)),
            process: ProcessTimes::read(),
        }
    }
}

/// The mean current clock of the online CPUs, MHz: cpufreq's scaling_cur_freq where the kernel
/// has cpufreq, else /proc/cpuinfo's `cpu MHz` (what a VM's hypervisor reports).
pub(crate) fn read_clock_mhz() -> Option<f64> {
    let mut khz = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpufreq") {
        for policy in dir.flatten() {
            if let Some(v) = std::fs::read_to_string(policy.path().join("scaling_cur_freq"))
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
            {
                khz.push(v);
            }
        }
    }
    if !khz.is_empty() {
        return Some(khz.iter().sum::<f64>() / khz.len() as f64 / 1000.0);
    }
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpuinfo_mhz(&text)
}

/// The mean of /proc/cpuinfo's `cpu MHz` lines.
pub(crate) fn parse_cpuinfo_mhz(text: &str) -> Option<f64> {
    let v: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split_once(':')?.1.trim().parse().ok())
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Which IRQ serves which interface's queues: found once, from /sys/class/net/IF/device (when
/// that is this namespace's interface), its MSI vectors, and the handler names
/// (`eth0-TxRx-0`, `virtio3-rx`, `mlx5_comp0@pci:0000:03:00.0`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqGroups {
    by_irq: HashMap<String, String>,
}

impl IrqGroups {
    /// Matches the IRQ lines of `interrupts` to the interfaces of this namespace.
    pub fn discover(interrupts: Option<&Interrupts>, interfaces: &[IfCounters]) -> IrqGroups {
        let Some(ints) = interrupts else {
            return IrqGroups::default();
        };
        let devices: Vec<InterfaceDevice> = interfaces
            .iter()
            .filter(|i| i.name != "lo")
            .map(|i| InterfaceDevice::read(&i.name))
            .collect();
        IrqGroups::matching(ints, &devices)
    }

    fn matching(ints: &Interrupts, devices: &[InterfaceDevice]) -> IrqGroups {
        let mut by_irq = HashMap::new();
        for line in &ints.lines {
            if let Some(d) = devices.iter().find(|d| d.serves(&line.irq, &line.desc)) {
                by_irq.insert(line.irq.clone(), d.name.clone());
            }
        }
        IrqGroups { by_irq }
    }

    pub(crate) fn interface_of(&self, irq: &str) -> Option<&str> {
        self.by_irq.get(irq).map(String::as_str)
    }
}

/// What identifies an interface's IRQs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct InterfaceDevice {
    name: String,
    /// Device names its handlers carry (`virtio3`, the PCI address).
    devices: Vec<String>,
    /// MSI vectors of the device (and of its PCI parent).
    msi_irqs: Vec<String>,
}

impl InterfaceDevice {
    fn read(name: &str) -> InterfaceDevice {
        let mut d = InterfaceDevice {
            name: name.to_string(),
            ..Default::default()
        };
        let base = format!("/sys/class/net/{name}");
        // /sys shows the namespace that mounted it: trust it only for this namespace's interface.
        let sys_index = std::fs::read_to_string(format!("{base}/ifindex")).ok();
        let here = std::ffi::CString::new(name)
            .ok()
            // SAFETY: a valid NUL-terminated string; if_nametoindex only reads it.
            .map(|c| unsafe { libc::if_nametoindex(c.as_ptr()) })
            .unwrap_or(0);
        if here == 0 || sys_index.and_then(|s| s.trim().parse::<u32>().ok()) != Some(here) {
            return d;
        }
        let Ok(dev) = std::fs::canonicalize(format!("{base}/device")) else {
            return d;
        };
        for path in [Some(dev.as_path()), dev.parent()].into_iter().flatten() {
            if let Some(n) = path.file_name().and_then(|n| n.to_str()) {
                d.devices.push(n.to_string());
            }
            if let Ok(entries) = std::fs::read_dir(path.join("msi_irqs")) {
                d.msi_irqs.extend(
                    entries
                        .flatten()
                        .filter_map(|e| e.file_name().to_str().map(String::from)),
                );
            }
            if path.parent().and_then(|p| p.file_name()).is_none() {
                break;
            }
        }
        d
    }

    /// Whether the IRQ line serves this interface.
    fn serves(&self, irq: &str, desc: &str) -> bool {
        if self.msi_irqs.iter().any(|m| m == irq) {
            return true;
        }
        let names_it = |token: &str, name: &str| {
            token
                .strip_prefix(name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| !c.is_ascii_alphanumeric()))
                || token.contains(&format!("@pci:{name}"))
        };
        desc.split_whitespace().any(|t| {
            names_it(t, &self.name)
                || self
                    .devices
                    .iter()
                    .any(|dev| names_it(t, dev) || t.ends_with(dev.as_str()))
        })
    }
}

/// Rates per CPU from per-column counts, matched by CPU number across the two readings.
fn per_cpu_rates(
    cpus_a: &[u32],
    a: &[u64],
    cpus_b: &[u32],
    b: &[u64],
    seconds: f64,
    nonzero_only: bool,
) -> Vec<CpuRate> {
    let mut out = Vec::with_capacity(cpus_b.len());
    for (j, cpu) in cpus_b.iter().enumerate() {
        let Some(i) = cpus_a.iter().position(|c| c == cpu) else {
            continue;
        };
        let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) else {
            continue;
        };
        let r = counter_delta(x, y, true) as f64 / seconds;
        if !nonzero_only || r > 0.0 {
            out.push(CpuRate {
                cpu: *cpu,
                per_second: r,
            });
        }
    }
    out
}

/// [`HostUsage`] from two readings. A trait because the type is the wire crate's, where nothing
/// reads a counter; it is `HostUsage::between` with the trait in scope.
pub trait UsageBetween {
    /// What changed from `a` to `b`. `per_irq`: list each interrupt source (the window's
    /// summary) or only totals (timeline samples).
    fn between(a: &HostSnapshot, b: &HostSnapshot, groups: &IrqGroups, per_irq: bool) -> HostUsage;
}

impl UsageBetween for HostUsage {
    fn between(a: &HostSnapshot, b: &HostSnapshot, groups: &IrqGroups, per_irq: bool) -> HostUsage {
        let seconds = b.at.saturating_duration_since(a.at).as_secs_f64();
        let mut u = HostUsage {
            seconds,
            memory: b.memory,
            ..Default::default()
        };
        if seconds <= 0.0 {
            return u;
        }
        if let (Some(sa), Some(sb)) = (&a.stat, &b.stat) {
            u.cpu = sb.all.split_since(&sa.all);
            for (cpu, tb) in &sb.per_cpu {
                match sa.per_cpu.iter().find(|(c, _)| c == cpu) {
                    Some((_, ta)) => {
                        if let Some(mut s) = tb.split_since(ta) {
                            s.cpu = Some(*cpu);
                            u.per_cpu.push(s);
                        }
                    }
                    None => u.notes.push(format!("CPU {cpu} came online during the interval")),
                }
            }
            for (cpu, _) in &sa.per_cpu {
                if !sb.per_cpu.iter().any(|(c, _)| c == cpu) {
                    u.notes.push(format!("CPU {cpu} went offline during the interval"));
                }
            }
        }
        if let (Some(ia), Some(ib)) = (&a.interrupts, &b.interrupts) {
            u.interrupts_per_second = Some(interrupt_rates(ia, ib, seconds, groups, per_irq));
        }
        if let (Some(sa), Some(sb)) = (&a.softirqs, &b.softirqs) {
            for (kind, counts) in &sb.kinds {
                let Some((_, before)) = sa.kinds.iter().find(|(k, _)| k == kind) else {
                    continue;
                };
                let per_cpu = per_cpu_rates(&sa.cpus, before, &sb.cpus, counts, seconds, false);
                let total = per_cpu.iter().map(|r| r.per_second).sum();
                u.softirqs_per_second
                    .insert(kind.clone(), SoftirqRate { total, per_cpu });
            }
        }
        u.interfaces = interface_usage(&a.interfaces, &b.interfaces, seconds);
        if let (Some(sa), Some(sb)) = (a.stack, b.stack) {
            let d = |x: u64, y: u64| counter_delta(x, y, false);
            let mut s = StackUsage {
                tcp_retransmitted_segments: d(sa.tcp_retransmitted_segments, sb.tcp_retransmitted_segments),
                tcp_out_segments: d(sa.tcp_out_segments, sb.tcp_out_segments),
                tcp_in_segments: d(sa.tcp_in_segments, sb.tcp_in_segments),
                udp_in_datagrams: d(sa.udp_in_datagrams, sb.udp_in_datagrams),
                udp_out_datagrams: d(sa.udp_out_datagrams, sb.udp_out_datagrams),
                udp_receive_buffer_errors: d(sa.udp_receive_buffer_errors, sb.udp_receive_buffer_errors),
                udp_send_buffer_errors: d(sa.udp_send_buffer_errors, sb.udp_send_buffer_errors),
                ..Default::default()
            };
            if let (Some(na), Some(nb)) = (&a.softnet, &b.softnet) {
                for cb in nb {
                    if let Some(ca) = na.iter().find(|c| c.cpu == cb.cpu) {
                        s.softnet_processed += counter_delta(ca.processed, cb.processed, true);
                        s.softnet_dropped += counter_delta(ca.dropped, cb.dropped, true);
                        s.softnet_squeezed += counter_delta(ca.squeezed, cb.squeezed, true);
                    }
                }
            }
            u.stack = Some(s);
        }
        let p = b.process.since(&a.process);
        u.process = Some(ProcessUsage {
            user_seconds: p.user_seconds,
            system_seconds: p.system_seconds,
            percent_of_host: percent_of_host(
                p.user_seconds + p.system_seconds,
                seconds,
                crate::metrics::host::online_cpus(),
            ),
            voluntary_context_switches: p.voluntary_context_switches,
            involuntary_context_switches: p.involuntary_context_switches,
        });
        u
    }
}

fn interrupt_rates(a: &Interrupts, b: &Interrupts, seconds: f64, groups: &IrqGroups, per_irq: bool) -> InterruptRates {
    let mut r = InterruptRates::default();
    let mut per_cpu: BTreeMap<u32, f64> = b.cpus.iter().map(|&c| (c, 0.0)).collect();
    for lb in &b.lines {
        let Some(la) = a.lines.iter().find(|l| l.irq == lb.irq) else {
            continue;
        };
        let (rate, cpus) = if lb.counts.len() == b.cpus.len() && la.counts.len() == a.cpus.len() {
            let cpus = per_cpu_rates(&a.cpus, &la.counts, &b.cpus, &lb.counts, seconds, true);
            (cpus.iter().map(|c| c.per_second).sum::<f64>(), cpus)
        } else {
            // A system-wide count (ERR, MIS): in the total, on no CPU.
            let x: u64 = la.counts.iter().sum();
            let y: u64 = lb.counts.iter().sum();
            (counter_delta(x, y, true) as f64 / seconds, Vec::new())
        };
        if rate <= 0.0 {
            continue;
        }
        r.total += rate;
        for c in &cpus {
            *per_cpu.entry(c.cpu).or_default() += c.per_second;
        }
        let interface = groups.interface_of(&lb.irq).map(String::from);
        if let Some(i) = &interface {
            *r.per_interface.entry(i.clone()).or_default() += rate;
        }
        if per_irq {
            r.per_irq.push(IrqRate {
                irq: lb.irq.clone(),
                desc: lb.desc.clone(),
                interface,
                per_second: rate,
                per_cpu: cpus,
            });
        }
    }
    r.per_irq.sort_by(|x, y| y.per_second.total_cmp(&x.per_second));
    r.per_cpu = per_cpu
        .into_iter()
        .map(|(cpu, per_second)| CpuRate { cpu, per_second })
        .collect();
    r
}

fn interface_usage(a: &[IfCounters], b: &[IfCounters], seconds: f64) -> Vec<InterfaceUsage> {
    let zero = IfCounters::default();
    b.iter()
        .filter_map(|ib| {
            let before = a.iter().find(|i| i.name == ib.name);
            let ia = before.unwrap_or(&zero);
            let d = |x: u64, y: u64| counter_delta(x, y, false);
            let u = InterfaceUsage {
                name: ib.name.clone(),
                rx_bytes: d(ia.rx_bytes, ib.rx_bytes),
                tx_bytes: d(ia.tx_bytes, ib.tx_bytes),
                rx_packets: d(ia.rx_packets, ib.rx_packets),
                tx_packets: d(ia.tx_packets, ib.tx_packets),
                rx_dropped: d(ia.rx_dropped, ib.rx_dropped),
                tx_dropped: d(ia.tx_dropped, ib.tx_dropped),
                rx_errors: d(ia.rx_errors, ib.rx_errors),
                tx_errors: d(ia.tx_errors, ib.tx_errors),
                appeared: before.is_none(),
                ..Default::default()
            };
            let moved = u.rx_bytes + u.tx_bytes + u.rx_packets + u.tx_packets + u.rx_dropped + u.tx_dropped;
            (moved + u.rx_errors + u.tx_errors > 0).then(|| InterfaceUsage {
                rx_bits_per_second: u.rx_bytes as f64 * 8.0 / seconds,
                tx_bits_per_second: u.tx_bytes as f64 * 8.0 / seconds,
                rx_packets_per_second: u.rx_packets as f64 / seconds,
                tx_packets_per_second: u.tx_packets as f64 / seconds,
                ..u
            })
        })
        .collect()
}

/// The most timeline samples one end keeps (a day at 1 s).
pub(crate) const MAX_TIMELINE: usize = 86_400;

/// The host's samplers at each interval of a run.
pub(crate) struct HostTimeline {
    prev: HostSnapshot,
    prev_ns: u64,
    groups: IrqGroups,
    entries: Vec<HostInterval>,
}

impl HostTimeline {
    /// Starts from `first`, taken at `at_ns` on the run's clock.
    pub(crate) fn new(first: HostSnapshot, at_ns: u64, groups: IrqGroups) -> HostTimeline {
        HostTimeline {
            prev: first,
            prev_ns: at_ns,
            groups,
            entries: Vec::new(),
        }
    }

    /// Closes an interval at `now_ns`: reads the counters and keeps what changed.
    pub(crate) fn tick(&mut self, now_ns: u64) {
        let now = HostSnapshot::read();
        if self.entries.len() < MAX_TIMELINE {
            self.entries.push(HostInterval {
                start_ns: self.prev_ns,
                end_ns: now_ns,
                usage: HostUsage::between(&self.prev, &now, &self.groups, false),
            });
        }
        self.prev = now;
        self.prev_ns = now_ns;
    }

    pub(crate) fn into_entries(self) -> Vec<HostInterval> {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{cpu, irq};
    use std::time::Duration;

    fn fixture(name: &str) -> String {
        let path = format!("{}/../../tests/fixtures/proc/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// A snapshot made of fixture files, `secs` after `base`.
    fn snapshot(base: Instant, secs: u64, stat: &str, ints: &str, soft: &str, dev: &str) -> HostSnapshot {
        HostSnapshot {
            at: base + Duration::from_secs(secs),
            stat: cpu::parse_stat(&fixture(stat)),
            interrupts: irq::parse_interrupts(&fixture(ints)),
            softirqs: irq::parse_softirqs(&fixture(soft)),
            interfaces: netdev::parse_net_dev(&fixture(dev)),
            stack: snmp::parse_snmp(&fixture("snmp.1")),
            softnet: Some(snmp::parse_softnet(&fixture("softnet_stat.1"))),
            memory: parse_meminfo(&fixture("meminfo")),
            process: ProcessTimes::default(),
        }
    }

    #[test]
    fn counters_wrap_at_32_bits_or_restart() {
        assert_eq!(counter_delta(10, 15, true), 5);
        assert_eq!(
            counter_delta(u64::from(u32::MAX) - 1, 3, true),
            5,
            "a 32-bit counter wrapped"
        );
        assert_eq!(
            counter_delta(5_000_000_000, 7, true),
            7,
            "a 64-bit value cannot have wrapped at 32"
        );
        assert_eq!(counter_delta(1000, 7, false), 7, "a restarted counter counts from zero");
    }

    #[test]
    fn usage_between_two_captured_readings() {
        let base = Instant::now();
        let a = snapshot(base, 0, "stat.1", "interrupts.1", "softirqs.1", "net_dev.1");
        let b = snapshot(base, 2, "stat.2", "interrupts.2", "softirqs.2", "net_dev.2");
        let groups = IrqGroups::matching(
            b.interrupts.as_ref().expect("fixture parses"),
            &[InterfaceDevice {
                name: "eth0".into(),
                devices: vec!["virtio3".into(), "0000:00:04.0".into()],
                msi_irqs: vec![],
            }],
        );
        let u = HostUsage::between(&a, &b, &groups, true);
        assert_eq!(u.seconds, 2.0);
        let cpu = u.cpu.expect("cpu split");
        assert!(cpu.busy > 0.0 && cpu.busy <= 100.0);
        let sum = cpu.user + cpu.system + cpu.irq + cpu.softirq + cpu.iowait + cpu.steal + cpu.idle;
        assert!((sum - 100.0).abs() < 1e-6, "the split adds up to 100 %: {sum}");
        assert_eq!(u.per_cpu.len(), 2);
        let ints = u.interrupts_per_second.as_ref().expect("interrupts");
        assert!(ints.total > 0.0);
        assert_eq!(ints.per_cpu.len(), 2);
        assert!(ints.per_irq.iter().any(|i| i.interface.as_deref() == Some("eth0")));
        assert!(ints.per_interface["eth0"] > 0.0);
        let total_from_cpus: f64 = ints.per_cpu.iter().map(|c| c.per_second).sum();
        assert!(total_from_cpus <= ints.total + 1e-9);
        assert!(u.softirqs_per_second["NET_RX"].total > 0.0);
        let lo = u.interface("lo").expect("lo moved bytes");
        assert!(lo.rx_bytes > 0 && lo.rx_bits_per_second == lo.rx_bytes as f64 * 8.0 / 2.0);
    }

    #[test]
    fn an_offline_cpu_and_a_new_interface() {
        let base = Instant::now();
        let a = snapshot(base, 0, "stat.4cpu", "interrupts.4cpu", "softirqs.4cpu", "net_dev.1");
        let b = snapshot(
            base,
            1,
            "stat.4cpu-offline",
            "interrupts.4cpu-offline",
            "softirqs.4cpu-offline",
            "net_dev.new-interface",
        );
        let u = HostUsage::between(&a, &b, &IrqGroups::default(), true);
        let cpus: Vec<Option<u32>> = u.per_cpu.iter().map(|c| c.cpu).collect();
        assert_eq!(cpus, [Some(0), Some(1), Some(3)], "CPU 2 went offline and is left out");
        assert!(
            u.notes.iter().any(|n| n.contains("CPU 2 went offline")),
            "{:?}",
            u.notes
        );
        let ints = u.interrupts_per_second.as_ref().expect("interrupts");
        assert!(ints.per_cpu.iter().all(|c| c.cpu != 2));
        assert!(
            ints.total.is_finite() && ints.total < 1e6,
            "no wrap-around nonsense: {}",
            ints.total
        );
        let new = u.interface("veth7").expect("the new interface counted");
        assert!(new.appeared && new.rx_bytes > 0);
        assert!(u.interface("eth0").is_none_or(|i| !i.appeared));
    }

    #[test]
    fn a_wrapped_interrupt_counter_gives_its_true_rate() {
        let a = irq::parse_interrupts(&fixture("interrupts.wrap.1")).expect("parses");
        let b = irq::parse_interrupts(&fixture("interrupts.wrap.2")).expect("parses");
        let r = interrupt_rates(&a, &b, 1.0, &IrqGroups::default(), true);
        let line = r.per_irq.iter().find(|l| l.irq == "41").expect("irq 41 fired");
        assert_eq!(line.per_second, 100.0, "4294967246 -> 50 is 100 interrupts");
    }

    #[test]
    fn many_cpus() {
        let s = cpu::parse_stat(&fixture("stat.64cpu")).expect("parses");
        assert_eq!(s.per_cpu.len(), 64);
        let i = irq::parse_interrupts(&fixture("interrupts.64cpu")).expect("parses");
        assert_eq!(i.cpus.len(), 64);
        assert!(i.lines.iter().all(|l| l.counts.len() == 64 || l.counts.len() == 1));
    }

    #[test]
    fn clock_from_cpuinfo() {
        let text = "processor\t: 0\ncpu MHz\t\t: 2000.000\nprocessor\t: 1\ncpu MHz\t\t: 3000.000\n";
        assert_eq!(parse_cpuinfo_mhz(text), Some(2500.0));
        assert_eq!(parse_cpuinfo_mhz("nothing"), None);
    }

    #[test]
    fn meminfo() {
        let m = parse_meminfo("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n")
            .expect("parses");
        assert_eq!(m.total_bytes, 24_000_000 * 1024);
        assert_eq!(m.used_bytes, 4_000_000 * 1024);
    }

    #[test]
    fn reads_this_host_twice() {
        let a = HostSnapshot::read();
        let mut x = 0u64;
        let until = Instant::now() + Duration::from_millis(150);
        while Instant::now() < until {
            x = x.wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = HostSnapshot::read();
        let groups = IrqGroups::discover(b.interrupts.as_ref(), &b.interfaces);
        let u = HostUsage::between(&a, &b, &groups, true);
        assert!(u.cpu.is_some(), "150 ms on {} CPUs is enough ticks", u.per_cpu.len());
        assert!(u.process.expect("process").percent_of_host.expect("a long window") > 0.0);
        assert!(u.memory.expect("memory").total_bytes > 0);
    }
}
#[cfg(test)]
mod host_groups {
    use super::*;

    /// On a host whose NIC has a device under /sys, its queue IRQs are found.
    #[test]
    fn this_hosts_nic_irqs_are_grouped() {
        let snap = HostSnapshot::read();
        let groups = IrqGroups::discover(snap.interrupts.as_ref(), &snap.interfaces);
        for i in snap.interfaces.iter().filter(|i| i.name != "lo") {
            let d = InterfaceDevice::read(&i.name);
            if d.msi_irqs.is_empty() {
                continue;
            }
            assert!(
                groups.by_irq.values().any(|n| n == &i.name),
                "{}: device {:?} with MSI vectors {:?} but no IRQ grouped",
                i.name,
                d.devices,
                d.msi_irqs
            );
        }
    }
}
