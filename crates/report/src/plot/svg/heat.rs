//! A [`HeatMap`] drawn as SVG (perfSONAR MaDDash's grid). Rows down the left, columns
//! across the top, one square per cell filled on viridis (matplotlib's colour-blind-safe
//! sequential scale, monotonic in lightness, so it also reads in greyscale), its bright end the
//! better one; its value written in black or white, whichever contrasts more with the fill (by
//! WCAG 2's formula either one reaches at least 4.58:1 on any colour); failed cells striped in
//! vermilion with "failed" on a white plate, pairs the pattern lacks hatched grey with "-". A
//! colour bar with the value's unit, and a key to the marks, lie below. Laid out, like every
//! figure, from measured text widths: a value too wide for its cell is written smaller, down to
//! 8 px, or left to the cell's tooltip and the description.

use super::text::{fit_text, text_width};
use super::{ASCENT, DESCENT, EDGE, FONT, WIDTH, f1, open};
use crate::plot::scale::{Mapping, label};
use crate::plot::{Figure, HeatCell, HeatMap, HeatState, escape};
use std::fmt::Write;

/// matplotlib's viridis at 0, 1/9, ... 1 (van der Walt and Smith, 2015); between them the
/// scale is interpolated in linear light, where luminance is a weighted sum of the channels: so
/// it rises between samples as it does across them (interpolating the sRGB values would let it
/// dip).
pub const VIRIDIS: [&str; 10] = [
    "#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725",
];

/// Failed cells' stripes: Okabe and Ito's vermilion, apart from every viridis colour.
const FAILED: &str = "#D55E00";
const CELL_W_MAX: f64 = 96.0;
const CELL_H: f64 = 30.0;
const GRID_H: f64 = 300.0;
/// Row and column names are cut to this width.
const NAME_MAX: f64 = 140.0;
/// A cell's value is written no smaller than this, px.
const VALUE_FONT_MIN: f64 = 8.0;
const BAR_W_MAX: f64 = 320.0;
const BAR_H: f64 = 12.0;
const SWATCH: f64 = 14.0;

/// `#rrggbb` as its three channels.
pub fn rgb(hex: &str) -> [u8; 3] {
    let h = hex.trim_start_matches('#');
    let c = |i: usize| u8::from_str_radix(h.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0);
    [c(0), c(2), c(4)]
}

/// Channels as `#rrggbb`.
pub fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// Viridis at `t` (0 dark purple .. 1 yellow; clamped).
pub fn viridis(t: f64) -> [u8; 3] {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let last = VIRIDIS.len() - 1;
    let x = t * last as f64;
    let i = (x.floor() as usize).min(last - 1);
    let f = x - i as f64;
    let (a, b) = (rgb(VIRIDIS[i]), rgb(VIRIDIS[i + 1]));
    [0, 1, 2].map(|k| {
        let (x, y) = (linear(a[k]), linear(b[k]));
        encode(x + (y - x) * f)
    })
}

/// An sRGB channel in linear light, 0..1 (IEC 61966-2-1).
fn linear(v: u8) -> f64 {
    let s = f64::from(v) / 255.0;
    if s <= 0.04045 {
        s / 12.92
    } else {
        ((s + 0.055) / 1.055).powf(2.4)
    }
}

/// Linear light back to an sRGB channel.
fn encode(l: f64) -> u8 {
    let s = if l <= 0.0031308 {
        l * 12.92
    } else {
        1.055 * l.powf(1.0 / 2.4) - 0.055
    };
    (s * 255.0).round().clamp(0.0, 255.0) as u8
}

/// Relative luminance (WCAG 2.1, "relative luminance": linearised sRGB, weighted).
pub fn luminance(c: [u8; 3]) -> f64 {
    0.2126 * linear(c[0]) + 0.7152 * linear(c[1]) + 0.0722 * linear(c[2])
}

/// WCAG 2.1's contrast ratio of two colours, 1 to 21.
pub fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

