//! Comparing two sets of results: the points both sides measured, each headline
//! figure's change with the 95 % confidence interval of the difference and a verdict that knows
//! which way is better and calls a change better or worse only when it is both significant and at
//! least the threshold, and what differs between the configurations ([`config`]).
//! Typed data in, a [`Comparison`] document out; no printing.

pub mod config;

pub use config::config_difference;

use crate::document::Document;
use crate::headline::headline;
use crate::stats;
use linerate_wire::result::{
    Better, ComparedSide, Comparison, Coordinate, FigureComparison, IntervalMethod, Outcome, PointComparison, SCHEMA,
    SideFigure, TestResult, Verdict,
};
use std::collections::BTreeMap;

/// A document with where it came from and where it sits in a campaign.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its id or path.
    pub source: String,
    pub document: Document,
    /// The campaign test's name; the test kind when None.
    pub test: Option<String>,
    /// The point's varied values (a campaign's labels); a sweep adds its own.
    pub coordinates: Vec<Coordinate>,
}

/// One side as asked for, and the documents it took.
#[derive(Clone, Debug)]
pub struct SideInput {
    pub source: String,
    pub entries: Vec<Entry>,
}

type Key = (String, Vec<Coordinate>);

/// The complete runs of a side, by point.
fn points(side: &SideInput) -> BTreeMap<Key, Vec<&TestResult>> {
    let mut out: BTreeMap<Key, Vec<&TestResult>> = BTreeMap::new();
    let complete = |r: &&TestResult| r.outcome() == Outcome::Complete;
    for e in &side.entries {
        let name = |kind: &str| e.test.clone().unwrap_or_else(|| kind.to_string());
        match &e.document {
            Document::Run(r) => {
                if complete(&&**r) {
                    out.entry((name(&r.test), sorted(e.coordinates.clone())))
                        .or_default()
                        .push(r);
                }
            }
            Document::Repeated(rep) => {
                let runs = rep
                    .aggregated_runs
                    .iter()
                    .filter_map(|n| rep.runs.get(n.wrapping_sub(1)))
                    .filter(complete);
                let kind = rep.test.trim_end_matches(" repeat");
                out.entry((name(kind), sorted(e.coordinates.clone())))
                    .or_default()
                    .extend(runs);
            }
            Document::Sweep(s) => {
                for p in &s.points {
                    let Some(r) = p.result.as_ref().filter(complete) else {
                        continue;
                    };
                    let mut coords = e.coordinates.clone();
                    if let Ok(serde_json::Value::Object(at)) = serde_json::to_value(p.at) {
                        coords.extend(at.into_iter().map(|(k, v)| Coordinate {
                            name: k,
                            value: match v {
                                serde_json::Value::String(s) => s,
                                other => other.to_string(),
                            },
                        }));
                    }
                    out.entry((name(&r.test), sorted(coords))).or_default().push(r);
                }
            }
            // A matrix: each cell is a point of its own, named by its row and column, so two
            // matrices compare cell by cell.
            Document::Matrix(m) => {
                let kind = m.test.trim_end_matches(" matrix");
                for c in &m.cells {
                    let Some(r) = c.result.as_deref().filter(complete) else {
                        continue;
                    };
                    let mut coords = e.coordinates.clone();
                    coords.push(Coordinate {
                        name: "from".into(),
                        value: c.from.clone(),
                    });
                    coords.push(Coordinate {
                        name: "to".into(),
                        value: c.to.clone(),
                    });
                    out.entry((name(kind), sorted(coords))).or_default().push(r);
                }
            }
            // Not a measurement: the sources refuse one as a side (`linerate compare`).
            Document::Comparison(_) => {}
        }
    }
    out
}

/// Two varied values in their own order: as sizes (`4K` = 4096) or numbers where both read
/// so, else as text.
fn value_order(a: &str, b: &str) -> std::cmp::Ordering {
    let number = |v: &str| {
        v.parse::<f64>()
            .ok()
            .or_else(|| v.parse::<linerate_wire::units::ByteSize>().ok().map(|s| s.0 as f64))
    };
    match (number(a), number(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    }
}

fn first_run<'r>(points: &BTreeMap<Key, Vec<&'r TestResult>>) -> Option<&'r TestResult> {
    points.values().find_map(|runs| runs.first().copied())
}

fn sorted(mut c: Vec<Coordinate>) -> Vec<Coordinate> {
    c.sort();
    c
}

fn describe(key: &Key) -> String {
    let mut s = key.0.clone();
    for c in &key.1 {
        s += &format!(" {}={}", c.name, c.value);
    }
    s
}

