//! What a run with latency probes adds to its report: the load's throughput and the probes'
//! round trips on one time axis (`fig-latency-time`), and the distribution of the round trips
//! in each phase, idle, loaded and recovery, as cumulative curves (`fig-latency-cdf`). In: the
//! `TestResult`'s `latency` and its intervals; out: [`Figure`]s. A run without probes gets none.

use super::common::{counted_streams, direction_totals};
use super::{mbit, middle};
use crate::plot::{Axis, Figure, Mark, Point, Series, Style};
use crate::text::latency::headline_series;
use linerate_wire::result::{IntervalRecord, LatencyUnderLoad, ProbeOn, ProbeSeries, TestResult};

/// The phases in time order, as the figures name them.
pub const PHASES: [&str; 3] = ["idle", "loaded", "recovery"];

/// The most points of one cumulative curve: past it the curve is drawn through evenly spaced
/// ranks (a distribution's curve rises monotonically, so nothing between them is lost to the eye).
const CDF_POINTS: usize = 400;

/// More samples than this in a series: the time axis draws it as a line without markers (a
/// marker per probe would make a minute at 100 probes/s a page of half a megabyte).
const POINTS_UP_TO: usize = 600;

/// The most curves the CDF draws: past it, the headline series' phases only.
const CDF_CURVES: usize = 8;

/// The phase (index into [`PHASES`]) a probe sent at `t_s` belongs to: idle before the load's
/// time zero, loaded over `[0, load_end_s]`, recovery after it.
pub fn phase_of(t_s: f64, load_end_s: f64) -> usize {
    if t_s < 0.0 {
        0
    } else if t_s <= load_end_s {
        1
    } else {
        2
    }
}

/// The series' answered round trips (ms) per phase, each sorted.
pub fn phase_round_trips(s: &ProbeSeries, load_end_s: f64) -> [Vec<f64>; 3] {
    let mut out: [Vec<f64>; 3] = Default::default();
    for p in &s.samples {
        out[phase_of(p.t_s, load_end_s)].push(p.rtt_ms);
    }
    for v in &mut out {
        v.sort_by(f64::total_cmp);
    }
    out
}

/// Both figures, when the run had probes with an answered one.
pub fn figures(r: &TestResult) -> Vec<Figure> {
    let Some(l) = &r.latency else { return Vec::new() };
    if l.series.iter().all(|s| s.samples.is_empty()) {
        return Vec::new();
    }
    vec![time_axis(r, l), cdf(l)]
}

/// The load's throughput per interval, Mbit/s as the receivers counted it, summed over its
/// streams, one series per direction (`--bidir`: forward and reverse); an HTTP run: the bytes
/// its client read. At each interval's middle. Returns the axis' quantity and the series.
fn throughput(r: &TestResult) -> (String, Vec<Series>) {
    let http: Vec<Point> = r
        .intervals
        .iter()
        .filter_map(|i| match i {
            IntervalRecord::Http(h) => Some(Point::xy(middle(h.start_ns, h.end_ns), mbit(h.bits_per_second_in))),
            _ => None,
        })
        .collect();
    if !http.is_empty() {
        let series = vec![Series::new("throughput", Style::Line, http)];
        return ("throughput, read by the client".into(), series);
    }
    let records = counted_streams(r);
    let side = records.first().map_or("received", |s| s.side.as_str()).to_string();
    let totals = direction_totals(&records);
    let series = totals
        .iter()
        .map(|(direction, points)| {
            let name = if totals.len() > 1 {
                format!("throughput {direction}")
            } else {
                "throughput".to_string()
            };
            let points = points.iter().map(|(x, y)| Point::xy(*x, *y)).collect();
            Series::new(&name, Style::Line, points)
        })
        .collect();
    (format!("throughput, {side}"), series)
}

