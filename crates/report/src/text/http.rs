//! An HTTP run's blocks: the users' figures (responses, times, TLS, HTTP/2, connections and
//! failures), the COST block with a column per server and their total, each server's share of
//! the load, and the timeline. In: the document alone; out: text lines.

use super::row;
use super::{count_per_second, grouped, side_block};
use linerate_wire::result::{
    Http2Summary, HttpIntervalRecord, HttpSummary, IntervalRecord, LatencyFigures, SideSummary, TestResult, TlsSummary,
};

/// An HTTP run's intervals, the ramp's included, in order: what its timeline table and its
/// figures over time are drawn from.
pub(crate) fn http_intervals(r: &TestResult) -> Vec<&HttpIntervalRecord> {
    r.intervals
        .iter()
        .filter_map(|i| match i {
            IntervalRecord::Http(h) => Some(h),
            _ => None,
        })
        .collect()
}
use std::fmt::Write;

/// What each server of an HTTP run cost its host and carried: a COST column per server (its
/// bytes, its host's CPU when an agent sampled it) and the servers' total, then, with several
/// servers, each one's responses, failures and connections beside the totals (Avalanche's
/// per-port figures). Documents from before `servers` was kept show the one server.
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
    let total_row = [
        grouped(
            h.successful_responses_per_second
                .unwrap_or_else(|| per_second(h, h.successful_responses())),
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

/// A latency distribution in microseconds, `n/a` when none was measured.
fn latency(l: &Option<LatencyFigures>) -> String {
    match l {
        Some(l) => format!(
            "mean {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
            l.mean, l.p50, l.p90, l.p99, l.max
        ),
        None => "n/a".into(),
    }
}

/// The users' figures over the steady state: responses, throughput and times, then TLS and
/// HTTP/2 where the run used them, connections, failures, statuses, the rate and what was left
/// in flight.
pub(super) fn users_block(out: &mut String, h: &HttpSummary) {
    let _ = writeln!(
        out,
        "HTTP (steady state, {:.3} s; the ramp is left out)",
        h.steady_seconds
    );
    // Failed responses are not throughput: the successful ones lead.
    let ok = h.successful_responses();
    row(
        out,
        "Successful responses (2xx)",
        count_per_second(
            ok as f64,
            h.successful_responses_per_second.unwrap_or_else(|| per_second(h, ok)),
        ),
    );
    row(
        out,
        "All responses (any status)",
        count_per_second(h.responses as f64, h.responses_per_second),
    );
    row(
        out,
        "Throughput in / out (Mbit/s)",
        format!(
            "{} / {}",
            grouped(h.bits_per_second_in / 1e6, 3),
            grouped(h.bits_per_second_out / 1e6, 3)
        ),
    );
    row(out, "Response time (us)", latency(&h.response_time_us));
    row(out, "Time to first byte (us)", latency(&h.ttfb_us));
    if h.connect_us.is_some() {
        row(out, "Connect (us)", latency(&h.connect_us));
    }
    if let Some(t) = &h.tls {
        tls_rows(out, t);
    }
    if let Some(h2) = &h.http2 {
        http2_rows(out, h2);
    }
    let c = &h.connections;
    row(
        out,
        "Connections attempted/ok/failed/open",
        format!(
            "{} / {} / {} / {} ({} / {} / {} per second)",
            c.attempted,
            c.successful,
            c.unsuccessful,
            c.in_flight_at_end,
            grouped(c.per_second.attempted, 1),
            grouped(c.per_second.successful, 1),
            grouped(c.per_second.unsuccessful, 1)
        ),
    );
    failure_rows(out, h);
    let status: Vec<String> = h.status.iter().map(|(k, v)| format!("{k} {v}")).collect();
    row(out, "Responses by status", status.join(", "));
    if let Some(rate) = &h.rate {
        row(
            out,
            "Rate (requests/s)",
            format!(
                "asked {}, achieved {}; {} started late for want of a connection",
                grouped(rate.requested_per_second, 1),
                grouped(rate.achieved_per_second, 1),
                h.queued_late
            ),
        );
    }
    row(
        out,
        "In flight at the end (not counted)",
        h.in_flight_at_end.to_string(),
    );
}

/// `n` over the steady state's seconds; 0 when it had none.
fn per_second(h: &HttpSummary, n: u64) -> f64 {
    if h.steady_seconds > 0.0 {
        n as f64 / h.steady_seconds
    } else {
        0.0
    }
}

/// https: the handshakes by how they ended, their CPU on each side and their times.
fn tls_rows(out: &mut String, t: &TlsSummary) {
    let cpu = |c: Option<f64>| c.map_or("n/a".into(), |c| format!("{c:.1}"));
    row(
        out,
        "TLS handshakes full/resumed/failed",
        format!(
            "{} / {} / {} ({} / {} per second; CPU us each {} / {})",
            t.full,
            t.resumed,
            t.failed,
            grouped(t.full_per_second, 1),
            grouped(t.resumed_per_second, 1),
            cpu(t.cpu_us_per_full_handshake),
            cpu(t.cpu_us_per_resumed_handshake)
        ),
    );
    if let Some(server) = t.server_cpu_us_per_handshake {
        // Beside the client's: the server's own CPU over its handshakes.
        row(
            out,
            "TLS CPU us per handshake",
            format!(
                "client {} full / {} resumed; server {server:.1} (full and resumed)",
                cpu(t.cpu_us_per_full_handshake),
                cpu(t.cpu_us_per_resumed_handshake)
            ),
        );
    }
    if t.full_time_us.is_some() {
        row(out, "TLS full handshake (us)", latency(&t.full_time_us));
    }
    if t.resumed_time_us.is_some() {
        row(out, "TLS resumed handshake (us)", latency(&t.resumed_time_us));
    }
}

/// HTTP/2: the streams asked and in flight against the server's limit, and its protocol errors.
fn http2_rows(out: &mut String, h2: &Http2Summary) {
    let limit = h2.peer_max_concurrent_streams.map_or("none".into(), |m| {
        format!("{m}{}", if h2.capped { ", capped" } else { "" })
    });
    row(
        out,
        "HTTP/2 streams asked/most in flight",
        format!(
            "{} / {} per connection (server's limit {limit})",
            h2.streams, h2.max_streams_in_flight
        ),
    );
    if let Some(why) = h2.protocol_errors_text() {
        row(out, "HTTP/2 protocol errors", why);
    }
}

/// The failed requests by class against `--max-errors`, a warning when the load generator ran
/// out of its own resources, and why the run failed when it did.
fn failure_rows(out: &mut String, h: &HttpSummary) {
    let e = &h.errors.by_class;
    let share = h
        .failed_percent
        .map_or(String::new(), |p| format!(", {p:.2}% of the requests that ended"));
    let budget = h.max_errors.map_or(String::new(), |b| format!(", --max-errors {b}"));
    row(
        out,
        "Failed requests (errors)",
        format!("{}{share}{budget} ({})", h.errors.total, e.breakdown()),
    );
    if e.local_limit > 0 {
        let _ = writeln!(
            out,
            "  WARNING: the load generator ran out of file descriptors or local ports ({} failures here, not at \
             the server): raise `ulimit -n`, use fewer users, or widen net.ipv4.ip_local_port_range",
            e.local_limit
        );
    }
    if let Some(why) = h.failure() {
        let _ = writeln!(out, "  FAILED: {why}");
    }
}

/// The run's intervals as a table (users, responses, throughput, connections, errors, response
/// time; the ramp's marked), when there are two or more.
pub(super) fn timeline_table(out: &mut String, r: &TestResult) {
    let timeline = http_intervals(r);
    if timeline.len() < 2 {
        return;
    }
    let _ = writeln!(
        out,
        "\n{:>17} {:>6} {:>12} {:>14} {:>10} {:>8} {:>12}",
        "interval s", "users", "responses/s", "Mbit/s in", "conn/s", "errors", "mean rt us"
    );
    for t in timeline {
        let _ = writeln!(
            out,
            "{:>8.2}-{:>8.2} {:>6} {:>12} {:>14} {:>10} {:>8} {:>12}{}",
            t.start_ns as f64 / 1e9,
            t.end_ns as f64 / 1e9,
            t.users,
            grouped(t.responses_per_second, 1),
            grouped(t.bits_per_second_in / 1e6, 3),
            grouped(t.connections_per_second, 1),
            t.errors,
            t.response_time_mean_us.map_or("-".into(), |v| format!("{v:.1}")),
            if t.ramp { "  ramp" } else { "" }
        );
    }
}
