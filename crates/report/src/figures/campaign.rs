//! A campaign's figures: each headline figure of each test against the varied option, one line
//! per variant, error bars from a repeated point's 95 % confidence interval. The seeds' charts:
//! NTttcp's and the offload report's throughput with CPU on a second axis against the write
//! size, their efficiency against size, UDPmon's and Avalanche's curves per configuration.
//!
//! Ids: `fig-campaign-<test>-<figure>` (the figure's name with `-` for `_`:
//! `fig-campaign-writes-received-mbit-per-second`) and `fig-campaign-<test>-efficiency`.

use crate::plot::{Axis, Figure, Point, Series, Style};
use linerate_results::compare::SideInput;
use linerate_results::document::Document;
use linerate_results::headline::headline;
use linerate_results::plan::campaign::{CampaignTable, TableFigure, TablePoint, add};
use linerate_results::store::Id;
use linerate_wire::result::Outcome;
use linerate_wire::units::ByteSize;

/// The coordinate a campaign's entry carries its variant in (`linerate_results::compare`'s).
const VARIANT: &str = "variant";
/// Headline units drawn on the right axis of the primary figure (TCP, UDP), or together.
const COST_UNIT: &str = "% of host";
const EFFICIENCY_UNIT: &str = "Mbit/s per % of host";

/// A campaign's stored runs, reduced to what its figures draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Campaign {
    /// As the user named it (its id).
    pub name: String,
    /// In the order the store gave them; one per (test, variant, varied values).
    pub points: Vec<CampaignPoint>,
}

/// One point of one variant.
#[derive(Clone, Debug, PartialEq)]
pub struct CampaignPoint {
    /// The campaign test's name (`writes`).
    pub test: String,
    /// The document kind of the run, without ` repeat`: `tcp`.
    pub kind: String,
    /// "" for a test without variants.
    pub variant: String,
    /// The varied options' values, in name order: (`length`, `64K`).
    pub values: Vec<(String, String)>,
    /// The stored document (`#42`).
    pub source: String,
    /// How the run ended (a repeated test's: failed when no run completed, partial when cut short).
    pub outcome: Outcome,
    /// A repeated test: its figures are means over its runs.
    pub repeated: bool,
    pub figures: Vec<PointFigure>,
}

/// A headline figure at a point: a single run's value, or a repeated point's mean and interval.
#[derive(Clone, Debug, PartialEq)]
pub struct PointFigure {
    pub name: String,
    pub label: String,
    pub unit: String,
    pub value: Option<f64>,
    pub ci95: Option<(f64, f64)>,
}

impl Campaign {
    /// The campaign's points from the documents a compare side resolved (`linerate_results::compare`):
    /// single runs and repeated runs; a point run again keeps its complete record.
    pub fn from_side(side: &SideInput) -> Campaign {
        let mut points: Vec<CampaignPoint> = Vec::new();
        // In the order they were stored (`#3` after `#2`), so a point run again comes later.
        let mut entries: Vec<&linerate_results::compare::Entry> = side.entries.iter().collect();
        entries.sort_by_key(|e| e.source.trim_start_matches('#').parse::<i64>().unwrap_or(i64::MAX));
        for e in entries {
            let (kind, outcome, figures) = match &e.document {
                Document::Run(r) => (
                    r.test.clone(),
                    r.outcome(),
                    headline(r)
                        .into_iter()
                        .map(|f| PointFigure {
                            name: f.name.into(),
                            label: f.label.into(),
                            unit: f.unit.into(),
                            value: f.value,
                            ci95: None,
                        })
                        .collect(),
                ),
                Document::Repeated(rep) => (
                    rep.test.trim_end_matches(" repeat").to_string(),
                    rep.outcome(),
                    rep.aggregate
                        .iter()
                        .map(|f| PointFigure {
                            name: f.figure.clone(),
                            label: f.label.clone(),
                            unit: f.stats.unit.clone(),
                            value: Some(f.stats.mean),
                            ci95: f.stats.ci95_low.zip(f.stats.ci95_high),
                        })
                        .collect(),
                ),
                // A sweep or matrix point of a campaign has its own report; not drawn here.
                Document::Sweep(_) | Document::Comparison(_) | Document::Matrix(_) => continue,
            };
            let variant = e
                .coordinates
                .iter()
                .find(|c| c.name == VARIANT)
                .map_or(String::new(), |c| c.value.clone());
            let mut values: Vec<(String, String)> = e
                .coordinates
                .iter()
                .filter(|c| c.name != VARIANT)
                .map(|c| (c.name.clone(), c.value.clone()))
                .collect();
            values.sort();
            let p = CampaignPoint {
                test: e.test.clone().unwrap_or_else(|| kind.clone()),
                kind,
                variant,
                values,
                source: e.source.clone(),
                outcome,
                repeated: matches!(e.document, Document::Repeated(_)),
                figures,
            };
            match points
                .iter()
                .position(|q| (&q.test, &q.variant, &q.values) == (&p.test, &p.variant, &p.values))
            {
                Some(i) if p.complete() || !points[i].complete() => points[i] = p,
                Some(_) => {}
                None => points.push(p),
            }
        }
        Campaign {
            name: side.source.clone(),
            points,
        }
    }