/// `fig-latency-time`: the load's throughput (left axis) and every probe series' round trips
/// (right axis) against seconds since the load's start; the load shaded.
fn time_axis(r: &TestResult, l: &LatencyUnderLoad) -> Figure {
    let rtts: Vec<f64> = l
        .series
        .iter()
        .flat_map(|s| s.samples.iter().map(|p| p.rtt_ms))
        .collect();
    let (what, load) = throughput(r);
    let mut f = Figure::new(
        "fig-latency-time",
        "Throughput and round trips over time",
        Axis::linear("time since the load's start", "s"),
        Axis::linear(&what, "Mbit/s").with_min(0.0),
    );
    let rtt_axis = Axis::fitting("probe round trip", "ms", &rtts);
    let means: Vec<String> = load
        .iter()
        .map(|s| {
            let mean = s.points.iter().map(|p| p.y).sum::<f64>() / s.points.len().max(1) as f64;
            format!("{} at {} interval(s), mean {mean:.1} Mbit/s", s.name, s.points.len())
        })
        .collect();
    // Without the load's intervals (a document cut short before its first), the round trips
    // take the only axis.
    let right = !load.is_empty();
    if right {
        f.y2 = Some(rtt_axis);
        f.series.extend(load);
    } else {
        f.y = rtt_axis;
    }
    for s in &l.series {
        let points = s.samples.iter().map(|p| Point::xy(p.t_s, p.rtt_ms)).collect();
        let style = if s.samples.len() <= POINTS_UP_TO {
            Style::Points
        } else {
            Style::Line
        };
        let series = Series::new(&series_name(s), style, points);
        f.series.push(if right { series.on_right() } else { series });
    }
    f.marks.push(Mark::Band {
        from: 0.0,
        to: l.load_end_s,
        label: "load".into(),
    });
    let medians: Vec<String> = l
        .series
        .iter()
        .map(|s| {
            let [idle, loaded, recovery] = phase_medians(s);
            format!("{}: idle {idle}, loaded {loaded}, recovery {recovery}", series_name(s))
        })
        .collect();
    let load_words = if right {
        format!(
            "its throughput in Mbit/s (10^6 bits/s) at each interval, left axis ({}); each answered probe's round trip in ms at the moment it was sent, right axis",
            means.join(", ")
        )
    } else {
        "no interval of its throughput in the document; each answered probe's round trip in ms at the moment it was sent".to_string()
    };
    f.description = format!(
        "The load ran from 0 to {:.1} s (shaded); {load_words} (before 0: idle, after the load: recovery). Median round trips: {}.",
        l.load_end_s,
        medians.join("; ")
    );
    f
}

/// A series as the figures and tables name it: its name and where it was timed.
pub(crate) fn series_name(s: &ProbeSeries) -> String {
    match s.on {
        ProbeOn::Separate => format!("{} (own connection)", s.name),
        ProbeOn::Load => format!("{} (load connections)", s.name),
    }
}

/// The document's median round trip of each phase of `s` (idle, loaded, recovery), as text:
/// `20.20 ms`, or n/a where the phase had no answered probe.
fn phase_medians(s: &ProbeSeries) -> [String; 3] {
    [&s.idle, &s.loaded, &s.recovery].map(|p| {
        p.as_ref()
            .filter(|p| p.answered > 0)
            .map_or_else(|| "n/a".to_string(), |p| format!("{:.2} ms", p.rtt_ms.p50))
    })
}

/// The cumulative curve of sorted values: at each value, the percentage of values at or below
/// it; at most [`CDF_POINTS`] points, the least and the most always among them.
fn cumulative(sorted: &[f64]) -> Vec<Point> {
    let n = sorted.len();
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut ranks: Vec<usize> = (0..n).step_by(step).collect();
    if n > 0 && ranks.last() != Some(&(n - 1)) {
        ranks.push(n - 1);
    }
    ranks
        .into_iter()
        .map(|i| Point::xy(sorted[i], 100.0 * (i + 1) as f64 / n as f64))
        .collect()
}

/// `fig-latency-cdf`: per series and phase, the share of answered probes whose round trip was at
/// or below each value (ms; a log axis when the round trips span a decade or more).
fn cdf(l: &LatencyUnderLoad) -> Figure {
    let rtts: Vec<f64> = l
        .series
        .iter()
        .flat_map(|s| s.samples.iter().map(|p| p.rtt_ms))
        .filter(|v| *v > 0.0)
        .collect();
    let lo = rtts.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = rtts.iter().copied().fold(0.0, f64::max);
    let x = if lo.is_finite() && hi / lo >= 10.0 {
        Axis::log("probe round trip", "ms")
    } else {
        Axis::linear("probe round trip", "ms")
    };
    let mut f = Figure::new(
        "fig-latency-cdf",
        "Round trips per phase, cumulative",
        x,
        Axis::linear("answered probes at or below", "%")
            .with_min(0.0)
            .with_max(100.0),
    );
    let curves: usize = l
        .series
        .iter()
        .map(|s| {
            phase_round_trips(s, l.load_end_s)
                .iter()
                .filter(|v| !v.is_empty())
                .count()
        })
        .sum();
    let head = headline_series(l);
    let drawn: Vec<&ProbeSeries> = if curves > CDF_CURVES {
        head.into_iter().collect()
    } else {
        l.series.iter().collect()
    };
    let mut words = Vec::new();
    for s in &drawn {
        let medians = phase_medians(s);
        for ((phase, sorted), median) in PHASES.iter().zip(phase_round_trips(s, l.load_end_s)).zip(medians) {
            if sorted.is_empty() {
                continue;
            }
            words.push(format!("{} {phase}: {} probes, median {median}", s.name, sorted.len()));
            f.series.push(Series::new(
                &format!("{}, {phase}", series_name(s)),
                Style::Line,
                cumulative(&sorted),
            ));
        }
    }
    f.description = format!(
        "For each phase (idle before the load, loaded, recovery after it), the percentage of answered probes whose round trip was at or below each value in ms{}: {}.",
        if drawn.len() < l.series.len() {
            " (the headline series only: too many curves to draw every series)"
        } else {
            ""
        },
        words.join("; ")
    );
    f
}
