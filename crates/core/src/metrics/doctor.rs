//! `linerate doctor`: the host's configuration checked against known tuning advice.
//!
//! In: a [`HostConfig`] (just read by `host::read_config`, or stored with a result) and what the
//! path needs ([`DoctorInput`]: its RTT and rate). Out: [`Finding`]s in check order: `Warn` for a
//! setting likely to hold results back, `Info` for what is worth knowing before tuning, `Ok` for
//! a check that passed. A check whose data the configuration lacks gives no finding (the
//! configuration's notes say why the data is missing). Nothing here reads or changes the host:
//! a finding's `fix` is the command a user may run.

use crate::metrics::host::{HostConfig, InterfaceConfig, offload_switch};
use crate::units::{BitRate, ByteSize};
use std::time::Duration;

pub use linerate_wire::metrics::doctor::{Finding, Severity};

/// What the tested path needs, for the checks that depend on it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DoctorInput {
    /// Round-trip time of the path; without it socket buffers are not checked.
    pub rtt: Option<Duration>,
    /// Rate of the path, bits per second; default: the fastest link speed among the
    /// configuration's interfaces.
    pub rate_bits_per_second: Option<f64>,
}

/// Jumbo frames are worth mentioning from this max MTU up.
const JUMBO_MTU_BYTES: u32 = 9000;

/// The offloads whose absence costs CPU per byte. LRO is left out: it is off by default and
/// harmful on a host that forwards.
const WANTED_OFFLOADS: &[&str] = &["tso", "gso", "gro", "rx-checksum", "tx-checksum", "scatter-gather"];

/// Sysctls are C ints: no buffer limit beyond this is accepted.
const MAX_SYSCTL_BYTES: u64 = 1 << 30;

/// Checks `config` against tuning advice. Findings come per interface first (MTU, offloads,
/// IRQ affinity), then for the host (buffers, governor, irqbalance, busy polling).
pub fn check(config: &HostConfig, input: &DoctorInput) -> Vec<Finding> {
    let mut out = Vec::new();
    for iface in &config.interfaces {
        check_mtu(iface, &mut out);
        check_offloads(iface, &mut out);
        check_irq_affinity(iface, config, &mut out);
    }
    check_buffers(config, input, &mut out);
    check_governor(config, &mut out);
    check_irqbalance(config, &mut out);
    check_busy_poll(config, &mut out);
    out
}

fn finding(severity: Severity, check: &str, message: String, fix: Option<String>) -> Finding {
    Finding {
        severity,
        check: check.to_string(),
        message,
        fix,
    }
}

fn check_mtu(iface: &InterfaceConfig, out: &mut Vec<Finding>) {
    let (Some(mtu), Some(max)) = (iface.mtu_bytes, iface.max_mtu_bytes) else {
        return;
    };
    if !iface.is_physical() {
        return;
    }
    let name = &iface.name;
    if max >= JUMBO_MTU_BYTES && mtu <= 1500 {
        out.push(finding(
            Severity::Info,
            "mtu",
            format!(
                "{name} has MTU {mtu} but takes up to {max}: jumbo frames cut per-packet work about sixfold, \
                 if every hop and the peer take them too"
            ),
            Some(format!("ip link set dev {name} mtu {JUMBO_MTU_BYTES}")),
        ));
    } else {
        out.push(finding(
            Severity::Ok,
            "mtu",
            format!("{name}: MTU {mtu} (max {max})"),
            None,
        ));
    }
}

