//! An HTTP run's cost and its servers: the COST block with a column per server and their total,
//! and each server's share of the load (issue 23). In: the document alone; out: text lines.

use super::{grouped, side_block};
use linerate_core::result::{HttpSummary, SideSummary, TestResult};
use std::fmt::Write;

/// What each server of an HTTP run cost its host and carried: a COST column per server (its
/// bytes, its host's CPU when an agent sampled it) and the servers' total, then, with several
/// servers, each one's responses, failures and connections beside the totals (Avalanche's
/// per-port figures; issue 23). Documents from before `servers` was kept show the one server.
pub(super) fn cost_block(out: &mut String, r: &TestResult, h: &HttpSummary) {
    // A server no agent sampled: the client's counts alone, its host's figures n/a.
    let bare = |bytes: u64, ops: u64| SideSummary {
        bytes,
        ops,
        seconds: h.steady_seconds,
        bits_per_second: if h.steady_seconds > 0.0 {
            bytes as f64 * 8.0 / h.steady_seconds
        } else {
            0.0
        },
        ..SideSummary::default()
    };
    let unsampled: Vec<SideSummary> = h.servers.iter().map(|s| bare(s.bytes_in, s.responses)).collect();
    let total = bare(h.bytes_in, h.responses);
    let mut cols: Vec<(String, &SideSummary)> = vec![("client (in)".into(), &r.summary.received)];
    match &h.servers[..] {
        [] => {
            if let Some(s) = &r.summary.server {
                cols.push((format!("server {}", s.counted_by.join(", ")), s));
            }
        }
        servers => {
            for (s, bare) in servers.iter().zip(&unsampled) {
                cols.push((format!("server {}", s.server), s.host.as_ref().unwrap_or(bare)));
            }
            if servers.len() > 1 {
                cols.push(("servers total".into(), r.summary.server.as_ref().unwrap_or(&total)));
            }
        }
    }
    side_block(out, "COST", &cols, false, None);
    if h.servers.len() < 2 {
        return;
    }
    let label_w = 38;
    let col_w = cols[1..].iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(14) + 2;
    let _ = write!(out, "\n{:<label_w$}", "PER SERVER (the users' counts)");
    for (name, _) in &cols[1..] {
        let _ = write!(out, "{name:>col_w$}");
    }
    out.push('\n');
    let per_s = |n: u64| {
        if h.steady_seconds > 0.0 {
            n as f64 / h.steady_seconds
        } else {
            0.0
        }
    };
    let total_row = [
        grouped(
            h.successful_responses_per_second
                .unwrap_or_else(|| per_s(h.successful_responses())),
            1,
        ),
        grouped(h.responses_per_second, 1),
        h.errors.total.to_string(),
        grouped(h.connections.per_second.successful, 1),
        grouped(h.bits_per_second_in / 1e6, 3),
    ];
    let labels = [
        "Successful responses (2xx per second)",
        "All responses (per second)",
        "Failed requests",
        "Connections established (per second)",
        "Throughput in (Mbit/s)",
    ];
    for (i, label) in labels.iter().enumerate() {
        let _ = write!(out, "  {label:<w$}", w = label_w - 2);
        for s in &h.servers {
            let v = [
                grouped(s.successful_responses_per_second, 1),
                grouped(s.responses_per_second, 1),
                s.errors.to_string(),
                grouped(s.connections.per_second.successful, 1),
                grouped(s.bits_per_second_in / 1e6, 3),
            ];
            let _ = write!(out, "{:>col_w$}", v[i]);
        }
        let _ = writeln!(out, "{:>col_w$}", total_row[i]);
    }
}
