//! A matrix's figures (issue 24): `fig-matrix-heatmap`, every cell's headline figure as a grid
//! (rows from, columns to: perfSONAR MaDDash's view), and for a concurrent pattern (incast,
//! outcast) `fig-matrix-flows`, every flow's throughput over time on one plot, so that a
//! starved flow shows. In: a [`Matrix`] alone; out: [`Figure`]s.

use super::common::timeline;
use crate::plot::scale::label;
use crate::plot::{Axis, Figure, HeatCell, HeatMap, HeatState, Point, Series, Style};
use linerate_core::result::{Cell, CellFigure, Matrix};

/// A cell's name: "h2 → h5".
pub fn pair(c: &Cell) -> String {
    format!("{} → {}", c.from, c.to)
}

/// The matrix's figure as (quantity, unit): ("throughput", "Mbit/s"), from its label.
pub fn quantity_and_unit(f: CellFigure) -> (&'static str, &'static str) {
    let label = f.label();
    match label.rsplit_once(" (") {
        Some((quantity, unit)) => (quantity, unit.trim_end_matches(')')),
        None => (label, ""),
    }
}

/// A cell's value as the heat map and the tables write it (four significant digits).
pub fn value_text(v: f64) -> String {
    label(v)
}

/// What a cell shows: its value, failed (an error, or no run came back), or unmeasured.
pub fn state(c: &Cell) -> HeatState {
    match (c.value, &c.error, &c.result) {
        (Some(v), _, _) => HeatState::Value(v),
        (None, Some(_), _) | (None, None, None) => HeatState::Failed,
        (None, None, Some(_)) => HeatState::Unmeasured,
    }
}

/// Why a failed cell failed, in words.
pub fn error(c: &Cell) -> String {
    c.error.clone().unwrap_or_else(|| "no result came back".to_string())
}

pub fn figures(m: &Matrix) -> Vec<Figure> {
    let mut out = vec![heat_map(m)];
    if m.pattern.concurrent() {
        out.extend(flows(m));
    }
    out
}

/// `fig-matrix-heatmap`: one cell per pair of the pattern, filled by its value.
fn heat_map(m: &Matrix) -> Figure {
    let rows = m.rows();
    let columns = m.columns();
    let (quantity, unit) = quantity_and_unit(m.figure);
    let cells: Vec<HeatCell> = m
        .cells
        .iter()
        .filter_map(|c| {
            let row = rows.iter().position(|r| *r == c.from)?;
            let column = columns.iter().position(|r| *r == c.to)?;
            let state = state(c);
            let (text, tip) = match state {
                HeatState::Value(v) => (
                    value_text(v),
                    format!("{}: {} {unit}, round {}", pair(c), value_text(v), c.round + 1),
                ),
                HeatState::Failed => ("failed".to_string(), format!("{}: failed: {}", pair(c), error(c))),
                HeatState::Unmeasured => ("n/a".to_string(), format!("{}: measured no {quantity}", pair(c))),
            };
            Some(HeatCell {
                row,
                column,
                state,
                text,
                tip,
            })
        })
        .collect();
    let mut fig = Figure::new(
        "fig-matrix-heatmap",
        &format!("{}, {}: {quantity} of each pair", m.test, m.pattern),
        Axis::linear("to", ""),
        Axis::linear("from", ""),
    );
    let values: Vec<String> = m
        .cells
        .iter()
        .map(|c| match state(c) {
            HeatState::Value(v) => format!("{} {}", pair(c), value_text(v)),
            HeatState::Failed => format!("{} failed", pair(c)),
            HeatState::Unmeasured => format!("{} n/a", pair(c)),
        })
        .collect();
    fig.description = format!(
        "{} of every cell of the {} pattern over {} hosts, rows from, columns to, on the viridis scale ({} brighter); {} of {} cells measured: {}.",
        m.figure.label(),
        m.pattern,
        m.hosts.len(),
        if m.figure.higher_is_better() { "higher" } else { "lower" },
        cells.iter().filter(|c| matches!(c.state, HeatState::Value(_))).count(),
        m.cells.len(),
        values.join(", ")
    );
    fig.heat = Some(HeatMap {
        row_title: "from".to_string(),
        column_title: "to".to_string(),
        rows: rows.iter().map(|r| r.to_string()).collect(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        value: Axis::linear(quantity, unit),
        higher_is_better: m.figure.higher_is_better(),
        cells,
    });
    fig
}

/// `fig-matrix-flows`: each cell's throughput at each interval as its receiver counted it (its
/// streams summed: the run's own timeline total), each shifted by its start in the controller's
/// clock, so x is seconds since the earliest start of the group.
fn flows(m: &Matrix) -> Option<Figure> {
    let earliest = m.cells.iter().filter_map(|c| c.start.map(|s| s.actual_unix_ns)).min();
    let mut fig = Figure::new(
        "fig-matrix-flows",
        &format!("Every flow of the {} over time", m.pattern),
        Axis::linear("time since the first start", "s"),
        Axis::linear("throughput, received", "Mbit/s"),
    );
    let mut means = Vec::new();
    let mut unaligned = 0;
    for c in &m.cells {
        let Some(r) = &c.result else { continue };
        let Some(t) = timeline(r) else { continue };
        let shift = match (c.start, earliest) {
            (Some(s), Some(e)) => (s.actual_unix_ns - e) as f64 / 1e9,
            _ => {
                unaligned += 1;
                0.0
            }
        };
        // The run's totals: one per direction (two for a bidirectional run).
        for total in t.series.iter().filter(|s| s.name.starts_with("total")) {
            let name = match total.name.strip_prefix("total ") {
                Some(direction) => format!("{} {direction}", pair(c)),
                None => pair(c),
            };
            let points: Vec<Point> = total.points.iter().map(|p| Point::xy(p.x + shift, p.y)).collect();
            let mean = points.iter().map(|p| p.y).sum::<f64>() / points.len().max(1) as f64;
            means.push(format!("{name} {}", value_text(mean)));
            fig.series.push(Series::new(&name, Style::Line, points));
        }
    }
    if fig.series.is_empty() {
        return None;
    }
    fig.description = format!(
        "Throughput in Mbit/s (10^6 bits/s) of each flow at each interval as its receiver counted it, its streams summed, drawn from its start in the controller's clock (x: seconds since the earliest start{}); mean of the intervals per flow: {}{}.",
        if unaligned > 0 {
            format!("; {unaligned} flow(s) without a recorded start drawn from 0")
        } else {
            String::new()
        },
        means.join(", "),
        m.jain
            .map_or(String::new(), |j| format!("; Jain's index of the flows {j:.3}"))
    );
    Some(fig)
}
