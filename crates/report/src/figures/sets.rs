//! Figures of documents made of several runs: a repeated test's runs with their mean and
//! interval (`fig-repeat-runs`), and a comparison's A/B bars with the change written on them and
//! each side's 95 % interval as an error bar (`fig-compare-<figure>`, the figure's name with `-`
//! for `_`).

use super::campaign::slug;
use crate::plot::{Axis, Figure, Mark, Point, Series, Style};
use crate::repeat::num;
use linerate_results::compare::side_interval;
use linerate_wire::result::{Comparison, PointComparison, Repeated, SideFigure};
use linerate_wire::units::ByteSize;

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
/// means, or medians for percentiles), each with its side's 95 % confidence interval as an error
/// bar when the side has two runs or more ([`side_interval`]: Student's t of the mean, a bootstrap
/// of the median), the change of B against A in % written over them.
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
    let mut out = vec![change(c, &names, &ordered, &points)];
    for (name, label, unit) in names {
        // Values of different points can lie decades apart (2 Mbit/s beside 680): the axis is
        // logarithmic then, so the small ones still show.
        let values: Vec<f64> = ordered
            .iter()
            .flat_map(|p| p.figures.iter().filter(|f| f.figure == name))
            .flat_map(|f| [f.a.as_ref(), f.b.as_ref()])
            .flatten()
            .map(|s| s.value)
            .collect();
        let y = match Axis::fitting(label, unit, &values) {
            a if a.scale == crate::plot::Scale::Log => a,
            a => a.with_min(0.0),
        };
        let mut fig = Figure::new(
            &format!("fig-compare-{}", slug(name)),
            &format!("{label}: A and B"),
            Axis::categories("point", points.clone()),
            y,
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut words = Vec::new();
        for (i, p) in ordered.iter().enumerate() {
            let Some(f) = p.figures.iter().find(|f| f.figure == name) else {
                continue;
            };
            let x = i as f64;
            // Each side's bar carries its own interval (a side of one run has none).
            let bar = |s: &SideFigure, from: f64, to: f64| {
                let mut p = Point::bar(from, to, s.value);
                p.error = side_interval(&f.figure, s);
                p
            };
            let (pa, pb) = (
                f.a.as_ref().map(|s| bar(s, x - 0.4, x)),
                f.b.as_ref().map(|s| bar(s, x, x + 0.4)),
            );
            // The change is written above the pair's highest bar or error bar.
            let top = pa
                .iter()
                .chain(&pb)
                .map(|p| p.error.map_or(p.y, |(_, hi)| hi.max(p.y)))
                .fold(0.0, f64::max);
            let change = f.change_percent.map_or("n/a".to_string(), |c| format!("{c:+.1} %"));
            fig.marks.push(Mark::Label {
                x,
                y: top,
                text: change.clone(),
            });
            words.push(format!(
                "{}: A {}, B {}, {change} ({})",
                points[i],
                side_words(pa.as_ref()),
                side_words(pb.as_ref()),
                f.verdict.words()
            ));
            a.extend(pa);
            b.extend(pb);
        }
        fig.series
            .push(Series::new(&format!("A: {}", c.a.source), Style::Bars, a));
        fig.series
            .push(Series::new(&format!("B: {}", c.b.source), Style::Bars, b));
        fig.description = format!(
            "{label} ({unit}) on side A and side B at each point both measured (a percentile's bar is the median of the runs, any other the mean; its error bar the 95 % confidence interval of that, where the side has two runs or more), the change of B against A in percent over each pair. {}.",
            words.join("; ")
        );
        out.push(fig);
    }
    out
}

