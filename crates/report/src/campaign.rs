//! A campaign's tables as text, shaped like the seeds' (the varied value down, the variants
//! across, each figure with its CPU beside it), from [`CampaignTable`]s alone.

use crate::repeat::num;
use linerate_core::plan::campaign::CampaignTable;
use linerate_core::store::Outcome;
use std::fmt::Write;

/// Every table of campaign `id`.
pub fn text(id: &str, tables: &[CampaignTable]) -> String {
    let mut out = format!("campaign {id}\n");
    for t in tables {
        table(&mut out, t);
    }
    out
}

fn table(out: &mut String, t: &CampaignTable) {
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
    let _ = writeln!(out, "\n{} ({}): {}, {}{cost}", t.test, t.kind, t.figure, t.unit);
    let mut head: Vec<String> = t.varied.clone();
    if head.is_empty() {
        head.push(String::new());
    }
    let columns: Vec<String> = t
        .variants
        .iter()
        .map(|v| if v.is_empty() { t.unit.clone() } else { v.clone() })
        .collect();
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            r.cells
                .iter()
                .map(|c| match c {
                    None => "-".to_string(),
                    Some(c) => {
                        let mut s = c.value.map_or("n/a".to_string(), num);
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
                })
                .collect()
        })
        .collect();
    let key_width: Vec<usize> = (0..head.len())
        .map(|i| {
            t.rows
                .iter()
                .map(|r| r.values.get(i).map_or(0, |v| v.chars().count()))
                .chain([head[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let cell_width: Vec<usize> = (0..columns.len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .chain([columns[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut line = String::new();
    for (i, h) in head.iter().enumerate() {
        let _ = write!(line, "{h:<w$}  ", w = key_width[i]);
    }
    for (c, h) in columns.iter().enumerate() {
        let _ = write!(line, "{h:>w$}  ", w = cell_width[c]);
    }
    let _ = writeln!(out, "{}", line.trim_end());
    for (r, row) in t.rows.iter().enumerate() {
        let mut line = String::new();
        for (i, w) in key_width.iter().enumerate() {
            let _ = write!(line, "{:<w$}  ", row.values.get(i).map_or("", String::as_str));
        }
        for (c, w) in cell_width.iter().enumerate() {
            let _ = write!(line, "{:>w$}  ", cells[r].get(c).map_or("-", String::as_str));
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}
