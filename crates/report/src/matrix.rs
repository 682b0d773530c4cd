//! A matrix document ([`linerate_wire::result::Matrix`]) as text and JSON, from the
//! document alone: a stored matrix renders again without the network.
//!
//! [`text`] is what a pattern run prints and `linerate results show` prints again: a title, the
//! matrix as a table (rows: from, columns: to; each cell its value in the figure's unit, `-` for
//! a pair the pattern does not have, `failed` for a cell that measured nothing), the sum, the
//! median cell, Jain's index, the largest start skew and clock uncertainty, the failed cells
//! with their errors, the notes, and the headline line last
//! ([`crate::headline::matrix_line`]), so that `tail -1` finds it. [`table`] is the table
//! alone, [`point`] a campaign point's (`linerate plan show`). Strings from the fleet (host names, errors) are printed as
//! the document holds them: a stored document's are escaped when it is read.

use crate::repeat::num;
use linerate_wire::result::{Cell, CellFigure, Matrix, Outcome};
use std::fmt::Write;

/// The document, pretty-printed, with a trailing newline ([`linerate_results::document::to_json`]).
pub fn json(m: &Matrix) -> String {
    linerate_results::document::to_json(m)
}

/// The most characters a host name takes in the table.
pub const HOST_WIDTH: usize = 20;

/// `names` as the table shows them: each whole up to [`HOST_WIDTH`] characters; a longer one
/// cut to [`HOST_WIDTH`] with `…` where cut, keeping where it first differs from the name
/// most like it (`linerate-agent-7d9f8c6b5-xk2lp.fleet.svc.cluster.local` beside `…-q8mzt…`
/// shows as `…9f8c6b5-xk2lp.flee…`), so that the cut names stay apart.
pub fn host_labels(names: &[&str]) -> Vec<String> {
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    chars
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let n = s.len();
            if n <= HOST_WIDTH {
                return s.iter().collect();
            }
            // Where it first differs from the name most like it.
            let differs = chars
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, t)| s.iter().zip(t).take_while(|(a, b)| a == b).count())
                .max()
                .unwrap_or(0);
            let text = |from: usize, to: usize| -> String { s[from..to].iter().collect() };
            if differs < HOST_WIDTH - 1 {
                format!("{}…", text(0, HOST_WIDTH - 1))
            } else if differs + HOST_WIDTH / 2 >= n {
                format!("…{}", text(n - (HOST_WIDTH - 1), n))
            } else {
                let start = differs + 1 - (HOST_WIDTH - 2) / 2;
                format!("…{}…", text(start, start + HOST_WIDTH - 2))
            }
        })
        .collect()
}

/// Whether the cell's run was cut short or came with an error beside its value.
fn cut_short(c: &Cell) -> bool {
    c.value.is_some() && (c.error.is_some() || c.result.as_ref().is_some_and(|r| r.outcome() != Outcome::Complete))
}

/// One cell as the table writes it: its value (`*` after it when cut short), `failed`, `not run`
/// (never started: Ctrl-C), `n/a` (its run measured no such figure).
fn cell_text(c: &Cell) -> String {
    let bound = if cpu_bound(c) { "!" } else { "" };
    match (c.value, &c.error, &c.result) {
        (Some(v), _, _) if cut_short(c) => format!("{}*{bound}", num(v)),
        (Some(v), _, _) => format!("{}{bound}", num(v)),
        (None, Some(_), _) => "failed".into(),
        (None, None, None) => "not run".into(),
        (None, None, Some(_)) => "n/a".into(),
    }
}

/// Whether a cell's run names a CPU-bound host in its notes: its figure may be the
/// hosts' limit, not the link's.
pub fn cpu_bound(c: &Cell) -> bool {
    c.result
        .as_ref()
        .is_some_and(|r| r.notes.iter().any(|n| n.contains(" was CPU-bound: ")))
}

/// The legend below a table with CPU-bound cells.
const CPU_BOUND: &str = "! a host of this cell was CPU-bound (its run's notes say which and how busy): the figure may be the hosts' limit, not the link's\n";