/// `fig-compare-change`: every headline figure's change of B against A in %, per point (one bar
/// per figure, grouped by point), on one axis however far apart the figures' values lie; the
/// error bar the 95 % confidence interval of B - A as a share of A; each bar's tooltip both
/// sides' values and the verdict.
fn change(c: &Comparison, names: &[(&str, &str, &str)], ordered: &[&PointComparison], points: &[String]) -> Figure {
    let mut fig = Figure::new(
        "fig-compare-change",
        "Change of B against A",
        Axis::categories("point", points.to_vec()),
        Axis::linear("change of B against A", "%"),
    );
    let width = 0.8 / names.len().max(1) as f64;
    let mut words = Vec::new();
    for (j, (name, label, unit)) in names.iter().enumerate() {
        let mut bars = Vec::new();
        for (i, p) in ordered.iter().enumerate() {
            let Some(f) = p.figures.iter().find(|f| f.figure == *name) else {
                continue;
            };
            let from = i as f64 - 0.4 + j as f64 * width;
            let tip = format!(
                "{}, {label}: A {}, B {} {unit}; {}, {}",
                points[i],
                f.a.as_ref().map_or("unmeasured".to_string(), |s| num(s.value)),
                f.b.as_ref().map_or("unmeasured".to_string(), |s| num(s.value)),
                f.change_percent.map_or("n/a".to_string(), |c| format!("{c:+.1} %")),
                f.verdict.words()
            );
            fig.marks.push(Mark::Tip {
                from,
                to: from + width,
                text: tip.clone(),
            });
            let Some(change) = f.change_percent else {
                continue;
            };
            let mut bar = Point::bar(from, from + width, change);
            let a = f.a.as_ref().map(|s| s.value).filter(|v| *v != 0.0);
            bar.error = match (f.difference_ci95_low, f.difference_ci95_high, a) {
                (Some(lo), Some(hi), Some(a)) => Some((lo / a.abs() * 100.0, hi / a.abs() * 100.0)),
                _ => None,
            };
            fig.marks.push(Mark::Label {
                x: from + width / 2.0,
                y: bar
                    .error
                    .map_or(
                        change,
                        |(lo, hi)| if change >= 0.0 { hi.max(change) } else { lo.min(change) },
                    )
                    .max(0.0),
                text: format!("{change:+.1} %"),
            });
            bars.push(bar);
            words.push(tip);
        }
        fig.series.push(Series::new(label, Style::Bars, bars));
    }
    fig.description = format!(
        "The change of B ({}) against A ({}) in percent of A for each headline figure at each point, on one axis; the error bar is the 95 % confidence interval of B - A in percent of A (where both sides were repeated). {}.",
        c.b.source,
        c.a.source,
        words.join("; ")
    );
    fig
}

