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

/// The (x, text) of each `<text x=".." y="..">` under the element starting at `from`.
fn texts_in(svg: &str, from: &str) -> Vec<(f64, f64, String)> {
    let part = &svg[svg.find(from).expect("the part")..];
    part.split("<text x=\"")
        .skip(1)
        .map(|t| {
            let x: f64 = t[..t.find('"').expect("x")].parse().expect("a number");
            let y = t.split("y=\"").nth(1).expect("y");
            let y: f64 = y[..y.find('"').expect("y")].parse().expect("a number");
            let body = &t[t.find('>').expect(">") + 1..t.find("</text>").expect("</text>")];
            (x, y, body.replace("&#39;", "'"))
        })
        .collect()
}

#[test]
fn issue_23_legend_entries_wrap_onto_rows_and_stay_inside() {
    let mut f = Figure::new("fig-l", "t", Axis::linear("x", "s"), Axis::linear("y", "Mbit/s"));
    f.y2 = Some(Axis::linear("CPU", "%"));
    for name in ["1 agent", "2 agents", "4 agents"] {
        f.series.push(Series::new(name, Style::Line, vec![Point::xy(1.0, 1.0)]));
        f.series.push(
            Series::new(
                &format!("{name}, receiver's host CPU"),
                Style::Line,
                vec![Point::xy(1.0, 50.0)],
            )
            .on_right(),
        );
    }
    f.series
        .push(Series::new(&"a very long name ".repeat(8), Style::Line, vec![]));
    let svg = render(&f);
    let entries = texts_in(&svg, "<g class=\"legend\">");
    assert_eq!(entries.len(), 7);
    let mut rows = std::collections::BTreeMap::new();
    for (x, y, text) in &entries {
        let right = x + text_width(text, FONT);
        assert!(right <= WIDTH - EDGE + 0.1, "{text:?} ends at {right}");
        rows.entry(y.to_bits()).or_insert_with(Vec::new).push((*x, right));
    }
    assert!(rows.len() >= 3, "wrapped onto rows: {rows:?}");
    for row in rows.values() {
        for pair in row.windows(2) {
            // The next entry's sample starts a gap after this one's text ends (positions are
            // written to 0.1 px).
            assert!(
                pair[0].1 + LEGEND_GAP <= pair[1].0 - LEGEND_SAMPLE + 0.1,
                "overlap in {row:?}"
            );
        }
    }
    assert!(svg.contains("…</text>"), "the long name cut with an ellipsis");
    let (_, last_y, _) = entries.last().expect("entries");
    assert!(last_y + DESCENT <= height(&f), "the legend inside the SVG");
}

#[test]
fn issue_23_the_last_x_tick_label_fits_and_labels_keep_apart() {
    let mut f = Figure::new("fig-x", "t", Axis::linear("bytes", "B"), Axis::linear("y", ""));
    f.series.push(Series::new(
        "s",
        Style::Line,
        vec![Point::xy(0.0, 1.0), Point::xy(1e6, 2.0)],
    ));
    let svg = render(&f);
    let ticks = texts_in(&svg, "<g class=\"axis x-axis\"");
    let (x, _, last) = ticks.iter().rev().find(|t| t.2.contains(',')).expect("ticks");
    assert_eq!(last, "1,000,000");
    assert!(
        x + text_width(last, FONT) / 2.0 <= WIDTH - EDGE + 0.1,
        "cut at the edge: {x}"
    );
    // Categories wider than their slots go down the axis.
    let names: Vec<String> = (0..12).map(|i| format!("writes length={i}K variant=on")).collect();
    let mut c = Figure::new("fig-c", "t", Axis::categories("point", names), Axis::linear("y", ""));
    c.series
        .push(Series::new("s", Style::Bars, vec![Point::bar(-0.4, 0.4, 1.0)]));
    let svg = render(&c);
    assert!(svg.contains("rotate(-90)\" text-anchor=\"end\""), "down the axis");
    assert!(height(&c) > height(&f) + 100.0, "room made below the axis");
}

#[test]
fn a_figure_without_data_still_renders_its_axes() {
    let f = Figure::new("fig-empty", "Nothing", Axis::linear("x", ""), Axis::log("y", ""));
    let svg = render(&f);
    assert!(svg.contains("class=\"axis x-axis\""));
    assert!(!f.has_data());
}

#[test]
fn a_legend_entry_of_points_is_their_marker_without_a_line() {
    let mut f = figure();
    f.series
        .push(Series::new("probes", Style::Points, vec![Point::xy(1.0, 3.0)]));
    let svg = render(&f);
    let entry = |sid: &str| {
        let start = svg
            .find(&format!("<g class=\"legend-item\" data-series=\"{sid}\">"))
            .expect("a legend entry");
        let rest = &svg[start..];
        rest[..rest.find("</g>").expect("its end")].to_string()
    };
    assert!(entry("fig-test-s0").contains("h22"), "a line's sample is a line");
    let points = entry("fig-test-s2");
    assert!(!points.contains("h22"), "{points}");
    assert_eq!(points.matches("<path").count(), 1, "the marker alone: {points}");
}
