//! A figure's legend: its entries laid out in rows within the figure's width, and drawn (a
//! sample of each series' line, marker or bar beside its name).

use super::text::fit_text;
use super::{EDGE, FONT, LEGEND_GAP, LEGEND_ROW, LEGEND_SAMPLE, WIDTH, f1, marker, text_width};
use crate::plot::{COLOURS, DASHES, Figure, Series, Style, escape};
use std::fmt::Write;

/// Each series' legend entry (its name, and "(right axis)" for one on the second axis) laid
/// out left to right from `x` and wrapped onto a new row where the next would pass the
/// figure's right edge; a name wider than a whole row is cut with an ellipsis (the entry's
/// `<title>` and the series' `data-name` keep it whole). Returns (left edge, baseline, text).
pub(super) fn legend_layout(fig: &Figure, x: f64, first_baseline: f64) -> Vec<(f64, f64, String)> {
    let limit = WIDTH - EDGE;
    let (mut at, mut row) = (x, 0usize);
    let mut out = Vec::new();
    for s in &fig.series {
        let text = fit_text(&legend_text(fig, s), FONT, limit - x - LEGEND_SAMPLE);
        let w = LEGEND_SAMPLE + text_width(&text, FONT);
        if at > x && at + w > limit {
            row += 1;
            at = x;
        }
        out.push((at, first_baseline + row as f64 * LEGEND_ROW, text));
        at += w + LEGEND_GAP;
    }
    out
}

fn legend_text(fig: &Figure, s: &Series) -> String {
    if s.right && fig.y2.is_some() {
        format!("{} (right axis)", s.name)
    } else {
        s.name.clone()
    }
}

pub(super) fn legend(o: &mut String, fig: &Figure, entries: &[(f64, f64, String)]) {
    o.push_str(r#"<g class="legend">"#);
    for (i, (s, (x, y, text))) in fig.series.iter().zip(entries).enumerate() {
        let (x, y) = (*x, *y);
        let colour = COLOURS[i % COLOURS.len()];
        let dash = DASHES[i % DASHES.len()];
        let sample = match s.style {
            Style::Bars => format!(
                r##"<rect x="{}" y="{}" width="22" height="9" fill="{colour}" fill-opacity="0.75" stroke="#000" stroke-width="0.5"/>"##,
                f1(x),
                f1(y - 8.0)
            ),
            // Points are drawn without a line: their sample is the marker alone.
            Style::Points => format!(
                r#"<path d="{}" fill="{colour}" stroke="{colour}"/>"#,
                marker(i, x + 11.0, y - 4.0)
            ),
            _ => format!(
                r#"<path d="M{} {}h22" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/><path d="{}" fill="{colour}" stroke="{colour}"/>"#,
                f1(x),
                f1(y - 4.0),
                if s.style == Style::Curve {
                    String::new()
                } else {
                    marker(i, x + 11.0, y - 4.0)
                }
            ),
        };
        let _ = write!(
            o,
            r#"<g class="legend-item" data-series="{}"><title>{}</title>{sample}<text x="{}" y="{}">{}</text></g>"#,
            escape(&fig.series_id(i)),
            escape(&legend_text(fig, s)),
            f1(x + LEGEND_SAMPLE),
            f1(y),
            escape(text)
        );
    }
    o.push_str("</g>");
}
