//! The summary as text, in the layout of the NTttcp reports: a SEND SIDE and a RECEIVE SIDE block
//! (total MBytes, seconds, Mbit/s, average CPU %), one column per agent when there are several
//! and a total, then one row per stream.

use linerate_core::result::{SideSummary, TestResult};
use linerate_core::spec::{Direction, Limit, TestSpec};
use std::fmt::Write;

/// 1,234,567.891 style: thousands separated, fixed decimals.
pub fn grouped(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(a, b)| (a, Some(b)));
    let mut out = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |p| format!("{p:.2}%"))
}

/// A block of rows (label, one value per column).
fn side_block(out: &mut String, title: &str, columns: &[(String, &SideSummary)], sending: bool) {
    let label_w = 38;
    let col_w = columns.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(14) + 2;
    let _ = write!(out, "{title:<label_w$}");
    for (name, _) in columns {
        let _ = write!(out, "{name:>col_w$}");
    }
    out.push('\n');
    let mut row = |label: &str, f: &dyn Fn(&SideSummary) -> String| {
        let _ = write!(out, "  {label:<w$}", w = label_w - 2);
        for (_, s) in columns {
            let _ = write!(out, "{:>col_w$}", f(s));
        }
        out.push('\n');
    };
    row("Total bytes transferred (MBytes)", &|s| {
        grouped(s.bytes as f64 / 1e6, 3)
    });
    row("Time (seconds)", &|s| format!("{:.3}", s.seconds));
    row("Throughput (Mbit/s)", &|s| grouped(s.bits_per_second / 1e6, 3));
    row("Average CPU utilisation, host", &|s| pct(s.cpu.host_percent));
    row("Average CPU utilisation, linerate", &|s| pct(s.cpu.process_percent));
    row("  of which usr/sys/irq/softirq (%)", &|s| {
        s.cpu.split.map_or("n/a".into(), |c| {
            format!("{:.0}/{:.0}/{:.0}/{:.0}", c.user, c.system, c.irq, c.softirq)
        })
    });
    row("Interrupts (per second, all CPUs)", &|s| {
        s.interrupts_per_second
            .as_ref()
            .map_or("n/a".into(), |i| grouped(i.total, 0))
    });
    let kind = if sending { "NET_TX" } else { "NET_RX" };
    row(&format!("{kind} softirqs (per second)"), &|s| {
        s.softirqs_per_second
            .get(kind)
            .map_or("n/a".into(), |r| grouped(r.total, 0))
    });
    row("Throughput per busy core (Gbit/s)", &|s| {
        s.efficiency.map_or("n/a".into(), |e| format!("{:.3}", e.gbit_per_core))
    });
    row("CPU per Gbit/s (% of one core)", &|s| {
        s.efficiency
            .map_or("n/a".into(), |e| format!("{:.2}", e.cpu_percent_per_gbit))
    });
    row("Cycles per byte", &|s| {
        s.efficiency
            .and_then(|e| e.cycles_per_byte)
            .map_or("n/a".into(), |c| format!("{c:.3}"))
    });
    if columns.iter().any(|(_, s)| s.line_rate.is_some()) {
        row("Share of line rate (%)", &|s| {
            s.line_rate
                .as_ref()
                .map_or("n/a".into(), |l| format!("{:.1}", l.percent))
        });
    }
    if sending {
        row("TCP retransmits (segments)", &|s| {
            s.tcp.as_ref().map_or("n/a".into(), |t| t.retransmits.to_string())
        });
        row("RTT at end (us, mean of streams)", &|s| {
            s.tcp.as_ref().map_or("n/a".into(), |t| format!("{:.0}", t.rtt_us))
        });
        row("cwnd at end (KiB, mean of streams)", &|s| {
            s.tcp
                .as_ref()
                .map_or("n/a".into(), |t| format!("{:.0}", t.cwnd_bytes / 1024.0))
        });
    }
}