/// Black or white, whichever contrasts more with `fill`.
pub fn ink(fill: [u8; 3]) -> [u8; 3] {
    let (black, white) = ([0, 0, 0], [255, 255, 255]);
    if contrast(fill, black) >= contrast(fill, white) {
        black
    } else {
        white
    }
}

/// The scale's colour of `v`: its place between the legend's ends, the bright end the better.
fn colour(h: &HeatMap, m: &Mapping, v: f64) -> [u8; 3] {
    let t = (v - m.lo) / (m.hi - m.lo);
    viridis(if h.higher_is_better { t } else { 1.0 - t })
}

/// How a cell is painted: its fill (a colour or a pattern), the colour its text lies on, the
/// text's colour, and the text (empty: none).
pub struct Paint {
    pub fill: String,
    pub ground: [u8; 3],
    pub ink: [u8; 3],
    pub text: String,
    pub class: &'static str,
}

const WHITE: [u8; 3] = [255, 255, 255];
const HATCH_GROUND: [u8; 3] = [0xe6, 0xe6, 0xe6];

/// How `cell` is painted (None: a pair the pattern lacks); `id` the figure's, which names its
/// patterns.
pub fn paint(id: &str, h: &HeatMap, m: &Mapping, cell: Option<&HeatCell>) -> Paint {
    match cell.map(|c| (c.state, c)) {
        Some((HeatState::Value(v), c)) => {
            let fill = colour(h, m, v);
            Paint {
                fill: hex(fill),
                ground: fill,
                ink: ink(fill),
                text: c.text.clone(),
                class: "measured",
            }
        }
        // The text sits on a white plate over the stripes.
        Some((HeatState::Failed, _)) => Paint {
            fill: format!("url(#{id}-failed)"),
            ground: WHITE,
            ink: [0, 0, 0],
            text: "failed".to_string(),
            class: "failed",
        },
        Some((HeatState::Unmeasured, _)) => Paint {
            fill: "#ffffff".to_string(),
            ground: WHITE,
            ink: [0x33, 0x33, 0x33],
            text: "n/a".to_string(),
            class: "unmeasured",
        },
        None => Paint {
            fill: format!("url(#{id}-none)"),
            ground: HATCH_GROUND,
            ink: [0x44, 0x44, 0x44],
            text: "-".to_string(),
            class: "none",
        },
    }
}

/// Where everything of a heat map goes.
pub(super) struct Grid {
    /// Right edge of the row names; the grid's top left corner; a cell's size.
    names_r: f64,
    x0: f64,
    y0: f64,
    cw: f64,
    ch: f64,
    rows: Vec<String>,
    columns: Vec<String>,
    /// Column names written down (rotated), not across.
    down: bool,
    /// The colour bar's ends and top; the legend's title baseline, the key's baseline.
    bar: (f64, f64, f64),
    title_y: f64,
    key_y: f64,
    pub(super) height: f64,
}

fn widest(names: &[String]) -> f64 {
    names.iter().map(|t| text_width(t, FONT)).fold(0.0, f64::max)
}

