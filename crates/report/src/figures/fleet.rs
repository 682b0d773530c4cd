//! A matrix's figures: `fig-matrix-heatmap`, every cell's headline figure as a grid
//! (rows from, columns to: perfSONAR MaDDash's view), and for a concurrent pattern (incast,
//! outcast) `fig-matrix-flows`, every flow's throughput over time on one plot, so that a
//! starved flow shows. In: a [`Matrix`] alone; out: [`Figure`]s.

use crate::plot::scale::label;
use crate::plot::{Axis, Figure, HeatCell, HeatMap, HeatState, Point, Series, Style};
use linerate_wire::result::{Cell, CellFigure, Matrix, TestResult};
use std::collections::BTreeMap;

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

/// `fig-matrix-flows`: each flow's throughput over time as its receiver counted it (its streams
/// summed, per direction), every flow on the same interval edges: its intervals are shifted by
/// its start in the controller's clock and their bytes shared out over common bins of the run's
/// interval from the group's earliest start, each bin's rate over the whole bin (each
/// flow on its own edges, the incast's last interval added up to 54.8 Mbit/s on a 50 Mbit/s
/// link). So the flows of one bin add up to what their receivers took in that bin.
fn flows(m: &Matrix) -> Option<Figure> {
    let earliest = m.cells.iter().filter_map(|c| c.start.map(|s| s.actual_unix_ns)).min();
    let interval = m.options.timing().interval_seconds;
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
        let shift = match (c.start, earliest) {
            (Some(s), Some(e)) => (s.actual_unix_ns - e) as f64 / 1e9,
            _ => {
                unaligned += 1;
                0.0
            }
        };
        for (direction, samples) in flow_samples(r) {
            let name = match direction {
                Some(d) => format!("{} {d}", pair(c)),
                None => pair(c),
            };
            let points = binned(&samples, shift, interval);
            if points.is_empty() {
                continue;
            }
            let mean = points.iter().map(|p| p.y).sum::<f64>() / points.len() as f64;
            means.push(format!("{name} {}", value_text(mean)));
            fig.series.push(Series::new(&name, Style::Line, points));
        }
    }
    if fig.series.is_empty() {
        return None;
    }
    fig.description = format!(
        "Throughput in Mbit/s (10^6 bits/s) of each flow as its receiver counted it, its streams summed, on common {interval} s bins from the earliest start in the controller's clock (x: seconds since then{}; each bin's rate over the whole bin, so the flows of a bin add up to what was received in it); mean of the bins per flow: {}{}.",
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

/// One interval's bytes on a run's own clock: (start s, end s, bytes).
type Sample = (f64, f64, f64);

/// A run's received bytes as samples on its own clock, its streams summed, per direction (None
/// for a one-way run); the senders' where no receiver's came.
fn flow_samples(r: &TestResult) -> Vec<(Option<String>, Vec<Sample>)> {
    let mut by: BTreeMap<&str, Vec<Sample>> = BTreeMap::new();
    for s in super::common::counted_streams(r) {
        by.entry(s.direction.as_str()).or_default().push((
            s.sample.start_ns as f64 / 1e9,
            s.sample.end_ns as f64 / 1e9,
            s.sample.bytes as f64,
        ));
    }
    let both = by.len() > 1;
    by.into_iter().map(|(d, v)| (both.then(|| d.to_string()), v)).collect()
}

/// `samples` shifted by `shift` seconds, their bytes shared out over bins of `interval` seconds
/// from 0 in proportion to their overlap; a point per bin at its middle, Mbit/s over the bin.
fn binned(samples: &[Sample], shift: f64, interval: f64) -> Vec<Point> {
    let end = samples.iter().map(|s| s.1 + shift).fold(0.0, f64::max);
    if interval <= 0.0 || end <= 0.0 {
        return Vec::new();
    }
    let bins = (end / interval).ceil() as usize;
    let mut bytes = vec![0.0; bins];
    for &(from, to, b) in samples {
        let (from, to) = (from + shift, to + shift);
        let length = to - from;
        if length <= 0.0 {
            continue;
        }
        let first = (from / interval).floor().max(0.0) as usize;
        for (k, slot) in bytes.iter_mut().enumerate().skip(first) {
            let (lo, hi) = (k as f64 * interval, (k + 1) as f64 * interval);
            if lo >= to {
                break;
            }
            let overlap = to.min(hi) - from.max(lo);
            if overlap > 0.0 {
                *slot += b * overlap / length;
            }
        }
    }
    bytes
        .iter()
        .enumerate()
        .map(|(k, b)| Point::xy((k as f64 + 0.5) * interval, b * 8.0 / interval / 1e6))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::binned;

    /// A flow's bytes go to the common bins by their overlap, each bin's rate over the
    /// whole bin: 1.5 MB a second shifted half a second fills half the first bin, and the short
    /// last sample's bytes are not rated over its own 0.25 s.
    #[test]
    fn issue_38_flows_share_their_bytes_out_over_common_bins() {
        let samples = [(0.0, 1.0, 1.5e6), (1.0, 2.0, 1.5e6), (2.0, 2.25, 0.375e6)];
        let points = binned(&samples, 0.5, 1.0);
        let mbps: Vec<f64> = points.iter().map(|p| (p.y * 1000.0).round() / 1000.0).collect();
        assert_eq!(mbps, [6.0, 12.0, 9.0]);
        assert_eq!(points.iter().map(|p| p.x).collect::<Vec<_>>(), [0.5, 1.5, 2.5]);
        // Every byte lands in some bin.
        let total: f64 = points.iter().map(|p| p.y * 1e6 / 8.0).sum();
        assert!((total - 3.375e6).abs() < 1.0, "{total}");
        assert!(binned(&samples, 0.0, 0.0).is_empty() && binned(&[], 0.0, 1.0).is_empty());
    }
}
