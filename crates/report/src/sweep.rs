//! A sweep document ([`linerate_wire::sweep::Sweep`]) as text tables and JSON, as functions of
//! the document alone: a stored sweep renders again without the network.
//!
//! The text comes in three parts so that a running sweep can show each point as it lands:
//! [`head`] before the first point, [`after_point`] once each point is in, [`tail`] at the end;
//! [`text`] is the three together for a whole document.

use crate::text::grouped;
use linerate_wire::result::TestResult;
use linerate_wire::sweep::http::HttpBaseline;
use linerate_wire::sweep::tcp::TcpSizeFigures;
use linerate_wire::sweep::{At, RrSweep, RrVaries, Sweep, SweepKind, SweepPoint};

/// The document, pretty-printed, with a trailing newline ([`linerate_results::document::to_json`]).
pub fn json(sweep: &Sweep) -> String {
    linerate_results::document::to_json(sweep)
}

/// The whole table of a sweep: [`head`], every [`after_point`], [`tail`].
pub fn text(sweep: &Sweep) -> String {
    let mut out = head(sweep);
    for i in 0..sweep.points.len() {
        out += &after_point(sweep, i);
    }
    out + &tail(sweep)
}

/// What a running sweep shows now: the head before its first point, else what its latest
/// point adds.
pub fn progress(sweep: &Sweep) -> String {
    match sweep.points.len() {
        0 => head(sweep),
        n => after_point(sweep, n - 1),
    }
}

/// The title and the column heads (an http sweep's `--baseline` line first).
pub fn head(sweep: &Sweep) -> String {
    match &sweep.kind {
        SweepKind::Udp => {
            let mut head = format!("{:>10}", "gap us");
            for s in udp_sizes(sweep) {
                head += &format!("  {:>22}", format!("{s} B: Mbit/s  loss %"));
            }
            format!("received throughput and loss against spacing\n{head}\n")
        }
        SweepKind::Rr(rr) => format!(
            "{} request-response against size ({}), {}\n{:>9} {:>9} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8}  note\n",
            match rr.proto {
                linerate_wire::spec::RrProto::Tcp => "tcp",
                linerate_wire::spec::RrProto::Udp => "udp",
            },
            match rr.sweep {
                RrVaries::Request => "request",
                RrVaries::Both => "request and response",
            },
            match rr.mtu_bytes {
                Some(m) => format!("MTU {m} B toward {}", rr.interface.as_deref().unwrap_or("?")),
                None => "MTU unknown".to_string(),
            },
            "request B",
            "reply B",
            "trans/s",
            "min us",
            "p50 us",
            "mean us",
            "p99 us",
            "lost"
        ),
        SweepKind::Http(h) => format!(
            "{}{:>7} {:>13} {:>12} {:>12} {:>12} {:>9}\n",
            h.baseline.as_ref().map(baseline_line).unwrap_or_default(),
            "users",
            "responses/s",
            "Mbit/s in",
            "mean rt us",
            "p99 rt us",
            "errors"
        ),
        SweepKind::Tcp(t) => format!(
            "tcp throughput, CPU and efficiency against transfer size ({})\n{:>12} {:>12} {:>11} {:>11} {:>12} {:>12} {:>13}\n",
            match t.mix {
                Some(m) => format!(
                    "--mix {m}: {} % client reads, {} % client writes",
                    m.read_percent, m.write_percent
                ),
                None => "one-way streams".to_string(),
            },
            "size B",
            "Mbit/s",
            "client CPU",
            "agent CPU",
            "client eff",
            "agent eff",
            "transfers/s"
        ),
    }
}

/// The text due once point `index` is in: its row (udp: the row of its gap once the row is
/// complete, else nothing).
pub fn after_point(sweep: &Sweep, index: usize) -> String {
    let Some(point) = sweep.points.get(index) else {
        return String::new();
    };
    match &sweep.kind {
        SweepKind::Udp => {
            let per_row = udp_sizes(sweep).len().max(1);
            if (index + 1).is_multiple_of(per_row) {
                udp_row(&sweep.points[index + 1 - per_row..=index])
            } else {
                String::new()
            }
        }
        SweepKind::Rr(_) => rr_row(point),
        SweepKind::Http(_) => http_row(point),
        SweepKind::Tcp(t) => tcp_row(point, t.figures.get(index)),
    }
}

