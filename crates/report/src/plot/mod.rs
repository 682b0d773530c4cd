//! The figure model: what a chart shows, independent of how it is drawn. Builders in
//! [`crate::figures`] turn result documents into [`Figure`]s; [`svg`] draws one, [`csv`] writes
//! its series, [`crate::html`] assembles a page of them. A campaign or comparison figure is one
//! more builder over the same model.
//!
//! Every figure has a stable element id (`fig-timeline`, docs/reports.md lists them), every
//! series an id under it (`fig-timeline-s0`), so a test or a style sheet can find them.

pub mod csv;
pub mod scale;
pub mod svg;

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Base 10; values at or below zero are left out.
    Log,
}

/// One axis: what it measures and in which unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// What it measures: "throughput".
    pub label: String,
    /// Its unit as written on the axis: "Mbit/s" (10^6 bits per second), "µs", "%".
    pub unit: String,
    pub scale: Scale,
    /// Fixed ends; None: from the data (a linear axis starts at 0 when all data are positive).
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Named positions 0, 1, 2...: ticks there, labelled with these (CPU numbers).
    pub categories: Option<Vec<String>>,
}

impl Axis {
    pub fn linear(label: &str, unit: &str) -> Axis {
        Axis {
            label: label.to_string(),
            unit: unit.to_string(),
            scale: Scale::Linear,
            min: None,
            max: None,
            categories: None,
        }
    }

    /// Categories at 0, 1, 2...: the axis runs from -0.5 to n - 0.5.
    pub fn categories(label: &str, names: Vec<String>) -> Axis {
        Axis {
            min: Some(-0.5),
            max: Some(names.len().max(1) as f64 - 0.5),
            categories: Some(names),
            ..Axis::linear(label, "")
        }
    }

    pub fn log(label: &str, unit: &str) -> Axis {
        Axis {
            scale: Scale::Log,
            ..Axis::linear(label, unit)
        }
    }

    /// Log when the positive values span two decades or more, else linear.
    pub fn fitting(label: &str, unit: &str, values: &[f64]) -> Axis {
        let pos = values.iter().copied().filter(|v| *v > 0.0);
        let lo = pos.clone().fold(f64::INFINITY, f64::min);
        let hi = pos.fold(0.0, f64::max);
        let all_positive = values.iter().all(|v| *v > 0.0);
        if all_positive && lo.is_finite() && hi / lo >= 100.0 {
            Axis::log(label, unit)
        } else {
            Axis::linear(label, unit)
        }
    }

    /// "throughput (Mbit/s)".
    pub fn title(&self) -> String {
        if self.unit.is_empty() {
            self.label.clone()
        } else {
            format!("{} ({})", self.label, self.unit)
        }
    }

    pub fn with_min(mut self, min: f64) -> Axis {
        self.min = Some(min);
        self
    }

    pub fn with_max(mut self, max: f64) -> Axis {
        self.max = Some(max);
        self
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Lines between points, with a marker on each.
    Line,
    /// Markers only.
    Points,
    /// A line without markers: a fitted or expected line, not measured points.
    Curve,
    /// Bars from 0 (or the axis floor) to y, over `x..x_end`.
    Bars,
}

/// One point; `x_end` for a bar (a histogram bin `[x, x_end)`), `error` for an error bar
/// (low, high) around y.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub x_end: Option<f64>,
    pub error: Option<(f64, f64)>,
}

impl Point {
    pub fn xy(x: f64, y: f64) -> Point {
        Point {
            x,
            y,
            x_end: None,
            error: None,
        }
    }

    pub fn bar(from: f64, to: f64, y: f64) -> Point {
        Point {
            x: from,
            y,
            x_end: Some(to),
            error: None,
        }
    }
}

/// A named series of points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// As the legend shows it: "stream 0", "total", "512 bytes".
    pub name: String,
    pub style: Style,
    pub points: Vec<Point>,
    /// Plotted against the figure's second y axis.
    pub right: bool,
}

impl Series {
    pub fn new(name: &str, style: Style, points: Vec<Point>) -> Series {
        Series {
            name: name.to_string(),
            style,
            points,
            right: false,
        }
    }

    pub fn on_right(mut self) -> Series {
        self.right = true;
        self
    }
}