    /// Each test's table as `linerate plan show` prints it (the varied values down, the variants
    /// across), each cell the point's headline figure with, for a repeated point, the half-width
    /// of its 95 % interval, which the store's rows do not keep.
    pub fn tables(&self) -> Vec<CampaignTable> {
        let mut out = Vec::new();
        for p in &self.points {
            // A campaign's points are stored records (`#42`); anything else has no cell to name.
            let Ok(id) = p.source.trim_start_matches('#').parse::<i64>() else {
                continue;
            };
            let figures = p
                .figures
                .iter()
                .map(|f| TableFigure {
                    // The store's names, so the table reads as `plan show`'s.
                    name: if p.repeated {
                        format!("{} (mean)", f.label)
                    } else {
                        f.label.clone()
                    },
                    unit: f.unit.clone(),
                    value: f.value,
                    ci95_half_width: f.ci95.map(|(lo, hi)| (hi - lo) / 2.0),
                })
                .collect();
            add(
                &mut out,
                TablePoint {
                    test: p.test.clone(),
                    kind: if p.repeated {
                        format!("{} repeat", p.kind)
                    } else {
                        p.kind.clone()
                    },
                    values: p.values.clone(),
                    variant: p.variant.clone(),
                    id: Id(id),
                    outcome: p.outcome.into(),
                    figures,
                },
            );
        }
        out
    }

    /// The tests in the order their first point comes.
    pub fn tests(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.points {
            if !out.contains(&p.test.as_str()) {
                out.push(&p.test);
            }
        }
        out
    }
}

impl CampaignPoint {
    pub fn complete(&self) -> bool {
        self.outcome == Outcome::Complete
    }
}

/// An id part from a name: lower case letters, digits and `-`.
pub(crate) fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// The x axis of a test's points: the first varied option, as bytes when every value is a size
/// (`4K` = 4096), as a number when every value is one, else one category per value.
struct XAxis {
    axis: Axis,
    /// Each value's position.
    at: Vec<(String, f64)>,
}

fn x_axis(name: &str, values: &[&str]) -> XAxis {
    let mut distinct: Vec<&str> = Vec::new();
    for v in values {
        if !distinct.contains(v) {
            distinct.push(v);
        }
    }
    let numbers: Option<Vec<f64>> = distinct.iter().map(|v| v.trim().parse::<f64>().ok()).collect();
    let sizes: Option<Vec<f64>> = distinct
        .iter()
        .map(|v| v.parse::<ByteSize>().ok().map(|b| b.0 as f64))
        .collect();
    let (axis, xs) = match (numbers, sizes) {
        (Some(n), _) => (Axis::fitting(name, "", &n), n),
        (None, Some(b)) => (Axis::fitting(name, "bytes", &b), b),
        _ => (
            Axis::categories(name, distinct.iter().map(|s| s.to_string()).collect()),
            (0..distinct.len()).map(|i| i as f64).collect(),
        ),
    };
    XAxis {
        axis,
        at: distinct.iter().map(|s| s.to_string()).zip(xs).collect(),
    }
}

