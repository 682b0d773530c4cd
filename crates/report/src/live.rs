//! One line per interval while a test runs, summed over streams by role.

use linerate_wire::result::{IntervalSample, Role};

/// Formats one interval's samples: time span, then sent and received throughput over all
/// streams, with retransmits in the interval and mean RTT and cwnd of the sending streams.
/// `roles[stream]` says whether this end sent or received each stream; `retrans_before` carries
/// each stream's retransmit count at the previous interval.
pub fn interval_line(samples: &[IntervalSample], roles: &[Role], retrans_before: &mut [u64]) -> String {
    let Some(first) = samples.first() else {
        return String::new();
    };
    let secs = first.end_ns.saturating_sub(first.start_ns) as f64 / 1e9;
    let (mut sent, mut recv, mut retr, mut rtt, mut cwnd, mut n) = (0u64, 0u64, 0u64, 0f64, 0f64, 0usize);
    let (mut has_sent, mut has_recv) = (false, false);
    for s in samples {
        let i = usize::from(s.stream);
        match roles.get(i) {
            Some(Role::Send) => {
                sent += s.bytes;
                has_sent = true;
                if let Some(t) = s.tcp {
                    let before = retrans_before.get(i).copied().unwrap_or(0);
                    retr += t.retransmits.saturating_sub(before);
                    if let Some(b) = retrans_before.get_mut(i) {
                        *b = t.retransmits;
                    }
                    rtt += f64::from(t.rtt_us);
                    cwnd += t.cwnd_bytes as f64;
                    n += 1;
                }
            }
            _ => {
                recv += s.bytes;
                has_recv = true;
            }
        }
    }
    let mbps = |b: u64| if secs > 0.0 { b as f64 * 8.0 / secs / 1e6 } else { 0.0 };
    let mut line = format!(
        "[{:7.2}-{:7.2} s]",
        first.start_ns as f64 / 1e9,
        first.end_ns as f64 / 1e9
    );
    if has_sent {
        line += &format!("  sent {:>10.1} Mbit/s", mbps(sent));
        if n > 0 {
            line += &format!(
                "  retr {retr:>5}  rtt {:>7.0} us  cwnd {:>8.0} KiB",
                rtt / n as f64,
                cwnd / n as f64 / 1024.0
            );
        }
    }
    if has_recv {
        line += &format!("  received {:>10.1} Mbit/s", mbps(recv));
    }
    line
}

/// A request-response or HTTP interval: `what` completed per second by the asking streams.
pub fn completed_line(samples: &[IntervalSample], roles: &[Role], what: &str) -> String {
    let Some(first) = samples.first() else {
        return String::new();
    };
    let secs = first.end_ns.saturating_sub(first.start_ns) as f64 / 1e9;
    let asking = || {
        samples
            .iter()
            .filter(|s| roles.get(usize::from(s.stream)) == Some(&Role::Send))
    };
    let done: u64 = asking().map(|s| s.ops).sum();
    let bytes: u64 = asking().map(|s| s.bytes).sum();
    let per_s = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
    format!(
        "[{:7.2}-{:7.2} s]  {:>12} {what}/s  {:>10} Mbit/s",
        first.start_ns as f64 / 1e9,
        first.end_ns as f64 / 1e9,
        crate::text::grouped(per_s(done as f64), 1),
        crate::text::grouped(per_s(bytes as f64 * 8.0) / 1e6, 1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::result::TcpSnapshot;

    #[test]
    fn sums_streams_by_role() {
        let tcp = Some(TcpSnapshot {
            retransmits: 5,
            rtt_us: 100,
            cwnd_bytes: 10240,
            ..Default::default()
        });
        let samples = [
            IntervalSample {
                stream: 0,
                start_ns: 0,
                end_ns: 1_000_000_000,
                bytes: 125_000_000,
                ops: 1,
                tcp,
            },
            IntervalSample {
                stream: 1,
                start_ns: 0,
                end_ns: 1_000_000_000,
                bytes: 12_500_000,
                ops: 1,
                tcp: None,
            },
        ];
        let mut before = vec![2, 0];
        let line = interval_line(&samples, &[Role::Send, Role::Receive], &mut before);
        assert_eq!(
            line,
            "[   0.00-   1.00 s]  sent     1000.0 Mbit/s  retr     3  rtt     100 us  cwnd       10 KiB  received      100.0 Mbit/s"
        );
        assert_eq!(before, [5, 0]);
    }
}
