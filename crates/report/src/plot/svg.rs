//! A [`Figure`] drawn as SVG, written directly (no plotting crate): the output is small, its
//! element ids and classes are ours to choose (tests and the page's toggle find series by
//! them), and it needs no fonts. Every series is one `<path>` of data (a polyline, or the
//! outlines of its bars) with its markers and error bars beside it, inside
//! `<g class="series" id="FIG-sN">`.

use super::scale::{Mapping, label};
use super::{Axis, COLOURS, DASHES, Figure, Mark, Point, Scale, Series, Style, escape};
use std::fmt::Write;

/// Width of every figure, px.
pub const WIDTH: f64 = 720.0;
const PLOT_HEIGHT: f64 = 260.0;
const LEFT: f64 = 76.0;
const RIGHT_PLAIN: f64 = 24.0;
const RIGHT_WITH_Y2: f64 = 76.0;
const TOP: f64 = 40.0;
/// Below the plot: tick labels and the x axis title.
const BELOW: f64 = 46.0;
const LEGEND_ROW: f64 = 18.0;
const LEGEND_COLUMNS: usize = 3;
/// More points than this in a line: no markers (they would only blur it).
const MARKERS_UP_TO: usize = 60;

/// The figure's height, px: the plot, its axes and its legend rows.
pub fn height(fig: &Figure) -> f64 {
    let rows = fig.series.len().div_ceil(LEGEND_COLUMNS);
    TOP + PLOT_HEIGHT + BELOW + rows as f64 * LEGEND_ROW + 8.0
}

fn f1(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// The figure as a standalone `<svg>` element (with the namespace, so it is also a valid .svg
/// file), `id` the figure's.
pub fn render(fig: &Figure) -> String {
    let h = height(fig);
    let right = if fig.y2.is_some() { RIGHT_WITH_Y2 } else { RIGHT_PLAIN };
    let (x0, x1, y0, y1) = (LEFT, WIDTH - right, TOP + PLOT_HEIGHT, TOP);
    let id = escape(&fig.id);
    let left_series: Vec<&Series> = fig.series.iter().filter(|s| !s.right).collect();
    let right_series: Vec<&Series> = fig.series.iter().filter(|s| s.right).collect();
    let xm = Mapping::fit(&fig.x, &x_values(fig), x0, x1);
    let ym = Mapping::fit(&fig.y, &y_values(&left_series, &fig.marks), y0, y1);
    let y2m = fig
        .y2
        .as_ref()
        .map(|a| Mapping::fit(a, &y_values(&right_series, &[]), y0, y1));

    let mut o = String::with_capacity(8192);
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="figure" role="img" aria-label="{t}" aria-labelledby="{id}-title" aria-describedby="{id}-desc" viewBox="0 0 {w} {hh}" width="{w}" height="{hh}" font-family="sans-serif" font-size="11">"#,
        t = escape(&fig.title),
        w = WIDTH,
        hh = f1(h),
    );
    let _ = write!(
        o,
        r#"<title id="{id}-title">{}</title><desc id="{id}-desc">{}</desc>"#,
        escape(&fig.title),
        escape(&fig.description)
    );
    let _ = write!(
        o,
        r##"<rect class="bg" width="{WIDTH}" height="{}" fill="#fff"/>"##,
        f1(h)
    );
    let _ = write!(
        o,
        r#"<text class="fig-title" x="{}" y="22" font-size="14" font-weight="bold">{}</text>"#,
        f1(x0),
        escape(&fig.title)
    );
    let _ = write!(
        o,
        r#"<clipPath id="{id}-clip"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath>"#,
        f1(x0),
        f1(y1),
        f1(x1 - x0),
        f1(y0 - y1)
    );
    bands(&mut o, fig, &xm, y0, y1);
    x_axis(&mut o, &fig.x, &xm, y0, y1);
    y_axis(&mut o, &fig.y, &ym, x0, x1, false);
    if let (Some(a), Some(m)) = (&fig.y2, &y2m) {
        y_axis(&mut o, a, m, x1, x0, true);
    }
    let _ = write!(o, r#"<g clip-path="url(#{id}-clip)">"#);
    for (i, s) in fig.series.iter().enumerate() {
        let m = if s.right { y2m.as_ref().unwrap_or(&ym) } else { &ym };
        series(&mut o, &fig.series_id(i), i, s, &xm, m);
    }
    o.push_str("</g>");
    marks(&mut o, fig, &xm, &ym);
    legend(&mut o, fig, y0 + BELOW);
    o.push_str("</svg>");
    o
}

fn x_values(fig: &Figure) -> Vec<f64> {
    let mut v: Vec<f64> = fig
        .series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| std::iter::once(p.x).chain(p.x_end)))
        .collect();
    for m in &fig.marks {
        match m {
            Mark::VLine { x, .. } => v.push(*x),
            Mark::Band { from, to, .. } => v.extend([*from, *to]),
            _ => {}
        }
    }
    v
}