/// The smallest change, percent of A's value, a verdict calls better or worse unless told
/// otherwise (`compare --threshold`). Two batches of three runs on one 100 Mbit/s lab link came
/// 0.4 % and 0.6 % apart with p = 0.02 and 0.0009 (each batch within 0.2 %): a shift of the
/// machine between batches that the runs' spread does not show. 2 % leaves that room, as
/// Criterion's noise threshold (1 % by default) and benchstat's do for theirs.
pub const DEFAULT_THRESHOLD_PERCENT: f64 = 2.0;

/// Compares B against A: every point both measured, figure by figure; a change is better or
/// worse when it is significant and at least `threshold_percent` % of A's value.
pub fn compare(a: &SideInput, b: &SideInput, threshold_percent: f64) -> Comparison {
    let (pa, pb) = (points(a), points(b));
    let mut notes = Vec::new();
    let mut compared = Vec::new();
    for (key, runs_a) in &pa {
        let Some(runs_b) = pb.get(key) else { continue };
        compared.push(PointComparison {
            test: key.0.clone(),
            coordinates: key.1.clone(),
            runs_a: runs_a.len(),
            runs_b: runs_b.len(),
            figures: compare_runs(runs_a, runs_b, threshold_percent),
        });
    }
    // Test by test, each varied value in its own order: 512 before 4K before 1M.
    compared.sort_by(|x, y| {
        x.test.cmp(&y.test).then_with(|| {
            x.coordinates
                .iter()
                .zip(&y.coordinates)
                .map(|(p, q)| p.name.cmp(&q.name).then_with(|| value_order(&p.value, &q.value)))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    });
    if compared.iter().any(|p| p.runs_a < 2 || p.runs_b < 2) {
        notes.push("a side with one run has no spread: significance needs repeats (--repeat 3 or more)".into());
    }
    let config = match (first_run(&pa), first_run(&pb)) {
        (Some(x), Some(y)) => config_difference(x, y),
        _ => Vec::new(),
    };
    if compared.is_empty() {
        notes.push("the two sides share no point (same test and varied values) with a complete run".into());
    }
    Comparison {
        linerate: linerate_wire::VERSION.to_string(),
        schema: SCHEMA,
        test: "compare".into(),
        a: ComparedSide {
            source: a.source.clone(),
            documents: a.entries.iter().map(|e| e.source.clone()).collect(),
        },
        b: ComparedSide {
            source: b.source.clone(),
            documents: b.entries.iter().map(|e| e.source.clone()).collect(),
        },
        only_a: pa.keys().filter(|k| !pb.contains_key(*k)).map(describe).collect(),
        only_b: pb.keys().filter(|k| !pa.contains_key(*k)).map(describe).collect(),
        points: compared,
        config,
        notes,
        threshold_percent: Some(threshold_percent),
    }
}

/// Why a comparison compared nothing, in words; None when at least one figure was measured on
/// both sides of a shared point. `linerate compare` exits non-zero on it (README, "Exit status"):
/// a verdict of "no change" must not come from runs that were never set side by side.
pub fn nothing_compared(c: &Comparison) -> Option<String> {
    if c.points.is_empty() {
        let list = |keys: &[String]| match keys {
            [] => "no complete run".to_string(),
            [one] => one.clone(),
            [first, rest @ ..] => format!("{first} and {} more", rest.len()),
        };
        return Some(format!(
            "the two sides share no point (same test and varied values) with a complete run: A has {}, B has {}",
            list(&c.only_a),
            list(&c.only_b)
        ));
    }
    let both = |f: &FigureComparison| f.a.is_some() && f.b.is_some();
    if !c.points.iter().flat_map(|p| &p.figures).any(both) {
        return Some("no figure was measured on both sides at the points they share".into());
    }
    None
}

/// Whether a figure is a percentile (`latency_p99_us`): its runs compare by a bootstrap of the
/// medians, not by Welch's t on the means.
fn is_percentile(name: &str) -> bool {
    name.split('_')
        .any(|p| p.len() > 1 && p.starts_with('p') && p[1..].chars().all(|c| c.is_ascii_digit()))
}

/// Seed of the bootstrap: the same runs give the same interval.
const BOOTSTRAP_SEED: u64 = 0x5eed_c0de;

/// The 95 % confidence interval of one side's value of `figure`, by the method the figure is
/// compared with: Student's t interval of the mean, or for a percentile a percentile bootstrap of
/// the median (the comparison's resamples and seed). None with fewer than two runs.
pub fn side_interval(figure: &str, side: &SideFigure) -> Option<(f64, f64)> {
    let xs = &side.values;
    if xs.len() < 2 {
        return None;
    }
    if is_percentile(figure) {
        stats::bootstrap_interval(
            xs,
            |r| stats::median(r).unwrap_or(f64::NAN),
            stats::BOOTSTRAP_RESAMPLES,
            BOOTSTRAP_SEED,
        )
    } else {
        let (m, h) = (stats::mean(xs)?, stats::ci95_half_width(xs)?);
        Some((m - h, m + h))
    }
}

/// The headline figures of two sets of runs of one point, compared: a figure is better or worse
/// when the 95 % interval of its difference leaves out zero and its change is at least
/// `threshold_percent` % of A's value (where A's value is 0 there is no percentage, and
/// significance alone decides).
pub fn compare_runs(a: &[&TestResult], b: &[&TestResult], threshold_percent: f64) -> Vec<FigureComparison> {
    let Some(first) = a.first().or(b.first()) else {
        return Vec::new();
    };
    // Each run's headline figures, read once.
    let (heads_a, heads_b): (Vec<_>, Vec<_>) = (
        a.iter().map(|r| headline(r)).collect(),
        b.iter().map(|r| headline(r)).collect(),
    );
    let values = |heads: &[Vec<crate::headline::Figure>], name: &str| -> Vec<f64> {
        heads
            .iter()
            .filter_map(|h| h.iter().find(|f| f.name == name).and_then(|f| f.value))
            .filter(|v| v.is_finite())
            .collect()
    };
    headline(first)
        .into_iter()
        .map(|f| {
            let (va, vb) = (values(&heads_a, f.name), values(&heads_b, f.name));
            let percentile = is_percentile(f.name);
            let centre = |xs: &[f64]| {
                if percentile { stats::median(xs) } else { stats::mean(xs) }
            };
            let side = |xs: &[f64]| {
                centre(xs).map(|value| SideFigure {
                    n: xs.len(),
                    value,
                    values: xs.to_vec(),
                })
            };
            let (sa, sb) = (side(&va), side(&vb));
            let difference = match (&sa, &sb) {
                (Some(x), Some(y)) => Some(y.value - x.value),
                _ => None,
            };
            let change_percent = match (&sa, &sb) {
                (Some(x), Some(y)) if x.value != 0.0 => Some((y.value - x.value) / x.value.abs() * 100.0),
                _ => None,
            };
            let (interval, method, p_value) = if va.len() < 2 || vb.len() < 2 {
                (None, None, None)
            } else if percentile {
                let ci = stats::bootstrap_difference(
                    &va,
                    &vb,
                    |xs| stats::median(xs).unwrap_or(f64::NAN),
                    stats::BOOTSTRAP_RESAMPLES,
                    BOOTSTRAP_SEED,
                );
                (ci, Some(IntervalMethod::Bootstrap), None)
            } else {
                let w = stats::welch(&va, &vb);
                (
                    w.map(|w| (w.ci95_low, w.ci95_high)),
                    Some(IntervalMethod::Welch),
                    w.map(|w| w.p_value),
                )
            };
            let large_enough = change_percent.is_none_or(|c| c.abs() >= threshold_percent);
            let verdict = match (&sa, &sb, interval, difference) {
                (None, _, _, _) | (_, None, _, _) => Verdict::NotMeasured,
                (_, _, None, _) => Verdict::NeedsRepeats,
                (_, _, Some((lo, hi)), Some(d)) if (lo > 0.0 || hi < 0.0) && large_enough => {
                    let up = d > 0.0;
                    if up == (f.better == Better::Up) {
                        Verdict::Better
                    } else {
                        Verdict::Worse
                    }
                }
                _ => Verdict::NoSignificantChange,
            };
            FigureComparison {
                figure: f.name.to_string(),
                label: f.label.to_string(),
                unit: f.unit.to_string(),
                better: f.better,
                a: sa,
                b: sb,
                change_percent,
                difference,
                difference_ci95_low: interval.map(|i| i.0),
                difference_ci95_high: interval.map(|i| i.1),
                method: interval.and(method),
                p_value,
                verdict,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod order_tests {
    #[test]
    fn varied_values_order_as_sizes_and_numbers() {
        let mut v = vec!["1M", "512", "4K", "64K"];
        v.sort_by(|a, b| super::value_order(a, b));
        assert_eq!(v, ["512", "4K", "64K", "1M"]);
        let mut n = vec!["10", "9.5", "100"];
        n.sort_by(|a, b| super::value_order(a, b));
        assert_eq!(n, ["9.5", "10", "100"]);
    }
}
