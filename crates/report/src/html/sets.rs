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
use linerate_core::result::{Comparison, Repeated};

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
    let mut out = vec![Block::Table(Table {
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
    })];
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
    let mut out: Vec<Block> = tables
        .iter()
        .map(|t| {
            let g = crate::campaign::grid(t);
            Block::Table(Table {
                id: format!("tab-campaign-{}", slug(&t.test)),
                caption: crate::campaign::caption(t),
                head: g.head,
                rows: g.rows,
            })
        })
        .collect();
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