/// A side's bar in words, with its interval where it has one, as the text report writes
/// figures: `812.0 (95 % CI 790.1 to 833.9)`.
fn side_words(bar: Option<&Point>) -> String {
    match bar {
        None => "unmeasured".to_string(),
        Some(Point {
            y,
            error: Some((lo, hi)),
            ..
        }) => format!("{} (95 % CI {} to {})", num(*y), num(*lo), num(*hi)),
        Some(p) => num(p.y),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use linerate_wire::result::{Better, ComparedSide, FigureComparison, Verdict};

    /// The comparison of [`tests::comparison`]'s figures for other modules' tests.
    pub fn fixture() -> Comparison {
        comparison()
    }

    fn side(values: &[f64], value: f64) -> Option<SideFigure> {
        Some(SideFigure {
            n: values.len(),
            value,
            values: values.to_vec(),
        })
    }

    fn compared(figure: &str, a: Option<SideFigure>, b: Option<SideFigure>) -> FigureComparison {
        FigureComparison {
            figure: figure.into(),
            label: figure.replace('_', " "),
            unit: "u".into(),
            better: Better::Up,
            a,
            b,
            change_percent: None,
            difference: None,
            difference_ci95_low: None,
            difference_ci95_high: None,
            method: None,
            p_value: None,
            verdict: Verdict::NeedsRepeats,
        }
    }

    /// A comparison at one point: throughput with A repeated three times and B run once, and a
    /// latency percentile repeated on both sides.
    fn comparison() -> Comparison {
        let side_of = |s: &str| ComparedSide {
            source: s.into(),
            documents: Vec::new(),
        };
        Comparison {
            linerate: "0".into(),
            schema: 1,
            test: "compare".into(),
            threshold_percent: Some(2.0),
            a: side_of("a"),
            b: side_of("b"),
            points: vec![PointComparison {
                test: "tcp".into(),
                coordinates: Vec::new(),
                runs_a: 3,
                runs_b: 1,
                figures: vec![
                    compared(
                        "received_mbit_per_second",
                        side(&[100.0, 104.0, 97.0], 100.0 + 1.0 / 3.0),
                        side(&[200.0], 200.0),
                    ),
                    compared(
                        "latency_p99_us",
                        side(&[40.0, 50.0, 90.0], 50.0),
                        side(&[30.0, 31.0, 32.0], 31.0),
                    ),
                ],
            }],
            only_a: Vec::new(),
            only_b: Vec::new(),
            config: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_compared_sides_bar_carries_its_interval_when_it_has_repeats() {
        let figs = compare(&comparison());
        let tput = figs
            .iter()
            .find(|f| f.id == "fig-compare-received-mbit-per-second")
            .expect("the throughput bars");
        let (a, b) = (&tput.series[0].points[0], &tput.series[1].points[0]);
        // n = 3, mean 100.333, s = 3.5119: half-width t(0.975, 2) 4.303 x 3.5119 / sqrt(3) = 8.724.
        let (lo, hi) = a.error.expect("A has three runs");
        assert!((lo - 91.609).abs() < 0.01 && (hi - 109.057).abs() < 0.01, "{lo} {hi}");
        assert_eq!(b.error, None, "B has one run: no interval");
        assert!(
            tput.description.contains("A 100.3 (95 % CI 91.61 to 109.1)"),
            "{}",
            tput.description
        );
        // The change is written above the pair: here B's bar, higher than A's error bar.
        let Some(Mark::Label { y, .. }) = tput.marks.first() else {
            panic!("no change label");
        };
        assert_eq!(*y, 200.0);
        // A percentile's bar is the median; its interval one of the median, within the runs.
        let p99 = figs
            .iter()
            .find(|f| f.id == "fig-compare-latency-p99-us")
            .expect("p99 bars");
        let (lo, hi) = p99.series[0].points[0].error.expect("A repeated");
        assert!((40.0..=50.0).contains(&lo) && (50.0..=90.0).contains(&hi), "{lo} {hi}");
        let Some(Mark::Label { y, .. }) = p99.marks.first() else {
            panic!("no change label");
        };
        assert_eq!(*y, hi, "the change above A's error bar");
        // The CSV carries each bar's interval in its low and high columns, the SVG draws it.
        let csv = crate::plot::csv::render(tput);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some(
                "series,point,point end,received mbit per second (u),received mbit per second (u) low,received mbit per second (u) high,point name"
            )
        );
        let row_a: Vec<&str> = lines.next().expect("A's row").split(',').collect();
        assert_eq!(row_a[0], "A: a");
        assert_eq!(
            (row_a[4].parse::<f64>().ok(), row_a[5].parse::<f64>().ok()),
            (Some(lo_of(tput, 0)), Some(hi_of(tput, 0)))
        );
        let row_b: Vec<&str> = lines.next().expect("B's row").split(',').collect();
        assert_eq!((row_b[0], row_b[4], row_b[5]), ("B: b", "", ""));
        let svg = crate::plot::svg::render(tput);
        let series_a = &svg[svg.find("id=\"fig-compare-received-mbit-per-second-s0\"").expect("A")..];
        let series_a = &series_a[..series_a.find("</g>").expect("end of A")];
        assert!(series_a.contains("class=\"errors\""), "A's error bar drawn");
        assert!(
            series_a.contains("stroke=\"#000\" fill=\"none\""),
            "in black, not lost in the bar's fill: {series_a}"
        );
        let series_b = &svg[svg.find("id=\"fig-compare-received-mbit-per-second-s1\"").expect("B")..];
        let series_b = &series_b[..series_b.find("</g>").expect("end of B")];
        assert!(!series_b.contains("class=\"errors\""), "B has none");
    }

    fn lo_of(f: &Figure, s: usize) -> f64 {
        f.series[s].points[0].error.expect("interval").0
    }

    fn hi_of(f: &Figure, s: usize) -> f64 {
        f.series[s].points[0].error.expect("interval").1
    }

    #[test]
    fn issue_23_a_comparison_leads_with_every_figures_change_on_one_axis() {
        let mut c = comparison();
        // A second point whose throughput is 2 Mbit/s against the first's hundreds: on one
        // linear axis its bars would be invisible.
        let mut small = c.points[0].clone();
        small.coordinates.push(linerate_wire::result::Coordinate {
            name: "length".into(),
            value: "64".into(),
        });
        small.figures[0].a = side(&[2.0, 2.1, 1.9], 2.0);
        small.figures[0].b = side(&[2.2, 2.3, 2.1], 2.2);
        small.figures[0].change_percent = Some(10.0);
        small.figures[0].difference_ci95_low = Some(0.1);
        small.figures[0].difference_ci95_high = Some(0.3);
        small.figures[0].verdict = Verdict::Better;
        c.points.push(small);
        let figs = compare(&c);
        let change = &figs[0];
        assert_eq!(change.id, "fig-compare-change", "the change leads");
        assert_eq!(change.y.unit, "%");
        let tput = &change.series[0];
        assert_eq!(tput.name, "received mbit per second");
        let bar = tput
            .points
            .iter()
            .find(|p| p.y == 10.0)
            .expect("the small point's change");
        // The interval of B - A (0.1 to 0.3) as a share of A (2.0): 5 % to 15 %.
        let (lo, hi) = bar.error.expect("an interval");
        assert!((lo - 5.0).abs() < 1e-9 && (hi - 15.0).abs() < 1e-9, "{lo} {hi}");
        assert!(
            change.marks.iter().any(
                |m| matches!(m, Mark::Tip { text, .. } if text.contains("A 2.00, B 2.20") && text.contains("better"))
            ),
            "each side's value in the tooltip"
        );
        // The A/B bars of a figure whose values span two decades are on a log axis.
        let bars = figs
            .iter()
            .find(|f| f.id == "fig-compare-received-mbit-per-second")
            .expect("the bars");
        assert_eq!(bars.y.scale, crate::plot::Scale::Log);
    }

    #[test]
    fn sizes_sort_by_size_and_words_after_them() {
        let mut v = vec!["64K", "cubic", "512", "4K", "1M"];
        v.sort_by(|a, b| value_key(a).partial_cmp(&value_key(b)).expect("comparable"));
        assert_eq!(v, ["512", "4K", "64K", "1M", "cubic"]);
    }
}