/// Every figure of the campaign, test by test.
pub fn figures(c: &Campaign) -> Vec<Figure> {
    let mut out = Vec::new();
    for test in c.tests() {
        let points: Vec<&CampaignPoint> = c.points.iter().filter(|p| p.test == test).collect();
        out.extend(test_figures(test, &points));
    }
    out
}

fn test_figures(test: &str, points: &[&CampaignPoint]) -> Vec<Figure> {
    let Some(first) = points.first() else {
        return Vec::new();
    };
    // The first varied option along x; the others (and the variant) name the lines.
    let varied = first.values.first().map(|(k, _)| k.clone());
    let x_of = |p: &CampaignPoint| -> String {
        match &varied {
            Some(k) => p
                .values
                .iter()
                .find(|(n, _)| n == k)
                .map_or(String::new(), |(_, v)| v.clone()),
            None => p.variant.clone(),
        }
    };
    let line_of = |p: &CampaignPoint| -> String {
        if varied.is_none() {
            return "all variants".to_string();
        }
        let mut parts: Vec<String> = Vec::new();
        if !p.variant.is_empty() {
            parts.push(p.variant.clone());
        }
        parts.extend(p.values.iter().skip(1).map(|(k, v)| format!("{k}={v}")));
        if parts.is_empty() {
            test.to_string()
        } else {
            parts.join(", ")
        }
    };
    let xs: Vec<String> = points.iter().map(|p| x_of(p)).collect();
    let xa = x_axis(
        varied.as_deref().unwrap_or("variant"),
        &xs.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let pos = |p: &CampaignPoint| xa.at.iter().find(|(v, _)| *v == x_of(p)).map(|(_, x)| *x);
    let mut lines: Vec<String> = Vec::new();
    for p in points {
        let l = line_of(p);
        if !lines.contains(&l) {
            lines.push(l);
        }
    }
    // One series per line for the figure `name`, in x order, error bars from the interval.
    let series = |name: &str, suffix: &str| -> Vec<Series> {
        lines
            .iter()
            .map(|l| {
                let mut pts: Vec<Point> = points
                    .iter()
                    .filter(|p| line_of(p) == *l)
                    .filter_map(|p| {
                        let f = p.figures.iter().find(|f| f.name == name)?;
                        let mut pt = Point::xy(pos(p)?, f.value?);
                        pt.error = f.ci95;
                        Some(pt)
                    })
                    .collect();
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                Series::new(&format!("{l}{suffix}"), Style::Line, pts)
            })
            .collect()
    };
    let stream_kind = matches!(first.kind.as_str(), "tcp" | "udp");
    let along = xa.axis.title();
    let mut out = Vec::new();
    let mut efficiency: Vec<&PointFigure> = Vec::new();
    for (i, f) in first.figures.iter().enumerate() {
        if f.unit == EFFICIENCY_UNIT {
            efficiency.push(f);
            continue;
        }
        if stream_kind && f.unit == COST_UNIT {
            continue;
        }
        let mut fig = Figure::new(
            &format!("fig-campaign-{}-{}", slug(test), slug(&f.name)),
            &format!("{test}: {} against {}", f.label, xa.axis.label),
            xa.axis.clone(),
            Axis::linear(&f.label, &f.unit).with_min(0.0),
        );
        fig.series = series(&f.name, "");
        let mut what = format!(
            "{} ({}) of test {test} against {along}, one line per variant",
            f.label, f.unit
        );
        // The primary figure of a stream test carries both ends' CPU on the right axis.
        if stream_kind && i == 0 {
            let cost: Vec<&PointFigure> = first.figures.iter().filter(|c| c.unit == COST_UNIT).collect();
            if !cost.is_empty() {
                fig.y2 = Some(Axis::linear("host CPU busy", "%").with_min(0.0));
                for c in cost {
                    fig.series.extend(
                        series(&c.name, &format!(", {}", c.label))
                            .into_iter()
                            .map(Series::on_right),
                    );
                }
                what += ", with each end's host CPU (percent of all its CPUs) on the right axis";
            }
        }
        fig.description = format!(
            "{what}; error bars are 95 % confidence intervals of repeated points. {}",
            values_text(&fig)
        );
        out.push(fig);
    }
    if !efficiency.is_empty() {
        let mut fig = Figure::new(
            &format!("fig-campaign-{}-efficiency", slug(test)),
            &format!("{test}: efficiency against {}", xa.axis.label),
            xa.axis.clone(),
            Axis::linear("throughput per CPU", EFFICIENCY_UNIT).with_min(0.0),
        );
        for f in efficiency {
            fig.series.extend(series(&f.name, &format!(", {}", f.label)));
        }
        fig.description = format!(
            "Throughput per percent of host CPU of test {test} against {along}, one line per variant and end. {}",
            values_text(&fig)
        );
        out.push(fig);
    }
    out
}

/// The figure's numbers in words, for its text alternative: each value at its x.
fn values_text(fig: &Figure) -> String {
    fig.values_in_words(|p| format!("{} at {}", crate::repeat::num(p.y), p.x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(source: &str, variant: &str, length: &str, repeated: bool, ci95: Option<(f64, f64)>) -> CampaignPoint {
        CampaignPoint {
            test: "writes".into(),
            kind: "tcp".into(),
            variant: variant.into(),
            values: vec![("length".into(), length.into())],
            source: source.into(),
            outcome: Outcome::Complete,
            repeated,
            figures: vec![PointFigure {
                name: "received_mbit_per_second".into(),
                label: "receiver throughput".into(),
                unit: "Mbit/s".into(),
                value: Some(100.0),
                ci95,
            }],
        }
    }

    #[test]
    fn a_campaign_s_tables_are_plan_show_s_with_the_repeats_half_intervals() {
        let c = Campaign {
            name: "c".into(),
            points: vec![
                point("#1", "one", "4K", true, Some((90.0, 110.0))),
                point("#2", "two", "4K", true, None),
                point("#3", "one", "64K", true, Some((95.0, 105.0))),
            ],
        };
        let t = &c.tables()[0];
        assert_eq!((t.test.as_str(), t.kind.as_str()), ("writes", "tcp repeat"));
        assert_eq!(
            t.figure, "receiver throughput (mean)",
            "the store's name, as plan show has it"
        );
        assert_eq!(
            (t.varied.clone(), t.variants.clone()),
            (vec!["length".to_string()], vec!["one".to_string(), "two".to_string()])
        );
        let half = |r: usize, v: usize| t.rows[r].cells[v].as_ref().map(|c| (c.id.0, c.ci95_half_width));
        assert_eq!(half(0, 0), Some((1, Some(10.0))));
        assert_eq!(half(0, 1), Some((2, None)), "a repeat of one run has no interval");
        assert_eq!(half(1, 0), Some((3, Some(5.0))));
        assert_eq!(half(1, 1), None, "no run");
        let single = Campaign {
            name: "c".into(),
            points: vec![point("#4", "", "4K", false, None)],
        };
        let t = &single.tables()[0];
        assert_eq!((t.kind.as_str(), t.figure.as_str()), ("tcp", "receiver throughput"));
    }

    #[test]
    fn sizes_are_bytes_and_other_values_categories() {
        let x = x_axis("length", &["4K", "64K", "4K", "1M"]);
        assert_eq!(
            x.at,
            [("4K".into(), 4096.0), ("64K".into(), 65536.0), ("1M".into(), 1048576.0)]
        );
        assert_eq!(x.axis.scale, crate::plot::Scale::Log, "sizes over decades");
        let x = x_axis("cc", &["cubic", "bbr"]);
        assert_eq!(x.axis.categories, Some(vec!["cubic".into(), "bbr".into()]));
        assert_eq!(x_axis("parallel", &["1", "8"]).at[1].1, 8.0);
        assert_eq!(slug("Big writes_2"), "big-writes-2");
    }
}