impl Grid {
    pub(super) fn of(h: &HeatMap) -> Grid {
        let rows: Vec<String> = h.rows.iter().map(|r| fit_text(r, FONT, NAME_MAX)).collect();
        let columns: Vec<String> = h.columns.iter().map(|c| fit_text(c, FONT, NAME_MAX)).collect();
        let line = ASCENT + DESCENT;
        // The rows' title runs up the left edge; their names right-aligned beside the grid.
        let names_r = EDGE + line + 6.0 + widest(&rows);
        let x0 = names_r + 6.0;
        let n = columns.len().max(1) as f64;
        let cw = CELL_W_MAX.min((WIDTH - EDGE - x0) / n);
        // Many rows share a grid no taller than ten rows of [`CELL_H`], down to rows of 18 px (a
        // value at 11 px still fits): a 16-host mesh's page keeps its grid on the first screen.
        let ch = CELL_H
            .min(GRID_H / h.rows.len().max(1) as f64)
            .max(18.0)
            .min(cw.max(16.0));
        let down = widest(&columns) + 6.0 > cw;
        // The columns' title under the figure's title, then their names.
        let names_top = 34.0 + line + 6.0;
        let y0 = if down {
            names_top + widest(&columns) + 6.0
        } else {
            names_top + line + 6.0
        };
        let bottom = y0 + h.rows.len() as f64 * ch;
        let bar_top = bottom + 14.0;
        let bar_x0 = x0.max(EDGE + 30.0);
        let bar = (bar_x0, bar_x0 + BAR_W_MAX.min(WIDTH - EDGE - 30.0 - bar_x0), bar_top);
        let ticks_y = bar_top + BAR_H + 4.0 + 2.0 + ASCENT;
        let title_y = ticks_y + DESCENT + 6.0 + ASCENT;
        let key_y = title_y + DESCENT + 8.0 + ASCENT;
        Grid {
            names_r,
            x0,
            y0,
            cw,
            ch,
            rows,
            columns,
            down,
            bar,
            title_y,
            key_y,
            height: key_y + DESCENT + 8.0,
        }
    }
}

/// The legend's range: the values' axis as every linear axis fits (from 0 when all are
/// positive, to a nice number above the highest).
pub fn mapping(h: &HeatMap, from: f64, to: f64) -> Mapping {
    let values: Vec<f64> = h
        .cells
        .iter()
        .filter_map(|c| match c.state {
            HeatState::Value(v) => Some(v),
            _ => None,
        })
        .collect();
    Mapping::fit(&h.value, &values, from, to)
}

/// The font size at which `text` fits `room` px, from [`FONT`] down to [`VALUE_FONT_MIN`];
/// None when it does not fit even then.
fn fitting_size(text: &str, room: f64) -> Option<f64> {
    let w = text_width(text, FONT);
    if w <= room {
        return Some(FONT);
    }
    let size = (FONT * room / w * 10.0).floor() / 10.0;
    (size >= VALUE_FONT_MIN).then_some(size)
}

