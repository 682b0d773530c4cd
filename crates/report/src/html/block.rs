//! The blocks a report section is made of: tables (caption, header, rows of text cells, written
//! escaped), figures and folded text. The files that build them (`tables`, `sets`) and the page
//! that writes them (`mod.rs`) all stand on this one.

use crate::plot::{Figure, escape};

/// One block of a section, in reading order.
// A handful per page, built once: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Table(Table),
    Figure(Figure),
    /// What a reader came for, in words, before everything else: a comparison's verdicts
    /// counted and its largest changes, a campaign's extremes. The first line leads, the rest
    /// are a list.
    Summary(Vec<String>),
    /// Preformatted text (the text report), folded away under its summary line.
    Text {
        summary: String,
        text: String,
    },
}

/// A table: a caption, a header row, rows of cells (text, escaped when written).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Element id: `tab-options`.
    pub id: String,
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Rows past which a table is folded away under its caption (`<details>`): the page leads with
/// its figures and summary, the long tables are a click away.
pub const LONG_TABLE: usize = 12;

impl Table {
    /// The table, folded under its caption when it has more than `LONG_TABLE` (12) rows.
    pub fn html_folded(&self) -> String {
        if self.rows.len() <= LONG_TABLE {
            return self.html();
        }
        format!(
            "<details class=\"table\"><summary>{} ({} rows)</summary>{}</details>\n",
            escape(&self.caption),
            self.rows.len(),
            self.html()
        )
    }

    pub fn html(&self) -> String {
        let mut o = format!(
            "<table id=\"{}\"><caption>{}</caption><thead><tr>",
            escape(&self.id),
            escape(&self.caption)
        );
        for h in &self.head {
            o.push_str(&format!("<th scope=\"col\">{}</th>", escape(h)));
        }
        o.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            o.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                if i == 0 {
                    o.push_str(&format!("<th scope=\"row\">{}</th>", escape(c)));
                } else {
                    let numeric = c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-');
                    o.push_str(&format!(
                        "<td{}>{}</td>",
                        if numeric { " class=\"n\"" } else { "" },
                        escape(c)
                    ));
                }
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table>\n");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_escaped() {
        let t = Table {
            id: "tab-x".into(),
            caption: "<c>".into(),
            head: vec!["".into(), "a&b".into()],
            rows: vec![vec!["<r>".into(), "1 < 2".into()]],
        };
        let h = t.html();
        assert!(h.contains("<caption>&lt;c&gt;</caption>"));
        assert!(h.contains("a&amp;b"));
        assert!(h.contains("<td class=\"n\">1 &lt; 2</td>"));
    }
}