fn headline(r: &TestResult) -> String {
    let TestSpec::Tcp(spec) = &r.options;
    let agents: Vec<&str> = r.summary.agents.iter().map(|a| a.agent.as_str()).collect();
    let direction = match spec.direction {
        Direction::Send => "client sends",
        Direction::Reverse => "agents send (reverse)",
        Direction::Bidir => "both directions (bidir)",
    };
    let limit = match spec.limit {
        Limit::Seconds(s) => format!("{s} s"),
        Limit::Buffers(n) => format!("{n} buffers per stream"),
    };
    format!(
        "linerate {} tcp: {} stream(s) per agent, {direction}, {limit}, buffer {}, agents {}\n",
        r.linerate,
        spec.streams,
        spec.buffer_bytes,
        agents.join(", ")
    )
}

/// The whole text summary.
pub fn render(r: &TestResult) -> String {
    let mut out = headline(r);
    out.push('\n');
    let multi = r.summary.agents.len() > 1;
    let columns = |sending: bool| -> Vec<(String, &SideSummary)> {
        let mut cols: Vec<(String, &SideSummary)> = Vec::new();
        if multi {
            for a in &r.summary.agents {
                let s = if sending { &a.sent } else { &a.received };
                if s.streams > 0 {
                    cols.push((a.agent.clone(), s));
                }
            }
        }
        let total = if sending { &r.summary.sent } else { &r.summary.received };
        let name = if multi {
            "total".to_string()
        } else {
            total.counted_by.join(", ")
        };
        cols.push((name, total));
        cols
    };
    match &r.summary.directions {
        Some(dirs) => {
            for (name, what) in [("forward", "client -> agents"), ("reverse", "agents -> client")] {
                if let Some(d) = dirs.get(name) {
                    let _ = writeln!(out, "{} ({what})", name.to_uppercase());
                    side_block(&mut out, "SEND SIDE", &[(d.sent.counted_by.join(", "), &d.sent)], true);
                    side_block(
                        &mut out,
                        "RECEIVE SIDE",
                        &[(d.received.counted_by.join(", "), &d.received)],
                        false,
                    );
                    out.push('\n');
                }
            }
            let _ = writeln!(out, "BOTH DIRECTIONS");
            side_block(&mut out, "SEND SIDE", &[("total".into(), &r.summary.sent)], true);
            side_block(
                &mut out,
                "RECEIVE SIDE",
                &[("total".into(), &r.summary.received)],
                false,
            );
        }
        None => {
            side_block(&mut out, "SEND SIDE", &columns(true), true);
            side_block(&mut out, "RECEIVE SIDE", &columns(false), false);
        }
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "{:>6} {:<22} {:<8} {:>12} {:>12} {:>8} {:>12} {:>6} {:>8} {:>9} {:>9} {:>6}",
        "stream",
        "agent",
        "dir",
        "sent MB",
        "recv MB",
        "recv s",
        "recv Mbit/s",
        "retr",
        "rtt us",
        "cwnd KiB",
        "rcvbuf",
        "mss"
    );
    for s in &r.summary.streams {
        let mb =
            |c: Option<linerate_core::result::Counted>| c.map_or("n/a".into(), |c| grouped(c.bytes as f64 / 1e6, 3));
        let recv = s.received;
        let _ = writeln!(
            out,
            "{:>6} {:<22} {:<8} {:>12} {:>12} {:>8} {:>12} {:>6} {:>8} {:>9} {:>9} {:>6}",
            s.stream,
            s.agent,
            s.direction,
            mb(s.sent),
            mb(s.received),
            recv.map_or("n/a".into(), |c| format!("{:.3}", c.seconds)),
            recv.map_or("n/a".into(), |c| grouped(c.bits_per_second / 1e6, 1)),
            s.tcp.as_ref().map_or("n/a".into(), |t| t.retransmits.to_string()),
            s.tcp.map_or("n/a".into(), |t| t.rtt_us.to_string()),
            s.tcp
                .map_or("n/a".into(), |t| format!("{:.0}", t.cwnd_bytes as f64 / 1024.0)),
            s.receiver_socket
                .as_ref()
                .map_or("n/a".into(), |g| g.rcvbuf_bytes.to_string()),
            s.sender_socket
                .as_ref()
                .map_or("n/a".into(), |g| g.mss_bytes.to_string()),
        );
    }
    interfaces_block(&mut out, r);
    out.push_str("\nMBytes = 10^6 bytes, Mbit/s = 10^6 bits per second; the receive side's count is the throughput.\n");
    out.push_str("Efficiency counts the counting hosts' busy CPU (all of it, not only linerate's); on one host both ends share it.\n");
    for (name, side) in [("send", &r.summary.sent), ("receive", &r.summary.received)] {
        if let Some(l) = &side.line_rate {
            let _ = writeln!(
                out,
                "Line rate ({name} side): {} Mbit/s of goodput at {} Mbit/s, MTU {} ({}).",
                grouped(l.limit_bits_per_second / 1e6, 1),
                grouped(l.link_bits_per_second / 1e6, 0),
                l.mtu_bytes,
                l.source
            );
        }
    }
    if let Some(t) = r.summary.sent.tcp.as_ref()
        && let Some(by) = &t.limited_by
    {
        let _ = writeln!(
            out,
            "LIMITED BY THE {}: it stalled the senders {:.0}% of their busy time; a window of {} KiB at RTT {:.1} ms allows {} Mbit/s. Raise {} towards the bandwidth-delay product (rate x RTT).",
            by.to_uppercase(),
            if by == "receive window" {
                t.rwnd_limited_percent
            } else {
                t.sndbuf_limited_percent
            },
            grouped(t.window_bytes / 1024.0, 0),
            t.rtt_us / 1000.0,
            grouped(t.window_limit_bits_per_second / 1e6, 1),
            if by == "receive window" { "--window" } else { "--sndbuf" },
        );
    }
    if let Some(lab) = &r.lab {
        let links: Vec<String> = lab["hosts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| {
                let by: Vec<String> = h["backends"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, b)| b.as_str().map(|b| format!("{k} by {b}")))
                    .collect();
                format!(
                    "{} {} ({})",
                    h["name"].as_str().unwrap_or("?"),
                    h["link_text"].as_str().unwrap_or("?"),
                    by.join(", ")
                )
            })
            .collect();
        let _ = writeln!(out, "lab {}: {}", lab["name"].as_str().unwrap_or("?"), links.join("; "));
    }
    if r.partial {
        out.push_str("PARTIAL: the run was cut short; the figures cover what was measured until then.\n");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The interfaces each counting side's kernel saw move data over the window.
fn interfaces_block(out: &mut String, r: &TestResult) {
    let sides = [("send", &r.summary.sent), ("receive", &r.summary.received)];
    if sides.iter().all(|(_, s)| s.interfaces.is_empty()) {
        return;
    }
    let _ = writeln!(
        out,
        "\n{:<8} {:<16} {:<20} {:>12} {:>12} {:>12} {:>12} {:>8} {:>8}",
        "side", "counted by", "interface", "rx Mbit/s", "rx pkt/s", "tx Mbit/s", "tx pkt/s", "drops", "errors"
    );
    for (name, s) in sides {
        for i in &s.interfaces {
            let _ = writeln!(
                out,
                "{:<8} {:<16} {:<20} {:>12} {:>12} {:>12} {:>12} {:>8} {:>8}",
                name,
                s.counted_by.join(","),
                i.name,
                grouped(i.rx_bits_per_second / 1e6, 1),
                grouped(i.rx_packets_per_second, 0),
                grouped(i.tx_bits_per_second / 1e6, 1),
                grouped(i.tx_packets_per_second, 0),
                i.rx_dropped + i.tx_dropped,
                i.rx_errors + i.tx_errors
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(grouped(107_520.0, 3), "107,520.000");
        assert_eq!(grouped(9858.2281, 3), "9,858.228");
        assert_eq!(grouped(12.5, 1), "12.5");
        assert_eq!(grouped(-1234.0, 0), "-1,234");
        assert_eq!(grouped(999.9996, 3), "1,000.000");
    }
}
