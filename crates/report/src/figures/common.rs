//! What every test's report draws: the interval timeline (throughput per stream and in total),
//! each end's CPU over time, and CPU and interrupts per CPU over the window as bars.

use super::{mbit, middle};
use crate::plot::{Axis, Figure, Point, Series, Style};
use linerate_wire::result::{IntervalRecord, SideSummary, StreamInterval, TestResult};
use std::collections::BTreeMap;

/// More streams than this: the timeline shows the totals only.
const MAX_STREAM_SERIES: usize = 8;

/// A run's stream intervals as its receivers counted them, or its senders' where no receiver's
/// came: the one side every throughput-over-time figure draws.
pub(super) fn counted_streams(r: &TestResult) -> Vec<&StreamInterval> {
    let records: Vec<&StreamInterval> = r
        .intervals
        .iter()
        .filter_map(|i| match i {
            IntervalRecord::Stream(s) => Some(s),
            _ => None,
        })
        .collect();
    let side = if records.iter().any(|s| s.side == "received") {
        "received"
    } else {
        "sent"
    };
    records.into_iter().filter(|s| s.side == side).collect()
}

/// Per direction, the k-th interval of every stream summed, Mbit/s, at the latest of their
/// middles (s): each stream's k-th interval covers (nearly) the same second of its end's clock.
pub(super) fn direction_totals<'a>(records: &[&'a StreamInterval]) -> BTreeMap<&'a str, Vec<(f64, f64)>> {
    let mut seen: BTreeMap<(&str, &str, u16), usize> = BTreeMap::new();
    let mut totals: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for s in records {
        let k = seen
            .entry((s.agent.as_str(), s.direction.as_str(), s.sample.stream))
            .or_default();
        let total = totals.entry(s.direction.as_str()).or_default();
        if total.len() <= *k {
            total.resize(*k + 1, (0.0, 0.0));
        }
        total[*k].0 = total[*k].0.max(middle(s.sample.start_ns, s.sample.end_ns));
        total[*k].1 += mbit(s.bits_per_second);
        *k += 1;
    }
    totals
}

