//! A matrix document's page. Fixture matrices built in code (no fleet is needed to draw
//! one): a mesh of 5 hosts (20 cells, the slow host's row and column at about half, one cell
//! failed with an error full of markup) and an incast of 4 flows into one receiver, one of them
//! starved. Each is written as JSON, made into a page by `linerate report`, and opened in headless
//! Chromium, where a script measures every heat-map cell: its fill, its text and both boxes.

use super::layout::{MEASURE, faults, first_screen, measure_with};
use super::{CHROMIUM, check_in_browser, report};
use crate::util::*;
use linerate_core::result::{
    Cell, CellFigure, CellStart, ClockEstimate, FleetHost, IntervalRecord, IntervalSample, Matrix, Pattern, Round,
    StreamInterval, Summary, jain_index,
};
use linerate_core::spec::{TcpSpec, TestSpec};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The controller's clock at the first round, Unix ns.
const T0: i64 = 1_795_000_000_000_000_000;
const ERROR: &str = "<h4> refused the test: \"no fleet secret\" & closed";

/// A run from `from` to `to` whose receiver counted `mbit` Mbit/s in each of 8 one-second
/// intervals (one stream).
fn run(from: &str, to: &str, mbit: &[f64]) -> linerate_core::result::TestResult {
    let mut summary = Summary::default();
    let bytes: u64 = mbit.iter().map(|m| (m * 1e6 / 8.0) as u64).sum();
    for side in [&mut summary.sent, &mut summary.received] {
        side.bytes = bytes;
        side.ops = 1000;
        side.streams = 1;
        side.seconds = mbit.len() as f64;
        side.bits_per_second = bytes as f64 * 8.0 / mbit.len() as f64;
    }
    let mut r = linerate_core::sweep::stub_result(TestSpec::Tcp(TcpSpec::new()), summary);
    r.from = Some(from.to_string());
    for (k, m) in mbit.iter().enumerate() {
        let s = StreamInterval {
            agent: to.to_string(),
            counted_by: "agent".to_string(),
            direction: "forward".to_string(),
            side: "received".to_string(),
            sample: IntervalSample {
                stream: 0,
                start_ns: k as u64 * 1_000_000_000,
                end_ns: (k as u64 + 1) * 1_000_000_000,
                bytes: (m * 1e6 / 8.0) as u64,
                ops: 100,
                tcp: None,
            },
            bits_per_second: m * 1e6,
        };
        r.intervals.push(IntervalRecord::Stream(s));
    }
    r
}

fn host(name: &str, offset_ms: i64) -> FleetHost {
    FleetHost {
        name: name.to_string(),
        address: format!("10.0.0.{}:5301", &name[1..]),
        host_name: Some(name.to_string()),
        node: Some(format!("node-{}", &name[1..])),
        clock: Some(ClockEstimate {
            offset_ns: offset_ms * 1_000_000,
            uncertainty_ns: 40_000,
            exchanges: 100,
        }),
    }
}

fn cell(from: &str, to: &str, round: usize, lateness_us: i64, mbit: Option<&[f64]>) -> Cell {
    let scheduled = T0 + round as i64 * 11_000_000_000;
    Cell {
        from: from.to_string(),
        to: to.to_string(),
        round,
        value: mbit.map(|m| m.iter().sum::<f64>() / m.len() as f64),
        start: Some(CellStart {
            scheduled_unix_ns: scheduled,
            actual_unix_ns: scheduled + lateness_us * 1000,
            answered_unix_ns: Some(scheduled + lateness_us * 1000 + 200_000),
            offset_ns: 0,
            uncertainty_ns: 40_000,
        }),
        result: mbit.map(|m| Box::new(run(from, to, m))),
        error: mbit.is_none().then(|| ERROR.to_string()),
    }
}

/// The rounds the cells give (their `round`), each with its start skew and Jain's index.
fn rounds(cells: &[Cell]) -> Vec<Round> {
    let n = cells.iter().map(|c| c.round + 1).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            let ids: Vec<usize> = (0..cells.len()).filter(|i| cells[*i].round == k).collect();
            let starts: Vec<i64> = ids
                .iter()
                .filter_map(|i| cells[*i].start.map(|s| s.actual_unix_ns))
                .collect();
            let values: Vec<f64> = ids.iter().filter_map(|i| cells[*i].value).collect();
            Round {
                start_skew_ns: (starts.len() > 1)
                    .then(|| (starts.iter().max().expect("some") - starts.iter().min().expect("some")) as u64),
                jain: jain_index(&values),
                cells: ids,
            }
        })
        .collect()
}