/// What follows the last point: an unfinished udp row, the derived figures, the units, and the
/// headline line last ([`crate::headline::sweep_line`]), so that `tail -1` finds it.
pub fn tail(sweep: &Sweep) -> String {
    let mut out = tail_figures(sweep);
    out += &crate::headline::sweep_line(sweep);
    out.push('\n');
    out
}

/// An unfinished udp row, the derived figures and the units.
fn tail_figures(sweep: &Sweep) -> String {
    let mut out = String::new();
    match &sweep.kind {
        SweepKind::Udp => {
            let per_row = udp_sizes(sweep).len().max(1);
            let left = sweep.points.len() % per_row;
            if left > 0 {
                out += &udp_row(&sweep.points[sweep.points.len() - left..]);
            }
            out += &cut_short(sweep);
            out +=
                "Mbit/s = 10^6 bits of payload per second, counted by the receiver; loss against the sender's count.\n";
        }
        SweepKind::Rr(rr) => {
            out += &cut_short(sweep);
            out += &rr_figures(sweep, rr);
            out += "us = microseconds of round trip (request sent to response received), per transaction; trans/s over all streams.\n";
        }
        SweepKind::Tcp(_) => {
            out += &cut_short(sweep);
            out += "Mbit/s = 10^6 bits per second counted by the receivers, all directions; CPU = busy share of the host's CPUs (100% = all busy); eff = Mbit/s per CPU %.\n";
        }
        SweepKind::Http(h) => {
            out += &cut_short(sweep);
            if let Some(o) = &h.summary.optimum {
                let (rps, mbit) = http_rates(o.responses_per_second, o.bits_per_second_in);
                out += &format!(
                    "optimum: {} users ({rps} responses/s, {mbit} Mbit/s in, mean response time {:.1} us): {}\n",
                    o.users, o.response_time_mean_us, o.rule
                );
            }
        }
    }
    out
}

/// The `--baseline` line shown before an HTTP run (and first in an http sweep's [`head`]).
pub fn baseline_line(baseline: &HttpBaseline) -> String {
    let (rps, mbit) = http_rates(baseline.responses_per_second, baseline.bits_per_second_in);
    format!(
        "baseline: {rps} responses/s, {mbit} Mbit/s in against linerate's own server on this host ({} B objects, {} users)\n",
        baseline.object_bytes, baseline.users,
    )
}

/// Responses per second and Mbit/s in, one decimal each, as every http line of a sweep writes them.
fn http_rates(responses_per_second: f64, bits_per_second_in: f64) -> (String, String) {
    (grouped(responses_per_second, 1), grouped(bits_per_second_in / 1e6, 1))
}

/// A partial sweep says so, and that it derived nothing.
fn cut_short(sweep: &Sweep) -> String {
    if sweep.partial {
        format!(
            "cut short after {} point(s): nothing derived over the sweep\n",
            sweep.points.len()
        )
    } else {
        String::new()
    }
}

/// The payload sizes of a udp sweep, in column order.
fn udp_sizes(sweep: &Sweep) -> Vec<f64> {
    sweep
        .parameters
        .iter()
        .find(|p| p.name == "payload_bytes")
        .map(|p| p.values.clone())
        .unwrap_or_default()
}

/// One gap's row: received Mbit/s and loss per size.
fn udp_row(points: &[SweepPoint]) -> String {
    let gap_us = match points.first().map(|p| p.at) {
        Some(At::Udp { gap_us, .. }) => gap_us,
        _ => return String::new(),
    };
    let mut row = format!("{gap_us:>10.1}");
    for p in points {
        match &p.result {
            Some(r) => {
                let loss = r.summary.udp.as_ref().map_or(0.0, |u| u.loss_percent);
                let mbps = r.summary.received.bits_per_second / 1e6;
                row += &format!("  {mbps:>14.1} {loss:>7.3}");
            }
            None => row += &format!("  {:>14} {:>7}", "-", "-"),
        }
    }
    row + "\n"
}

