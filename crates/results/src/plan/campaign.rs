//! A campaign's records read back as the seeds' tables: one table per test of the plan, the
//! varied values down, the variants across, each cell the point's headline figure with its CPU
//! cost beside it (and a repeated point's interval). Built point by point ([`add`]) from the
//! stored documents and their labels, so a campaign shows again from the store without its plan
//! (`plan show`, `report`: `linerate_report::figures::Campaign::tables`).

use crate::store::{Id, Outcome};
use serde::{Deserialize, Serialize};

/// The labels a campaign's runs carry (`plan run` sets them; `results --label` selects by them).
pub const TEST_LABEL: &str = "campaign.test";
pub const VARIANT_LABEL: &str = "campaign.variant";
/// The point's position in the plan's order, from 0: what `--resume` finds done.
pub const POINT_LABEL: &str = "campaign.point";
pub const PLAN_LABEL: &str = "campaign.plan";
/// A varied option's value at the point: `point.length` = `64K`.
pub const COORDINATE_PREFIX: &str = "point.";

/// One table entry: a point's run as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableCell {
    pub id: Id,
    /// The headline figure (a repeated point's mean), in the table's unit; null when unmeasured.
    pub value: Option<f64>,
    /// The CPU figures beside it, in the order of [`CampaignTable::cost`].
    pub cost: Vec<Option<f64>>,
    pub outcome: Outcome,
    /// Half the width of the headline figure's 95 % confidence interval (a repeated point of two
    /// runs or more), in the table's unit; absent where it is not known (the store's rows keep
    /// means only, so `plan show` has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_half_width: Option<f64>,
}

/// One row: the varied options' values, and a cell per variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    pub values: Vec<String>,
    pub cells: Vec<Option<TableCell>>,
}

/// One test of a campaign as a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CampaignTable {
    pub test: String,
    /// The document kind of its runs (`tcp`, `tcp repeat`).
    pub kind: String,
    /// The varied options, in the order the plan varies them.
    pub varied: Vec<String>,
    /// The variants across; one unnamed column ("") for a test without variants.
    pub variants: Vec<String>,
    /// The headline figure's name and unit.
    pub figure: String,
    pub unit: String,
    /// The CPU figures shown beside it: (name, unit).
    pub cost: Vec<(String, String)>,
    pub rows: Vec<TableRow>,
}

/// Whether a headline figure is a CPU cost shown beside the headline (the host's busy CPU).
fn is_cost(unit: &str) -> bool {
    unit == "% of host"
}

/// One stored point as a table takes it, read from its document and its labels.
#[derive(Clone, Debug, PartialEq)]
pub struct TablePoint {
    /// The campaign test's name.
    pub test: String,
    /// The document kind (`tcp`, `tcp repeat`).
    pub kind: String,
    /// The varied options' values: (option, value), in the order the table puts them.
    pub values: Vec<(String, String)>,
    /// "" without variants.
    pub variant: String,
    pub id: Id,
    pub outcome: Outcome,
    /// The headline figures, the first the table's.
    pub figures: Vec<TableFigure>,
}

/// A headline figure of a [`TablePoint`].
#[derive(Clone, Debug, PartialEq)]
pub struct TableFigure {
    /// As the store names it: `receiver throughput`, `receiver throughput (mean)`.
    pub name: String,
    pub unit: String,
    pub value: Option<f64>,
    pub ci95_half_width: Option<f64>,
}