fn check_offloads(iface: &InterfaceConfig, out: &mut Vec<Finding>) {
    let name = &iface.name;
    let off: Vec<&str> = WANTED_OFFLOADS
        .iter()
        .copied()
        .filter(|k| iface.offloads.get(*k) == Some(&false))
        .collect();
    if off.is_empty() {
        if WANTED_OFFLOADS.iter().any(|k| iface.offloads.contains_key(*k)) {
            out.push(finding(
                Severity::Ok,
                "offloads",
                format!("{name}: segmentation, GRO and checksum offloads on"),
                None,
            ));
        }
        return;
    }
    let (fixed, switchable): (Vec<&str>, Vec<&str>) =
        off.iter().partition(|k| iface.fixed_offloads.iter().any(|f| f == *k));
    let mut message = format!("{name}: {} off: the CPU does that work per packet", off.join(", "));
    if !fixed.is_empty() {
        message.push_str(&format!(" ({} fixed by the driver)", fixed.join(", ")));
    }
    // A virtual interface's defaults (GRO off on veth) are a choice of its own, not a fault.
    let severity = if iface.is_physical() {
        Severity::Warn
    } else {
        Severity::Info
    };
    let fix = (!switchable.is_empty()).then(|| {
        let switches: Vec<String> = switchable
            .iter()
            .map(|k| format!("{} on", offload_switch(k).unwrap_or(k)))
            .collect();
        format!("ethtool -K {name} {}", switches.join(" "))
    });
    out.push(finding(severity, "offloads", message, fix));
}

fn check_irq_affinity(iface: &InterfaceConfig, config: &HostConfig, out: &mut Vec<Finding>) {
    if iface.irqs.is_empty() {
        return;
    }
    let online = config.cpu.threads.map_or(config.cpu.online.len(), |t| t as usize);
    let cpus = iface.irq_cpus();
    let name = &iface.name;
    let list = cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    if cpus.len() != 1 || online < 2 {
        out.push(finding(
            Severity::Ok,
            "irq_affinity",
            format!("{name}: {} queue IRQs on CPUs {list}", iface.irqs.len()),
            None,
        ));
        return;
    }
    if iface.irqs.len() == 1 {
        out.push(finding(
            Severity::Info,
            "irq_affinity",
            format!(
                "{name} has one queue IRQ, on CPU {list} of {online}: one CPU takes all its receive work; more \
                 queues (ethtool -L) spread it"
            ),
            None,
        ));
        return;
    }
    // Round-robin over the online CPUs; a hand-made plan, so irqbalance must not undo it.
    let targets: Vec<u32> = if config.cpu.online.is_empty() {
        (0..u32::try_from(online).unwrap_or(u32::MAX)).collect()
    } else {
        config.cpu.online.clone()
    };
    let mut commands: Vec<String> = Vec::new();
    if config.irqbalance_running == Some(true) {
        commands.push("systemctl stop irqbalance".into());
    }
    for (irq, cpu) in iface.irqs.iter().zip(targets.iter().cycle()) {
        commands.push(format!("echo {cpu} > /proc/irq/{}/smp_affinity_list", irq.irq));
    }
    out.push(finding(
        Severity::Warn,
        "irq_affinity",
        format!(
            "all {} queue IRQs of {name} are handled by CPU {list}, of {online} CPUs",
            iface.irqs.len()
        ),
        Some(commands.join("; ")),
    ));
}

/// The rate to size buffers for and where it came from.
fn path_rate(config: &HostConfig, input: &DoctorInput) -> Option<(f64, String)> {
    if let Some(r) = input.rate_bits_per_second.filter(|r| r.is_finite() && *r > 0.0) {
        return Some((r, "the given rate".into()));
    }
    config
        .interfaces
        .iter()
        .filter(|i| !i.loopback)
        .filter_map(|i| Some((i.speed_mbit_per_second?, &i.name)))
        .max_by_key(|(speed, _)| *speed)
        .map(|(speed, name)| (f64::from(speed) * 1e6, format!("{name}'s link speed")))
}

