//! The tables of documents made of several runs: a repeated test (its last complete run's
//! tables and `tab-repeat`, the aggregate), a campaign (`tab-campaign-<test>`, each test's table
//! as `plan show` prints it; `tab-campaign`, its points) and a
//! comparison (`tab-verdicts`, each figure's change and verdict; `tab-config-diff`, what
//! differs between the two sides' configurations).

use super::block::{Block, Table};
use super::tables::{config_table, sides_table, test_table};
use crate::figures::campaign::slug;
use crate::figures::sets::{ordered, point_name};
use crate::figures::{Campaign, last_complete};
use linerate_wire::result::{Comparison, Repeated, TestResult, Verdict};

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"))
}

fn strings<const N: usize>(cells: [&str; N]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// A repeated test: `tab-repeat` (each headline figure over the runs), then the last complete
/// run's own tables, then the text.
pub fn repeated(rep: &Repeated) -> Vec<Block> {
    let rows = rep
        .aggregate
        .iter()
        .map(|f| {
            vec![
                format!("{} ({})", f.label, f.stats.unit),
                f.stats.n.to_string(),
                num(Some(f.stats.mean)),
                num(f.stats.ci95_low),
                num(f.stats.ci95_high),
                num(f.stats.cv_percent),
                num(Some(f.stats.min)),
                num(Some(f.stats.max)),
            ]
        })
        .collect();
    let mut out = vec![
        repeat_summary(rep),
        Block::Table(Table {
            id: "tab-repeat".to_string(),
            caption: format!(
                "{} runs; the aggregate over runs {}; below, the tables of run {}, the last complete one",
                rep.runs.len(),
                rep.aggregated_runs
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                last_complete(rep).map_or(0, |r| rep
                    .runs
                    .iter()
                    .position(|x| std::ptr::eq(x, r))
                    .map_or(0, |i| i + 1))
            ),
            head: strings([
                "figure",
                "runs",
                "mean",
                "95 % CI low",
                "95 % CI high",
                "CV %",
                "min",
                "max",
            ]),
            rows,
        }),
    ];
    if let Some(r) = last_complete(rep) {
        out.push(Block::Table(test_table(r)));
        out.push(Block::Table(sides_table(r)));
        out.extend(config_table(r).map(Block::Table));
    }
    out.push(Block::Text {
        summary: "Text report".to_string(),
        text: crate::repeat::text(rep),
    });
    out
}

/// A campaign: per test `tab-campaign-<test>`, the table `linerate plan show` prints (the varied
/// values down, the variants across, each cell the headline figure, ± half its 95 % interval
/// where repeated); `tab-campaign`, each point with its stored document; then the tables as text.
pub fn campaign(c: &Campaign) -> Vec<Block> {
    let tables = c.tables();
    let mut out: Vec<Block> = vec![campaign_summary(c)];
    out.extend(tables.iter().map(|t| {
        let g = crate::campaign::grid(t);
        Block::Table(Table {
            id: format!("tab-campaign-{}", slug(&t.test)),
            caption: crate::campaign::caption(t),
            head: g.head,
            rows: g.rows,
        })
    }));
    let rows: Vec<Vec<String>> = c
        .points
        .iter()
        .map(|p| {
            let head = p.figures.first();
            vec![
                p.test.clone(),
                p.variant.clone(),
                p.values
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                p.source.clone(),
                linerate_results::store::Outcome::from(p.outcome).as_str().to_string(),
                head.map_or(String::new(), |f| {
                    format!(
                        "{} {}{}",
                        num(f.value),
                        f.unit,
                        f.ci95
                            .map_or(String::new(), |(lo, hi)| format!(" (95 % CI {lo:.3} to {hi:.3})"))
                    )
                }),
            ]
        })
        .collect();
    out.push(Block::Table(Table {
        id: "tab-campaign".to_string(),
        caption: format!("Campaign {}: its points", c.name),
        head: strings(["test", "variant", "varied", "document", "outcome", "headline figure"]),
        rows,
    }));
    out.push(Block::Text {
        summary: "Tables as text (linerate plan show)".to_string(),
        text: crate::campaign::text(&c.name, &tables),
    });
    out
}

/// The verdict summary of a comparison: how many figures came out better, worse, unchanged
/// (and how many could not be judged), then the largest changes by size, each with its
/// direction, the two sides' values and whether the runs tell it from noise.
pub fn comparison_summary(c: &Comparison) -> Block {
    const LARGEST: usize = 3;
    let mut counts = [0usize; 5];
    let mut changes: Vec<(f64, String)> = Vec::new();
    let points = ordered(c);
    for p in &points {
        for f in &p.figures {
            counts[f.verdict as usize] += 1;
            let (Some(ch), Some(a), Some(b)) = (f.change_percent, &f.a, &f.b) else {
                continue;
            };
            let ci = match (f.difference_ci95_low, f.difference_ci95_high) {
                (Some(lo), Some(hi)) => format!("95 % CI of B - A {} to {}", num_short(lo), num_short(hi)),
                _ => String::new(),
            };
            let judged = match f.verdict {
                Verdict::Better | Verdict::Worse => format!("{}, significant ({ci})", f.verdict.words()),
                Verdict::NoSignificantChange => format!("no significant change ({ci} holds 0)"),
                Verdict::NeedsRepeats => "significance unknown: a side has one run".to_string(),
                Verdict::NotMeasured => f.verdict.words().to_string(),
            };
            changes.push((
                ch.abs(),
                format!(
                    "{} at {}: {} by {:.1} % ({} to {} {}), {judged}",
                    f.label,
                    point_name(p),
                    if ch >= 0.0 { "up" } else { "down" },
                    ch.abs(),
                    num_short(a.value),
                    num_short(b.value),
                    f.unit
                ),
            ));
        }
    }
    let total: usize = counts.iter().sum();
    let mut lead = format!(
        "B against A: {total} figure{} at {} point{}: {} better, {} worse, {} no significant change",
        if total == 1 { "" } else { "s" },
        points.len(),
        if points.len() == 1 { "" } else { "s" },
        counts[Verdict::Better as usize],
        counts[Verdict::Worse as usize],
        counts[Verdict::NoSignificantChange as usize],
    );
    for v in [Verdict::NeedsRepeats, Verdict::NotMeasured] {
        if counts[v as usize] > 0 {
            lead += &format!(", {} {}", counts[v as usize], v.words());
        }
    }
    lead.push('.');
    changes.sort_by(|x, y| y.0.total_cmp(&x.0));
    let mut lines = vec![lead];
    lines.extend(changes.into_iter().take(LARGEST).map(|(_, l)| l));
    if !c.only_a.is_empty() || !c.only_b.is_empty() {
        lines.push(format!(
            "Not compared: {} point(s) only in A, {} only in B.",
            c.only_a.len(),
            c.only_b.len()
        ));
    }
    if !c.config.is_empty() {
        lines.push(format!(
            "{} configuration setting(s) differ (table below).",
            c.config.len()
        ));
    }
    Block::Summary(lines)
}

/// The variant with the highest headline figure at a set of varied values, and that figure.
type Highest<'a> = (&'a Vec<(String, String)>, &'a str, f64);

/// A campaign's summary: its points, and per test the headline figure's range (where it was
/// highest and lowest) and which variant was highest at how many of the varied values.
pub fn campaign_summary(c: &Campaign) -> Block {
    const TESTS: usize = 4;
    let complete = c
        .points
        .iter()
        .filter(|p| p.outcome == linerate_wire::result::Outcome::Complete)
        .count();
    let mut tests: Vec<&str> = Vec::new();
    let mut variants: Vec<&str> = Vec::new();
    for p in &c.points {
        if !tests.contains(&p.test.as_str()) {
            tests.push(&p.test);
        }
        if !p.variant.is_empty() && !variants.contains(&p.variant.as_str()) {
            variants.push(&p.variant);
        }
    }
    let mut lines = vec![format!(
        "Campaign {}: {} point(s) of {} test(s){}, {complete} complete.",
        c.name,
        c.points.len(),
        tests.len(),
        if variants.is_empty() {
            String::new()
        } else {
            format!(" over variants {}", variants.join(", "))
        }
    )];
    let place = |p: &crate::figures::campaign::CampaignPoint| {
        let mut w: Vec<String> = Vec::new();
        if !p.variant.is_empty() {
            w.push(p.variant.clone());
        }
        w.extend(p.values.iter().map(|(k, v)| format!("{k}={v}")));
        w.join(" ")
    };
    for test in tests.iter().take(TESTS) {
        let here: Vec<(&crate::figures::campaign::CampaignPoint, f64, &str, &str)> = c
            .points
            .iter()
            .filter(|p| p.test == *test)
            .filter_map(|p| {
                let f = p.figures.first()?;
                Some((p, f.value?, f.label.as_str(), f.unit.as_str()))
            })
            .collect();
        let (Some(hi), Some(lo)) = (
            here.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
            here.iter().min_by(|a, b| a.1.total_cmp(&b.1)),
        ) else {
            continue;
        };
        let mut line = format!(
            "{test}, {}: from {} {unit} ({}) to {} {unit} ({})",
            hi.2,
            num_short(lo.1),
            place(lo.0),
            num_short(hi.1),
            place(hi.0),
            unit = hi.3
        );
        // At each set of varied values, the variant with the highest figure.
        if variants.len() > 1 {
            let mut at: Vec<Highest> = Vec::new();
            for (p, v, _, _) in &here {
                match at.iter_mut().find(|(vals, _, _)| *vals == &p.values) {
                    Some(best) if *v > best.2 => *best = (&p.values, &p.variant, *v),
                    Some(_) => {}
                    None => at.push((&p.values, &p.variant, *v)),
                }
            }
            let mut wins: Vec<(&str, usize)> = Vec::new();
            for (_, variant, _) in &at {
                match wins.iter_mut().find(|(n, _)| n == variant) {
                    Some(w) => w.1 += 1,
                    None => wins.push((variant, 1)),
                }
            }
            wins.sort_by_key(|w| std::cmp::Reverse(w.1));
            line += &format!(
                "; highest: {}",
                wins.iter()
                    .map(|(n, k)| format!("{n} at {k} of {}", at.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        lines.push(line + ".");
    }
    Block::Summary(lines)
}

/// A run's summary: its test, how it ended, and its headline figures (the primary one leading,
/// an unmeasured one as n/a), as `linerate_results::headline` names them.
pub fn run_summary(r: &TestResult) -> Block {
    let figures = linerate_results::headline::headline(r);
    let words = |f: &linerate_results::headline::Figure| {
        format!(
            "{} {}",
            f.label,
            f.value
                .map_or("n/a".to_string(), |v| format!("{} {}", num_short(v), f.unit))
        )
    };
    let outcome = linerate_results::store::Outcome::from(r.outcome()).as_str();
    let mut lines = vec![format!(
        "{} run, {outcome}{}",
        r.test,
        figures.first().map_or(String::new(), |f| format!(": {}.", words(f)))
    )];
    if figures.len() > 1 {
        lines.push(figures[1..].iter().map(words).collect::<Vec<_>>().join("; "));
    }
    Block::Summary(lines)
}

/// A repeated test's summary: its runs, and each headline figure's mean with its 95 %
/// confidence interval (the primary figure leading).
pub fn repeat_summary(rep: &Repeated) -> Block {
    let words = |f: &linerate_wire::result::FigureStats| {
        format!(
            "{} {} {}{}",
            f.label,
            num_short(f.stats.mean),
            f.stats.unit,
            match (f.stats.ci95_low, f.stats.ci95_high) {
                (Some(lo), Some(hi)) => format!(" (95 % CI {} to {})", num_short(lo), num_short(hi)),
                _ => String::new(),
            }
        )
    };
    let primary = rep.aggregate.iter().find(|f| f.figure == rep.primary);
    let mut lines = vec![format!(
        "{}: {} runs, {} aggregated{}",
        rep.test,
        rep.runs.len(),
        rep.aggregated_runs.len(),
        primary.map_or(".".to_string(), |f| format!("; mean {}.", words(f)))
    )];
    let rest: Vec<String> = rep
        .aggregate
        .iter()
        .filter(|f| f.figure != rep.primary)
        .map(words)
        .collect();
    if !rest.is_empty() {
        lines.push(rest.join("; "));
    }
    Block::Summary(lines)
}

/// A figure in a sentence: four significant digits, thousands grouped.
fn num_short(v: f64) -> String {
    crate::plot::scale::label(v)
}

/// A comparison: `tab-verdicts` and `tab-config-diff`, then the text.
pub fn comparison(c: &Comparison) -> Vec<Block> {
    let mut rows = Vec::new();
    for p in ordered(c) {
        for f in &p.figures {
            rows.push(vec![
                point_name(p),
                format!("{} ({})", f.label, f.unit),
                num(f.a.as_ref().map(|s| s.value)),
                num(f.b.as_ref().map(|s| s.value)),
                f.change_percent.map_or("n/a".to_string(), |c| format!("{c:+.2}")),
                match (f.difference_ci95_low, f.difference_ci95_high) {
                    (Some(lo), Some(hi)) => format!("{lo:.3} to {hi:.3}"),
                    _ => "n/a".to_string(),
                },
                f.verdict.words().to_string(),
            ]);
        }
    }
    let mut config: Vec<Vec<String>> = c
        .config
        .iter()
        .map(|d| {
            vec![
                d.host.clone(),
                d.key.clone(),
                d.a.clone().unwrap_or_else(|| "-".into()),
                d.b.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    if config.is_empty() {
        config.push(strings(["(none)", "no difference found", "", ""]));
    }
    vec![
        comparison_summary(c),
        Block::Table(Table {
            id: "tab-verdicts".to_string(),
            caption: format!("B ({}) against A ({})", c.b.source, c.a.source),
            head: strings(["point", "figure", "A", "B", "change %", "95 % CI of B - A", "verdict"]),
            rows,
        }),
        Block::Table(Table {
            id: "tab-config-diff".to_string(),
            caption: "What differs between the configurations".to_string(),
            head: strings(["host", "setting", "A", "B"]),
            rows: config,
        }),
        Block::Text {
            summary: "Text report".to_string(),
            text: crate::compare::text(c),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::result::Verdict;

    #[test]
    fn issue_23_the_verdict_summary_counts_and_names_the_largest_changes() {
        let mut c = crate::figures::sets::tests::fixture();
        let f = &mut c.points[0].figures;
        f[0].verdict = Verdict::Better;
        f[0].change_percent = Some(99.7);
        f[0].difference_ci95_low = Some(80.0);
        f[0].difference_ci95_high = Some(120.0);
        f[1].verdict = Verdict::NoSignificantChange;
        f[1].change_percent = Some(-38.0);
        let Block::Summary(lines) = comparison_summary(&c) else {
            panic!("a summary");
        };
        assert_eq!(
            lines[0],
            "B against A: 2 figures at 1 point: 1 better, 0 worse, 1 no significant change."
        );
        assert_eq!(
            lines[1],
            "received mbit per second at tcp: up by 99.7 % (100.3 to 200 u), better, significant (95 % CI of B - A 80 to 120)"
        );
        assert!(
            lines[2].starts_with("latency p99 us at tcp: down by 38.0 %"),
            "{lines:?}"
        );
        // The page: the summary, then the figures, then the tables.
        let page = crate::html::page(
            "t",
            &[crate::html::section(
                &crate::figures::Subject::Document(linerate_results::document::Document::Comparison(Box::new(c))),
                "a..b",
                1,
                1,
            )],
        );
        let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s}"));
        assert!(at("id=\"summary\"") < at("<svg"));
        assert!(at("id=\"fig-compare-change\"") < at("id=\"tab-verdicts\""));
    }
}