fn matrix(pattern: Pattern, hosts: Vec<FleetHost>, cells: Vec<Cell>) -> Matrix {
    let values: Vec<f64> = cells.iter().filter_map(|c| c.value).collect();
    Matrix {
        linerate: linerate_core::VERSION.to_string(),
        schema: linerate_core::result::SCHEMA,
        test: "tcp matrix".to_string(),
        pattern,
        started_unix_ms: (T0 / 1_000_000) as u64,
        partial: cells.iter().any(|c| c.error.is_some()),
        options: TestSpec::Tcp(TcpSpec::new()),
        hosts,
        figure: CellFigure::ThroughputMbps,
        rounds: rounds(&cells),
        sum: Some(values.iter().sum()),
        sum_window_seconds: None,
        jain: if pattern.concurrent() {
            jain_index(&values)
        } else {
            None
        },
        failed: cells
            .iter()
            .filter(|c| c.error.is_some())
            .map(|c| format!("{} -> {}", c.from, c.to))
            .collect(),
        skew_bound_ns: 10_000_000,
        notes: Vec::new(),
        lab: None,
        cells,
    }
}

/// A mesh of h1..h5 whose h5 has half the others' link: every pair, h3 → h4 failed. Values
/// differ from cell to cell (each a little below its link) so that the fills can be ordered.
fn mesh() -> Matrix {
    let names = ["h1", "h2", "h3", "h4", "h5"];
    let hosts = names.iter().enumerate().map(|(i, n)| host(n, i as i64 * 7)).collect();
    let mut cells = Vec::new();
    let mut k = 0;
    for from in names {
        for to in names.iter().filter(|t| **t != from) {
            let link = if from == "h5" || *to == "h5" { 50.0 } else { 100.0 };
            let mean = link * (0.955 - 0.02 * (k % 7) as f64);
            let series: Vec<f64> = (0..8)
                .map(|i| mean + [-0.4, 0.3, 0.1, -0.2, 0.4, -0.1, 0.0, -0.1][i])
                .collect();
            let failed = from == "h3" && *to == "h4";
            // Two cells a round, ten rounds: a round robin's order is the lead's; any will do here.
            cells.push(cell(
                from,
                to,
                k / 2,
                (k as i64 % 3) * 150,
                (!failed).then_some(&series[..]),
            ));
            k += 1;
        }
    }
    matrix(Pattern::Mesh, hosts, cells)
}

/// A mesh of 16 hosts named by address (`10.0.0.N:5301`): 240 cells, names too wide to stand
/// across their columns, values written smaller.
fn wide_mesh() -> Matrix {
    let names: Vec<String> = (1..=16).map(|i| format!("10.0.0.{i}:5301")).collect();
    let hosts = names
        .iter()
        .map(|n| FleetHost {
            name: n.clone(),
            address: n.clone(),
            host_name: None,
            node: None,
            clock: None,
        })
        .collect();
    let mut cells = Vec::new();
    for (i, from) in names.iter().enumerate() {
        for (j, to) in names.iter().enumerate().filter(|(j, _)| *j != i) {
            let mbit = 9000.0 + 37.0 * (i * 16 + j) as f64;
            cells.push(cell(from, to, i, 0, Some(&[mbit; 3])));
        }
    }
    matrix(Pattern::Mesh, hosts, cells)
}

/// Four senders into h5 at once; h4's flow starved (about 2 Mbit/s against 30).
fn incast() -> Matrix {
    let hosts = ["h1", "h2", "h3", "h4", "h5"]
        .iter()
        .enumerate()
        .map(|(i, n)| host(n, i as i64 * 3))
        .collect();
    let flows: [(&str, f64, i64); 4] = [("h1", 31.0, 0), ("h2", 30.0, 420), ("h3", 29.0, 910), ("h4", 2.0, 1800)];
    let cells = flows
        .iter()
        .map(|(from, mbit, late)| {
            let series: Vec<f64> = (0..8).map(|i| mbit + if i % 2 == 0 { 0.5 } else { -0.5 }).collect();
            cell(from, "h5", 0, *late, Some(&series))
        })
        .collect();
    matrix(Pattern::Incast, hosts, cells)
}

fn write(dir: &Path, name: &str, m: &Matrix) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(m).expect("serialize")).expect("write the document");
    path
}

