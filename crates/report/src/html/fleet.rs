//! A matrix's section: its summary (cells measured and failed, lowest and highest,
//! the sum and Jain's index, the start skew), then, after the figures, `tab-matrix` (rows from,
//! columns to, as the heat map), `tab-matrix-figures` (the matrix's own figures),
//! `tab-matrix-rounds`, `tab-matrix-hosts` (each agent's clock estimate), `tab-matrix-cells` (each
//! cell's start, clock offset and outcome), `tab-matrix-failed` (each failed cell's error), and
//! each cell's run as its text report, folded.

use super::block::{Block, Table};
use super::tables::utc;
use crate::figures::fleet::{error, pair, quantity_and_unit, state, value_text};
use crate::plot::HeatState;
use linerate_results::store::Outcome;
use linerate_wire::result::{Cell, Matrix};

/// Nanoseconds as milliseconds, to the microsecond.
fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "n/a".to_string())
}

/// What the matrix table writes in a cell.
fn shown(c: Option<&Cell>) -> String {
    match c.map(|c| (c, state(c))) {
        None => "-".to_string(),
        Some((_, HeatState::Value(v))) => value_text(v),
        Some((_, HeatState::Failed)) => "failed".to_string(),
        Some((_, HeatState::Unmeasured)) => "n/a".to_string(),
    }
}

/// The largest start skew of a group of cells that ran together, nanoseconds.
fn largest_skew(m: &Matrix) -> Option<u64> {
    m.rounds.iter().filter_map(|r| r.start_skew_ns).max()
}

/// The largest clock uncertainty of an agent, nanoseconds.
fn largest_uncertainty(m: &Matrix) -> Option<u64> {
    m.hosts.iter().filter_map(|h| h.clock.map(|c| c.uncertainty_ns)).max()
}

pub fn matrix(m: &Matrix) -> Vec<Block> {
    let mut out = vec![summary(m), Block::Table(grid(m)), Block::Table(figures(m))];
    out.push(Block::Table(rounds(m)));
    out.push(Block::Table(hosts(m)));
    out.push(Block::Table(cells(m)));
    let failed: Vec<Vec<String>> = m
        .cells
        .iter()
        .filter(|c| state(c) == HeatState::Failed)
        .map(|c| vec![pair(c), error(c)])
        .collect();
    if !failed.is_empty() {
        out.push(Block::Table(Table {
            id: "tab-matrix-failed".to_string(),
            caption: "Failed cells and why".to_string(),
            head: vec!["cell".to_string(), "error".to_string()],
            rows: failed,
        }));
    }
    for c in &m.cells {
        if let Some(r) = &c.result {
            out.push(Block::Text {
                summary: format!("{}: its run ({})", pair(c), Outcome::from(r.outcome()).as_str()),
                text: crate::text::render(r),
            });
        }
    }
    out
}

/// The answer first: how many cells measured, the extremes, the fairness of flows that shared
/// the run, and how far apart they started.
fn summary(m: &Matrix) -> Block {
    let (quantity, unit) = quantity_and_unit(m.figure);
    let measured: Vec<(&Cell, f64)> = m.cells.iter().filter_map(|c| c.value.map(|v| (c, v))).collect();
    let failed = m.cells.iter().filter(|c| state(c) == HeatState::Failed).count();
    let mut lines = vec![format!(
        "{}, {} of {} hosts, {}: {} of {} cells measured{}",
        m.test,
        m.pattern,
        m.hosts.len(),
        Outcome::from(m.outcome()).as_str(),
        measured.len(),
        m.cells.len(),
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    )];
    let lowest = measured.iter().min_by(|a, b| a.1.total_cmp(&b.1));
    let highest = measured.iter().max_by(|a, b| a.1.total_cmp(&b.1));
    if let (Some((lc, lv)), Some((hc, hv))) = (lowest, highest) {
        lines.push(format!(
            "{quantity}: lowest {} {} {unit}, highest {} {} {unit}",
            pair(lc),
            value_text(*lv),
            pair(hc),
            value_text(*hv)
        ));
    }
    let mut shares = Vec::new();
    if let Some(sum) = m.sum {
        shares.push(format!("sum {} {unit}", value_text(sum)));
    }
    if let Some(j) = m.jain {
        shares.push(format!("Jain's index {j:.3}"));
    }
    if !shares.is_empty() {
        lines.push(shares.join("; "));
    }
    if let Some(skew) = largest_skew(m) {
        lines.push(format!(
            "start skew {} ms{} (bound {} ms){}",
            ms(skew as f64),
            if m.pattern.concurrent() {
                ""
            } else {
                " at most in a round"
            },
            ms(m.skew_bound_ns as f64),
            largest_uncertainty(m).map_or(String::new(), |u| format!(
                "; clock uncertainty up to {} ms",
                ms(u as f64)
            ))
        ));
    }
    let failed: Vec<String> = m
        .cells
        .iter()
        .filter(|c| state(c) == HeatState::Failed)
        .map(|c| format!("{} ({})", pair(c), error(c)))
        .collect();
    if !failed.is_empty() {
        lines.push(format!("failed: {}", failed.join(", ")));
    }
    Block::Summary(lines)
}