fn y_values(series: &[&Series], marks: &[Mark]) -> Vec<f64> {
    let mut v: Vec<f64> = series
        .iter()
        .flat_map(|s| {
            s.points.iter().flat_map(move |p| {
                let bar_floor = (s.style == Style::Bars).then_some(0.0);
                std::iter::once(p.y)
                    .chain(p.error.into_iter().flat_map(|(a, b)| [a, b]))
                    .chain(bar_floor)
            })
        })
        .collect();
    for m in marks {
        match m {
            Mark::HLine { y, .. } => v.push(*y),
            // Room above a labelled point for its text.
            Mark::Label { y, .. } if *y > 0.0 => v.push(*y * 1.1),
            _ => {}
        }
    }
    // Room above the data for the notes written at the top.
    let notes = marks.iter().filter(|m| matches!(m, Mark::Note { .. })).count();
    if notes > 0 {
        let hi = v.iter().copied().filter(|x| x.is_finite()).fold(f64::MIN, f64::max);
        if hi > 0.0 {
            v.push(hi * (1.0 + 0.12 * notes as f64));
        }
    }
    v
}

fn bands(o: &mut String, fig: &Figure, xm: &Mapping, y0: f64, y1: f64) {
    for m in &fig.marks {
        if let Mark::Band { from, to, label } = m {
            let (a, b) = (xm.clamped(*from), xm.clamped(*to));
            let _ = write!(
                o,
                r##"<g class="mark band"><rect x="{}" y="{}" width="{}" height="{}" fill="#000" fill-opacity="0.08"/><text x="{}" y="{}" fill="#444">{}</text></g>"##,
                f1(a),
                f1(y1),
                f1((b - a).max(0.0)),
                f1(y0 - y1),
                f1(a + 4.0),
                // At the bottom, clear of the notes at the top.
                f1(y0 - 6.0),
                escape(label)
            );
        }
    }
}

fn tick_positions(axis: &Axis, m: &Mapping) -> Vec<(f64, String)> {
    match &axis.categories {
        Some(names) => names.iter().enumerate().map(|(i, n)| (i as f64, n.clone())).collect(),
        None => m.ticks().into_iter().map(|t| (t, label(t))).collect(),
    }
}

fn x_axis(o: &mut String, axis: &Axis, m: &Mapping, y0: f64, y1: f64) {
    o.push_str(r##"<g class="axis x-axis" stroke="#000">"##);
    let _ = write!(
        o,
        r#"<line x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
        f1(m.from),
        f1(y0),
        f1(m.to),
        f1(y0)
    );
    for (t, text) in tick_positions(axis, m) {
        let Some(x) = m.at(t) else { continue };
        let _ = write!(
            o,
            r##"<line x1="{x}" y1="{y1}" x2="{x}" y2="{y0}" stroke="#ddd"/><line x1="{x}" y1="{y0}" x2="{x}" y2="{}"/><text x="{x}" y="{}" text-anchor="middle" stroke="none">{}</text>"##,
            f1(y0 + 4.0),
            f1(y0 + 16.0),
            escape(&text),
            x = f1(x),
            y0 = f1(y0),
            y1 = f1(y1),
        );
    }
    let _ = write!(
        o,
        r#"<text class="axis-title" x="{}" y="{}" text-anchor="middle" stroke="none">{}</text></g>"#,
        f1((m.from + m.to) / 2.0),
        f1(y0 + 34.0),
        escape(&axis.title())
    );
}

/// A y axis at `x` (`other`: the far side of the plot, where the grid lines end).
fn y_axis(o: &mut String, axis: &Axis, m: &Mapping, x: f64, other: f64, right: bool) {
    let class = if right { "axis y2-axis" } else { "axis y-axis" };
    let _ = write!(o, r##"<g class="{class}" stroke="#000">"##);
    let _ = write!(
        o,
        r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}"/>"#,
        f1(m.from),
        f1(m.to),
        x = f1(x)
    );
    let (tick, anchor, tx) = if right {
        (4.0, "start", 7.0)
    } else {
        (-4.0, "end", -7.0)
    };
    for (t, text) in tick_positions(axis, m) {
        let Some(y) = m.at(t) else { continue };
        if !right {
            let _ = write!(
                o,
                r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/>"##,
                f1(x),
                f1(other),
                y = f1(y)
            );
        }
        let _ = write!(
            o,
            r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}"/><text x="{}" y="{}" text-anchor="{anchor}" stroke="none">{}</text>"#,
            f1(x),
            f1(x + tick),
            f1(x + tx),
            f1(y + 4.0),
            escape(&text),
            y = f1(y)
        );
    }
    let (cx, cy) = (if right { x + 62.0 } else { x - 60.0 }, (m.from + m.to) / 2.0);
    let _ = write!(
        o,
        r#"<text class="axis-title" transform="translate({},{}) rotate(-90)" text-anchor="middle" stroke="none">{}</text></g>"#,
        f1(cx),
        f1(cy),
        escape(&axis.title())
    );
}

