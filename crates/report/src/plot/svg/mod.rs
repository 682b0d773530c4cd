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
/// The least margins; wider where the tick labels need it ([`Layout`]).
const LEFT: f64 = 76.0;
const RIGHT_PLAIN: f64 = 24.0;
const RIGHT_WITH_Y2: f64 = 76.0;
const TOP: f64 = 40.0;
/// Kept clear at the SVG's edges.
const EDGE: f64 = 6.0;
/// The text size (the SVG's font-size) and the share of it above and below the baseline
/// (DejaVu Sans, the common sans-serif; other fonts' are close).
const FONT: f64 = 11.0;
const ASCENT: f64 = 0.93 * FONT;
const DESCENT: f64 = 0.24 * FONT;
const TITLE_FONT: f64 = 14.0;
const LEGEND_ROW: f64 = 18.0;
/// A legend entry's sample (line and marker, or a bar) and the gap before its text.
const LEGEND_SAMPLE: f64 = 28.0;
/// Between one legend entry and the next on a row.
const LEGEND_GAP: f64 = 18.0;
/// A category label written down the axis is cut to this length.
const CATEGORY_LABEL_MAX: f64 = 150.0;
/// More points than this in a line: no markers (they would only blur it).
const MARKERS_UP_TO: usize = 60;

pub mod heat;
mod legend;
mod text;
use legend::{legend, legend_layout};
pub use text::text_width;
use text::{TextBox, fit_text};

/// Where everything of one figure goes: margins made from the widths of the tick labels and
/// titles they hold, the x tick labels that fit (across, or down the axis when categories are
/// too wide for their slots), and the legend's entries wrapped onto rows within the width.
struct Layout {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    xm: Mapping,
    ym: Mapping,
    y2m: Option<Mapping>,
    /// (value, label) of each x tick whose label is written.
    x_labels: Vec<(f64, String)>,
    /// Category labels written down the axis (rotated), not across.
    x_down: bool,
    /// Baseline of the x axis title.
    x_title_y: f64,
    y_tick_w: f64,
    y2_tick_w: f64,
    /// Each legend entry: its left edge, its baseline, its text as written.
    legend: Vec<(f64, f64, String)>,
    height: f64,
}

fn widest(labels: &[(f64, String)]) -> f64 {
    labels.iter().map(|(_, t)| text_width(t, FONT)).fold(0.0, f64::max)
}

impl Layout {
    fn of(fig: &Figure) -> Layout {
        let left_series: Vec<&Series> = fig.series.iter().filter(|s| !s.right).collect();
        let right_series: Vec<&Series> = fig.series.iter().filter(|s| s.right).collect();
        let (y0, y1) = (TOP + PLOT_HEIGHT, TOP);
        let xs = x_values(fig);
        let ym = Mapping::fit_y(
            &fig.y,
            &y_values(&left_series, &fig.marks),
            marked_top(&left_series),
            y0,
            y1,
        );
        let y2m = fig
            .y2
            .as_ref()
            .map(|a| Mapping::fit_y(a, &y_values(&right_series, &[]), marked_top(&right_series), y0, y1));
        let y_tick_w = widest(&tick_positions(&fig.y, &ym));
        let y2_tick_w = match (&fig.y2, &y2m) {
            (Some(a), Some(m)) => widest(&tick_positions(a, m)),
            _ => 0.0,
        };
        // The x ticks do not depend on where the axis is drawn: their labels size the margins.
        let x_ticks = tick_positions(&fig.x, &Mapping::fit(&fig.x, &xs, 0.0, 1.0));
        let across = fig.x.categories.is_none();
        let half = |i: Option<&(f64, String)>| i.map_or(0.0, |(_, t)| text_width(t, FONT) / 2.0);
        let title_room = ASCENT + DESCENT + 4.0;
        let mut left = LEFT.max(EDGE + title_room + y_tick_w + 7.0);
        let mut right = if fig.y2.is_some() {
            RIGHT_WITH_Y2.max(EDGE + title_room + y2_tick_w + 7.0)
        } else {
            RIGHT_PLAIN
        };
        if across {
            left = left.max(EDGE + half(x_ticks.first()));
            right = right.max(EDGE + half(x_ticks.last()));
        }
        let (x0, x1) = (left, WIDTH - right);
        let xm = Mapping::fit(&fig.x, &xs, x0, x1);
        let positioned: Vec<(f64, f64, String)> = x_ticks
            .iter()
            .filter_map(|(v, t)| xm.at(*v).map(|x| (*v, x, t.clone())))
            .collect();
        // Categories too wide for their slots go down the axis; numbers are thinned until
        // neighbours keep apart.
        let slot = match &fig.x.categories {
            Some(names) => (x1 - x0) / names.len().max(1) as f64,
            None => f64::INFINITY,
        };
        let x_down = !across && widest(&x_ticks) + 6.0 > slot;
        let (x_labels, depth) = if x_down {
            let every = (ASCENT + DESCENT + 3.0) / slot;
            let every = (every.ceil() as usize).max(1);
            let labels: Vec<(f64, String)> = positioned
                .iter()
                .step_by(every)
                .map(|(v, _, t)| (*v, fit_text(t, FONT, CATEGORY_LABEL_MAX)))
                .collect();
            let w = widest(&labels);
            (labels, 8.0 + w)
        } else {
            let mut every = 1;
            while every < positioned.len() {
                let kept: Vec<&(f64, f64, String)> = positioned.iter().step_by(every).collect();
                let clear = kept.windows(2).all(|p| {
                    (p[1].1 - p[0].1).abs() >= (text_width(&p[0].2, FONT) + text_width(&p[1].2, FONT)) / 2.0 + 6.0
                });
                if clear {
                    break;
                }
                every += 1;
            }
            let labels = positioned
                .iter()
                .step_by(every)
                .map(|(v, _, t)| (*v, t.clone()))
                .collect();
            (labels, 18.0 + DESCENT)
        };
        let x_title_y = y0 + depth + 6.0 + ASCENT;
        let legend_top = x_title_y + DESCENT + 8.0;
        let legend = legend_layout(fig, x0, legend_top + ASCENT);
        let rows = legend.iter().map(|(_, y, _)| *y).fold(legend_top, f64::max);
        let height = if legend.is_empty() {
            legend_top
        } else {
            rows + DESCENT + 8.0
        };
        Layout {
            x0,
            x1,
            y0,
            y1,
            xm,
            ym,
            y2m,
            x_labels,
            x_down,
            x_title_y,
            y_tick_w,
            y2_tick_w,
            legend,
            height,
        }
    }
}

