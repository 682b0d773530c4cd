//! A sweep's curves: UDPmon's received rate, loss and CPU against spacing (one curve per
//! size), latency against size with the fitted and the expected line, and an HTTP user sweep's
//! throughput and response time against users with the optimum marked.

use super::mbit;
use crate::plot::{Axis, Figure, Mark, Point, Scale, Series, Style};
use linerate_wire::result::{LatencyFigures, TestResult};
use linerate_wire::sweep::{At, RrSweep, Sweep, SweepKind};
use std::collections::BTreeMap;

/// Every figure of a sweep.
pub fn figures(s: &Sweep) -> Vec<Figure> {
    match &s.kind {
        SweepKind::Udp => udp(s),
        SweepKind::Rr(rr) => rr_sweep(s, rr).into_iter().collect(),
        SweepKind::Http(h) => http(s, h.summary.optimum.as_ref()),
        SweepKind::Tcp(t) => tcp(&t.figures),
    }
}

/// `fig-tcp-sweep` (throughput and both ends' CPU against the write size, CPU on the right axis)
/// and `fig-tcp-sweep-efficiency` (Mbit/s per % of host CPU against size, each end): the
/// offload report's throughput-and-CPU and efficiency charts.
fn tcp(rows: &[linerate_wire::sweep::tcp::TcpSizeFigures]) -> Vec<Figure> {
    if rows.is_empty() {
        return Vec::new();
    }
    let sizes: Vec<f64> = rows.iter().map(|r| r.buffer_bytes as f64).collect();
    // Under --mix, -l is the size of each transfer; the unit is written once, by the axis.
    let what = if rows.iter().any(|r| r.transfers_per_second.is_some()) {
        "size of each transfer, -l"
    } else {
        "size of each write, -l"
    };
    let x = || Axis::fitting(what, "bytes", &sizes);
    let line = |name: &str, get: &dyn Fn(&linerate_wire::sweep::tcp::TcpSizeFigures) -> Option<f64>| {
        Series::new(
            name,
            Style::Line,
            rows.iter()
                .filter_map(|r| get(r).map(|v| Point::xy(r.buffer_bytes as f64, v)))
                .collect(),
        )
    };
    let mut f = Figure::new(
        "fig-tcp-sweep",
        "Throughput and CPU against write size",
        x(),
        Axis::linear("throughput, counted by the receivers", "Mbit/s").with_min(0.0),
    );
    f.y2 = Some(Axis::linear("host CPU busy", "%").with_min(0.0));
    f.series.push(line("Mbit/s", &|r| Some(mbit(r.bits_per_second))));
    f.series
        .push(line("client CPU %", &|r| r.client_cpu_percent).on_right());
    f.series.push(line("agent CPU %", &|r| r.agent_cpu_percent).on_right());
    f.description = format!(
        "Receiver-counted throughput (Mbit/s) and each end's host CPU (percent, right axis) against bytes per write: {}.",
        rows.iter()
            .map(|r| format!("{} B {:.1} Mbit/s", r.buffer_bytes, mbit(r.bits_per_second)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut e = Figure::new(
        "fig-tcp-sweep-efficiency",
        "Efficiency against write size",
        x(),
        Axis::linear("throughput per CPU", "Mbit/s per % of host").with_min(0.0),
    );
    e.series
        .push(line("client", &|r| r.client_mbit_per_second_per_cpu_percent));
    e.series
        .push(line("agent", &|r| r.agent_mbit_per_second_per_cpu_percent));
    e.description = "Throughput per percent of host CPU on each end against bytes per write (efficiency, as the offload report plotted it).".to_string();
    vec![f, e]
}

/// `fig-udp-sweep-rate`, `fig-udp-sweep-loss`, `fig-udp-sweep-cpu`: one curve per payload
/// size against the requested spacing.
fn udp(s: &Sweep) -> Vec<Figure> {
    // size -> [(gap µs, result)], in gap order.
    let mut by_size: BTreeMap<u32, Vec<(f64, &TestResult)>> = BTreeMap::new();
    for p in &s.points {
        if let (At::Udp { payload_bytes, gap_us }, Some(r)) = (&p.at, &p.result) {
            by_size.entry(*payload_bytes).or_default().push((*gap_us, r));
        }
    }
    for v in by_size.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let gaps: Vec<f64> = by_size.values().flatten().map(|(g, _)| *g).collect();
    let x = || Axis::fitting("spacing between datagrams asked for", "µs", &gaps);
    type Get = fn(&TestResult) -> Option<f64>;
    let specs: [(&str, &str, Axis, Get, &str); 3] = [
        (
            "fig-udp-sweep-rate",
            "Received rate against spacing",
            Axis::linear("received rate", "Mbit/s"),
            |r| {
                r.summary
                    .udp
                    .as_ref()
                    .and_then(|u| u.received_bits_per_second)
                    .or(Some(r.summary.received.bits_per_second))
                    .map(mbit)
            },
            "Received rate (bytes received over the arrival window, Mbit/s) against the spacing asked for",
        ),
        (
            "fig-udp-sweep-loss",
            "Loss against spacing",
            Axis::linear("datagrams lost", "%").with_min(0.0),
            |r| r.summary.udp.as_ref().map(|u| u.loss_percent),
            "Datagrams lost, percent of those sent, against the spacing asked for",
        ),
        (
            "fig-udp-sweep-cpu",
            "Receiver's CPU against spacing",
            Axis::linear("receiving host's CPU busy", "%").with_min(0.0),
            |r| r.summary.received.cpu.host_percent,
            "The receiving host's busy CPU over the window (percent of all its CPUs) against the spacing asked for",
        ),
    ];
    let mut out = Vec::new();
    for (id, title, y, get, what) in specs {
        let mut f = Figure::new(id, title, x(), y);
        let mut parts = Vec::new();
        for (size, points) in &by_size {
            let pts: Vec<Point> = points
                .iter()
                .filter_map(|(g, r)| get(r).map(|v| Point::xy(*g, v)))
                .collect();
            parts.push(format!(
                "{size} bytes: {}",
                pts.iter()
                    .map(|p| format!("{:.3} at {} µs", p.y, p.x))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            f.series.push(Series::new(&format!("{size} bytes"), Style::Line, pts));
        }
        f.description = format!("{what}, one curve per payload size. {}.", parts.join("; "));
        out.push(f);
    }
    out
}

/// The latency figure a fit goes through, by its name in the sweep (`"p50"`).
fn latency_of(l: &LatencyFigures, name: &str) -> f64 {
    match name {
        "min" => l.min,
        "mean" => l.mean,
        "p90" => l.p90,
        "p99" => l.p99,
        "max" => l.max,
        _ => l.p50,
    }
}

/// `fig-rr-sweep`: latency against size, the least-squares line through it and the line of
/// the slope the path should give.
fn rr_sweep(s: &Sweep, rr: &RrSweep) -> Option<Figure> {
    let fit_of = if rr.summary.fit_of.is_empty() {
        "p50"
    } else {
        rr.summary.fit_of.as_str()
    };
    let points: Vec<Point> = s
        .points
        .iter()
        .filter_map(|p| {
            let At::Rr { request_bytes, .. } = p.at else {
                return None;
            };
            let l = p.result.as_ref()?.summary.rr.as_ref()?.latency_us?;
            Some(Point::xy(request_bytes as f64, latency_of(&l, fit_of)))
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    let sizes: Vec<f64> = points.iter().map(|p| p.x).collect();
    let x = Axis::fitting("message size", "bytes", &sizes);
    let (lo, hi) = (
        sizes.iter().copied().fold(f64::INFINITY, f64::min),
        sizes.iter().copied().fold(0.0, f64::max),
    );
    // A straight line on a linear axis needs its ends only; on a log axis it is a curve.
    let log = x.scale == Scale::Log;
    let along = |slope: f64, intercept: f64| -> Vec<Point> {
        let n = if log { 40 } else { 1 };
        (0..=n)
            .map(|i| {
                let t = i as f64 / n as f64;
                let b = if log {
                    lo * (hi / lo).powf(t)
                } else {
                    lo + (hi - lo) * t
                };
                Point::xy(b, intercept + slope * b)
            })
            .collect()
    };
    let mut f = Figure::new(
        "fig-rr-sweep",
        "Latency against message size",
        x,
        Axis::linear(&format!("round-trip time, {fit_of}"), "µs"),
    );
    f.series
        .push(Series::new(&format!("measured {fit_of}"), Style::Points, points));
    let mut desc = format!(
        "Round-trip time ({fit_of}, µs) against the {} size in bytes",
        match rr.sweep {
            linerate_wire::sweep::RrVaries::Request => "request",
            linerate_wire::sweep::RrVaries::Both => "request and response",
        }
    );
    if let Some(fit) = &rr.summary.fit {
        f.series.push(Series::new(
            "least-squares line",
            Style::Curve,
            along(fit.slope_us_per_byte, fit.intercept_us),
        ));
        let text = format!(
            "fit: slope {:.6} µs/byte, intercept {:.2} µs, R² {:.3} ({} points)",
            fit.slope_us_per_byte, fit.intercept_us, fit.r2, fit.points
        );
        desc.push_str(&format!("; {text}"));
        f.marks.push(Mark::Note { text });
        if let Some(e) = rr.summary.expected_slope_us_per_byte {
            f.series.push(Series::new(
                "expected slope (through the intercept)",
                Style::Curve,
                along(e, fit.intercept_us),
            ));
            let text = format!(
                "expected slope {e:.6} µs/byte ({})",
                rr.summary.expected_from.as_deref().unwrap_or("given")
            );
            desc.push_str(&format!("; {text}"));
            f.marks.push(Mark::Note { text });
        }
    } else {
        desc.push_str("; no line was fitted (fewer than two sizes, or a partial sweep)");
    }
    if let Some(mtu) = rr.mtu_bytes
        && (mtu as f64) < hi
    {
        f.marks.push(Mark::VLine {
            x: mtu as f64,
            label: format!("MTU {mtu} bytes"),
        });
    }
    f.description = format!("{desc}.");
    Some(f)
}

/// `fig-http-sweep` (responses/s and Mbit/s against users) and `fig-http-sweep-response-time`,
/// the optimum marked on both.
fn http(s: &Sweep, optimum: Option<&linerate_wire::result::Optimum>) -> Vec<Figure> {
    let mut rows: Vec<(f64, &linerate_wire::result::HttpSummary)> = s
        .points
        .iter()
        .filter_map(|p| {
            let At::Http { users } = p.at else { return None };
            Some((users as f64, p.result.as_ref()?.summary.http.as_ref()?))
        })
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    if rows.is_empty() {
        return Vec::new();
    }
    let users: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let x = || Axis::fitting("simulated users", "users", &users);
    let mark = |f: &mut Figure| {
        if let Some(o) = optimum {
            f.marks.push(Mark::VLine {
                x: o.users as f64,
                label: format!("optimum {} users", o.users),
            });
        }
    };
    let opt_text = optimum.map_or_else(
        || "no optimum (nothing answered, or a partial sweep)".to_string(),
        |o| {
            format!(
                "optimum {} users ({:.1} responses/s, {:.1} Mbit/s, mean response time {:.2} ms; {})",
                o.users,
                o.responses_per_second,
                mbit(o.bits_per_second_in),
                o.response_time_mean_us / 1e3,
                o.rule
            )
        },
    );
    let mut f = Figure::new(
        "fig-http-sweep",
        "Throughput against users",
        x(),
        Axis::linear("responses", "1/s"),
    );
    f.y2 = Some(Axis::linear("throughput in", "Mbit/s"));
    f.series.push(Series::new(
        "responses/s",
        Style::Line,
        rows.iter()
            .map(|(u, h)| Point::xy(*u, h.responses_per_second))
            .collect(),
    ));
    f.series.push(
        Series::new(
            "Mbit/s in",
            Style::Line,
            rows.iter()
                .map(|(u, h)| Point::xy(*u, mbit(h.bits_per_second_in)))
                .collect(),
        )
        .on_right(),
    );
    mark(&mut f);
    f.description = format!(
        "Responses per second and Mbit/s read (right axis) over each point's steady state against the number of users: {}; {opt_text}.",
        rows.iter()
            .map(|(u, h)| format!("{u} users {:.1}/s", h.responses_per_second))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut t = Figure::new(
        "fig-http-sweep-response-time",
        "Response time against users",
        x(),
        Axis::linear("response time", "ms"),
    );
    for (name, get) in [
        ("mean", (|l: &LatencyFigures| l.mean) as fn(&LatencyFigures) -> f64),
        ("p50", |l| l.p50),
        ("p99", |l| l.p99),
    ] {
        t.series.push(Series::new(
            name,
            Style::Line,
            rows.iter()
                .filter_map(|(u, h)| h.response_time_us.as_ref().map(|l| Point::xy(*u, get(l) / 1e3)))
                .collect(),
        ));
    }
    mark(&mut t);
    t.description = format!(
        "Response time (mean, p50, p99, ms) over each point's steady state against the number of users; {opt_text}."
    );
    vec![f, t]
}
