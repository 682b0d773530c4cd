//! The summary as text, in the layout of the NTttcp reports: a SEND SIDE and a RECEIVE SIDE block
//! (total MBytes, seconds, Mbit/s, average CPU %), one column per agent when there are several
//! and a total, then one row per stream; last, the run's headline line ([`crate::headline`]), so
//! that `tail -1` finds the answer. A side nobody counted (a lost agent) shows n/a, never 0.

use linerate_wire::result::{SideSummary, TestResult};
use linerate_wire::spec::{Direction, Limit, TestSpec};
use std::fmt::Write;

pub(crate) mod http;
mod iperf3;
pub(crate) mod latency;
mod mix;
mod rpm;
mod rr;
mod sides;
mod udp;
/// One row of a kind's block (UDP, REQUEST-RESPONSE, HTTP, IPERF3, MIX): its label in a column
/// of 38, then the value.
fn row(out: &mut String, label: &str, value: String) {
    let _ = writeln!(out, "  {label:<38}{value}");
}

/// A count with its rate: "1,234 (56.7 per second)".
fn count_per_second(count: f64, per_second: f64) -> String {
    format!("{} ({} per second)", grouped(count, 0), grouped(per_second, 1))
}

use http::{cost_block, timeline_table, users_block};
use iperf3::iperf3_block;
use latency::latency_block;
use mix::mix_block;
use rr::rr_block;
use sides::{Streams, side_name, table_row, tcp_rows, widths};
use udp::{tcp_loss_line, udp_block};

/// 1,234,567.891 style: thousands separated, fixed decimals (in core: the protocol's errors
/// use it too).
pub use linerate_wire::units::grouped;

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |p| format!("{p:.2}%"))
}

/// A side's host CPU, marked `!` where the host was CPU-bound under its line rate (the
/// run's notes name the host and say what it means).
fn host_cpu(s: &SideSummary) -> String {
    let at_line_rate = s.line_rate.as_ref().is_some_and(|l| l.percent >= 90.0);
    match s.cpu.host_percent {
        Some(p) if p >= linerate_wire::result::CPU_BOUND_PERCENT && !at_line_rate => format!("{}!", pct(Some(p))),
        other => pct(other),
    }
}

/// A side's CPU split, `usr/sys/irq/softirq` percent with `decimals` places, or n/a.
pub(crate) fn cpu_split(s: &SideSummary, decimals: usize) -> String {
    s.cpu.split.map_or("n/a".into(), |c| {
        let d = decimals;
        format!("{:.d$}/{:.d$}/{:.d$}/{:.d$}", c.user, c.system, c.irq, c.softirq)
    })
}

/// A side's interrupts per second over all CPUs, or n/a.
pub(crate) fn interrupts(s: &SideSummary) -> String {
    s.interrupts_per_second
        .as_ref()
        .map_or("n/a".into(), |i| grouped(i.total, 0))
}

/// Whether the client and an agent ran on one host (the same boot id): the loopback case, where
/// both sides' host counters are the same machine's.
fn shares_client_host(r: &TestResult) -> bool {
    let boot = |name: &str| r.hosts.get(name).and_then(|h| h.info.boot_id.as_deref());
    boot("client").is_some_and(|c| {
        r.hosts
            .iter()
            .any(|(name, h)| name != "client" && h.info.boot_id.as_deref() == Some(c))
    })
}

/// A block of rows (label, one value per column).
/// `transactions`: a request-response run, whose cost is CPU per transaction, not per Gbit.
fn side_block(
    out: &mut String,
    title: &str,
    columns: &[(String, &SideSummary)],
    sending: bool,
    transactions: Option<u64>,
) {
    let (label_w, col_w) = widths(columns);
    let _ = write!(out, "{title:<label_w$}");
    for (name, _) in columns {
        let _ = write!(out, "{name:>col_w$}");
    }
    out.push('\n');
    let mut row = |label: &str, f: &dyn Fn(&SideSummary) -> String| table_row(out, label, columns, f);
    row("Total bytes transferred (MBytes)", &|s| {
        grouped(s.bytes as f64 / 1e6, 3)
    });
    row("Time (seconds)", &|s| format!("{:.3}", s.seconds));
    row("Throughput (Mbit/s)", &|s| grouped(s.bits_per_second / 1e6, 3));
    row("Average CPU utilisation, host", &host_cpu);
    // Both CPU rows share one base: 100 % = every CPU of the host busy.
    row("Average CPU utilisation, linerate", &|s| {
        pct(s.cpu.process_percent_of_host)
    });
    row("  of which usr/sys/irq/softirq (%)", &|s| cpu_split(s, 0));
    row("Interrupts (per second, all CPUs)", &interrupts);
    let kind = if sending { "NET_TX" } else { "NET_RX" };
    row(&format!("{kind} softirqs (per second)"), &|s| {
        s.softirqs_per_second
            .get(kind)
            .map_or("n/a".into(), |r| grouped(r.total, 0))
    });
    if let Some(n) = transactions.filter(|n| *n > 0) {
        row("CPU per transaction (us of one core)", &|s| {
            s.efficiency.map_or("n/a".into(), |e| {
                format!("{:.2}", e.busy_cores * s.seconds * 1e6 / n as f64)
            })
        });
    } else {
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
    }
    if columns.iter().any(|(_, s)| s.line_rate.is_some()) {
        row("Share of line rate (%)", &|s| {
            s.line_rate
                .as_ref()
                .map_or("n/a".into(), |l| format!("{:.1}", l.percent))
        });
    }
}

