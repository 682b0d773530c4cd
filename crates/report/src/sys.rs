//! The host's samplers as text: one line per interval for `linerate sys`, and the wire's
//! arithmetic for `linerate calc goodput`.

use crate::text::grouped;
use linerate_wire::goodput::{Goodput, Transport};
use linerate_wire::metrics::sample::{HostInterval, HostUsage, InterfaceUsage};
use linerate_wire::units::BitRate;
use std::fmt::Write;

/// The interfaces to show: those named (an idle one with zeros: the samplers keep only
/// interfaces that counted something), else every one that moved bytes.
fn shown(u: &HostUsage, names: &[String]) -> Vec<InterfaceUsage> {
    if names.is_empty() {
        return u
            .interfaces
            .iter()
            .filter(|i| i.rx_bytes + i.tx_bytes > 0)
            .cloned()
            .collect();
    }
    names
        .iter()
        .map(|n| {
            u.interface(n).cloned().unwrap_or_else(|| InterfaceUsage {
                name: n.clone(),
                ..Default::default()
            })
        })
        .collect()
}

/// One interval: CPU busy and its split, interrupts and network softirqs per second, each
/// interface's traffic, TCP retransmits, drops and memory in use.
pub fn usage_line(s: &HostInterval, interfaces: &[String]) -> String {
    let u = &s.usage;
    let mut line = format!("[{:7.2}-{:7.2} s]", s.start_ns as f64 / 1e9, s.end_ns as f64 / 1e9);
    match u.cpu {
        Some(c) => {
            let _ = write!(
                line,
                "  cpu {:5.1}% (usr {:.1} sys {:.1} irq {:.1} soft {:.1} steal {:.1})",
                c.busy, c.user, c.system, c.irq, c.softirq, c.steal
            );
        }
        None => line.push_str("  cpu n/a"),
    }
    if let Some(i) = &u.interrupts_per_second {
        let _ = write!(line, "  intr {}/s", grouped(i.total, 0));
    }
    for kind in ["NET_RX", "NET_TX"] {
        if let Some(r) = u.softirqs_per_second.get(kind) {
            let _ = write!(line, "  {kind} {}/s", grouped(r.total, 0));
        }
    }
    for i in shown(u, interfaces) {
        let _ = write!(
            line,
            "  {} rx {} Mbit/s {} pkt/s tx {} Mbit/s {} pkt/s",
            i.name,
            grouped(i.rx_bits_per_second / 1e6, 1),
            grouped(i.rx_packets_per_second, 0),
            grouped(i.tx_bits_per_second / 1e6, 1),
            grouped(i.tx_packets_per_second, 0)
        );
        if i.rx_dropped + i.tx_dropped + i.rx_errors + i.tx_errors > 0 {
            let _ = write!(
                line,
                " (drop {}/{} err {}/{})",
                i.rx_dropped, i.tx_dropped, i.rx_errors, i.tx_errors
            );
        }
    }
    if let Some(st) = &u.stack {
        let _ = write!(line, "  retr {}", st.tcp_retransmitted_segments);
        if st.softnet_dropped + st.udp_receive_buffer_errors > 0 {
            let _ = write!(
                line,
                "  backlog drops {} udp rcvbuf errors {}",
                st.softnet_dropped, st.udp_receive_buffer_errors
            );
        }
    }
    if let Some(m) = &u.memory {
        let _ = write!(line, "  mem {:.2} GiB used", m.used_bytes as f64 / (1u64 << 30) as f64);
    }
    for n in &u.notes {
        let _ = write!(line, "  ({n})");
    }
    line
}

/// `calc goodput`: one line per transport.
pub fn goodput_text(rows: &[Goodput]) -> String {
    let mut out = String::new();
    for g in rows {
        let what = match g.transport {
            Transport::Tcp => "TCP with timestamps",
            Transport::Udp => "UDP",
        };
        let _ = writeln!(
            out,
            "{} for {what} over IPv{} at {}, MTU {} ({} payload bytes per {} {})",
            BitRate(g.bits_per_second),
            if g.ipv6 { 6 } else { 4 },
            BitRate(g.link_bits_per_second),
            g.mtu_bytes,
            g.payload_bytes,
            g.wire_bytes,
            g.link_kind.counts()
        );
    }
    out
}

