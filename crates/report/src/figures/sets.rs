//! Figures of documents made of several runs: a repeated test's runs with their mean and
//! interval (`fig-repeat-runs`), and a comparison's A/B bars with the change written on them
//! (`fig-compare-<figure>`, the figure's name with `-` for `_`).

use super::campaign::slug;
use crate::plot::{Axis, Figure, Mark, Point, Series, Style};
use linerate_core::result::{Comparison, PointComparison, Repeated};
use linerate_core::units::ByteSize;

/// `fig-repeat-runs`: the primary figure of each run, and beside them its mean with the 95 %
/// confidence interval as an error bar and a line across the runs (NTttcp's repeated runs).
pub fn repeat_runs(rep: &Repeated) -> Option<Figure> {
    let f = rep.aggregate.iter().find(|f| f.figure == rep.primary)?;
    let n = f.values.len();
    let mut names: Vec<String> = (1..=n).map(|k| format!("run {k}")).collect();
    names.push("mean".to_string());
    let mut fig = Figure::new(
        "fig-repeat-runs",
        &format!("{} of each run, and their mean", f.label),
        Axis::categories("run", names),
        Axis::linear(&f.label, &f.stats.unit).with_min(0.0),
    );
    let runs: Vec<Point> = f
        .values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| Point::xy(i as f64, v)))
        .collect();
    fig.series.push(Series::new("each run", Style::Points, runs));
    let mut mean = Point::xy(n as f64, f.stats.mean);
    mean.error = f.stats.ci95_low.zip(f.stats.ci95_high);
    fig.series
        .push(Series::new("mean, 95 % confidence interval", Style::Points, vec![mean]));
    fig.marks.push(Mark::HLine {
        y: f.stats.mean,
        label: format!("mean {:.1} {}", f.stats.mean, f.stats.unit),
    });
    fig.description = format!(
        "{} ({}) of each of {n} runs (a run left out of the aggregate has no point), and their mean {:.3}{}.",
        f.label,
        f.stats.unit,
        f.stats.mean,
        match mean.error {
            Some((lo, hi)) => format!(" with its 95 % confidence interval {lo:.3} to {hi:.3}"),
            None => " (no interval with fewer than two runs)".to_string(),
        }
    );
    Some(fig)
}

/// A point of a comparison in words: `writes length=4K`.
pub fn point_name(p: &PointComparison) -> String {
    let mut s = p.test.clone();
    for c in &p.coordinates {
        s += &format!(" {}={}", c.name, c.value);
    }
    s
}

/// A value in the order a reader expects: sizes and numbers by size (`4K` before `64K`), then
/// the rest as text.
fn value_key(v: &str) -> (f64, String) {
    let n = v
        .trim()
        .parse::<f64>()
        .ok()
        .or_else(|| v.parse::<ByteSize>().ok().map(|b| b.0 as f64));
    (n.unwrap_or(f64::INFINITY), v.to_string())
}

/// A point's place: its test, then each varied value by [`value_key`].
type PointKey = (String, Vec<(String, (f64, String))>);

/// The points of a comparison in reading order: by test, then by their values, sizes by size.
pub fn ordered(c: &Comparison) -> Vec<&PointComparison> {
    let key = |p: &PointComparison| -> PointKey {
        (
            p.test.clone(),
            p.coordinates
                .iter()
                .map(|x| (x.name.clone(), value_key(&x.value)))
                .collect(),
        )
    };
    let mut out: Vec<&PointComparison> = c.points.iter().collect();
    out.sort_by(|a, b| key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal));
    out
}

/// `fig-compare-<figure>` for each headline figure: per point a bar for A and one for B (their
/// means, or medians for percentiles), the change of B against A in % written over them.
pub fn compare(c: &Comparison) -> Vec<Figure> {
    let mut names: Vec<(&str, &str, &str)> = Vec::new();
    for p in &c.points {
        for f in &p.figures {
            if !names.iter().any(|(n, _, _)| *n == f.figure) {
                names.push((&f.figure, &f.label, &f.unit));
            }
        }
    }
    let ordered = ordered(c);
    let points: Vec<String> = ordered.iter().map(|p| point_name(p)).collect();
    let mut out = Vec::new();
    for (name, label, unit) in names {
        let mut fig = Figure::new(
            &format!("fig-compare-{}", slug(name)),
            &format!("{label}: A and B"),
            Axis::categories("point", points.clone()),
            Axis::linear(label, unit).with_min(0.0),
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut words = Vec::new();
        for (i, p) in ordered.iter().enumerate() {
            let Some(f) = p.figures.iter().find(|f| f.figure == name) else {
                continue;
            };
            let x = i as f64;
            if let Some(s) = &f.a {
                a.push(Point::bar(x - 0.4, x, s.value));
            }
            if let Some(s) = &f.b {
                b.push(Point::bar(x, x + 0.4, s.value));
            }
            let top = f.a.iter().chain(&f.b).map(|s| s.value).fold(0.0, f64::max);
            let change = f.change_percent.map_or("n/a".to_string(), |c| format!("{c:+.1} %"));
            fig.marks.push(Mark::Label {
                x,
                y: top,
                text: change.clone(),
            });
            words.push(format!(
                "{}: A {}, B {}, {change} ({})",
                points[i],
                f.a.as_ref().map_or("unmeasured".into(), |s| format!("{:.4}", s.value)),
                f.b.as_ref().map_or("unmeasured".into(), |s| format!("{:.4}", s.value)),
                f.verdict.words()
            ));
        }
        fig.series
            .push(Series::new(&format!("A: {}", c.a.source), Style::Bars, a));
        fig.series
            .push(Series::new(&format!("B: {}", c.b.source), Style::Bars, b));
        fig.description = format!(
            "{label} ({unit}) on side A and side B at each point both measured, the change of B against A in percent over each pair. {}.",
            words.join("; ")
        );
        out.push(fig);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_sort_by_size_and_words_after_them() {
        let mut v = vec!["64K", "cubic", "512", "4K", "1M"];
        v.sort_by(|a, b| value_key(a).partial_cmp(&value_key(b)).expect("comparable"));
        assert_eq!(v, ["512", "4K", "64K", "1M", "cubic"]);
    }
}