/// `tab-matrix`: the heat map's numbers, rows from, columns to.
fn grid(m: &Matrix) -> Table {
    let columns = m.columns();
    let mut head = vec!["from \\ to".to_string()];
    head.extend(columns.iter().map(|c| c.to_string()));
    let rows = m
        .rows()
        .iter()
        .map(|r| {
            let mut row = vec![r.to_string()];
            row.extend(columns.iter().map(|c| shown(m.cell(r, c))));
            row
        })
        .collect();
    Table {
        id: "tab-matrix".to_string(),
        caption: format!("The matrix: {}", m.figure.label()),
        head,
        rows,
    }
}

/// `tab-matrix-figures`: the matrix's own figures.
fn figures(m: &Matrix) -> Table {
    let (_, unit) = quantity_and_unit(m.figure);
    let measured = m.cells.iter().filter(|c| c.value.is_some()).count();
    let mut rows = vec![
        vec!["test".to_string(), m.test.clone()],
        vec!["pattern".to_string(), m.pattern.to_string()],
        vec!["started".to_string(), utc(m.started_unix_ms)],
        vec!["outcome".to_string(), Outcome::from(m.outcome()).as_str().to_string()],
        vec!["cells measured".to_string(), format!("{measured} of {}", m.cells.len())],
        vec!["rounds".to_string(), m.rounds.len().to_string()],
        vec![format!("sum ({unit})"), opt(m.sum.map(value_text))],
        vec!["Jain's index".to_string(), opt(m.jain.map(|j| format!("{j:.3}")))],
        vec![
            "largest start skew (ms)".to_string(),
            opt(largest_skew(m).map(|s| ms(s as f64))),
        ],
        vec!["start skew bound (ms)".to_string(), ms(m.skew_bound_ns as f64)],
        vec![
            "largest clock uncertainty (ms)".to_string(),
            opt(largest_uncertainty(m).map(|u| ms(u as f64))),
        ],
    ];
    rows.extend(m.notes.iter().map(|n| vec!["note".to_string(), n.clone()]));
    Table {
        id: "tab-matrix-figures".to_string(),
        caption: "The matrix's figures".to_string(),
        head: vec!["figure".to_string(), "value".to_string()],
        rows,
    }
}