/// `1 cell`, `2 cells`.
fn plural(n: usize, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// The title: the kind, the pattern, hosts, cells and rounds, the figure with its unit.
fn title(m: &Matrix) -> String {
    format!(
        "{}: {}, {}, {} in {}; {}\n",
        m.test,
        m.pattern,
        plural(m.hosts.len(), "host"),
        plural(m.cells.len(), "cell"),
        plural(m.rounds.len(), "round"),
        m.figure.label()
    )
}

/// The matrix as a table: a row per `from`, a column per `to`, in the hosts' order; the first
/// column the row's host, the rest right-aligned, each as wide as its widest entry.
pub fn table(m: &Matrix) -> String {
    let (rows, columns) = (m.rows(), m.columns());
    let names: Vec<&str> = m.hosts.iter().map(|h| h.name.as_str()).collect();
    let labels = host_labels(&names);
    let label = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .map_or_else(|| name.to_string(), |i| labels[i].clone())
    };
    let mut grid: Vec<Vec<String>> = vec![
        std::iter::once("from \\ to".to_string())
            .chain(columns.iter().map(|c| label(c)))
            .collect(),
    ];
    for r in &rows {
        grid.push(
            std::iter::once(label(r))
                .chain(
                    columns
                        .iter()
                        .map(|c| m.cell(r, c).map_or_else(|| "-".to_string(), cell_text)),
                )
                .collect(),
        );
    }
    let width: Vec<usize> = (0..=columns.len())
        .map(|i| grid.iter().map(|row| row[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &grid {
        let mut line = String::new();
        for (i, (v, w)) in row.iter().zip(&width).enumerate() {
            let _ = if i == 0 {
                write!(line, "{v:<w$}")
            } else {
                write!(line, "  {v:>w$}")
            };
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// Nanoseconds as milliseconds with three decimals.
fn ms(ns: u64) -> String {
    format!("{} ms", num_ms(ns))
}

fn num_ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The largest start skew of a group that ran together, nanoseconds; None when no round
/// started two cells.
pub fn largest_skew_ns(m: &Matrix) -> Option<u64> {
    m.rounds.iter().filter_map(|r| r.start_skew_ns).max()
}

/// The largest uncertainty of a clock offset the starts used (the hosts' estimates and the
/// cells' starts), nanoseconds; None when no clock was estimated.
pub fn largest_uncertainty_ns(m: &Matrix) -> Option<u64> {
    m.hosts
        .iter()
        .filter_map(|h| h.clock.map(|c| c.uncertainty_ns))
        .chain(m.cells.iter().filter_map(|c| c.start.map(|s| s.uncertainty_ns)))
        .max()
}

/// The figures below the table: the sum (throughput) and the median cell, each flow's share of
/// the sum (a concurrent pattern's), Jain's index, skew and clock uncertainty.
fn figures(out: &mut String, m: &Matrix) {
    let unit = m.figure.unit();
    let measured = plural(m.values().len(), "cell");
    let median = linerate_results::headline::median_cell(m).map_or("n/a".into(), |v| format!("{} {unit}", num(v)));
    if m.figure == CellFigure::ThroughputMbps {
        let sum = m.sum.map_or("n/a".into(), |v| format!("{} {unit}", num(v)));
        // A concurrent group's sum is every byte over its common window.
        let window = m.sum_window_seconds.map_or(String::new(), |w| {
            format!(" (all their bytes over the group's window of {w:.3} s, first start to last end)")
        });
        let _ = writeln!(out, "sum {sum} over {measured} measured{window}; median cell {median}");
    } else {
        let _ = writeln!(out, "median cell {median} over {measured} measured");
    }
    if m.pattern.concurrent()
        && m.figure == CellFigure::ThroughputMbps
        && let Some(sum) = m.sum.filter(|s| *s > 0.0)
    {
        // Each flow's share of the bytes received (of the values, where a cell has no run).
        let bytes = |c: &linerate_wire::result::Cell| {
            c.value?;
            Some(c.result.as_ref()?.summary.received.bytes as f64)
        };
        let total: f64 = m.cells.iter().filter_map(bytes).sum();
        let shares: Vec<String> = m
            .cells
            .iter()
            .filter_map(|c| {
                let share = match bytes(c) {
                    Some(b) if total > 0.0 => b / total,
                    _ => c.value? / sum,
                };
                Some(format!("{} -> {} {:.1} %", c.from, c.to, share * 100.0))
            })
            .collect();
        let _ = writeln!(out, "share of the sum: {}", shares.join(", "));
    }
    let jain = m.jain.map_or("n/a".into(), |j| format!("{j:.3}"));
    if m.pattern.concurrent() {
        let _ = writeln!(out, "Jain's index {jain} over the flows that ran together");
    } else {
        let per_round: Vec<f64> = m.rounds.iter().filter_map(|r| r.jain).collect();
        let range = match (
            per_round.iter().copied().reduce(f64::min),
            per_round.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) => format!(
                "; {lo:.3} to {hi:.3} within a round ({} of {} rounds ran two or more)",
                per_round.len(),
                m.rounds.len()
            ),
            _ => "; no round ran two cells that measured".into(),
        };
        let _ = writeln!(out, "Jain's index {jain} over every cell{range}");
    }
    let skew = largest_skew_ns(m).map_or("n/a".into(), ms);
    let uncertainty = largest_uncertainty_ns(m).map_or("n/a".into(), |ns| format!("± {}", ms(ns)));
    let _ = writeln!(
        out,
        "largest start skew of a group run together {skew} (bound {}); largest clock uncertainty {uncertainty}",
        ms(m.skew_bound_ns)
    );
}

/// A campaign point's matrix as `linerate plan show` prints it, after the campaign's tables:
/// the point's name, the title, the table (a cut-short cell's `*` explained) and the headline
/// line.
pub fn point(name: &str, m: &Matrix) -> String {
    let mut out = format!("\n{name}\n{}{}", title(m), table(m));
    if m.cells.iter().any(cut_short) {
        out += CUT_SHORT;
    }
    if m.cells.iter().any(cpu_bound) {
        out += CPU_BOUND;
    }
    out += &crate::headline::matrix_line(m);
    out.push('\n');
    out
}

const CUT_SHORT: &str = "* cut short: the cell's run is partial\n";

/// The whole matrix as text, the headline line last.
pub fn text(m: &Matrix) -> String {
    let mut out = title(m);
    out += &table(m);
    if m.cells.iter().any(cut_short) {
        out += CUT_SHORT;
    }
    if m.cells.iter().any(cpu_bound) {
        out += CPU_BOUND;
    }
    out.push('\n');
    figures(&mut out, m);
    for c in m.cells.iter().filter(|c| c.value.is_none() || cut_short(c)) {
        let what = if c.value.is_some() { "cut short" } else { "failed" };
        let why = match (&c.error, &c.result) {
            (Some(e), _) => e.clone(),
            (None, None) => "not run".into(),
            (None, Some(r)) => r.error.clone().unwrap_or_else(|| {
                if c.value.is_some() {
                    "its run is partial".into()
                } else {
                    "its run measured no such figure".into()
                }
            }),
        };
        let _ = writeln!(out, "{what}: {} -> {}: {why}", c.from, c.to);
    }
    for n in &m.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out += &crate::headline::matrix_line(m);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_core::sweep::stub_matrix;
    use linerate_wire::result::Pattern;

    /// A cell whose run names a CPU-bound host is marked `!`, with a legend; an
    /// incast's sum is its bytes over the group's window, each flow's share of those bytes.
    #[test]
    fn issue_38_cpu_bound_cells_are_marked_and_an_incast_sums_its_bytes() {
        let mut m = stub_matrix(
            Pattern::Incast,
            &["h1", "h2", "h3"],
            &[("h2", "h1", Ok(30.0)), ("h3", "h1", Ok(10.0))],
        );
        let window = m.sum_window_seconds.expect("an incast's window");
        // Two 10 s windows started 0.4 ms apart.
        assert!((window - 10.0004).abs() < 1e-9, "{window}");
        let sum = m.sum.expect("a sum");
        assert!(sum < 40.0 && sum > 39.99, "{sum}");
        m.cells[1]
            .result
            .as_mut()
            .expect("a run")
            .notes
            .push("client was CPU-bound: 99 % of its CPUs busy over the window".into());
        let text = text(&m);
        let h3 = text.lines().find(|l| l.starts_with("h3 ")).expect("h3's row");
        assert!(h3.ends_with("10.00!"), "{h3}");
        assert!(!text.contains("30.00!"), "{text}");
        assert!(text.contains("! a host of this cell was CPU-bound"), "{text}");
        assert!(
            text.contains("share of the sum: h2 -> h1 75.0 %, h3 -> h1 25.0 %"),
            "{text}"
        );
        assert!(text.contains("group's window of 10.000 s"), "{text}");
    }

    #[test]
    fn issue_24_a_round_trip_matrix_has_no_sum_and_unmeasured_cells_say_why() {
        let mut m = stub_matrix(
            Pattern::Pairs,
            &["a", "b", "c"],
            &[("a", "b", Ok(85.25)), ("b", "c", Ok(120.0)), ("c", "a", Err("c lost"))],
        );
        m.test = "rr matrix".into();
        m.figure = CellFigure::RoundTripP50Us;
        m.sum = None;
        m.jain = None;
        // Ctrl-C before b -> c started; a -> b's run cut short.
        m.cells[1].value = None;
        m.cells[1].result = None;
        m.cells[1].start = None;
        m.cells[0].result.as_mut().expect("a run").partial = true;
        let text = text(&m);
        assert!(text.starts_with("rr matrix: pairs, 3 hosts, 3 cells in "), "{text}");
        assert!(text.contains("; round trip p50 (µs)\n"), "{text}");
        assert!(!text.contains("sum"), "no sum of round trips: {text}");
        let row = |host: &str| -> Vec<String> {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{host} ")))
                .expect("a row");
            line.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        };
        assert_eq!(row("a"), ["a", "-", "85.25*", "-"], "{text}");
        assert_eq!(row("b"), ["b", "-", "-", "not run"], "{text}");
        assert_eq!(row("c"), ["c", "failed", "-", "-"], "{text}");
        assert!(text.contains("\nmedian cell 85.25 us over 1 cell measured\n"), "{text}");
        assert!(
            text.contains("Jain's index n/a over every cell; no round ran two"),
            "{text}"
        );
        assert!(text.contains("cut short: a -> b: its run is partial\n"), "{text}");
        assert!(
            text.contains("failed: b -> c: not run\nfailed: c -> a: c lost\n"),
            "{text}"
        );
        assert!(
            text.ends_with("rr matrix: partial; cells 3 (2 failed); median cell 85.25 us; Jain's index n/a\n"),
            "{text}"
        );
    }
}