/// The heat map `h` of `fig` as a standalone `<svg>`: each cell a `<g class="heat-cell STATE">`
/// (`measured`, `failed`, `unmeasured`, `none`) with `data-from`, `data-to`, `data-value`, its
/// tooltip, its `rect.fill` and its `text.value`.
pub fn render(fig: &Figure, h: &HeatMap) -> String {
    let g = Grid::of(h);
    let id = escape(&fig.id);
    let mut o = String::with_capacity(4096 + 600 * h.cells.len());
    open(&mut o, fig, "figure heatmap", g.height, EDGE + 4.0);
    let _ = write!(
        o,
        r##"<defs><pattern id="{id}-failed" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#fff"/><rect width="3" height="8" fill="{FAILED}"/></pattern><pattern id="{id}-none" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="6" height="6" fill="{}"/><rect width="1" height="6" fill="#bdbdbd"/></pattern></defs>"##,
        hex(HATCH_GROUND)
    );
    let (cols, rows) = (g.columns.len() as f64, g.rows.len() as f64);
    // The axes' titles and names.
    let _ = write!(
        o,
        r#"<g class="names"><text class="axis-title" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        f1(g.x0 + cols * g.cw / 2.0),
        f1(34.0 + ASCENT),
        escape(&h.column_title)
    );
    let _ = write!(
        o,
        r#"<text class="axis-title" transform="translate({},{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        f1(EDGE + ASCENT),
        f1(g.y0 + rows * g.ch / 2.0),
        escape(&h.row_title)
    );
    for (i, name) in g.columns.iter().enumerate() {
        let cx = g.x0 + (i as f64 + 0.5) * g.cw;
        let at = if g.down {
            // Up from just above the grid, centred on the column.
            format!(
                r#"transform="translate({},{}) rotate(-90)""#,
                f1(cx + (ASCENT - DESCENT) / 2.0),
                f1(g.y0 - 6.0)
            )
        } else {
            format!(
                r#"x="{}" y="{}" text-anchor="middle""#,
                f1(cx),
                f1(g.y0 - 6.0 - DESCENT)
            )
        };
        name_text(&mut o, "column", &at, name, &h.columns[i]);
    }
    for (i, name) in g.rows.iter().enumerate() {
        let at = format!(
            r#"x="{}" y="{}" text-anchor="end""#,
            f1(g.names_r),
            f1(g.y0 + (i as f64 + 0.5) * g.ch + (ASCENT - DESCENT) / 2.0)
        );
        name_text(&mut o, "row", &at, name, &h.rows[i]);
    }
    o.push_str("</g>");
    let m = mapping(h, g.bar.0, g.bar.1);
    o.push_str(r#"<g class="cells">"#);
    for (r, row) in h.rows.iter().enumerate() {
        for (c, column) in h.columns.iter().enumerate() {
            let cell = h.cells.iter().find(|x| x.row == r && x.column == c);
            let p = paint(&id, h, &m, cell);
            let (x, y) = (g.x0 + c as f64 * g.cw, g.y0 + r as f64 * g.ch);
            let tip = cell.map_or_else(|| format!("{row} → {column}: not in the pattern"), |c| c.tip.clone());
            let value = match cell.map(|c| c.state) {
                Some(HeatState::Value(v)) => format!(r#" data-value="{v}""#),
                _ => String::new(),
            };
            let _ = write!(
                o,
                r##"<g class="heat-cell {}" data-from="{}" data-to="{}"{value}><title>{}</title><rect class="fill" x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#fff" stroke-width="1"/>"##,
                p.class,
                escape(row),
                escape(column),
                escape(&tip),
                f1(x),
                f1(y),
                f1(g.cw),
                f1(g.ch),
                p.fill,
            );
            if let Some(size) = fitting_size(&p.text, g.cw - 8.0).filter(|size| g.ch >= size * 1.2) {
                let w = text_width(&p.text, size);
                let (cx, cy) = (x + g.cw / 2.0, y + g.ch / 2.0);
                if p.class == "failed" {
                    let _ = write!(
                        o,
                        r##"<rect class="plate" x="{}" y="{}" width="{}" height="{}" fill="#fff"/>"##,
                        f1(cx - w / 2.0 - 2.0),
                        f1(cy - size * 0.65),
                        f1(w + 4.0),
                        f1(size * 1.3)
                    );
                }
                let _ = write!(
                    o,
                    r#"<text class="value" x="{}" y="{}" text-anchor="middle" font-size="{}" fill="{}">{}</text>"#,
                    f1(cx),
                    f1(cy + (ASCENT - DESCENT) / FONT * size / 2.0),
                    f1(size),
                    hex(p.ink),
                    escape(&p.text)
                );
            }
            o.push_str("</g>");
        }
    }
    o.push_str("</g>");
    legend(&mut o, &id, h, &g, &m);
    o.push_str("</svg>");
    o
}

/// A row's or column's name, as fitted; cut, it keeps its whole name in a tooltip.
fn name_text(o: &mut String, class: &str, at: &str, shown: &str, whole: &str) {
    let text = format!(r#"<text class="{class}" {at}>{}</text>"#, escape(shown));
    if shown == whole {
        o.push_str(&text);
    } else {
        let _ = write!(o, "<g><title>{}</title>{text}</g>", escape(whole));
    }
}

/// The colour bar (the scale's colours at the values below them, ticks as a linear axis has
/// them, thinned until their labels keep apart), its title with the unit and which end is
/// better, and a key to the failed and missing cells the grid has.
fn legend(o: &mut String, id: &str, h: &HeatMap, g: &Grid, m: &Mapping) {
    let (x0, x1, top) = g.bar;
    o.push_str(r#"<g class="legend scale">"#);
    let _ = write!(o, r#"<linearGradient id="{id}-scale" x1="0" x2="1" y1="0" y2="0">"#);
    for k in 0..=20 {
        let t = f64::from(k) / 20.0;
        let _ = write!(
            o,
            r#"<stop offset="{t}" stop-color="{}"/>"#,
            hex(colour(h, m, m.lo + t * (m.hi - m.lo)))
        );
    }
    let _ = write!(
        o,
        r##"</linearGradient><rect class="bar" x="{}" y="{}" width="{}" height="{BAR_H}" fill="url(#{id}-scale)" stroke="#000" stroke-width="0.5"/>"##,
        f1(x0),
        f1(top),
        f1(x1 - x0)
    );
    let ticks: Vec<(f64, String)> = m
        .ticks()
        .into_iter()
        .filter_map(|t| m.at(t).map(|x| (x, label(t))))
        .collect();
    let mut every = 1;
    while every < ticks.len()
        && !ticks
            .iter()
            .step_by(every)
            .collect::<Vec<_>>()
            .windows(2)
            .all(|p| p[1].0 - p[0].0 >= (text_width(&p[0].1, FONT) + text_width(&p[1].1, FONT)) / 2.0 + 6.0)
    {
        every += 1;
    }
    let baseline = top + BAR_H + 6.0 + ASCENT;
    for (x, text) in ticks.iter().step_by(every) {
        let _ = write!(
            o,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#000"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            f1(top + BAR_H),
            f1(top + BAR_H + 4.0),
            f1(baseline),
            escape(text),
            x = f1(*x),
        );
    }
    let better = if h.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let title = fit_text(&format!("{}, {better}", h.value.title()), FONT, WIDTH - EDGE - x0);
    let _ = write!(
        o,
        r#"<text class="axis-title" x="{}" y="{}">{}</text>"#,
        f1(x0),
        f1(g.title_y),
        escape(&title)
    );
    // The key: only the marks the grid has.
    let any = |state: HeatState| h.cells.iter().any(|c| c.state == state);
    let missing =
        (0..h.rows.len()).any(|r| (0..h.columns.len()).any(|c| !h.cells.iter().any(|x| x.row == r && x.column == c)));
    let mut x = x0;
    for (shown, fill, text) in [
        (
            any(HeatState::Failed),
            format!("url(#{id}-failed)"),
            "failed (why: in its tooltip)",
        ),
        (
            any(HeatState::Unmeasured),
            "#ffffff".to_string(),
            "n/a: ran, not measured",
        ),
        (missing, format!("url(#{id}-none)"), "-: not in the pattern"),
    ] {
        if !shown {
            continue;
        }
        let text = fit_text(text, FONT, WIDTH - EDGE - x - SWATCH - 6.0);
        let _ = write!(
            o,
            r##"<g class="key"><rect x="{}" y="{}" width="{SWATCH}" height="{SWATCH}" fill="{fill}" stroke="#777" stroke-width="0.5"/><text x="{}" y="{}">{}</text></g>"##,
            f1(x),
            f1(g.key_y - SWATCH + DESCENT),
            f1(x + SWATCH + 6.0),
            f1(g.key_y),
            escape(&text)
        );
        x += SWATCH + 6.0 + text_width(&text, FONT) + 18.0;
    }
    o.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Axis;

    fn map(values: &[Option<f64>]) -> HeatMap {
        HeatMap {
            row_title: "from".into(),
            column_title: "to".into(),
            rows: vec!["a".into(), "b".into(), "c".into()],
            columns: vec!["a".into(), "b".into(), "c".into()],
            value: Axis::linear("throughput (Mbit/s)", ""),
            higher_is_better: true,
            cells: values
                .iter()
                .enumerate()
                .map(|(i, v)| HeatCell {
                    row: i / 3,
                    column: i % 3,
                    state: v.map_or(HeatState::Failed, HeatState::Value),
                    text: v.map_or("failed".into(), label),
                    tip: String::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn issue_24_the_scale_is_viridis_end_to_end_and_brightens_monotonically() {
        assert_eq!(hex(viridis(0.0)), "#440154");
        assert_eq!(hex(viridis(1.0)), "#fde725");
        assert_eq!(hex(viridis(0.5)), hex(viridis(0.5)));
        // Lightness rises over every twentieth of the scale and never falls by more than
        // rounding each channel to 8 bits can make it (a channel falling as another rises).
        for steps in [256, 20] {
            let mut last = -1.0;
            for k in 0..=steps {
                let l = luminance(viridis(f64::from(k) / f64::from(steps)));
                assert!(
                    l > last || (steps > 20 && l > last - 1e-3),
                    "luminance falls at {k}/{steps}: {l} after {last}"
                );
                last = l;
            }
        }
        // Lower is better: the bright end goes to the smallest value.
        let mut h = map(&[Some(10.0), Some(90.0)]);
        let m = mapping(&h, 0.0, 100.0);
        assert!(luminance(colour(&h, &m, 90.0)) > luminance(colour(&h, &m, 10.0)));
        h.higher_is_better = false;
        assert!(luminance(colour(&h, &m, 90.0)) < luminance(colour(&h, &m, 10.0)));
    }

    #[test]
    fn issue_24_every_cells_text_contrasts_4_5_to_1_with_what_it_lies_on() {
        // Every value across the scale, a failed cell, a missing pair.
        let values: Vec<Option<f64>> = (0..=8).map(|k| (k != 4).then_some(f64::from(k) * 12.5)).collect();
        let h = map(&values);
        let m = mapping(&h, 0.0, 100.0);
        for cell in h.cells.iter().map(Some).chain([None]) {
            let p = paint("fig", &h, &m, cell);
            let ratio = contrast(p.ground, p.ink);
            assert!(
                ratio >= 4.5,
                "{:?}: {} on {} is {ratio:.2}:1",
                cell,
                hex(p.ink),
                hex(p.ground)
            );
        }
        // Every colour of the scale takes an ink of 4.5:1 or more.
        for k in 0..=1000 {
            let fill = viridis(f64::from(k) / 1000.0);
            assert!(contrast(fill, ink(fill)) >= 4.5, "{}", hex(fill));
        }
        // The rendered text carries the ink computed.
        let mut fig = Figure::new("fig-h", "H", Axis::linear("", ""), Axis::linear("", ""));
        fig.heat = Some(h.clone());
        let svg = super::super::render(&fig);
        let g = Grid::of(&h);
        let m = mapping(&h, g.bar.0, g.bar.1);
        for cell in &h.cells {
            let p = paint("fig-h", &h, &m, Some(cell));
            let text = format!(r#"fill="{}">{}</text>"#, hex(p.ink), escape(&p.text));
            assert!(svg.contains(&text), "{text} not in the SVG");
            if let HeatState::Value(_) = cell.state {
                assert!(svg.contains(&format!(r##"fill="{}" stroke="#fff""##, p.fill)));
            }
        }
        assert_eq!(svg.matches("class=\"heat-cell failed\"").count(), 1);
        assert_eq!(svg.matches("class=\"heat-cell measured\"").count(), 8);
    }

    #[test]
    fn long_names_go_down_and_values_too_wide_are_left_to_the_tooltip() {
        assert_eq!(fitting_size("94.1", 80.0), Some(FONT));
        assert!(fitting_size("94.1", 20.0).is_some_and(|s| (VALUE_FONT_MIN..FONT).contains(&s)));
        assert_eq!(fitting_size("1,234,567", 10.0), None);
        let mut h = map(&[Some(1.0); 9]);
        h.columns = (0..3).map(|i| format!("a-rather-long-host-name-{i}.example")).collect();
        assert!(Grid::of(&h).down);
        h.columns = vec!["a".into(), "b".into(), "c".into()];
        assert!(!Grid::of(&h).down);
    }
}