/// The figure's height, px: the plot, its axes and its legend rows.
pub fn height(fig: &Figure) -> f64 {
    match &fig.heat {
        Some(h) => heat::Grid::of(h).height,
        None => Layout::of(fig).height,
    }
}

fn f1(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// The opening of a figure's `<svg>` of height `h` (class `class`): its accessible name and
/// description, the white ground, the title written from `title_x`.
fn open(o: &mut String, fig: &Figure, class: &str, h: f64, title_x: f64) {
    let id = escape(&fig.id);
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="{class}" role="img" aria-label="{t}" aria-labelledby="{id}-title" aria-describedby="{id}-desc" viewBox="0 0 {w} {hh}" width="{w}" height="{hh}" font-family="sans-serif" font-size="11">"#,
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
    // Bold text runs about a tenth wider than the widths planned for.
    let title = fit_text(&fig.title, TITLE_FONT * 1.1, WIDTH - EDGE - title_x);
    let _ = write!(
        o,
        r#"<text class="fig-title" x="{}" y="22" font-size="14" font-weight="bold">{}</text>"#,
        f1(title_x),
        escape(&title)
    );
}

/// The figure as a standalone `<svg>` element (with the namespace, so it is also a valid .svg
/// file), `id` the figure's; a heat map as its grid ([`heat`]).
pub fn render(fig: &Figure) -> String {
    if let Some(h) = &fig.heat {
        return heat::render(fig, h);
    }
    let lay = Layout::of(fig);
    let h = lay.height;
    let (x0, x1, y0, y1) = (lay.x0, lay.x1, lay.y0, lay.y1);
    let id = escape(&fig.id);
    let (xm, ym, y2m) = (&lay.xm, &lay.ym, &lay.y2m);

    let mut o = String::with_capacity(8192);
    open(&mut o, fig, "figure", h, x0.min(LEFT));
    let _ = write!(
        o,
        r#"<clipPath id="{id}-clip"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath>"#,
        f1(x0),
        f1(y1),
        f1(x1 - x0),
        f1(y0 - y1)
    );
    let mut placed = Vec::new();
    bands(&mut o, fig, xm, y0, y1, &mut placed);
    x_axis(&mut o, &fig.x, &lay);
    y_axis(&mut o, &fig.y, ym, x0, x1, lay.y_tick_w, false);
    if let (Some(a), Some(m)) = (&fig.y2, y2m) {
        y_axis(&mut o, a, m, x1, x0, lay.y2_tick_w, true);
    }
    let _ = write!(o, r#"<g clip-path="url(#{id}-clip)">"#);
    for (i, s) in fig.series.iter().enumerate() {
        let m = if s.right { y2m.as_ref().unwrap_or(ym) } else { ym };
        series(&mut o, &fig.series_id(i), i, s, xm, m);
    }
    o.push_str("</g>");
    marks(&mut o, fig, xm, ym, &mut placed);
    legend(&mut o, fig, &lay.legend);
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

/// The highest value drawn with a marker or an error bar (bars' tops aside): what the plot's
/// top border must not cut.
fn marked_top(series: &[&Series]) -> f64 {
    series
        .iter()
        .flat_map(|s| {
            s.points.iter().flat_map(move |p| {
                let own = (s.style != Style::Bars).then_some(p.y);
                own.into_iter().chain(p.error.map(|(_, hi)| hi))
            })
        })
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max)
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

fn bands(o: &mut String, fig: &Figure, xm: &Mapping, y0: f64, y1: f64, placed: &mut Vec<TextBox>) {
    for m in &fig.marks {
        if let Mark::Band { from, to, label } = m {
            let (a, b) = (xm.clamped(*from), xm.clamped(*to));
            let w = text_width(label, FONT);
            let x = (a + 4.0).min(xm.to - w - 4.0).max(xm.from + 2.0);
            // At the bottom, clear of the notes at the top.
            placed.push(TextBox::line(x, y0 - 6.0, w));
            let _ = write!(
                o,
                r##"<g class="mark band"><rect x="{}" y="{}" width="{}" height="{}" fill="#000" fill-opacity="0.08"/><text x="{}" y="{}" fill="#444">{}</text></g>"##,
                f1(a),
                f1(y1),
                f1((b - a).max(0.0)),
                f1(y0 - y1),
                f1(x),
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

fn x_axis(o: &mut String, axis: &Axis, lay: &Layout) {
    let (m, y0, y1) = (&lay.xm, lay.y0, lay.y1);
    o.push_str(r##"<g class="axis x-axis" stroke="#000">"##);
    let _ = write!(
        o,
        r#"<line x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
        f1(m.from),
        f1(y0),
        f1(m.to),
        f1(y0)
    );
    for (t, _) in tick_positions(axis, m) {
        let Some(x) = m.at(t) else { continue };
        let _ = write!(
            o,
            r##"<line x1="{x}" y1="{y1}" x2="{x}" y2="{y0}" stroke="#ddd"/><line x1="{x}" y1="{y0}" x2="{x}" y2="{}"/>"##,
            f1(y0 + 4.0),
            x = f1(x),
            y0 = f1(y0),
            y1 = f1(y1),
        );
    }
    for (t, text) in &lay.x_labels {
        let Some(x) = m.at(*t) else { continue };
        if lay.x_down {
            // Down the axis: the text ends just below it and runs downwards, centred on the tick.
            let cx = x + (ASCENT - DESCENT) / 2.0;
            let _ = write!(
                o,
                r#"<text transform="translate({},{}) rotate(-90)" text-anchor="end" stroke="none">{}</text>"#,
                f1(cx),
                f1(y0 + 8.0),
                escape(text),
            );
        } else {
            let _ = write!(
                o,
                r#"<text x="{}" y="{}" text-anchor="middle" stroke="none">{}</text>"#,
                f1(x),
                f1(y0 + 18.0),
                escape(text),
            );
        }
    }
    let _ = write!(
        o,
        r#"<text class="axis-title" x="{}" y="{}" text-anchor="middle" stroke="none">{}</text></g>"#,
        f1((m.from + m.to) / 2.0),
        f1(lay.x_title_y),
        escape(&fit_text(&axis.title(), FONT, WIDTH - 2.0 * EDGE))
    );
}

/// A y axis at `x` (`other`: the far side of the plot, where the grid lines end); `tick_w` the
/// widest tick label, which the title keeps clear of.
fn y_axis(o: &mut String, axis: &Axis, m: &Mapping, x: f64, other: f64, tick_w: f64, right: bool) {
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
            f1(y + 3.5),
            escape(&text),
            y = f1(y)
        );
    }
    // Rotated a quarter turn: the glyphs rise towards smaller x, so the ascent lies outwards on
    // the left axis and inwards on the right one.
    let cx = if right {
        x + 7.0 + tick_w + 4.0 + ASCENT
    } else {
        x - 7.0 - tick_w - 4.0 - DESCENT
    };
    let cy = (m.from + m.to) / 2.0;
    let _ = write!(
        o,
        r#"<text class="axis-title" transform="translate({},{}) rotate(-90)" text-anchor="middle" stroke="none">{}</text></g>"#,
        f1(cx),
        f1(cy),
        escape(&fit_text(&axis.title(), FONT, PLOT_HEIGHT + TOP - EDGE))
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

/// A mark's label at `(x, y)` in `fill`, haloed in white so that it reads over the lines below.
fn mark_label((x, y): (f64, f64), fill: &str, label: &str) -> String {
    format!(
        r##"<text x="{}" y="{}" fill="{fill}" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>"##,
        f1(x),
        f1(y),
        escape(label)
    )
}

/// Where a mark's text of width `w` goes: at (x, y) when that is clear of the texts already
/// `placed`, else the first clear row below it within the plot (`down`), else nowhere (the
/// figure's description and tooltips carry every number). Kept inside the plot's width.
fn place(placed: &mut Vec<TextBox>, xm: &Mapping, x: f64, y: f64, w: f64, down: Option<f64>) -> Option<(f64, f64)> {
    let x = x.min(xm.to - w - 2.0).max(xm.from.min(xm.to) + 2.0);
    let tries = if down.is_some() { 8 } else { 1 };
    for k in 0..tries {
        let y = y + k as f64 * 13.0;
        if down.is_some_and(|bottom| y + DESCENT > bottom) {
            break;
        }
        let b = TextBox::line(x, y, w);
        if !placed.iter().any(|p| p.overlaps(&b)) {
            placed.push(b);
            return Some((x, y));
        }
    }
    None
}

fn marks(o: &mut String, fig: &Figure, xm: &Mapping, ym: &Mapping, placed: &mut Vec<TextBox>) {
    let (top, bottom) = (ym.to.min(ym.from), ym.to.max(ym.from));
    let mut hlines = 0;
    // Notes first: they sit in the top left corner, in the order given.
    for m in &fig.marks {
        if let Mark::Note { text } = m {
            let w = text_width(text, FONT);
            if let Some((x, y)) = place(placed, xm, xm.from + 8.0, top + 14.0, w, Some(bottom)) {
                let _ = write!(
                    o,
                    r##"<text class="mark note" x="{}" y="{}" fill="#000" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>"##,
                    f1(x),
                    f1(y),
                    escape(text)
                );
            }
        }
    }
    for m in &fig.marks {
        match m {
            Mark::VLine { x, label } => {
                let Some(px) = xm.at(*x) else { continue };
                let w = text_width(label, FONT);
                // Right of the line, or left of it where the plot ends first.
                let tx = if px + 4.0 + w > xm.to { px - 4.0 - w } else { px + 4.0 };
                let text = place(placed, xm, tx, top + 24.0, w, Some(bottom))
                    .map_or(String::new(), |at| mark_label(at, "#000", label));
                let _ = write!(
                    o,
                    r##"<g class="mark vline"><line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="#000" stroke-dasharray="4 3"/>{text}</g>"##,
                    f1(top),
                    f1(bottom),
                    px = f1(px)
                );
            }
            Mark::HLine { y, label } => {
                let Some(py) = ym.at(*y) else { continue };
                let w = text_width(label, FONT);
                // Alternate ends, so the labels of close lines do not overlap.
                let tx = if hlines % 2 == 0 {
                    xm.to - 4.0 - w
                } else {
                    xm.from + 4.0
                };
                hlines += 1;
                let text = [py - 3.0, py + 3.0 + ASCENT]
                    .into_iter()
                    .find_map(|ty| place(placed, xm, tx, ty, w, None))
                    .map_or(String::new(), |at| mark_label(at, "#333", label));
                let _ = write!(
                    o,
                    r##"<g class="mark hline"><line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#555" stroke-dasharray="3 3"/>{text}</g>"##,
                    f1(xm.from),
                    f1(xm.to),
                    py = f1(py)
                );
            }
            Mark::Label { x, y, text } => {
                let (Some(px), Some(py)) = (xm.at(*x), ym.at(*y)) else {
                    continue;
                };
                let w = text_width(text, FONT);
                let ty = (py - 4.0).max(top + ASCENT);
                if let Some((tx, ty)) = place(placed, xm, px - w / 2.0, ty, w, None) {
                    let _ = write!(
                        o,
                        r##"<text class="mark label" x="{}" y="{}" font-size="11" fill="#000" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>"##,
                        f1(tx),
                        f1(ty),
                        escape(text)
                    );
                }
            }
            Mark::Tip { from, to, text } => {
                let (a, b) = (xm.clamped(*from), xm.clamped(*to));
                let _ = write!(
                    o,
                    r##"<rect class="mark tip" x="{}" y="{}" width="{}" height="{}" fill="#fff" fill-opacity="0"><title>{}</title></rect>"##,
                    f1(a.min(b)),
                    f1(top),
                    f1((b - a).abs()),
                    f1(bottom - top),
                    escape(text)
                );
            }
            Mark::Band { .. } | Mark::Note { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
