//! A UDP run's datagram block (UDPmon's figures: counts, loss and where it went, each side's
//! rate over its own window, spacing and delay) and the TCP loss line, as text. In: the
//! `TestResult`; out: text appended to the summary that `super` builds.

use super::grouped;
use super::row;
use linerate_wire::result::{LossCauses, MAX_LOSS_RANGES, RATE_SHORT_PERCENT, RateAchieved, TestResult, UdpSummary};
use std::fmt::Write;

/// Where a UDP run's lost datagrams went, one line per cause that took any, with its fix.
fn loss_cause_lines(c: &LossCauses) -> Vec<String> {
    let mut lines = Vec::new();
    let causes = [
        (
            c.receive_buffer,
            "in the receiver's socket buffer (UDP RcvbufErrors): raise --window",
        ),
        (
            c.receive_interface,
            "at the receiving interface (rx drops, errors): raise its ring (ethtool -G) or slow the sender (--rate, --gap)",
        ),
        (
            c.softnet,
            "in the receiver's softnet backlog: raise net.core.netdev_max_backlog",
        ),
        (
            c.sender,
            "at the sender (UDP SndbufErrors, tx drops): raise --window on the sender or slow it",
        ),
    ];
    for (n, what) in causes {
        if let Some(n) = n.filter(|n| *n > 0) {
            lines.push(format!("{} lost {what}", grouped(n as f64, 0)));
        }
    }
    if let Some(n) = c.train_datagrams
        && !lines.is_empty()
    {
        lines.push(format!(
            "(the kernel dropped whole GSO/GRO trains of up to {n} datagrams; counted per train)"
        ));
    }
    if c.network > 0 {
        lines.push(format!(
            "{} lost in the network (no host counter took them)",
            grouped(c.network as f64, 0)
        ));
    }
    lines
}

/// TCP retransmits beside the interfaces' drops: whether the hosts or the network lost segments.
pub(super) fn tcp_loss_line(r: &TestResult) -> Option<String> {
    let t = r.summary.sent.tcp.as_ref().filter(|t| t.retransmits > 0)?;
    let (received, sent) = (&r.summary.received.interfaces, &r.summary.sent.interfaces);
    let rx: u64 = received.iter().map(|i| i.rx_dropped + i.rx_errors).sum();
    let tx: u64 = sent.iter().map(|i| i.tx_dropped + i.tx_errors).sum();
    let counted = !received.is_empty() || !sent.is_empty();
    let loopback = counted && received.iter().chain(sent).all(|i| i.name == "lo");
    Some(if !counted {
        format!(
            "TCP retransmits {}; the interfaces' drops were not counted.",
            t.retransmits
        )
    } else if loopback && rx + tx == 0 {
        // `quick` said "loss was in the network" where no network was crossed.
        format!(
            "TCP retransmits {}; loopback only, which dropped 0 packets: no network was crossed, so the \
             host itself lost or delayed them (a full receive queue or backlog, or a timer that fired early).",
            t.retransmits
        )
    } else if rx + tx == 0 {
        format!(
            "TCP retransmits {}; the interfaces dropped 0 packets: loss was in the network.",
            t.retransmits
        )
    } else {
        format!(
            "TCP retransmits {}; the interfaces dropped {} on the receiver's side and {} on the sender's.",
            t.retransmits, rx, tx
        )
    })
}

/// The lost datagrams, their share and the runs of consecutive sequence numbers they fell in;
/// when a stream had more runs than its receiver lists, says the list is cut.
fn lost_text(u: &UdpSummary) -> String {
    let head = format!("{} ({:.3} %)", grouped(u.lost as f64, 0), u.loss_percent);
    let listed: u64 = u.loss_ranges.iter().map(|l| l.ranges.len() as u64).sum();
    let runs: u64 = u
        .loss_ranges
        .iter()
        .map(|l| l.range_count.max(l.ranges.len() as u64))
        .sum();
    if u.lost == 0 || runs == 0 {
        return head;
    }
    let mut text = format!(
        "{head} in {} run{} of consecutive datagrams",
        grouped(runs as f64, 0),
        if runs == 1 { "" } else { "s" }
    );
    if listed < runs {
        let _ = write!(
            text,
            " (the JSON lists the first {} per stream: {} of them)",
            grouped(MAX_LOSS_RANGES as f64, 0),
            grouped(listed as f64, 0)
        );
    }
    text
}