/// `sys --config`: the configuration, a line per item.
pub fn config_text(c: &linerate_wire::metrics::host::HostConfig) -> String {
    let mut out = String::new();
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
    let num = |v: Option<u32>| v.map_or("n/a".into(), |n| n.to_string());
    let _ = writeln!(
        out,
        "host        {} ({}), kernel {}",
        opt(&c.hostname),
        opt(&c.distribution),
        opt(&c.kernel)
    );
    let cpu = &c.cpu;
    let _ = writeln!(
        out,
        "cpu         {}: {} socket(s), {} core(s), {} thread(s) online [{}]",
        opt(&cpu.model),
        num(cpu.sockets),
        num(cpu.cores),
        num(cpu.threads),
        cpu.online.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    );
    let _ = writeln!(
        out,
        "clock       {} MHz now, {} MHz max, governor {}, driver {}",
        cpu.current_mhz.map_or("n/a".into(), |m| format!("{m:.0}")),
        cpu.max_mhz.map_or("n/a".into(), |m| format!("{m:.0}")),
        opt(&cpu.governor),
        opt(&cpu.scaling_driver)
    );
    let _ = writeln!(
        out,
        "memory      {} GiB, {} NUMA node(s), irqbalance {}",
        c.memory_bytes
            .map_or("n/a".into(), |b| format!("{:.1}", b as f64 / (1u64 << 30) as f64)),
        num(c.numa_nodes),
        match c.irqbalance_running {
            Some(true) => "running",
            Some(false) => "not running",
            None => "n/a",
        }
    );
    for i in &c.interfaces {
        let _ = writeln!(
            out,
            "interface   {}: driver {} {} firmware {} bus {} kind {}",
            i.name,
            opt(&i.driver),
            opt(&i.driver_version),
            opt(&i.firmware_version),
            opt(&i.bus_address),
            opt(&i.kind)
        );
        let _ = writeln!(
            out,
            "            link {} Mbit/s {} {}, MTU {} (max {}), qdisc {}, NUMA node {}",
            num(i.speed_mbit_per_second),
            opt(&i.duplex),
            opt(&i.operstate),
            num(i.mtu_bytes),
            num(i.max_mtu_bytes),
            opt(&i.qdisc),
            num(i.numa_node)
        );
        let offloads: Vec<String> = i
            .offloads
            .iter()
            .map(|(k, on)| format!("{k} {}", if *on { "on" } else { "off" }))
            .collect();
        let _ = writeln!(out, "            offloads {}", offloads.join(", "));
        let _ = writeln!(
            out,
            "            rings rx {}/{} tx {}/{}; channels rx {} tx {} combined {}/{}",
            num(i.rings.rx),
            num(i.rings.rx_max),
            num(i.rings.tx),
            num(i.rings.tx_max),
            num(i.channels.rx),
            num(i.channels.tx),
            num(i.channels.combined),
            num(i.channels.combined_max)
        );
        for q in &i.irqs {
            let cpus: Vec<String> = q.cpus.iter().map(u32::to_string).collect();
            let _ = writeln!(out, "            irq {} {} on CPUs {}", q.irq, q.name, cpus.join(","));
        }
    }
    for (k, v) in &c.sysctls {
        let _ = writeln!(out, "sysctl      {k} = {v}");
    }
    for n in &c.notes {
        let _ = writeln!(out, "note        {n}");
    }
    out
}

/// `doctor`: one line per finding, its fix indented below it.
pub fn doctor_text(findings: &[linerate_wire::metrics::doctor::Finding]) -> String {
    use linerate_wire::metrics::doctor::Severity;
    let mut out = String::new();
    for f in findings {
        let tag = match f.severity {
            Severity::Warn => "WARN",
            Severity::Info => "info",
            Severity::Ok => "ok",
        };
        let _ = writeln!(out, "{tag:<5} {:<14} {}", f.check, f.message);
        if let Some(fix) = &f.fix {
            let _ = writeln!(out, "{:20} fix: {fix}", "");
        }
    }
    let warnings = findings.iter().filter(|f| f.severity == Severity::Warn).count();
    let _ = writeln!(out, "{warnings} warning(s); nothing was changed.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::goodput::goodput;

    #[test]
    fn goodput_lines_carry_the_figures() {
        let g = goodput(
            10e9,
            9000,
            Transport::Tcp,
            false,
            linerate_wire::goodput::LinkKind::Ethernet,
        )
        .expect("fits");
        let t = goodput_text(&[g]);
        assert!(t.starts_with("9.900 Gbit/s for TCP with timestamps"), "{t}");
        assert!(t.contains("(8948 payload bytes per 9038 on the wire: "), "{t}");
        // A link under a gigabit in the unit it was given, not "0.048 Gbit/s".
        let g = goodput(50e6, 1500, Transport::Tcp, false, linerate_wire::goodput::LinkKind::Tbf).expect("fits");
        let t = goodput_text(&[g]);
        assert!(
            t.starts_with("47.820 Mbit/s for TCP with timestamps over IPv4 at 50.000 Mbit/s"),
            "{t}"
        );
    }

    /// One second of host usage in which only `interface` was counted.
    fn one_second(interface: InterfaceUsage) -> HostInterval {
        HostInterval {
            start_ns: 0,
            end_ns: 1_000_000_000,
            usage: HostUsage {
                seconds: 1.0,
                interfaces: vec![interface],
                ..Default::default()
            },
        }
    }

    #[test]
    fn a_line_names_cpu_interrupts_and_interfaces() {
        let s = one_second(InterfaceUsage {
            name: "eth0".into(),
            rx_bytes: 125_000_000,
            rx_bits_per_second: 1e9,
            rx_packets_per_second: 83_000.0,
            ..Default::default()
        });
        let l = usage_line(&s, &[]);
        assert!(l.contains("eth0 rx 1,000.0 Mbit/s 83,000 pkt/s"), "{l}");
        assert!(l.contains("cpu n/a"));
    }

    #[test]
    fn issue_13_a_named_idle_interface_is_shown_and_only_the_named_ones() {
        let s = one_second(InterfaceUsage {
            name: "lo".into(),
            rx_bytes: 1000,
            ..Default::default()
        });
        let l = usage_line(&s, &["eth0".into()]);
        assert!(l.contains("eth0 rx 0.0 Mbit/s 0 pkt/s tx 0.0 Mbit/s 0 pkt/s"), "{l}");
        assert!(!l.contains(" lo "), "{l}");
    }
}