/// Measures every heat-map cell (its state, pair, value, fill and text colour, the boxes of its
/// square and text), the colour bar and its title, and each figure's series.
const HEAT: &str = r#"<script>(function(){
function box(e){var b=e.getBoundingClientRect();return {l:b.left,r:b.right,t:b.top,b:b.bottom};}
var out={cells:[],bar:null,scale_title:null,series:{}};
document.querySelectorAll('g.heat-cell').forEach(function(g){
  var r=g.querySelector('rect.fill'),t=g.querySelector('text.value');
  var c={class:g.getAttribute('class'),from:g.getAttribute('data-from'),to:g.getAttribute('data-to'),
    value:g.getAttribute('data-value'),fill:getComputedStyle(r).fill,rect:box(r),text:null};
  if(t){c.text=t.textContent;c.ink=getComputedStyle(t).fill;c.text_box=box(t);}
  out.cells.push(c);
});
var bar=document.querySelector('svg.heatmap g.legend rect.bar');
if(bar){out.bar=box(bar);var t=document.querySelector('svg.heatmap g.legend text.axis-title');out.scale_title=t&&t.textContent;}
document.querySelectorAll('svg.figure').forEach(function(s){
  out.series[s.id]=[].map.call(s.querySelectorAll('g.series'),function(g){return g.getAttribute('data-name');});
});
var pre=document.createElement('pre');pre.id='heat-measured';pre.textContent=JSON.stringify(out);
document.body.appendChild(pre);
})();</script>"#;

/// `rgb(r, g, b)` as channels.
fn channels(css: &str) -> Option<[u8; 3]> {
    let inner = css.strip_prefix("rgb(")?.strip_suffix(')')?;
    let v: Vec<u8> = inner.split(',').filter_map(|x| x.trim().parse().ok()).collect();
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

/// WCAG 2.1 relative luminance and contrast ratio, written out again here so that the test does
/// not take the renderer's word for them.
fn luminance(c: [u8; 3]) -> f64 {
    let lin = |v: u8| {
        let s = f64::from(v) / 255.0;
        if s <= 0.04045 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2])
}

fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

/// Everything wrong with a page's heat map against its document `m`.
fn heat_faults(name: &str, m: &Matrix, seen: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let cells = seen["cells"].as_array().cloned().unwrap_or_default();
    let class = |c: &Value| c["class"].as_str().unwrap_or("").to_string();
    let of = |state: &str| {
        cells
            .iter()
            .filter(|c| class(c) == format!("heat-cell {state}"))
            .count()
    };
    let expect_failed = m.cells.iter().filter(|c| c.value.is_none()).count();
    let expect_measured = m.cells.len() - expect_failed;
    let grid = m.rows().len() * m.columns().len();
    if (of("measured"), of("failed"), of("none")) != (expect_measured, expect_failed, grid - m.cells.len()) {
        out.push(format!(
            "{name}: {} measured, {} failed, {} missing cells drawn; the document has {expect_measured}, {expect_failed}, {}",
            of("measured"),
            of("failed"),
            of("none"),
            grid - m.cells.len()
        ));
    }
    let mut filled: Vec<(f64, f64, String)> = Vec::new();
    for c in &cells {
        let (from, to) = (c["from"].as_str().unwrap_or(""), c["to"].as_str().unwrap_or(""));
        let pair = format!("{name} {from} → {to}");
        let doc = m.cell(from, to);
        if class(c) == "heat-cell failed" {
            if doc.is_none_or(|d| d.error.is_none()) {
                out.push(format!("{pair}: marked failed, the document has no error"));
            }
            if c["fill"].as_str().is_none_or(|f| !f.contains("url(")) {
                out.push(format!("{pair}: a failed cell not striped: {}", c["fill"]));
            }
            continue;
        }
        if class(c) != "heat-cell measured" {
            continue;
        }
        let Some(value) = doc.and_then(|d| d.value) else {
            out.push(format!("{pair}: drawn as measured, no value in the document"));
            continue;
        };
        let printed = c["text"].as_str().map(|t| t.replace(',', ""));
        match printed.as_deref().map(str::parse::<f64>) {
            Some(Ok(p)) if (p - value).abs() <= value.abs() * 1e-3 + 1e-9 => {}
            other => out.push(format!("{pair}: printed {other:?}, the document has {value}")),
        }
        let (rect, text) = (&c["rect"], &c["text_box"]);
        let g = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        if !(g(text, "l") >= g(rect, "l") - 0.5
            && g(text, "r") <= g(rect, "r") + 0.5
            && g(text, "t") >= g(rect, "t") - 0.5
            && g(text, "b") <= g(rect, "b") + 0.5)
        {
            out.push(format!("{pair}: its text {text} reaches past its cell {rect}"));
        }
        let fill = c["fill"].as_str().and_then(channels);
        let ink = c["ink"].as_str().and_then(channels);
        match (fill, ink) {
            (Some(f), Some(i)) => {
                let ratio = contrast(f, i);
                if ratio < 4.5 {
                    out.push(format!("{pair}: text {i:?} on {f:?} contrasts {ratio:.2}:1"));
                }
                filled.push((value, luminance(f), format!("{f:?}")));
            }
            _ => out.push(format!("{pair}: fill {} or ink {} not a colour", c["fill"], c["ink"])),
        }
    }
    // Higher is better here: the fills brighten as the values rise, visibly where the values lie
    // 2 % of the highest apart (closer ones may share a colour's 8 bits).
    let apart = 0.02 * filled.iter().map(|f| f.0).fold(0.0, f64::max);
    filled.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (i, lo) in filled.iter().enumerate() {
        if let Some(hi) = filled[i + 1..].iter().find(|hi| hi.0 > lo.0 + apart && hi.1 <= lo.1) {
            out.push(format!(
                "{name}: {} filled {} is no brighter than {} filled {}",
                hi.0, hi.2, lo.0, lo.2
            ));
        }
    }
    if seen["bar"].is_null() {
        out.push(format!("{name}: no colour bar"));
    }
    let title = seen["scale_title"].as_str().unwrap_or("");
    if !title.starts_with("throughput (Mbit/s)") {
        out.push(format!("{name}: the colour bar's title is {title:?}"));
    }
    out
}

