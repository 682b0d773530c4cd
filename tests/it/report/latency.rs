//! A run with latency probes as a page: the document the report crate's tests build by hand
//! (crates/report/tests/snapshots/latency_run.json: a 10 s tcp load, a udp probe series on a
//! connection of its own whose round trip rises from 20 to 220 ms under the load, and a TCP_INFO
//! series on the load's connection) made into a page, its SVG and its CSV by `linerate report`,
//! and opened in headless Chromium: the time-axis figure and the CDF each with their series and
//! data, no console message (a CSP violation would be one), no text over another or past its
//! figure. Each figure is photographed from its own SVG file; with `LINERATE_SCREENSHOTS=DIR`
//! the photographs are kept there (docs/img/latency-time-axis.png, docs/img/latency-cdf.png).

use super::layout::{MEASURE, faults, measure_with};
use super::{CHROMIUM, check_in_browser, chromium, data_paths, report};
use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The document, as the report crate's snapshot test keeps it.
fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/snapshots/latency_run.json")
}

/// The `data-name` of every series group of the `<svg>` with id `id` in `dom`.
fn series_names(dom: &str, id: &str) -> Vec<String> {
    let Some(start) = dom.find(&format!("id=\"{id}\"")) else {
        return Vec::new();
    };
    let end = dom[start..].find("</svg>").map_or(dom.len(), |e| start + e);
    dom[start..end]
        .match_indices("<g class=\"series ")
        .filter_map(|(i, _)| {
            let tag = &dom[start + i..end];
            let tag = &tag[..tag.find('>')?];
            let at = tag.find("data-name=\"")? + "data-name=\"".len();
            Some(tag[at..at + tag[at..].find('"')?].replace("&#39;", "'"))
        })
        .collect()
}

/// The figure's own SVG file photographed at its size into `dir/NAME.png`, kept in
/// `LINERATE_SCREENSHOTS` when set.
fn photograph(dir: &Path, svg: &Path, name: &str) {
    let text = std::fs::read_to_string(svg).expect("read the figure's SVG");
    let height = text
        .split("height=\"")
        .nth(1)
        .and_then(|h| h.split('"').next())
        .and_then(|h| h.parse::<f64>().ok())
        .expect("the SVG's height");
    let shot = dir.join(format!("{name}.png"));
    let (_, log) = chromium(
        &dir.join(format!("profile-{name}")),
        &format!("file://{}", svg.display()),
        &[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size=720,{}", height.ceil()),
            "--hide-scrollbars",
        ],
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "screenshot of {size} bytes; chromium said: {log}");
    if let Ok(keep) = std::env::var("LINERATE_SCREENSHOTS") {
        std::fs::copy(&shot, Path::new(&keep).join(format!("{name}.png"))).expect("keep the screenshot");
    }
}

#[test]
fn latency_under_load_draws_throughput_and_round_trips_on_one_time_axis_and_a_cdf() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let d = dir.path();
    let doc = fixture();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&doc).expect("the fixture")).expect("JSON");
    let probes = v["latency"]["series"][0]["samples"].as_array().expect("samples").len();

    // The CSV of the time axis: every answered probe's round trip, the document's own numbers.
    let out_dir = d.join("figures");
    let dir_arg = out_dir.to_str().expect("utf-8");
    let out = linerate(
        &[
            "report",
            doc.to_str().expect("utf-8"),
            "--svg",
            dir_arg,
            "--csv",
            dir_arg,
        ],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = std::fs::read_to_string(out_dir.join("fig-latency-time.csv")).expect("the time axis' CSV");
    let udp: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with("udp round trip (own connection),"))
        .collect();
    assert_eq!(udp.len(), probes, "a row per answered probe");
    let first = &v["latency"]["series"][0]["samples"][0];
    let want = format!(
        "udp round trip (own connection),{},,{}",
        first["t_s"].as_f64().expect("t_s"),
        first["rtt_ms"].as_f64().expect("rtt_ms")
    );
    assert_eq!(udp[0], want);
    assert!(out_dir.join("fig-latency-cdf.csv").exists());

    if !can_run(&[CHROMIUM]) {
        return;
    }
    let page = report(d, &doc, "latency");
    let text = std::fs::read_to_string(&page).expect("read the page");
    for id in ["tab-latency", "tab-latency-grades"] {
        assert!(text.contains(&format!("<table id=\"{id}\">")), "no {id}");
    }
    let dom = check_in_browser(d, &page, &["fig-latency-time", "fig-latency-cdf"]);
    assert_eq!(
        series_names(&dom, "fig-latency-time"),
        [
            "throughput",
            "udp round trip (own connection)",
            "tcp_info rtt (load connections)"
        ]
    );
    assert_eq!(
        series_names(&dom, "fig-latency-cdf"),
        [
            "udp round trip (own connection), idle",
            "udp round trip (own connection), loaded",
            "udp round trip (own connection), recovery",
            "tcp_info rtt (load connections), loaded"
        ]
    );
    // Every series has drawn data: 4 curves, and on the time axis the load and 2 probe series.
    assert_eq!(data_paths(&dom, "fig-latency-cdf").len(), 4);
    assert_eq!(data_paths(&dom, "fig-latency-time").len(), 3);
    let seen = measure_with(d, &page, MEASURE, &["layout-measured"]).remove(0);
    let drawn: Vec<&str> = seen["figures"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["id"].as_str())
        .collect();
    for id in ["fig-latency-time", "fig-latency-cdf"] {
        assert!(drawn.contains(&id), "{id} not laid out: {drawn:?}");
    }
    let all = faults("latency", &seen, true);
    assert!(all.is_empty(), "{} faults:\n{}", all.len(), all.join("\n"));
    photograph(d, &out_dir.join("fig-latency-time.svg"), "latency-time-axis");
    photograph(d, &out_dir.join("fig-latency-cdf.svg"), "latency-cdf");
}