/// A marker's outline at (x, y) as path data: circle, square, triangle, diamond, cross, plus.
fn marker(kind: usize, x: f64, y: f64) -> String {
    let r = 3.5;
    match kind % 6 {
        0 => format!(
            "M{} {}a{r} {r} 0 1 0 {} 0a{r} {r} 0 1 0 -{} 0",
            f1(x - r),
            f1(y),
            2.0 * r,
            2.0 * r
        ),
        1 => format!("M{} {}h7v7h-7z", f1(x - r), f1(y - r)),
        2 => format!("M{} {}l4 7h-8z", f1(x), f1(y - 4.0)),
        3 => format!("M{} {}l4 4l-4 4l-4 -4z", f1(x), f1(y - 4.0)),
        4 => format!("M{} {}l7 7m0 -7l-7 7", f1(x - r), f1(y - r)),
        _ => format!("M{} {}h8m-4 -4v8", f1(x - 4.0), f1(y)),
    }
}

/// Path data of a series: its line (broken where a point cannot be shown) or its bars' outlines.
pub fn data_path(s: &Series, xm: &Mapping, ym: &Mapping) -> String {
    let mut d = String::new();
    match s.style {
        Style::Bars => {
            let floor = ym.clamped(if ym.scale == Scale::Log { ym.lo } else { 0.0 });
            for p in &s.points {
                let (Some(a), Some(top)) = (xm.at(p.x), ym.at(p.y)) else {
                    continue;
                };
                let b = p.x_end.and_then(|e| xm.at(e)).unwrap_or(a + 2.0);
                let top = top.clamp(ym.to.min(ym.from), ym.from.max(ym.to));
                let _ = write!(d, "M{} {}V{}H{}V{}Z", f1(a), f1(floor), f1(top), f1(b), f1(floor));
            }
        }
        Style::Line | Style::Points | Style::Curve => {
            let mut pen_down = false;
            for p in &s.points {
                match (xm.at(p.x), ym.at(p.y)) {
                    (Some(x), Some(y)) => {
                        let _ = write!(d, "{}{} {}", if pen_down { "L" } else { "M" }, f1(x), f1(y));
                        pen_down = true;
                    }
                    _ => pen_down = false,
                }
            }
        }
    }
    d
}

