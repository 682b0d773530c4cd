//! A request-response run's block as text: transactions, round-trip percentiles (from the
//! scheduled moment and, in the open loop, from the send), what became of the open loop's
//! requests, connect times, peaks and the round-trip histogram. In: the `TestResult`; out: text
//! appended to the summary that `super` builds.

use super::row;
use super::{count_per_second, grouped};
use linerate_wire::result::{Bin, LatencyFigures, TestResult};
use std::fmt::Write;

/// The most rows of the histogram before its tail row: neighbouring bins are merged to fit.
const MAX_ROWS: usize = 25;

/// One row of the printed histogram.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Row {
    /// Round trips from this many µs (to the next row's start).
    Bin { from_us: f64, count: u64 },
    /// A run of empty rows, left out.
    Gap,
    /// Every round trip from this many µs on: the tail past the equal bins.
    Tail { from_us: f64, count: u64 },
}

/// The histogram's rows: at most [`MAX_ROWS`] of merged bins, runs of two or more empty rows
/// elided into one gap, then the open tail bin.
fn histogram_rows(bins: &[Bin]) -> Vec<Row> {
    let (equal, tail) = match bins.split_last() {
        Some((last, rest)) if last.to_us.is_infinite() => (rest, Some(last)),
        _ => (bins, None),
    };
    let per = equal.len().div_ceil(MAX_ROWS).max(1);
    let merged: Vec<(f64, u64)> = equal
        .chunks(per)
        .map(|c| (c[0].from_us, c.iter().map(|b| b.count).sum()))
        .collect();
    let mut rows = Vec::with_capacity(merged.len() + 1);
    let mut i = 0;
    while i < merged.len() {
        let empty = merged[i..].iter().take_while(|r| r.1 == 0).count();
        if empty >= 2 {
            rows.push(Row::Gap);
            i += empty;
            continue;
        }
        rows.push(Row::Bin {
            from_us: merged[i].0,
            count: merged[i].1,
        });
        i += 1;
    }
    // Trailing empty rows say nothing: the tail row (or the end) follows.
    while matches!(rows.last(), Some(Row::Gap | Row::Bin { count: 0, .. })) {
        rows.pop();
    }
    if let Some(t) = tail.filter(|t| t.count > 0) {
        rows.push(Row::Tail {
            from_us: t.from_us,
            count: t.count,
        });
    }
    rows
}

fn latency_text(l: &LatencyFigures) -> String {
    format!(
        "min {:.2}  mean {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}  stddev {:.2}",
        l.min, l.mean, l.p50, l.p90, l.p99, l.p999, l.max, l.stddev
    )
}

