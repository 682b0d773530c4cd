//! A campaign's tables as text, shaped like the seeds' (the varied value down, the variants
//! across, each figure with its CPU beside it), from [`CampaignTable`]s alone: `linerate plan
//! show` prints them from the store's rows, the report's campaign page from the documents (which
//! add a repeated point's interval). [`grid`] is the one place a table's cells are written, for
//! the text here and the page's tables.

use crate::repeat::num;
use linerate_results::plan::campaign::{CampaignTable, TableCell};
use linerate_results::store::Outcome;
use std::fmt::Write;

/// Every table of campaign `id`.
pub fn text(id: &str, tables: &[CampaignTable]) -> String {
    let mut out = format!("campaign {id}\n");
    for t in tables {
        table(&mut out, t);
    }
    out
}

/// One table's text, as [`text`] prints it after the campaign's line.
pub fn table_text(t: &CampaignTable) -> String {
    let mut out = String::new();
    table(&mut out, t);
    out
}

/// The first record a table holds (the smallest id): `plan run` stores its points in plan
/// order, so tables (and a pattern point's matrix, by its own id) sorted by it read in the
/// plan's order. None for a table without a record.
pub fn first_record(t: &CampaignTable) -> Option<i64> {
    t.rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten())
        .map(|c| c.id.0)
        .min()
}

/// What a table shows, in a line: `writes (tcp): receiver throughput, Mbit/s; beside it, in ( ):
/// receiver's host CPU % of host`.
pub fn caption(t: &CampaignTable) -> String {
    let cost = if t.cost.is_empty() {
        String::new()
    } else {
        format!(
            "; beside it, in ( ): {}",
            t.cost
                .iter()
                .map(|(n, u)| format!("{n} {u}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let interval = if t
        .rows
        .iter()
        .flat_map(|r| &r.cells)
        .flatten()
        .any(|c| c.ci95_half_width.is_some())
    {
        "; ± half the 95 % confidence interval of a repeated point's mean"
    } else {
        ""
    };
    format!("{} ({}): {}, {}{cost}{interval}", t.test, t.kind, t.figure, t.unit)
}

/// A table's cells as text: the head (the varied options, then a column per variant), and per
/// row its values and a cell per variant (`-` where the point has no run).
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub head: Vec<String>,
    /// How many of the first columns are varied values (the rest are variants' cells).
    pub keys: usize,
    pub rows: Vec<Vec<String>>,
}

/// The grid of `t`; a cell is `812.3 ± 4.12 (35.2, 40.1) #42`: the headline figure, the
/// half-width of its interval where known, the CPU beside it, the outcome unless complete, the
/// stored id.
pub fn grid(t: &CampaignTable) -> Grid {
    let mut head: Vec<String> = t.varied.clone();
    if head.is_empty() {
        head.push(String::new());
    }
    let keys = head.len();
    head.extend(
        t.variants
            .iter()
            .map(|v| if v.is_empty() { t.unit.clone() } else { v.clone() }),
    );
    let rows = t
        .rows
        .iter()
        .map(|r| {
            let mut row: Vec<String> = (0..keys)
                .map(|i| r.values.get(i).cloned().unwrap_or_default())
                .collect();
            row.extend(
                (0..t.variants.len()).map(|c| r.cells.get(c).and_then(Option::as_ref).map_or("-".to_string(), cell)),
            );
            row
        })
        .collect();
    Grid { head, keys, rows }
}

fn cell(c: &TableCell) -> String {
    let mut s = c.value.map_or("n/a".to_string(), num);
    if let (Some(_), Some(h)) = (c.value, c.ci95_half_width) {
        s += &format!(" ± {}", num(h));
    }
    if !c.cost.is_empty() {
        let cost: Vec<String> = c.cost.iter().map(|v| v.map_or("n/a".to_string(), num)).collect();
        s += &format!(" ({})", cost.join(", "));
    }
    match c.outcome {
        Outcome::Complete => {}
        Outcome::Partial => s += " partial",
        Outcome::Failed => s += " failed",
    }
    s + &format!(" #{}", c.id.0)
}

fn table(out: &mut String, t: &CampaignTable) {
    let _ = writeln!(out, "\n{}", caption(t));
    let g = grid(t);
    let width: Vec<usize> = (0..g.head.len())
        .map(|i| {
            g.rows
                .iter()
                .map(|r| r.get(i).map_or(0, |v| v.chars().count()))
                .chain([g.head[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Varied values left, cells right.
    let line = |cells: &[String]| {
        let mut line = String::new();
        for (i, w) in width.iter().enumerate() {
            let v = cells.get(i).map_or("-", String::as_str);
            let _ = if i < g.keys {
                write!(line, "{v:<w$}  ")
            } else {
                write!(line, "{v:>w$}  ")
            };
        }
        line.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&g.head));
    for r in &g.rows {
        let _ = writeln!(out, "{}", line(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_results::plan::campaign::TableRow;
    use linerate_results::store::Id;

    fn table(half: Option<f64>) -> CampaignTable {
        let cell = |id: i64, value: f64| {
            Some(TableCell {
                id: Id(id),
                value: Some(value),
                cost: vec![Some(12.5)],
                outcome: Outcome::Complete,
                ci95_half_width: half,
            })
        };
        CampaignTable {
            test: "writes".into(),
            kind: "tcp repeat".into(),
            varied: vec!["length".into()],
            variants: vec!["one".into(), "two".into()],
            figure: "receiver throughput (mean)".into(),
            unit: "Mbit/s".into(),
            cost: vec![("receiver's host CPU (mean)".into(), "% of host".into())],
            rows: vec![
                TableRow {
                    values: vec!["4K".into()],
                    cells: vec![cell(1, 812.34), cell(2, 900.0)],
                },
                TableRow {
                    values: vec!["64K".into()],
                    cells: vec![cell(3, 1500.0), None],
                },
            ],
        }
    }

    #[test]
    fn a_repeated_cell_carries_its_half_interval_and_the_store_s_does_not() {
        let g = grid(&table(Some(4.21)));
        assert_eq!(g.head, ["length", "one", "two"]);
        assert_eq!(g.keys, 1);
        assert_eq!(g.rows[0], ["4K", "812.3 ± 4.21 (12.50) #1", "900.0 ± 4.21 (12.50) #2"]);
        assert_eq!(g.rows[1][2], "-", "a point without a run");
        assert!(
            caption(&table(Some(4.21))).ends_with("± half the 95 % confidence interval of a repeated point's mean")
        );
        let plain = text("c-1", &[table(None)]);
        assert!(!plain.contains('±'), "{plain}");
        assert_eq!(
            plain,
            "campaign c-1\n\nwrites (tcp repeat): receiver throughput (mean), Mbit/s; beside it, in ( ): receiver's host CPU (mean) % of host\nlength                 one               two\n4K        812.3 (12.50) #1  900.0 (12.50) #2\n64K     1,500.0 (12.50) #3                 -\n"
        );
    }
}
