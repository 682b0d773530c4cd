//! A figure's series as CSV: one row per point, headed with each column's quantity and unit
//! (`time (s)`, `throughput (Mbit/s)`), numbers written in full (Rust's shortest round-trip
//! form) so they read back as the document's own values.

use super::{Figure, HeatMap, HeatState, Series};
use std::fmt::Write;

/// The CSV of `fig`: `series,X,Y` and, when any point has them, `X end`, `Y low`, `Y high`
/// (error bars); series on the right axis have their values in a `Y2` column instead. On an
/// axis of categories, a last column `X name` names each point's category. A heat map: one row
/// per cell ([`heat`]).
pub fn render(fig: &Figure) -> String {
    if let Some(h) = &fig.heat {
        return heat(h);
    }
    let bins = fig.series.iter().any(|s| s.points.iter().any(|p| p.x_end.is_some()));
    let errors = fig.series.iter().any(|s| s.points.iter().any(|p| p.error.is_some()));
    let mut out = String::new();
    let mut head = vec!["series".to_string(), field(&fig.x.title())];
    if bins {
        head.push(field(&format!("{} end", fig.x.title())));
    }
    head.push(field(&fig.y.title()));
    if let Some(y2) = &fig.y2 {
        head.push(field(&y2.title()));
    }
    if errors {
        head.push(field(&format!("{} low", fig.y.title())));
        head.push(field(&format!("{} high", fig.y.title())));
    }
    if fig.x.categories.is_some() {
        head.push(field(&format!("{} name", fig.x.label)));
    }
    out.push_str(&head.join(","));
    out.push('\n');
    for s in &fig.series {
        rows(&mut out, fig, s, bins, errors);
    }
    out
}

/// A heat map's cells: `ROW TITLE,COLUMN TITLE,VALUE (UNIT),state`, the value empty where the
/// cell has none, the state `measured`, `failed` or `unmeasured`; pairs without a cell left out.
pub fn heat(h: &HeatMap) -> String {
    let mut out = [&h.row_title, &h.column_title, &h.value.title(), "state"]
        .map(field)
        .join(",");
    out.push('\n');
    for c in &h.cells {
        let (value, state) = match c.state {
            HeatState::Value(v) => (v.to_string(), "measured"),
            HeatState::Failed => (String::new(), "failed"),
            HeatState::Unmeasured => (String::new(), "unmeasured"),
        };
        let name = |names: &[String], i: usize| field(names.get(i).map_or("", String::as_str));
        let _ = writeln!(
            out,
            "{},{},{value},{state}",
            name(&h.rows, c.row),
            name(&h.columns, c.column)
        );
    }
    out
}

fn rows(out: &mut String, fig: &Figure, s: &Series, bins: bool, errors: bool) {
    for p in &s.points {
        let _ = write!(out, "{},{}", field(&s.name), p.x);
        if bins {
            let _ = write!(out, ",{}", p.x_end.map(|v| v.to_string()).unwrap_or_default());
        }
        let (left, right) = if s.right && fig.y2.is_some() {
            (String::new(), p.y.to_string())
        } else {
            (p.y.to_string(), String::new())
        };
        let _ = write!(out, ",{left}");
        if fig.y2.is_some() {
            let _ = write!(out, ",{right}");
        }
        if errors {
            let (lo, hi) = p
                .error
                .map_or((String::new(), String::new()), |(a, b)| (a.to_string(), b.to_string()));
            let _ = write!(out, ",{lo},{hi}");
        }
        if let Some(names) = &fig.x.categories {
            let centre = p.x_end.map_or(p.x, |e| (p.x + e) / 2.0).round();
            let name = (centre >= 0.0).then(|| names.get(centre as usize)).flatten();
            let _ = write!(out, ",{}", field(name.map_or("", String::as_str)));
        }
        out.push('\n');
    }
}

/// A CSV text field: its control characters escaped (`\u{1b}`: none reaches a terminal that
/// shows the file), prefixed with `'` when it starts with `=`, `+`, `-`, `@`, a tab or a carriage
/// return (a spreadsheet would take it for a formula: OWASP, "CSV Injection"), and quoted when it
/// holds a comma or a quote (RFC 4180). Numbers do not come through here, so a negative value
/// stays a number.
pub(crate) fn field(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let mut s = linerate_wire::text::escape_controls(s.to_string());
    if formula {
        s.insert(0, '\'');
    }
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{Axis, Point, Style};

    #[test]
    fn columns_carry_units_and_values_read_back() {
        let mut f = Figure::new(
            "fig-t",
            "T",
            Axis::linear("time", "s"),
            Axis::linear("throughput", "Mbit/s"),
        );
        f.series
            .push(Series::new("stream 0", Style::Line, vec![Point::xy(1.0, 0.1 + 0.2)]));
        f.series
            .push(Series::new("a, \"b\"", Style::Line, vec![Point::xy(2.0, 3.5)]));
        let csv = render(&f);
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("series,time (s),throughput (Mbit/s)"));
        let row: Vec<&str> = lines.next().expect("row").split(',').collect();
        assert_eq!(row[2].parse::<f64>().expect("number"), 0.1 + 0.2);
        assert_eq!(lines.next(), Some("\"a, \"\"b\"\"\",2,3.5"));
    }

    #[test]
    fn bins_and_the_right_axis_get_their_own_columns() {
        let mut f = Figure::new(
            "fig-h",
            "H",
            Axis::linear("delay", "µs"),
            Axis::linear("count", "datagrams"),
        );
        f.y2 = Some(Axis::linear("users", "users"));
        f.series
            .push(Series::new("bins", Style::Bars, vec![Point::bar(0.0, 1.5, 7.0)]));
        f.series
            .push(Series::new("users", Style::Line, vec![Point::xy(1.0, 4.0)]).on_right());
        let csv = render(&f);
        assert_eq!(
            csv,
            "series,delay (µs),delay (µs) end,count (datagrams),users (users)\nbins,0,1.5,7,\nusers,1,,,4\n"
        );
    }

    #[test]
    fn a_category_is_named_in_the_last_column() {
        let mut f = Figure::new(
            "fig-c",
            "C",
            Axis::categories("point", vec!["len=4K".into(), "len=64K".into()]),
            Axis::linear("throughput", "Mbit/s"),
        );
        f.series.push(Series::new(
            "A",
            Style::Bars,
            vec![Point::bar(-0.4, 0.0, 1.0), Point::bar(0.6, 1.0, 2.0)],
        ));
        assert_eq!(
            render(&f),
            "series,point,point end,throughput (Mbit/s),point name\nA,-0.4,0,1,len=4K\nA,0.6,1,2,len=64K\n"
        );
    }
}