fn check_buffers(config: &HostConfig, input: &DoctorInput, out: &mut Vec<Finding>) {
    let Some(rtt) = input.rtt.filter(|r| !r.is_zero()) else {
        out.push(finding(
            Severity::Info,
            "buffers",
            "no RTT given: socket buffer limits not checked against the bandwidth-delay product".into(),
            None,
        ));
        return;
    };
    let Some((rate, from)) = path_rate(config, input) else {
        out.push(finding(
            Severity::Info,
            "buffers",
            "no rate given and no interface reports a link speed: give the path's rate (--rate 10G) to \
             check socket buffer limits against the bandwidth-delay product"
                .into(),
            None,
        ));
        return;
    };
    let bdp = (rate * rtt.as_secs_f64() / 8.0).ceil().min(u64::MAX as f64) as u64;
    let need = Need {
        bdp,
        // The kernel counts skb overhead against a socket buffer: about half of it carries data
        // with the default tcp_adv_win_scale, so twice the BDP lets a full window through.
        want: bdp
            .saturating_mul(2)
            .checked_next_power_of_two()
            .unwrap_or(u64::MAX)
            .min(MAX_SYSCTL_BYTES),
        context: format!("{} x {:?} ({from})", BitRate(rate), rtt),
    };
    let single = |key: &str| config.sysctls.get(key).and_then(|v| v.trim().parse::<u64>().ok());
    let triple = |key: &str| {
        let v: Vec<u64> = config
            .sysctls
            .get(key)?
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        (v.len() == 3).then(|| (v[0], v[1], v[2]))
    };
    for (check, key, option) in [
        ("rmem_max", "net.core.rmem_max", "SO_RCVBUF"),
        ("wmem_max", "net.core.wmem_max", "SO_SNDBUF"),
    ] {
        if let Some(have) = single(key) {
            let limits = format!("the most {option} may ask for (iperf -w, linerate --window)");
            let fix = format!("sysctl -w {key}={}", need.want);
            need.judge(check, key, have, &limits, fix, out);
        }
    }
    let autotuning = "the most receive or send buffer autotuning grows to";
    for (check, key) in [("tcp_rmem", "net.ipv4.tcp_rmem"), ("tcp_wmem", "net.ipv4.tcp_wmem")] {
        if let Some((min, default, max)) = triple(key) {
            let fix = format!("sysctl -w {key}=\"{min} {default} {}\"", need.want);
            need.judge(check, &format!("{key} max"), max, autotuning, fix, out);
        }
    }
}

/// A size as people read it: exact binary units where they divide (`4 MiB`), else rounded
/// (`23.8 MiB`).
fn size(bytes: u64) -> String {
    let exact = ByteSize(bytes).to_string();
    if !exact.ends_with(" B") {
        return exact;
    }
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / (1u64 << 10) as f64),
        b => exact.replace(" B", &format!(" byte{}", if b == 1 { "" } else { "s" })),
    }
}

/// A buffer size requirement from the bandwidth-delay product.
struct Need {
    bdp: u64,
    /// What the fix sets: twice the BDP rounded up to a power of two.
    want: u64,
    /// How the BDP was made (`10.000 Gbit/s x 10ms (eth0's link speed)`).
    context: String,
}

impl Need {
    fn judge(&self, check: &str, what: &str, have: u64, limits: &str, fix: String, out: &mut Vec<Finding>) {
        let (bdp, have_size) = (size(self.bdp), size(have));
        let context = &self.context;
        if have < self.bdp {
            out.push(finding(
                Severity::Warn,
                check,
                format!(
                    "{what} is {have_size}, below the bandwidth-delay product {bdp} of {context}: it caps {limits}, \
                     and so one stream's rate"
                ),
                Some(fix),
            ));
        } else if have < self.bdp.saturating_mul(2) {
            out.push(finding(
                Severity::Info,
                check,
                format!(
                    "{what} is {have_size}, above the bandwidth-delay product {bdp} of {context} but under twice \
                     it: the kernel keeps part of each buffer for overhead, so a window may still fall short"
                ),
                Some(fix),
            ));
        } else {
            out.push(finding(
                Severity::Ok,
                check,
                format!("{what} is {have_size}, at least twice the BDP {bdp} of {context}"),
                None,
            ));
        }
    }
}