/// Something drawn over the data to point at it.
#[derive(Clone, Debug, PartialEq)]
pub enum Mark {
    /// A vertical line at x, labelled (a peak, an optimum).
    VLine { x: f64, label: String },
    /// A horizontal line at y (left axis), labelled (a steady-state percentile).
    HLine { y: f64, label: String },
    /// A shaded stretch of x (the ramp).
    Band { from: f64, to: f64, label: String },
    /// A line of text in the plot's top left corner (a fit's slope and intercept).
    Note { text: String },
    /// Text centred just above the point (x, y) on the left axis (a bar's change in %); left
    /// out where it would overlap another mark's text.
    Label { x: f64, y: f64, text: String },
    /// A tooltip over the stretch `from..to` of x, the plot's full height (a bar's numbers).
    Tip { from: f64, to: f64, text: String },
}

/// A chart: axes, series, marks, and a text alternative for those who cannot see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Element id: `fig-timeline` (docs/reports.md lists them).
    pub id: String,
    pub title: String,
    /// The text alternative: what the chart shows, in a sentence or two with its key numbers.
    pub description: String,
    pub x: Axis,
    pub y: Axis,
    pub y2: Option<Axis>,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
    /// A grid of coloured cells instead of axes and series (a matrix's heat map);
    /// None for every chart.
    pub heat: Option<HeatMap>,
}

/// A heat map (perfSONAR MaDDash's grid): one cell per (row, column) pair a pattern has, each
/// filled by its value on a colour-blind-safe sequential scale ([`svg::heat`]), its value
/// written in it; pairs without a cell drawn hatched.
#[derive(Clone, Debug, PartialEq)]
pub struct HeatMap {
    /// What the rows and the columns are ("from", "to"), and their names in order.
    pub row_title: String,
    pub column_title: String,
    pub rows: Vec<String>,
    pub columns: Vec<String>,
    /// What the values are, with their unit: the colour legend's title.
    pub value: Axis,
    /// Whether a larger value is better: the scale's bright end is the better one.
    pub higher_is_better: bool,
    pub cells: Vec<HeatCell>,
}

/// One cell of a [`HeatMap`].
#[derive(Clone, Debug, PartialEq)]
pub struct HeatCell {
    /// Indexes into [`HeatMap::rows`] and [`HeatMap::columns`].
    pub row: usize,
    pub column: usize,
    pub state: HeatState,
    /// What the cell shows in words (its value as the tables write it, "failed").
    pub text: String,
    /// Its tooltip: the pair, the value with its unit, or why it failed.
    pub tip: String,
}

/// What a heat map's cell holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HeatState {
    /// Measured: filled by this value on the scale.
    Value(f64),
    /// The test failed or never ran: marked apart from every value.
    Failed,
    /// It ran but measured no such figure.
    Unmeasured,
}

impl Figure {
    pub fn new(id: &str, title: &str, x: Axis, y: Axis) -> Figure {
        Figure {
            id: id.to_string(),
            title: title.to_string(),
            description: String::new(),
            x,
            y,
            y2: None,
            series: Vec::new(),
            marks: Vec::new(),
            heat: None,
        }
    }

    /// Whether any series has a point to draw (a heat map: any cell).
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| !s.points.is_empty()) || self.heat.as_ref().is_some_and(|h| !h.cells.is_empty())
    }

    /// The element id of series `i`: `fig-timeline-s0`.
    pub fn series_id(&self, i: usize) -> String {
        format!("{}-s{i}", self.id)
    }

    /// The figure's numbers in words, for its text alternative: "send side: 12.0, 80.5;
    /// receive side: ..." in series order, each point as `point` writes it; series without
    /// points are left out.
    pub fn values_in_words(&self, point: impl Fn(&Point) -> String) -> String {
        self.series
            .iter()
            .filter(|s| !s.points.is_empty())
            .map(|s| {
                let values: Vec<String> = s.points.iter().map(&point).collect();
                format!("{}: {}", s.name, values.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Okabe & Ito's colour-blind-safe palette (yellow last: faint on white), paired by index with
/// a dash pattern and a marker so series stay apart in greyscale too.
pub const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];

/// SVG stroke-dasharray per series index (empty: solid).
pub const DASHES: [&str; 6] = ["", "6 3", "2 2", "8 3 2 3", "1 3", "10 4"];

/// Text made safe for XML and HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}