fn series(o: &mut String, sid: &str, i: usize, s: &Series, xm: &Mapping, ym: &Mapping) {
    let colour = COLOURS[i % COLOURS.len()];
    let dash = DASHES[i % DASHES.len()];
    let d = data_path(s, xm, ym);
    let _ = write!(
        o,
        r#"<g class="series series-{}" id="{}" data-name="{}">"#,
        style_name(s.style),
        escape(sid),
        escape(&s.name)
    );
    match s.style {
        Style::Bars => {
            let _ = write!(
                o,
                r##"<path class="data" d="{d}" fill="{colour}" fill-opacity="0.75" stroke="#000" stroke-width="0.5"{}/>"##,
                if dash.is_empty() {
                    String::new()
                } else {
                    format!(r#" stroke-dasharray="{dash}""#)
                }
            );
        }
        Style::Line | Style::Points | Style::Curve => {
            let stroke = if s.style == Style::Points { "none" } else { colour };
            let _ = write!(
                o,
                r#"<path class="data" d="{d}" fill="none" stroke="{stroke}" stroke-width="2"{}/>"#,
                if dash.is_empty() {
                    String::new()
                } else {
                    format!(r#" stroke-dasharray="{dash}""#)
                }
            );
            if s.style == Style::Points || (s.style == Style::Line && s.points.len() <= MARKERS_UP_TO) {
                let mut m = String::new();
                for p in &s.points {
                    if let (Some(x), Some(y)) = (xm.at(p.x), ym.at(p.y)) {
                        m.push_str(&marker(i, x, y));
                    }
                }
                let _ = write!(
                    o,
                    r#"<path class="markers" d="{m}" fill="{colour}" stroke="{colour}" stroke-width="1.5"/>"#
                );
            }
        }
    }
    // On a bar, an error bar in the bar's own colour would vanish into its fill.
    errors(o, s, xm, ym, if s.style == Style::Bars { "#000" } else { colour });
    o.push_str("</g>");
}

fn errors(o: &mut String, s: &Series, xm: &Mapping, ym: &Mapping, colour: &str) {
    let mut d = String::new();
    for p in &s.points {
        let Point {
            x,
            error: Some((lo, hi)),
            x_end,
            ..
        } = *p
        else {
            continue;
        };
        let cx = match x_end {
            Some(e) => (xm.clamped(x) + xm.clamped(e)) / 2.0,
            None => xm.clamped(x),
        };
        let (a, b) = (ym.clamped(lo), ym.clamped(hi));
        let _ = write!(
            d,
            "M{} {}V{}M{} {}h8M{} {}h8",
            f1(cx),
            f1(a),
            f1(b),
            f1(cx - 4.0),
            f1(a),
            f1(cx - 4.0),
            f1(b)
        );
    }
    if !d.is_empty() {
        let _ = write!(o, r#"<path class="errors" d="{d}" stroke="{colour}" fill="none"/>"#);
    }
}

fn style_name(s: Style) -> &'static str {
    match s {
        Style::Line => "line",
        Style::Points => "points",
        Style::Bars => "bars",
        Style::Curve => "curve",
    }
}

fn marks(o: &mut String, fig: &Figure, xm: &Mapping, ym: &Mapping) {
    let (top, bottom) = (ym.to.min(ym.from), ym.to.max(ym.from));
    let mut notes = 0;
    let mut hlines = 0;
    for m in &fig.marks {
        match m {
            Mark::VLine { x, label } => {
                let Some(px) = xm.at(*x) else { continue };
                let _ = write!(
                    o,
                    r##"<g class="mark vline"><line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="#000" stroke-dasharray="4 3"/><text x="{}" y="{}" fill="#000" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text></g>"##,
                    f1(top),
                    f1(bottom),
                    f1(px.min(xm.to - 120.0) + 4.0),
                    f1(top + 24.0 + 12.0 * (notes % 3) as f64),
                    escape(label),
                    px = f1(px)
                );
                notes += 1;
            }
            Mark::HLine { y, label } => {
                let Some(py) = ym.at(*y) else { continue };
                let _ = write!(
                    o,
                    r##"<g class="mark hline"><line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#555" stroke-dasharray="3 3"/><text x="{}" y="{}" text-anchor="{}" fill="#333" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text></g>"##,
                    f1(xm.from),
                    f1(xm.to),
                    // Alternate ends, so the labels of close lines do not overlap.
                    f1(if hlines % 2 == 0 { xm.to - 4.0 } else { xm.from + 4.0 }),
                    f1(py - 3.0),
                    if hlines % 2 == 0 { "end" } else { "start" },
                    escape(label),
                    py = f1(py)
                );
                hlines += 1;
            }
            Mark::Note { text } => {
                let _ = write!(
                    o,
                    r##"<text class="mark note" x="{}" y="{}" fill="#000" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>"##,
                    f1(xm.from + 8.0),
                    f1(top + 14.0 + 13.0 * notes as f64),
                    escape(text)
                );
                notes += 1;
            }
            Mark::Label { x, y, text } => {
                let (Some(px), Some(py)) = (xm.at(*x), ym.at(*y)) else {
                    continue;
                };
                let _ = write!(
                    o,
                    r##"<text class="mark label" x="{}" y="{}" text-anchor="middle" font-size="11" fill="#000" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>"##,
                    f1(px),
                    f1(py - 4.0),
                    escape(text)
                );
            }
            Mark::Band { .. } => {}
        }
    }
}

fn legend(o: &mut String, fig: &Figure, top: f64) {
    let col_w = (WIDTH - LEFT) / LEGEND_COLUMNS as f64;
    o.push_str(r#"<g class="legend">"#);
    for (i, s) in fig.series.iter().enumerate() {
        let (x, y) = (
            LEFT + (i % LEGEND_COLUMNS) as f64 * col_w,
            top + 12.0 + (i / LEGEND_COLUMNS) as f64 * LEGEND_ROW,
        );
        let colour = COLOURS[i % COLOURS.len()];
        let dash = DASHES[i % DASHES.len()];
        let sample = match s.style {
            Style::Bars => format!(
                r##"<rect x="{}" y="{}" width="22" height="9" fill="{colour}" fill-opacity="0.75" stroke="#000" stroke-width="0.5"/>"##,
                f1(x),
                f1(y - 8.0)
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
        let axis = if s.right && fig.y2.is_some() {
            " (right axis)"
        } else {
            ""
        };
        let _ = write!(
            o,
            r#"<g class="legend-item" data-series="{}">{sample}<text x="{}" y="{}">{}{axis}</text></g>"#,
            escape(&fig.series_id(i)),
            f1(x + 28.0),
            f1(y),
            escape(&s.name)
        );
    }
    o.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{Axis, Point};

    fn figure() -> Figure {
        let mut f = Figure::new(
            "fig-test",
            "Throughput <&> \"quoted\"",
            Axis::linear("time", "s"),
            Axis::linear("throughput", "Mbit/s"),
        );
        f.description = "a & b < c".to_string();
        f.series.push(Series::new(
            "stream <0>",
            Style::Line,
            vec![Point::xy(1.0, 10.0), Point::xy(2.0, 20.0), Point::xy(3.0, 15.0)],
        ));
        f.series
            .push(Series::new("bins", Style::Bars, vec![Point::bar(0.0, 1.0, 5.0)]));
        f
    }

    #[test]
    fn text_is_escaped_everywhere() {
        let svg = render(&figure());
        assert!(svg.contains("Throughput &lt;&amp;&gt; &quot;quoted&quot;"));
        assert!(svg.contains("<desc id=\"fig-test-desc\">a &amp; b &lt; c</desc>"));
        assert!(svg.contains("stream &lt;0&gt;"));
        assert!(!svg.contains("<0>"));
        assert!(!svg.contains("<&>"));
    }

    #[test]
    fn ids_title_and_text_alternative_are_there() {
        let svg = render(&figure());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"fig-test\""));
        assert!(svg.contains("role=\"img\""));
        assert!(svg.contains("aria-label=\"Throughput"));
        assert!(svg.contains("id=\"fig-test-s0\""));
        assert!(svg.contains("id=\"fig-test-s1\""));
        assert!(svg.contains("<title id=\"fig-test-title\">"));
        assert!(svg.ends_with("</svg>"));
    }

    #[test]
    fn line_points_land_where_the_scales_put_them() {
        let f = figure();
        let xm = Mapping::fit(&f.x, &[0.0, 4.0], 0.0, 400.0);
        let ym = Mapping::fit(&f.y, &[0.0, 20.0], 200.0, 0.0);
        let d = data_path(&f.series[0], &xm, &ym);
        assert_eq!(d, "M100 100L200 0L300 50");
    }

    #[test]
    fn a_log_axis_breaks_the_line_at_zero() {
        let s = Series::new(
            "s",
            Style::Line,
            vec![
                Point::xy(10.0, 1.0),
                Point::xy(0.0, 1.0),
                Point::xy(100.0, 1.0),
                Point::xy(1000.0, 1.0),
            ],
        );
        let xm = Mapping::fit(&Axis::log("size", "bytes"), &[20.0, 500.0], 0.0, 200.0);
        let ym = Mapping::fit(&Axis::linear("y", ""), &[0.0, 1.0], 100.0, 0.0);
        assert_eq!(data_path(&s, &xm, &ym), "M0 0M100 0L200 0");
    }

    #[test]
    fn bars_span_their_bins() {
        let s = Series::new("h", Style::Bars, vec![Point::bar(1.0, 2.0, 10.0)]);
        let xm = Mapping::fit(&Axis::linear("x", ""), &[0.0, 4.0], 0.0, 400.0);
        let ym = Mapping::fit(&Axis::linear("y", ""), &[0.0, 10.0], 100.0, 0.0);
        assert_eq!(data_path(&s, &xm, &ym), "M100 100V0H200V100Z");
    }

    #[test]
    fn a_figure_without_data_still_renders_its_axes() {
        let f = Figure::new("fig-empty", "Nothing", Axis::linear("x", ""), Axis::log("y", ""));
        let svg = render(&f);
        assert!(svg.contains("class=\"axis x-axis\""));
        assert!(!f.has_data());
    }
}