/// The round trips of a request-response run.
pub(super) fn rr_block(out: &mut String, r: &TestResult) {
    let Some(x) = &r.summary.rr else { return };
    let _ = writeln!(out, "\nREQUEST-RESPONSE (round trips timed by the client)");
    row(
        out,
        "Transactions",
        count_per_second(x.transactions as f64, x.transactions_per_second),
    );
    if let Some(l) = &x.latency_us {
        let label = if x.open_loop.is_some() {
            "Round trip from due moment (us)"
        } else {
            "Round trip (us)"
        };
        row(out, label, latency_text(l));
    }
    if let Some(l) = x.open_loop.as_ref().and_then(|o| o.latency_from_send_us.as_ref()) {
        row(out, "Round trip from send (us)", latency_text(l));
    }
    if x.lost + x.stale + x.errors > 0 {
        row(
            out,
            "Lost / late answers / errors",
            format!("{} / {} / {}", x.lost, x.stale, x.errors),
        );
    }
    if let Some(rate) = &x.rate {
        row(
            out,
            "Rate (transactions/s)",
            format!(
                "asked {}, achieved {}",
                grouped(rate.requested_per_second, 1),
                grouped(rate.achieved_per_second, 1)
            ),
        );
    }
    if let Some(o) = &x.open_loop {
        row(
            out,
            "Requests (open loop)",
            format!(
                "{} sent ({} per second), {} not sent (at most {} in flight per stream)",
                grouped(o.requests_sent as f64, 0),
                grouped(o.requests_sent_per_second, 1),
                grouped(o.requests_not_sent as f64, 0),
                o.max_outstanding
            ),
        );
    }
    if let Some(c) = &x.connect {
        row(
            out,
            "Connect (us)",
            format!(
                "p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}; {} connections/s",
                c.connect_us.p50,
                c.connect_us.p90,
                c.connect_us.p99,
                c.connect_us.max,
                grouped(c.connections_per_second, 1)
            ),
        );
    }
    if !x.peaks.is_empty() {
        let at: Vec<String> = x.peaks.iter().map(|p| format!("{:.2}", p.at_us)).collect();
        let sep: Vec<String> = x.peak_separations_us.iter().map(|d| format!("{d:.2}")).collect();
        let tail = if sep.is_empty() {
            String::new()
        } else {
            format!(" (apart {})", sep.join(", "))
        };
        row(out, "Histogram peaks (us)", format!("{}{tail}", at.join(", ")));
    }
    let rows = histogram_rows(&x.histogram);
    let top = rows
        .iter()
        .map(|r| match r {
            Row::Bin { count, .. } | Row::Tail { count, .. } => *count,
            Row::Gap => 0,
        })
        .max()
        .unwrap_or(0);
    if top == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  Round-trip histogram from the 0.1th percentile (us from: count; empty rows left out)"
    );
    let bar = |count: u64| "#".repeat(((count as f64 / top as f64) * 40.0).ceil() as usize);
    for r in rows {
        let _ = match r {
            Row::Bin { from_us, count } => writeln!(out, "    {from_us:>10.2}  {count:>10}  {}", bar(count)),
            Row::Gap => writeln!(out, "    {:>10}", "..."),
            Row::Tail { from_us, count } => {
                writeln!(out, "  >={from_us:>10.2}  {count:>10}  {} (the tail)", bar(count))
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(from_us: f64, to_us: f64, count: u64) -> Bin {
        Bin { from_us, to_us, count }
    }

    /// A mode resolved over several rows, runs of empty rows elided into one, and the
    /// tail in one row of its own (the fixed bins printed the mode in one row and 14 empty
    /// ones after it).
    #[test]
    fn issue_23_histogram_rows_elide_empty_runs_and_end_with_the_tail() {
        // 100 bins of 0.5 µs from 90 µs: the mode in bins 10 to 30, one lone bin at 70, the
        // rest empty; then the tail.
        let mut bins: Vec<Bin> = (0..100)
            .map(|i| {
                let count = match i {
                    10..=30 => 1000 - (i as u64).abs_diff(20) * 90,
                    70 => 5,
                    _ => 0,
                };
                bin(90.0 + i as f64 * 0.5, 90.5 + i as f64 * 0.5, count)
            })
            .collect();
        bins.push(bin(140.0, f64::INFINITY, 3000));
        let rows = histogram_rows(&bins);
        let full = rows
            .iter()
            .filter(|r| matches!(r, Row::Bin { count, .. } if *count > 0))
            .count();
        assert!(full >= 5, "the mode over several rows: {rows:?}");
        assert!(rows.len() <= MAX_ROWS + 1, "{rows:?}");
        for w in rows.windows(2) {
            assert!(!(w[0] == Row::Gap && w[1] == Row::Gap), "{rows:?}");
        }
        assert_eq!(rows.iter().filter(|r| **r == Row::Gap).count(), 2, "{rows:?}");
        assert_eq!(
            rows.last(),
            Some(&Row::Tail {
                from_us: 140.0,
                count: 3000
            })
        );
        // Merged rows carry every count.
        let sum: u64 = rows
            .iter()
            .map(|r| match r {
                Row::Bin { count, .. } | Row::Tail { count, .. } => *count,
                Row::Gap => 0,
            })
            .sum();
        assert_eq!(sum, bins.iter().map(|b| b.count).sum::<u64>());
        assert!(histogram_rows(&[]).is_empty());
    }
}