fn check_governor(config: &HostConfig, out: &mut Vec<Finding>) {
    let Some(governor) = &config.cpu.governor else { return };
    if governor.split(',').any(|g| g == "powersave") {
        let driver = config.cpu.scaling_driver.as_deref().unwrap_or("");
        let note = if driver.contains("pstate") {
            format!(" (with {driver} it still follows load, but clocks ramp up only after a burst starts)")
        } else {
            String::new()
        };
        out.push(finding(
            Severity::Warn,
            "governor",
            format!("CPU frequency governor is {governor}{note}: rates and latencies vary with the clock"),
            Some("cpupower frequency-set -g performance".into()),
        ));
    } else {
        out.push(finding(
            Severity::Ok,
            "governor",
            format!("CPU frequency governor is {governor}"),
            None,
        ));
    }
}

fn check_irqbalance(config: &HostConfig, out: &mut Vec<Finding>) {
    match config.irqbalance_running {
        Some(true) => out.push(finding(
            Severity::Info,
            "irqbalance",
            "irqbalance is running: it moves IRQs every few seconds; stop it before pinning IRQs by hand".into(),
            Some("systemctl stop irqbalance".into()),
        )),
        Some(false) => out.push(finding(
            Severity::Ok,
            "irqbalance",
            "irqbalance is not running: IRQ affinity set by hand stays".into(),
            None,
        )),
        None => {}
    }
}