/// A paced run's send rate against the rate asked, and the mark when it fell short.
fn rate_text(r: &RateAchieved) -> String {
    let short = if r.percent < RATE_SHORT_PERCENT {
        " NOT REACHED (see the notes)"
    } else {
        ""
    };
    format!(
        "{} of {} Mbit/s ({:.1} %){short}",
        grouped(r.sent_bits_per_second / 1e6, 3),
        grouped(r.asked_bits_per_second / 1e6, 3),
        r.percent
    )
}

/// The UDPmon figures of a UDP run.
pub(super) fn udp_block(out: &mut String, r: &TestResult) {
    let Some(u) = &r.summary.udp else { return };
    let _ = writeln!(out, "\nUDP (received by {})", r.summary.received.counted_by.join(", "));
    match u.received_per_receiver_mean_datagrams {
        // Multicast or several agents: each receiver was sent the datagrams on its own.
        Some(mean) if u.receivers.len() > 1 => {
            row(
                out,
                "Datagrams sent / received per receiver",
                format!(
                    "{} / mean {} over {} receivers",
                    grouped(u.datagrams_sent as f64, 0),
                    grouped(mean, 1),
                    u.receivers.len()
                ),
            );
            for rc in &u.receivers {
                row(
                    out,
                    &format!("  received by {}", rc.counted_by),
                    format!(
                        "{} ({} lost, {:.3} %)",
                        grouped(rc.datagrams_received as f64, 0),
                        grouped(rc.lost as f64, 0),
                        rc.loss_percent
                    ),
                );
            }
        }
        _ => row(
            out,
            "Datagrams sent / received",
            format!(
                "{} / {}",
                grouped(u.datagrams_sent as f64, 0),
                grouped(u.datagrams_received as f64, 0)
            ),
        ),
    }
    row(out, "Lost", lost_text(u));
    if let Some(c) = &u.loss_causes_datagrams
        && u.lost > 0
    {
        for line in loss_cause_lines(c) {
            row(out, "  of which", line);
        }
    }
    row(
        out,
        "Out of order / duplicates",
        format!("{} / {}", u.out_of_order, u.duplicates),
    );
    if let (Some(secs), Some(bps)) = (u.send_window_seconds, u.sent_bits_per_second) {
        row(
            out,
            "Sent (first to last send)",
            format!("{} Mbit/s over {secs:.6} s", grouped(bps / 1e6, 3)),
        );
    }
    if let Some(rate) = &u.send_rate {
        row(out, "Sent of the rate asked", rate_text(rate));
    }
    if let (Some(secs), Some(bps)) = (u.arrival_window_seconds, u.received_bits_per_second) {
        row(
            out,
            "Throughput (first to last arrival)",
            format!("{} Mbit/s over {secs:.6} s", grouped(bps / 1e6, 3)),
        );
    }
    row(
        out,
        "Received (datagrams/s of arrival)",
        grouped(u.packets_per_second, 0),
    );
    if let Some(sp) = &u.arrival_spacing_us {
        row(
            out,
            "Arrival spacing (us)",
            format!(
                "mean {:.2}  stddev {:.2}  p50 {:.2}  p99 {:.2}  max {:.2}",
                sp.mean, sp.stddev, sp.p50, sp.p99, sp.max
            ),
        );
    }
    row(out, "Jitter, RFC 3550 (us)", format!("{:.2}", u.jitter_us));
    if let Some(d) = &u.one_way_delay_us {
        let what = if d.relative {
            "One-way delay (us, above its minimum)"
        } else {
            "One-way delay (us, synchronised clocks)"
        };
        row(
            out,
            what,
            format!(
                "min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
                d.min, d.p50, d.p90, d.p99, d.max
            ),
        );
    }
    if let Some(s) = &u.send_spacing_us {
        let asked = if s.requested > 0.0 {
            format!("asked {:.2}, ", s.requested)
        } else {
            "as fast as possible, ".into()
        };
        row(
            out,
            "Send spacing (us)",
            format!(
                "{asked}achieved mean {:.2} stddev {:.2}, {:.2} % sent late",
                s.mean, s.stddev, s.late_percent
            ),
        );
    }
    row(out, "Arrival times from", u.timestamps.clone());
    for l in u.loss_ranges.iter().take(8) {
        row(
            out,
            &format!("Loss pattern, {} stream {}", l.agent, l.stream),
            format!("|{}|", l.picture),
        );
    }
    // The busiest arrival-spacing bins as bars.
    let max = u.arrival_spacing_histogram.iter().map(|b| b.count).max().unwrap_or(0);
    if max > 0 {
        let _ = writeln!(out, "  Arrival spacing histogram (us: count)");
        let mut bins: Vec<_> = u.arrival_spacing_histogram.iter().collect();
        bins.sort_by_key(|b| std::cmp::Reverse(b.count));
        bins.truncate(12);
        bins.sort_by(|a, b| a.from_us.total_cmp(&b.from_us));
        for b in bins {
            let bar = "#".repeat(((b.count as f64 / max as f64) * 40.0).ceil() as usize);
            let _ = writeln!(out, "    {:>10.0}  {:>10}  {bar}", b.from_us, b.count);
        }
    }
    if !u.one_way_delay_histogram.is_empty() {
        let max = u.one_way_delay_histogram.iter().map(|b| b.count).max().unwrap_or(1);
        let _ = writeln!(out, "  One-way delay histogram (us from: count)");
        for b in &u.one_way_delay_histogram {
            let bar = "#".repeat(((b.count as f64 / max as f64) * 40.0).ceil() as usize);
            let _ = writeln!(out, "    {:>10.1}  {:>10}  {bar}", b.from_us, b.count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::result::{LossRange, StreamLoss};

    #[test]
    fn issue_23_lost_says_what_its_runs_are_and_when_their_list_is_cut() {
        let mut u = UdpSummary::default();
        assert_eq!(lost_text(&u), "0 (0.000 %)", "no loss lists no runs");
        let loss = |lost, ranges: u64, range_count| StreamLoss {
            agent: "h2".into(),
            stream: 0,
            lost,
            ranges: (0..ranges)
                .map(|i| LossRange {
                    first: 10 * i,
                    last: 10 * i,
                })
                .collect(),
            range_count,
            picture: String::new(),
        };
        u.lost = 3;
        u.loss_percent = 0.3;
        u.loss_ranges = vec![loss(3, 2, 2)];
        assert_eq!(lost_text(&u), "3 (0.300 %) in 2 runs of consecutive datagrams");
        u.lost = 5_000;
        u.loss_ranges = vec![loss(4_000, 1_000, 4_000), loss(1_000, 1, 1)];
        assert_eq!(
            lost_text(&u),
            "5,000 (0.300 %) in 4,001 runs of consecutive datagrams (the JSON lists the first 1,000 per stream: 1,001 of them)"
        );
    }

    #[test]
    fn loss_is_named_where_it_happened_with_its_fix() {
        let c = LossCauses {
            receive_buffer: Some(4_400),
            receive_interface: Some(0),
            softnet: None,
            sender: Some(0),
            network: 12,
            train_datagrams: None,
        };
        assert_eq!(
            loss_cause_lines(&c),
            [
                "4,400 lost in the receiver's socket buffer (UDP RcvbufErrors): raise --window",
                "12 lost in the network (no host counter took them)",
            ]
        );
    }
}