/// Puts one point in its test's table (made on its first point), in its variant's column and its
/// values' row. Points come in plan order: a complete run replaces an earlier one that was not; a
/// later complete one wins.
pub fn add(out: &mut Vec<CampaignTable>, p: TablePoint) {
    let (varied, values): (Vec<String>, Vec<String>) = p.values.into_iter().unzip();
    let at = match out.iter().position(|t| t.test == p.test) {
        Some(i) => i,
        None => {
            let first = p.figures.first();
            out.push(CampaignTable {
                test: p.test.clone(),
                kind: p.kind.clone(),
                varied,
                variants: Vec::new(),
                figure: first.map_or(String::new(), |f| f.name.clone()),
                unit: first.map_or(String::new(), |f| f.unit.clone()),
                cost: p
                    .figures
                    .iter()
                    .filter(|f| is_cost(&f.unit))
                    .map(|f| (f.name.clone(), f.unit.clone()))
                    .collect(),
                rows: Vec::new(),
            });
            out.len() - 1
        }
    };
    let table = &mut out[at];
    let column = match table.variants.iter().position(|v| *v == p.variant) {
        Some(c) => c,
        None => {
            table.variants.push(p.variant);
            for row in &mut table.rows {
                row.cells.push(None);
            }
            table.variants.len() - 1
        }
    };
    let width = table.variants.len();
    let row = match table.rows.iter().position(|x| x.values == values) {
        Some(i) => i,
        None => {
            table.rows.push(TableRow {
                values,
                cells: vec![None; width],
            });
            table.rows.len() - 1
        }
    };
    let figure = |name: &str| p.figures.iter().find(|f| f.name == name);
    let head = figure(&table.figure);
    let cell = TableCell {
        id: p.id,
        value: head.and_then(|f| f.value),
        cost: table
            .cost
            .iter()
            .map(|(name, _)| figure(name).and_then(|f| f.value))
            .collect(),
        outcome: p.outcome,
        ci95_half_width: head.and_then(|f| f.ci95_half_width),
    };
    let slot = &mut table.rows[row].cells[column];
    if slot
        .as_ref()
        .is_none_or(|old| cell.outcome == Outcome::Complete || old.outcome != Outcome::Complete)
    {
        *slot = Some(cell);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(id: i64, variant: &str, length: &str, mbit: f64, outcome: Outcome) -> TablePoint {
        let figure = |name: &str, unit: &str, value: f64| TableFigure {
            name: name.into(),
            unit: unit.into(),
            value: Some(value),
            ci95_half_width: None,
        };
        TablePoint {
            test: "send".into(),
            kind: "tcp".into(),
            values: vec![("length".into(), length.into())],
            variant: variant.into(),
            id: Id(id),
            outcome,
            figures: vec![
                figure("receiver throughput", "Mbit/s", mbit),
                figure("receiver's host CPU", "% of host", mbit / 100.0),
            ],
        }
    }

    #[test]
    fn varied_values_go_down_and_variants_across() {
        let mut tables = Vec::new();
        // In the order they were stored; #5 is point 3 run again (`--resume`).
        for p in [
            point(1, "A", "64K", 100.0, Outcome::Complete),
            point(2, "B", "64K", 200.0, Outcome::Complete),
            point(3, "A", "1M", 300.0, Outcome::Partial),
            point(4, "B", "1M", 400.0, Outcome::Complete),
            point(5, "A", "1M", 310.0, Outcome::Complete),
            point(6, "A", "1M", 320.0, Outcome::Partial),
        ] {
            add(&mut tables, p);
        }
        let t = &tables[0];
        assert_eq!(t.variants, ["A", "B"]);
        assert_eq!(t.varied, ["length"]);
        assert_eq!((t.figure.as_str(), t.unit.as_str()), ("receiver throughput", "Mbit/s"));
        assert_eq!(t.cost, [("receiver's host CPU".to_string(), "% of host".to_string())]);
        let cell = |r: usize, c: usize| t.rows[r].cells[c].as_ref().map(|x| (x.id.0, x.value));
        assert_eq!(t.rows[0].values, ["64K"]);
        assert_eq!(
            (cell(0, 0), cell(0, 1)),
            (Some((1, Some(100.0))), Some((2, Some(200.0))))
        );
        assert_eq!(
            cell(1, 0),
            Some((5, Some(310.0))),
            "the resumed complete run replaces the partial one, and a later partial does not replace it"
        );
        assert_eq!(t.rows[1].cells[1].as_ref().map(|c| c.cost[0]), Some(Some(4.0)));
    }
}