fn rr_row(point: &SweepPoint) -> String {
    let (request, response) = match point.at {
        At::Rr {
            request_bytes,
            response_bytes,
        } => (request_bytes, response_bytes),
        _ => return String::new(),
    };
    let dashes = |lost: &str| format!("{:>12} {:>10} {:>10} {:>10} {:>10} {lost:>8}", "-", "-", "-", "-", "-");
    let figures = match point.result.as_ref().map(rr_summary) {
        Some(s) => match &s.latency_us {
            Some(l) => format!(
                "{:>12.1} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>8}",
                s.transactions_per_second, l.min, l.p50, l.mean, l.p99, s.lost
            ),
            None => dashes(&s.lost.to_string()),
        },
        None => dashes("-"),
    };
    format!("{request:>9} {response:>9} {figures}  {}\n", point.note)
}

fn rr_summary(r: &TestResult) -> linerate_wire::result::RrSummary {
    r.summary.rr.clone().unwrap_or_default()
}

/// The fitted line and the slope it is compared with.
fn rr_figures(sweep: &Sweep, rr: &RrSweep) -> String {
    let s = &rr.summary;
    let Some(f) = &s.fit else {
        return if sweep.partial {
            String::new()
        } else {
            "no fit: fewer than two sizes gave round trips\n".to_string()
        };
    };
    let mut text = format!(
        "fit of {} against size: slope {:.6} us/byte, intercept {:.2} us, R^2 {:.4} over {} points\n",
        s.fit_of, f.slope_us_per_byte, f.intercept_us, f.r2, f.points
    );
    match s.expected_slope_us_per_byte {
        Some(e) => {
            text += &format!(
                "expected slope {e:.6} us/byte (sum of 8/bandwidth over {} stage(s), {}{}): measured / expected {:.2}\n",
                s.expected_stages_bits_per_second.len(),
                s.expected_from.as_deref().unwrap_or("?"),
                if rr.sweep == RrVaries::Both {
                    ", bytes crossing twice"
                } else {
                    ""
                },
                f.slope_us_per_byte / e
            );
        }
        None => text += "no expected slope: the interface has no link speed (loopback, veth); give --expect\n",
    }
    text
}

fn http_row(point: &SweepPoint) -> String {
    let At::Http { users } = point.at else {
        return String::new();
    };
    let h = point
        .result
        .as_ref()
        .and_then(|r| r.summary.http.clone())
        .unwrap_or_default();
    let rt = h.response_time_us.unwrap_or_default();
    let (rps, mbit) = http_rates(h.responses_per_second, h.bits_per_second_in);
    format!(
        "{users:>7} {rps:>13} {mbit:>12} {:>12.1} {:>12.1} {:>9}\n",
        rt.mean, rt.p99, h.errors.total
    )
}

/// One size's row: throughput, each end's CPU and efficiency, transfers/s under a mix.
fn tcp_row(point: &SweepPoint, figures: Option<&TcpSizeFigures>) -> String {
    let At::Tcp { buffer_bytes } = point.at else {
        return String::new();
    };
    let Some(f) = figures.filter(|_| point.result.is_some()) else {
        return format!("{buffer_bytes:>12} {:>12}  {}\n", "-", point.note);
    };
    let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |p| format!("{p:.2}%"));
    let eff = |v: Option<f64>| v.map_or("n/a".to_string(), |e| format!("{e:.3}"));
    format!(
        "{buffer_bytes:>12} {:>12} {:>11} {:>11} {:>12} {:>12} {:>13}{}\n",
        grouped(f.bits_per_second / 1e6, 3),
        pct(f.client_cpu_percent),
        pct(f.agent_cpu_percent),
        eff(f.client_mbit_per_second_per_cpu_percent),
        eff(f.agent_mbit_per_second_per_cpu_percent),
        f.transfers_per_second.map_or("-".to_string(), |t| grouped(t, 1)),
        if point.note.is_empty() {
            String::new()
        } else {
            format!("  {}", point.note)
        }
    )
}