/// `tab-matrix-rounds`: the cells that ran together, their start skew and fairness.
fn rounds(m: &Matrix) -> Table {
    let rows = m
        .rounds
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                r.cells
                    .iter()
                    .filter_map(|k| m.cells.get(*k))
                    .map(pair)
                    .collect::<Vec<_>>()
                    .join(", "),
                opt(r.start_skew_ns.map(|s| ms(s as f64))),
                opt(r.jain.map(|j| format!("{j:.3}"))),
            ]
        })
        .collect();
    Table {
        id: "tab-matrix-rounds".to_string(),
        caption: "Rounds: the cells that ran together".to_string(),
        head: ["round", "cells", "start skew (ms)", "Jain's index"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// `tab-matrix-hosts`: each agent and its clock against the controller's.
fn hosts(m: &Matrix) -> Table {
    let rows = m
        .hosts
        .iter()
        .map(|h| {
            vec![
                h.name.clone(),
                h.address.clone(),
                opt(h.host_name.clone()),
                opt(h.node.clone()),
                opt(h.clock.map(|c| ms(c.offset_ns as f64))),
                opt(h.clock.map(|c| ms(c.uncertainty_ns as f64))),
                opt(h.clock.map(|c| c.exchanges.to_string())),
            ]
        })
        .collect();
    Table {
        id: "tab-matrix-hosts".to_string(),
        caption: "Hosts and their clocks (offset: the agent's clock minus the controller's)".to_string(),
        head: [
            "host",
            "address",
            "host name",
            "node",
            "clock offset (ms)",
            "± (ms)",
            "exchanges",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// `tab-matrix-cells`: each cell's round, value, start and outcome.
fn cells(m: &Matrix) -> Table {
    let earliest = m.cells.iter().filter_map(|c| c.start.map(|s| s.actual_unix_ns)).min();
    let rows = m
        .cells
        .iter()
        .map(|c| {
            vec![
                pair(c),
                (c.round + 1).to_string(),
                shown(Some(c)),
                opt(c.start.zip(earliest).map(|(s, e)| ms((s.actual_unix_ns - e) as f64))),
                opt(c.start.map(|s| ms((s.actual_unix_ns - s.scheduled_unix_ns) as f64))),
                opt(c.start.map(|s| ms(s.offset_ns as f64))),
                opt(c.start.map(|s| ms(s.uncertainty_ns as f64))),
                c.result
                    .as_ref()
                    .map_or("failed", |r| Outcome::from(r.outcome()).as_str())
                    .to_string(),
                c.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    Table {
        id: "tab-matrix-cells".to_string(),
        caption: "Cells: start in the controller's clock, its clock offset, outcome".to_string(),
        head: [
            "cell",
            "round",
            m.figure.label(),
            "start after the first (ms)",
            "start - scheduled (ms)",
            "offset (ms)",
            "± (ms)",
            "outcome",
            "error",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::result::{CellFigure, Pattern};
    use linerate_wire::spec::{TcpSpec, TestSpec};

    fn cell(from: &str, to: &str, value: Option<f64>) -> Cell {
        Cell {
            from: from.into(),
            to: to.into(),
            round: 0,
            value,
            start: None,
            result: None,
            error: value.is_none().then(|| "<b>lost</b> & gone".to_string()),
        }
    }

    fn fixture() -> Matrix {
        let host = |n: &str| linerate_wire::result::FleetHost {
            name: n.into(),
            address: format!("{n}:5301"),
            host_name: None,
            node: None,
            clock: None,
        };
        Matrix {
            linerate: "0".into(),
            schema: 1,
            test: "tcp matrix".into(),
            pattern: Pattern::Mesh,
            started_unix_ms: 0,
            partial: true,
            options: TestSpec::Tcp(TcpSpec::new()),
            hosts: vec![host("a"), host("b"), host("c")],
            figure: CellFigure::ThroughputMbps,
            cells: vec![
                cell("a", "b", Some(94.1)),
                cell("b", "a", Some(47.25)),
                cell("a", "c", None),
            ],
            rounds: Vec::new(),
            sum: Some(141.35),
            sum_window_seconds: None,
            jain: None,
            failed: vec!["a -> c".into()],
            skew_bound_ns: 10_000_000,
            notes: Vec::new(),
            lab: None,
        }
    }

    #[test]
    fn issue_24_a_matrix_leads_with_its_cells_and_tables_every_pair() {
        let blocks = matrix(&fixture());
        let Block::Summary(lines) = &blocks[0] else {
            panic!("no summary first: {blocks:?}")
        };
        // (The outcome is `Matrix::outcome`'s; these cells carry no run.)
        assert!(lines[0].starts_with("tcp matrix, mesh of 3 hosts, "), "{}", lines[0]);
        assert!(lines[0].ends_with(": 2 of 3 cells measured, 1 failed"), "{}", lines[0]);
        assert_eq!(
            lines[1],
            "throughput: lowest b → a 47.25 Mbit/s, highest a → b 94.1 Mbit/s"
        );
        assert_eq!(lines[2], "sum 141.3 Mbit/s");
        assert_eq!(lines[3], "failed: a → c (<b>lost</b> & gone)");
        let table = |id: &str| {
            blocks
                .iter()
                .find_map(|b| match b {
                    Block::Table(t) if t.id == id => Some(t.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no {id}"))
        };
        let grid = table("tab-matrix");
        assert_eq!(grid.head, ["from \\ to", "a", "b", "c"]);
        assert_eq!(
            grid.rows,
            [vec!["a", "-", "94.1", "failed"], vec!["b", "47.25", "-", "-"]]
        );
        assert_eq!(table("tab-matrix-failed").rows, [vec!["a → c", "<b>lost</b> & gone"]]);
        let html = table("tab-matrix-failed").html();
        assert!(html.contains("&lt;b&gt;lost&lt;/b&gt; &amp; gone"), "{html}");
    }
}