fn linerate_ok(args: &[&str]) -> String {
    let out = linerate(args, Duration::from_secs(60));
    assert!(out.status.success(), "linerate {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn issue_24_a_matrix_reports_as_a_heat_map_and_an_incast_as_its_flows() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let d = dir.path();
    let (mesh, incast) = (mesh(), incast());
    let wide = wide_mesh();
    let (mesh_doc, incast_doc) = (write(d, "mesh", &mesh), write(d, "incast", &incast));
    let wide_doc = write(d, "wide", &wide);

    // The CSV of the heat map holds every cell, the document's own numbers.
    let csv_dir = d.join("csv");
    linerate_ok(&[
        "report",
        mesh_doc.to_str().expect("utf-8"),
        "--csv",
        csv_dir.to_str().expect("utf-8"),
    ]);
    let csv = std::fs::read_to_string(csv_dir.join("fig-matrix-heatmap.csv")).expect("the heat map's CSV");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("from,to,throughput (Mbit/s),state"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 20, "{csv}");
    for c in &mesh.cells {
        let want = match c.value {
            Some(v) => format!("{},{},{v},measured", c.from, c.to),
            None => format!("{},{},,failed", c.from, c.to),
        };
        assert!(rows.contains(&want.as_str()), "{want} not in\n{csv}");
    }
    assert!(
        !csv_dir.join("fig-matrix-flows.csv").exists(),
        "a mesh, one pair at a time, has no flows plot"
    );

    if !can_run(&[CHROMIUM]) {
        return;
    }
    let mesh_page = report(d, &mesh_doc, "mesh");
    let incast_page = report(d, &incast_doc, "incast");
    let wide_page = report(d, &wide_doc, "wide");
    let text = std::fs::read_to_string(&mesh_page).expect("read");
    assert!(!text.contains("<h4>"), "the error's markup reached the page unescaped");
    assert!(text.contains("&lt;h4&gt; refused the test: &quot;no fleet secret&quot; &amp; closed"));
    for id in [
        "tab-matrix",
        "tab-matrix-figures",
        "tab-matrix-rounds",
        "tab-matrix-hosts",
        "tab-matrix-cells",
        "tab-matrix-failed",
    ] {
        assert!(text.contains(&format!("<table id=\"{id}\">")), "no {id}");
    }
    assert_eq!(
        text.matches("<details class=\"text\">").count(),
        19,
        "each measured cell's run, folded"
    );
    // The page loads clean; the incast's flows plot has data.
    check_in_browser(d, &mesh_page, &[]);
    check_in_browser(d, &incast_page, &["fig-matrix-flows"]);

    let mut all = Vec::new();
    for (name, page, m) in [
        ("mesh", &mesh_page, &mesh),
        ("incast", &incast_page, &incast),
        ("wide", &wide_page, &wide),
    ] {
        let seen = measure_with(
            d,
            page,
            &format!("{MEASURE}{HEAT}"),
            &["layout-measured", "heat-measured"],
        );
        all.extend(faults(name, &seen[0], true));
        all.extend(heat_faults(name, m, &seen[1]));
        let first = seen[0]["figures"][0]["id"].as_str().unwrap_or("");
        if first != "fig-matrix-heatmap" {
            all.push(format!("{name}: the first figure is {first}"));
        }
        let flows: Vec<&str> = seen[1]["series"]["fig-matrix-flows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let want: Vec<String> = if m.pattern.concurrent() {
            m.cells.iter().map(|c| format!("{} → {}", c.from, c.to)).collect()
        } else {
            Vec::new()
        };
        if flows != want {
            all.push(format!("{name}: the flows plot has series {flows:?}, not {want:?}"));
        }
        if name == "mesh" {
            first_screen(d, page, "matrix");
        }
    }
    assert!(all.is_empty(), "{} faults:\n{}", all.len(), all.join("\n"));
}