fn check_busy_poll(config: &HostConfig, out: &mut Vec<Finding>) {
    let value = |key: &str| config.sysctls.get(key).and_then(|v| v.trim().parse::<u64>().ok());
    let (Some(poll), Some(read)) = (value("net.core.busy_poll"), value("net.core.busy_read")) else {
        return;
    };
    if poll == 0 && read == 0 {
        out.push(finding(
            Severity::Info,
            "busy_poll",
            "busy polling is off (net.core.busy_poll and busy_read are 0): request-response latency may drop \
             with it, at the cost of a CPU spinning"
                .into(),
            Some("sysctl -w net.core.busy_poll=50 net.core.busy_read=50".into()),
        ));
    } else {
        out.push(finding(
            Severity::Ok,
            "busy_poll",
            format!("busy polling on: busy_poll {poll} us, busy_read {read} us"),
            None,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::host::IrqAffinity;

    fn nic() -> InterfaceConfig {
        let mut i = InterfaceConfig {
            name: "eth1".into(),
            ifindex: Some(3),
            parent_device: Some("0000:3b:00.0".into()),
            parent_bus: Some("pci".into()),
            bus_address: Some("0000:3b:00.0".into()),
            driver: Some("ice".into()),
            speed_mbit_per_second: Some(25_000),
            mtu_bytes: Some(9000),
            max_mtu_bytes: Some(9702),
            ..InterfaceConfig::default()
        };
        for k in WANTED_OFFLOADS {
            i.offloads.insert(k.to_string(), true);
        }
        i.offloads.insert("lro".into(), false);
        i.fixed_offloads = vec!["lro".into()];
        i.irqs = (0..4)
            .map(|q| IrqAffinity {
                irq: 100 + q,
                name: format!("ice-eth1-TxRx-{q}"),
                cpus: vec![0, 1, 2, 3],
                effective_cpus: Some(vec![q]),
            })
            .collect();
        i
    }

    /// A well-tuned host: every check passes.
    fn tuned() -> HostConfig {
        let mut c = HostConfig::default();
        c.cpu.online = vec![0, 1, 2, 3];
        c.cpu.threads = Some(4);
        c.cpu.governor = Some("performance".into());
        c.irqbalance_running = Some(false);
        c.interfaces = vec![nic()];
        for (k, v) in [
            ("net.core.rmem_max", "268435456"),
            ("net.core.wmem_max", "268435456"),
            ("net.ipv4.tcp_rmem", "4096 131072 268435456"),
            ("net.ipv4.tcp_wmem", "4096 16384 268435456"),
            ("net.core.busy_poll", "50"),
            ("net.core.busy_read", "50"),
        ] {
            c.sysctls.insert(k.into(), v.into());
        }
        c
    }

    fn rtt(ms: u64) -> DoctorInput {
        DoctorInput {
            rtt: Some(Duration::from_millis(ms)),
            rate_bits_per_second: None,
        }
    }

    fn of<'a>(findings: &'a [Finding], check: &str) -> Vec<&'a Finding> {
        findings.iter().filter(|f| f.check == check).collect()
    }

    fn only<'a>(findings: &'a [Finding], check: &str) -> &'a Finding {
        let matching = of(findings, check);
        assert_eq!(matching.len(), 1, "{check}: {findings:#?}");
        matching[0]
    }

    #[test]
    fn a_tuned_host_passes_every_check() {
        let findings = check(&tuned(), &rtt(10));
        assert!(findings.iter().all(|f| f.severity == Severity::Ok), "{findings:#?}");
        for id in [
            "mtu",
            "offloads",
            "irq_affinity",
            "rmem_max",
            "wmem_max",
            "tcp_rmem",
            "tcp_wmem",
            "governor",
            "irqbalance",
            "busy_poll",
        ] {
            only(&findings, id);
        }
    }

    #[test]
    fn jumbo_capable_nic_at_1500_is_mentioned() {
        let mut c = tuned();
        c.interfaces[0].mtu_bytes = Some(1500);
        let f = only(&check(&c, &rtt(10)), "mtu").clone();
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(f.fix.as_deref(), Some("ip link set dev eth1 mtu 9000"));

        // Not for a NIC that cannot, nor for a virtual interface.
        c.interfaces[0].max_mtu_bytes = Some(1500);
        assert_eq!(only(&check(&c, &rtt(10)), "mtu").severity, Severity::Ok);
        c.interfaces[0].max_mtu_bytes = Some(65535);
        c.interfaces[0].kind = Some("veth".into());
        assert!(of(&check(&c, &rtt(10)), "mtu").is_empty());
    }

    #[test]
    fn small_buffer_limits_are_warned_with_the_sysctl_that_fixes_them() {
        let mut c = tuned();
        c.sysctls.insert("net.core.rmem_max".into(), "212992".into());
        c.sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
        // 25 Gbit/s x 10 ms = 31.25 MB; twice that rounded up to a power of two is 64 MiB.
        let findings = check(&c, &rtt(10));
        let rmem = only(&findings, "rmem_max");
        assert_eq!(rmem.severity, Severity::Warn);
        assert_eq!(rmem.fix.as_deref(), Some("sysctl -w net.core.rmem_max=67108864"));
        assert!(rmem.message.contains("eth1's link speed"), "{}", rmem.message);
        let tcp = only(&findings, "tcp_rmem");
        assert_eq!(tcp.severity, Severity::Warn);
        assert_eq!(
            tcp.fix.as_deref(),
            Some("sysctl -w net.ipv4.tcp_rmem=\"4096 131072 67108864\"")
        );
        assert_eq!(only(&findings, "wmem_max").severity, Severity::Ok);

        // A given rate wins over the link speed: 100 Mbit/s x 10 ms = 125 kB, a sixth of 6 MiB but
        // more than half of 208 KiB.
        let slow = DoctorInput {
            rtt: Some(Duration::from_millis(10)),
            rate_bits_per_second: Some(100e6),
        };
        let findings = check(&c, &slow);
        assert_eq!(only(&findings, "tcp_rmem").severity, Severity::Ok);
        let rmem = only(&findings, "rmem_max");
        assert_eq!(rmem.severity, Severity::Info);
        assert_eq!(rmem.fix.as_deref(), Some("sysctl -w net.core.rmem_max=262144"));
        assert!(rmem.message.contains("the given rate"), "{}", rmem.message);

        // Between one and two BDPs: worth knowing, not a fault.
        c.sysctls.insert("net.core.rmem_max".into(), "40000000".into());
        assert_eq!(only(&check(&c, &rtt(10)), "rmem_max").severity, Severity::Info);
    }

    #[test]
    fn buffers_need_an_rtt_and_a_rate() {
        let c = tuned();
        let findings = check(&c, &DoctorInput::default());
        assert_eq!(only(&findings, "buffers").severity, Severity::Info);
        assert!(of(&findings, "rmem_max").is_empty());
        let mut no_speed = c.clone();
        no_speed.interfaces[0].speed_mbit_per_second = None;
        let findings = check(&no_speed, &rtt(10));
        assert!(only(&findings, "buffers").message.contains("no rate"));
        assert!(
            only(&findings, "buffers").message.contains("(--rate 10G)"),
            "issue 13: the finding names the flag that is missing"
        );
    }

    #[test]
    fn all_irqs_on_one_cpu_is_warned() {
        let mut c = tuned();
        for irq in &mut c.interfaces[0].irqs {
            irq.effective_cpus = Some(vec![2]);
        }
        let f = only(&check(&c, &rtt(10)), "irq_affinity").clone();
        assert_eq!(f.severity, Severity::Warn);
        assert!(f.message.contains("CPU 2"), "{}", f.message);
        assert_eq!(
            f.fix.as_deref(),
            Some(
                "echo 0 > /proc/irq/100/smp_affinity_list; echo 1 > /proc/irq/101/smp_affinity_list; \
                 echo 2 > /proc/irq/102/smp_affinity_list; echo 3 > /proc/irq/103/smp_affinity_list"
            )
        );
        c.irqbalance_running = Some(true);
        let f = only(&check(&c, &rtt(10)), "irq_affinity").clone();
        assert!(f.fix.is_some_and(|f| f.starts_with("systemctl stop irqbalance; ")));

        // Without effective affinity the affinity lists count: 0-3 is spread.
        for irq in &mut c.interfaces[0].irqs {
            irq.effective_cpus = None;
        }
        assert_eq!(only(&check(&c, &rtt(10)), "irq_affinity").severity, Severity::Ok);
        // One CPU only: nowhere else to go.
        let mut single = tuned();
        single.cpu.online = vec![0];
        single.cpu.threads = Some(1);
        for irq in &mut single.interfaces[0].irqs {
            irq.effective_cpus = Some(vec![0]);
        }
        assert_eq!(only(&check(&single, &rtt(10)), "irq_affinity").severity, Severity::Ok);
        // A single queue: information about queues, not affinity.
        c.interfaces[0].irqs.truncate(1);
        c.interfaces[0].irqs[0].effective_cpus = Some(vec![1]);
        assert_eq!(only(&check(&c, &rtt(10)), "irq_affinity").severity, Severity::Info);
    }

    #[test]
    fn offloads_off_are_warned_with_the_ethtool_command() {
        let mut c = tuned();
        let nic = &mut c.interfaces[0];
        nic.offloads.insert("gro".into(), false);
        nic.offloads.insert("rx-checksum".into(), false);
        nic.offloads.insert("scatter-gather".into(), false);
        nic.fixed_offloads.push("scatter-gather".into());
        let f = only(&check(&c, &rtt(10)), "offloads").clone();
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.fix.as_deref(), Some("ethtool -K eth1 gro on rx on"));
        assert!(f.message.contains("scatter-gather fixed"), "{}", f.message);

        // LRO off is no fault; a veth's GRO off is information.
        let mut veth = tuned();
        veth.interfaces[0].kind = Some("veth".into());
        assert_eq!(only(&check(&veth, &rtt(10)), "offloads").severity, Severity::Ok);
        veth.interfaces[0].offloads.insert("gro".into(), false);
        let f = only(&check(&veth, &rtt(10)), "offloads").clone();
        assert_eq!(
            (f.severity, f.fix.as_deref()),
            (Severity::Info, Some("ethtool -K eth1 gro on"))
        );

        // Nothing known, nothing said.
        veth.interfaces[0].offloads.clear();
        assert!(of(&check(&veth, &rtt(10)), "offloads").is_empty());
    }

    #[test]
    fn powersave_governor_is_warned() {
        let mut c = tuned();
        c.cpu.governor = Some("powersave".into());
        c.cpu.scaling_driver = Some("intel_pstate".into());
        let f = only(&check(&c, &rtt(10)), "governor").clone();
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.fix.as_deref(), Some("cpupower frequency-set -g performance"));
        assert!(f.message.contains("intel_pstate"));
        c.cpu.governor = Some("performance,powersave".into());
        assert_eq!(only(&check(&c, &rtt(10)), "governor").severity, Severity::Warn);
        c.cpu.governor = Some("schedutil".into());
        assert_eq!(only(&check(&c, &rtt(10)), "governor").severity, Severity::Ok);
        c.cpu.governor = None;
        assert!(of(&check(&c, &rtt(10)), "governor").is_empty());
    }

    #[test]
    fn irqbalance_is_reported_either_way() {
        let mut c = tuned();
        c.irqbalance_running = Some(true);
        let f = only(&check(&c, &rtt(10)), "irqbalance").clone();
        assert_eq!(
            (f.severity, f.fix.as_deref()),
            (Severity::Info, Some("systemctl stop irqbalance"))
        );
        c.irqbalance_running = Some(false);
        assert_eq!(only(&check(&c, &rtt(10)), "irqbalance").severity, Severity::Ok);
        c.irqbalance_running = None;
        assert!(of(&check(&c, &rtt(10)), "irqbalance").is_empty());
    }

    #[test]
    fn busy_polling_off_is_information() {
        let mut c = tuned();
        c.sysctls.insert("net.core.busy_poll".into(), "0".into());
        c.sysctls.insert("net.core.busy_read".into(), "0".into());
        let f = only(&check(&c, &rtt(10)), "busy_poll").clone();
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(
            f.fix.as_deref(),
            Some("sysctl -w net.core.busy_poll=50 net.core.busy_read=50")
        );
        c.sysctls.insert("net.core.busy_read".into(), "50".into());
        assert_eq!(only(&check(&c, &rtt(10)), "busy_poll").severity, Severity::Ok);
        c.sysctls.remove("net.core.busy_poll");
        assert!(of(&check(&c, &rtt(10)), "busy_poll").is_empty());
    }

    #[test]
    fn odd_values_give_no_panic() {
        let mut c = tuned();
        c.sysctls.insert("net.ipv4.tcp_rmem".into(), "garbage".into());
        c.sysctls.insert("net.core.rmem_max".into(), "-1".into());
        c.interfaces[0].speed_mbit_per_second = Some(u32::MAX);
        let huge = DoctorInput {
            rtt: Some(Duration::from_secs(3600)),
            rate_bits_per_second: Some(f64::INFINITY),
        };
        let findings = check(&c, &huge);
        assert!(of(&findings, "tcp_rmem").is_empty() && of(&findings, "rmem_max").is_empty());
        let wmem = only(&findings, "wmem_max");
        assert_eq!(wmem.fix.as_deref(), Some("sysctl -w net.core.wmem_max=1073741824"));
        assert!(
            check(&HostConfig::default(), &DoctorInput::default())
                .iter()
                .all(|f| f.severity != Severity::Warn)
        );
    }

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(size(4 << 20), "4 MiB");
        assert_eq!(size(25_000_000), "23.8 MiB");
        assert_eq!(size(125_000), "122.1 KiB");
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(1000), "1000 bytes");
    }

    #[test]
    fn findings_round_trip_through_json() {
        let findings = check(&tuned(), &rtt(10));
        let json = serde_json::to_string(&findings).expect("serializes");
        assert!(json.contains("\"severity\":\"ok\""));
        assert_eq!(
            serde_json::from_str::<Vec<Finding>>(&json).expect("deserializes"),
            findings
        );
    }
}