/// `fig-timeline`: Mbit/s per stream and in total at each interval, as the receivers counted
/// (the senders when no receiver's intervals came).
pub fn timeline(r: &TestResult) -> Option<Figure> {
    let records = counted_streams(r);
    let side = records.first()?.side.as_str();
    let agents: std::collections::BTreeSet<&str> = records.iter().map(|s| s.agent.as_str()).collect();
    let directions: std::collections::BTreeSet<&str> = records.iter().map(|s| s.direction.as_str()).collect();
    let mut streams: BTreeMap<(&str, &str, u16), Vec<Point>> = BTreeMap::new();
    for s in &records {
        let points = streams
            .entry((s.agent.as_str(), s.direction.as_str(), s.sample.stream))
            .or_default();
        points.push(Point::xy(
            middle(s.sample.start_ns, s.sample.end_ns),
            mbit(s.bits_per_second),
        ));
    }
    let totals = direction_totals(&records);
    let mut fig = Figure::new(
        "fig-timeline",
        "Throughput over time",
        Axis::linear("time since start", "s"),
        Axis::linear(&format!("throughput, {side}"), "Mbit/s"),
    );
    for (direction, points) in &totals {
        let name = if directions.len() > 1 {
            format!("total {direction}")
        } else {
            "total".to_string()
        };
        fig.series.push(Series::new(
            &name,
            Style::Line,
            points.iter().map(|(x, y)| Point::xy(*x, *y)).collect(),
        ));
    }
    let many = streams.len() > MAX_STREAM_SERIES;
    if !many {
        for ((agent, direction, stream), points) in streams.iter() {
            let mut name = format!("stream {stream}");
            if directions.len() > 1 {
                name = format!("{name} {direction}");
            }
            if agents.len() > 1 {
                // Named by where the data went: from the agent when it sent (reverse).
                let toward = if *direction == "reverse" { "from" } else { "to" };
                name = format!("{name} {toward} {agent}");
            }
            fig.series.push(Series::new(&name, Style::Line, points.clone()));
        }
    }
    let mean = |v: &[(f64, f64)]| v.iter().map(|p| p.1).sum::<f64>() / v.len().max(1) as f64;
    fig.description = format!(
        "Throughput in Mbit/s (10^6 bits/s) at each interval as the {} counted it, {} stream(s){}; mean of the interval totals {}.",
        if side == "received" { "receivers" } else { "senders" },
        streams.len(),
        if many {
            " (totals only: too many streams to draw one by one)"
        } else {
            ""
        },
        totals
            .iter()
            .map(|(d, v)| format!("{d} {:.1} Mbit/s", mean(v)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Some(fig)
}

/// `fig-cpu-timeline`: each end's host CPU busy % and linerate's own share at each interval.
pub fn cpu_timeline(r: &TestResult) -> Option<Figure> {
    let mut hosts: BTreeMap<&str, (Vec<Point>, Vec<Point>)> = BTreeMap::new();
    for i in &r.intervals {
        let IntervalRecord::Host(h) = i else { continue };
        let entry = hosts.entry(h.host.as_str()).or_default();
        let x = middle(h.sample.start_ns, h.sample.end_ns);
        if let Some(c) = &h.sample.usage.cpu {
            entry.0.push(Point::xy(x, c.busy));
        }
        if let Some(p) = h.sample.usage.process.as_ref().and_then(|p| p.percent_of_host) {
            entry.1.push(Point::xy(x, p));
        }
    }
    if hosts.values().all(|(a, b)| a.is_empty() && b.is_empty()) {
        return None;
    }
    let mut fig = Figure::new(
        "fig-cpu-timeline",
        "CPU over time, per end",
        Axis::linear("time since start", "s"),
        Axis::linear("CPU busy, share of all the host's CPUs", "%").with_min(0.0),
    );
    let mut parts = Vec::new();
    for (host, (busy, process)) in hosts {
        if !busy.is_empty() {
            let mean = busy.iter().map(|p| p.y).sum::<f64>() / busy.len() as f64;
            parts.push(format!("{host} host {mean:.1} %"));
            fig.series
                .push(Series::new(&format!("{host}: host busy"), Style::Line, busy));
        }
        if !process.is_empty() {
            fig.series
                .push(Series::new(&format!("{host}: linerate"), Style::Line, process));
        }
    }
    fig.description = format!(
        "Busy CPU at each interval, percent of all the host's CPUs (100 = every CPU busy), and linerate's own share; mean busy: {}. Each end on its own clock.",
        parts.join(", ")
    );
    Some(fig)
}

/// The ends whose CPUs the report shows: send and receive side, or an HTTP run's client and
/// server.
fn ends(r: &TestResult) -> Vec<(String, &SideSummary)> {
    let s = &r.summary;
    let named = |what: &str, side: &SideSummary| format!("{what} ({})", side.counted_by.join(", "));
    let mut out = Vec::new();
    if s.http.is_some() {
        out.push((named("client", &s.received), &s.received));
        if let Some(server) = &s.server {
            out.push((named("server", server), server));
        }
    } else {
        out.push((named("send side", &s.sent), &s.sent));
        out.push((named("receive side", &s.received), &s.received));
    }
    out
}

/// Grouped bars: one group per CPU, one bar per end; described as `what`, then each end's values
/// in category order.
fn grouped(id: &str, title: &str, y: Axis, rows: Vec<(String, BTreeMap<u32, f64>)>, what: &str) -> Option<Figure> {
    let cpus: std::collections::BTreeSet<u32> = rows.iter().flat_map(|(_, m)| m.keys().copied()).collect();
    if cpus.is_empty() {
        return None;
    }
    let index: BTreeMap<u32, usize> = cpus.iter().enumerate().map(|(i, c)| (*c, i)).collect();
    let names = cpus.iter().map(|c| format!("CPU {c}")).collect();
    let mut fig = Figure::new(id, title, Axis::categories("CPU", names), y);
    let n = rows.len() as f64;
    let width = 0.8 / n;
    for (k, (name, values)) in rows.into_iter().enumerate() {
        let points = values
            .iter()
            .map(|(cpu, v)| {
                let from = index[cpu] as f64 - 0.4 + k as f64 * width;
                Point::bar(from, from + width, *v)
            })
            .collect();
        fig.series.push(Series::new(&name, Style::Bars, points));
    }
    // "send side: 12.0, 80.5; receive side: ..." in category order.
    let values = fig.values_in_words(|p| format!("{:.1}", p.y));
    fig.description = format!("{what}, per end: {values}.");
    Some(fig)
}

/// `fig-cpu-per-cpu` and `fig-irq-per-cpu`: busy % and interrupts/s of each CPU over the
/// window, one bar per end.
pub fn per_cpu(r: &TestResult) -> Vec<Figure> {
    let ends = ends(r);
    let busy = ends
        .iter()
        .filter(|(_, s)| !s.cpu.per_cpu.is_empty())
        .map(|(name, s)| {
            let m = s
                .cpu
                .per_cpu
                .iter()
                .enumerate()
                .map(|(i, c)| (c.cpu.unwrap_or(i as u32), c.busy))
                .collect();
            (name.clone(), m)
        })
        .collect();
    let irq = ends
        .iter()
        .filter_map(|(name, s)| {
            let rates = s.interrupts_per_second.as_ref()?;
            Some((
                name.clone(),
                rates.per_cpu.iter().map(|c| (c.cpu, c.per_second)).collect(),
            ))
        })
        .collect();
    let mut out = Vec::new();
    out.extend(grouped(
        "fig-cpu-per-cpu",
        "CPU busy per CPU over the window",
        Axis::linear("busy", "%").with_min(0.0),
        busy,
        "Each CPU's busy share over the measurement window, percent of that CPU",
    ));
    out.extend(grouped(
        "fig-irq-per-cpu",
        "Interrupts per CPU over the window",
        Axis::linear("interrupts", "1/s"),
        irq,
        "Interrupts per second taken by each CPU over the measurement window (/proc/interrupts)",
    ));
    out
}