/// A sending block: the side's rows, then its senders' TCP_INFO rows.
fn send_block(
    out: &mut String,
    r: &TestResult,
    columns: &[(String, &SideSummary)],
    covers: &[Streams<'_>],
    transactions: Option<u64>,
) {
    side_block(out, "SEND SIDE", columns, true, transactions);
    tcp_rows(out, r, columns, covers);
}

/// A run's limit as the title says it: seconds, or `n UNIT per stream`.
fn limit_text(limit: Limit, unit: &str) -> String {
    match limit {
        Limit::Seconds(s) => format!("{s} s"),
        Limit::Buffers(n) => format!("{n} {unit} per stream"),
    }
}

/// The run's first line: what was asked (kind, streams, direction, limit, sizes, agents); a
/// third-party run (`--from A`) says on a second line which agent was the client.
fn title(r: &TestResult) -> String {
    let mut line = first_line(r);
    if let Some(from) = &r.from {
        let _ = writeln!(
            line,
            "run from agent {from} (a third-party test): \"client\" below is {from}"
        );
    }
    line
}

fn first_line(r: &TestResult) -> String {
    let agents: Vec<&str> = r.summary.agents.iter().map(|a| a.agent.as_str()).collect();
    let direction = match r.options.direction() {
        Direction::Send => "client sends",
        Direction::Reverse => "agents send (reverse)",
        Direction::Bidir => "both directions (bidir)",
    };
    match &r.options {
        TestSpec::Tcp(spec) => {
            let (direction, limit) = match spec.mix {
                Some(m) => (
                    format!("mixed transfers ({m} client reads:writes)"),
                    limit_text(spec.timing.limit, "transfers"),
                ),
                None => (direction.to_string(), limit_text(spec.timing.limit, "buffers")),
            };
            format!(
                "linerate {} tcp: {} stream(s) per agent, {direction}, {limit}, buffer {}, agents {}\n",
                r.linerate,
                spec.streams,
                spec.buffer_bytes,
                agents.join(", ")
            )
        }
        TestSpec::Rr(spec) => {
            let limit = limit_text(spec.timing.limit, "transactions");
            let proto = match (spec.proto, spec.connect) {
                (linerate_wire::spec::RrProto::Tcp, true) => "tcp, a connection per transaction",
                (linerate_wire::spec::RrProto::Tcp, false) => "tcp",
                (linerate_wire::spec::RrProto::Udp, _) => "udp",
            };
            let lp = match spec.rate {
                Some(r) => format!("open loop at {r} transactions/s per stream"),
                None => "closed loop".into(),
            };
            format!(
                "linerate {} rr: {proto}, {} stream(s) per agent, request {} B, response {} B, {lp}, {limit}, agents {}\n",
                r.linerate,
                spec.streams,
                spec.request_bytes,
                spec.response_bytes,
                agents.join(", ")
            )
        }
        TestSpec::Http(spec) => {
            let mode = match spec.rate {
                Some(r) => format!("open loop at {r} requests/s, at most {} in flight", spec.users),
                None => format!("{} users, think {} ms", spec.users, spec.think_ms),
            };
            format!(
                "linerate {} http: {mode}, {}, ramp {} s then {} s, {}\n",
                r.linerate,
                match (spec.http2, spec.keepalive) {
                    (Some(h2), _) => format!("HTTP/2, {} streams per connection", h2.streams),
                    (None, true) => "keep-alive".into(),
                    (None, false) => "a new connection per request".into(),
                },
                spec.timing.warmup_seconds,
                spec.timing.limit.seconds().unwrap_or_default(),
                spec.urls.join(" ")
            )
        }
        TestSpec::Udp(spec) => {
            let limit = limit_text(spec.timing.limit, "datagrams");
            let pace = match spec.stream_bits_per_second() {
                Some(bps) => format!(
                    "one every {} us ({} Mbit/s per stream)",
                    spec.gap_ns as f64 / 1e3,
                    grouped(bps / 1e6, 3)
                ),
                None => "as fast as possible".into(),
            };
            format!(
                "linerate {} udp: {} stream(s) per agent, {direction}, {limit}, {} bytes per datagram, {pace}, agents {}\n",
                r.linerate,
                spec.streams,
                spec.payload_bytes,
                agents.join(", ")
            )
        }
        TestSpec::Rpm(spec) => rpm::title(r, spec),
    }
}

/// An HTTP run: the users' figures, the client's and the server's cost, the timeline.
fn render_http(r: &TestResult) -> String {
    let mut out = title(r);
    let Some(h) = &r.summary.http else { return out };
    profile_lines(&mut out, r);
    out.push('\n');
    users_block(&mut out, h);
    out.push('\n');
    cost_block(&mut out, r, h);
    timeline_table(&mut out, r);
    latency_block(&mut out, r);
    out.push_str("\nMbit/s = 10^6 bits per second of HTTP bytes (heads and bodies) read by the client; response time from each request's intended start to its last byte.\n");
    for n in &r.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    if r.partial {
        out.push_str("PARTIAL: the run was cut short; the figures cover what was measured until then.\n");
    }
    out
}

/// A responsiveness run: its title, the RESPONSIVENESS block, the notes.
fn render_rpm(r: &TestResult) -> String {
    let mut out = title(r);
    out.push('\n');
    rpm::rpm_block(&mut out, r);
    for n in &r.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    if r.partial {
        out.push_str("PARTIAL: the run was cut short; the figures cover what was measured until then.\n");
    }
    out
}

/// The whole text of a run: its report, then its headline line last ([`crate::headline`]), so
/// that `tail -1` finds it.
pub fn render(r: &TestResult) -> String {
    let mut out = if r.summary.http.is_some() {
        render_http(r)
    } else if matches!(r.options, TestSpec::Rpm(_)) {
        render_rpm(r)
    } else {
        render_streams(r)
    };
    out += &crate::headline::run_line(r);
    out.push('\n');
    out
}

/// A tcp, udp or rr run: the send and receive sides, streams, the kind's block, interfaces.
fn render_streams(r: &TestResult) -> String {
    let mut out = title(r);
    out.push('\n');
    sides_blocks(&mut out, r);
    if r.summary.rr.is_none() {
        stream_table(&mut out, r);
    }
    udp_block(&mut out, r);
    rr_block(&mut out, r);
    mix_block(&mut out, r);
    iperf3_block(&mut out, r);
    latency_block(&mut out, r);
    interfaces_block(&mut out, r);
    footnotes(&mut out, r);
    window_advice(&mut out, r);
    profile_lines(&mut out, r);
    lab_line(&mut out, r);
    if r.partial {
        out.push_str("PARTIAL: the run was cut short; the figures cover what was measured until then.\n");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The SEND SIDE and RECEIVE SIDE blocks: a column per agent and their total, or with both
/// directions, a pair of blocks per direction and their total.
fn sides_blocks(out: &mut String, r: &TestResult) {
    let multi = r.summary.agents.len() > 1;
    let transactions = r.summary.rr.as_ref().map(|x| x.transactions);
    // Each column and the streams it covers. With several agents, an agent's column the client
    // counted is named for where the data went: "to h2" (the client sent to h2), "from h2" (the
    // client received from h2); one the agent counted bears its name.
    let columns = |sending: bool| -> (Vec<(String, &SideSummary)>, Vec<Streams<'_>>) {
        let mut cols: Vec<(String, &SideSummary)> = Vec::new();
        let mut covers = Vec::new();
        if multi {
            for a in &r.summary.agents {
                let s = if sending { &a.sent } else { &a.received };
                let name = if s.counted_by == ["client"] {
                    format!("{} {}", if sending { "to" } else { "from" }, a.agent)
                } else {
                    a.agent.clone()
                };
                cols.push((name, s));
                covers.push(Streams {
                    agent: Some(&a.agent),
                    direction: None,
                });
            }
        }
        let total = if sending { &r.summary.sent } else { &r.summary.received };
        let name = if multi {
            "total".to_string()
        } else {
            side_name(r, total)
        };
        cols.push((name, total));
        covers.push(Streams::default());
        (cols, covers)
    };
    match &r.summary.directions {
        Some(dirs) => {
            for (name, what) in [("forward", "client -> agents"), ("reverse", "agents -> client")] {
                if let Some(d) = dirs.get(name) {
                    let _ = writeln!(out, "{} ({what})", name.to_uppercase());
                    let only = Streams {
                        agent: None,
                        direction: Some(name),
                    };
                    send_block(out, r, &[(side_name(r, &d.sent), &d.sent)], &[only], transactions);
                    side_block(
                        out,
                        "RECEIVE SIDE",
                        &[(side_name(r, &d.received), &d.received)],
                        false,
                        transactions,
                    );
                    out.push('\n');
                }
            }
            let _ = writeln!(out, "BOTH DIRECTIONS");
            send_block(
                out,
                r,
                &[("total".into(), &r.summary.sent)],
                &[Streams::default()],
                transactions,
            );
            side_block(
                out,
                "RECEIVE SIDE",
                &[("total".into(), &r.summary.received)],
                false,
                transactions,
            );
        }
        None => {
            let (cols, covers) = columns(true);
            send_block(out, r, &cols, &covers, transactions);
            side_block(out, "RECEIVE SIDE", &columns(false).0, false, transactions);
        }
    }
}

/// What the units mean, how CPU is counted, and each side's line rate, under the tables.
fn footnotes(out: &mut String, r: &TestResult) {
    out.push_str("\nMBytes = 10^6 bytes, Mbit/s = 10^6 bits per second; the receive side's count is the throughput.\n");
    out.push_str("Efficiency counts the counting hosts' busy CPU (all of it, not only linerate's); on one host both ends share it.\n");
    if r.summary.udp.is_some() {
        if matches!(&r.options, TestSpec::Udp(u) if u.own_windows()) {
            out.push_str("UDP: each side's time and throughput are over its own window: the send side's from first to last send, the receive side's from first to last arrival.\n");
        } else {
            out.push_str("UDP: with a warm-up or cool-down, time and throughput are over the measurement window.\n");
        }
    }
    if let Some(line) = tcp_loss_line(r) {
        let _ = writeln!(out, "{line}");
    }
    let cpus: Vec<String> = r
        .hosts
        .iter()
        .map(|(name, h)| format!("{name}: {} CPUs", h.info.cores))
        .collect();
    let _ = writeln!(
        out,
        "CPU utilisation, host and linerate alike, is a share of the whole host: 100% = all its CPUs busy ({}).",
        cpus.join("; ")
    );
    if shares_client_host(r) {
        out.push_str("client and agent share one host: its counters are counted once per side, and both sides show that one host.\n");
    }
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
}

/// Which window limited a TCP run and what to raise, when it did.
fn window_advice(out: &mut String, r: &TestResult) {
    // Advice never claims a ceiling below what was measured (older documents may).
    if let Some(t) = r.summary.sent.tcp.as_ref()
        && let Some(by) = &t.limited_by
        && t.window_limit_bits_per_second * linerate_wire::result::CEILING_SLACK >= r.summary.received.bits_per_second
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
}

/// The lab the run was measured in: each host's link and what emulates each property.
fn lab_line(out: &mut String, r: &TestResult) {
    if let Some(lab) = &r.lab {
        let links: Vec<String> = lab
            .hosts
            .iter()
            .map(|h| {
                let by: Vec<String> = h.backends.used().iter().map(|(k, b)| format!("{k} by {b}")).collect();
                format!("{} {} ({})", h.name, h.link_text, by.join(", "))
            })
            .collect();
        let _ = writeln!(out, "lab {}: {}", lab.name, links.join("; "));
    }
}

/// One line per agent that ran a profile around the test: its command and undo, how each ended.
fn profile_lines(out: &mut String, r: &TestResult) {
    use linerate_wire::result::CommandRecord;
    use linerate_wire::text::peer_text;
    let ended = |c: &CommandRecord| {
        let how = match c.exit_status {
            Some(code) => format!("exit {code}"),
            None if c.timed_out => "killed at its time-out".to_string(),
            None => "killed".to_string(),
        };
        format!(
            "`{}` {how} in {} ms",
            peer_text(&c.command),
            grouped(c.duration_ms as f64, 0)
        )
    };
    for (host, record) in &r.hosts {
        let Some(p) = &record.profile else { continue };
        let undo = p
            .undo
            .as_ref()
            .map(|u| format!("; undo {}", ended(u)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "agent {}: profile {}: {}{undo}",
            peer_text(host),
            peer_text(&p.name),
            ended(&p.run)
        );
    }
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

/// One row per stream: bytes each way, TCP state at the end.
fn stream_table(out: &mut String, r: &TestResult) {
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
            |c: Option<linerate_wire::result::Counted>| c.map_or("n/a".into(), |c| grouped(c.bytes as f64 / 1e6, 3));
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
            // UDP has no MSS: its sockets' grant says 0.
            s.sender_socket
                .as_ref()
                .filter(|g| g.mss_bytes > 0)
                .map_or("n/a".into(), |g| g.mss_bytes.to_string()),
        );
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
