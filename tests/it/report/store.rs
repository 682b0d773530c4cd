//! `linerate report` on what the results store holds: a campaign made by
//! `linerate plan run` (its figures against the varied option, a line per variant, error bars
//! from the repeats, each test's table as `plan show` prints it), a comparison `A..B` of two
//! repeated runs (its A/B bars with each side's interval, its verdict table),
//! a stored result by id; all made by real runs on loopback and opened in headless Chromium.

use super::{CHROMIUM, LIMIT, check_in_browser, csv_rows, with_every_run};
use crate::util::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The campaign's primary figure and its efficiency figure (docs/reports.md).
const PRIMARY: &str = "fig-campaign-writes-received-mbit-per-second";
const EFFICIENCY: &str = "fig-campaign-writes-efficiency";

/// Runs a tiny plan against `agent` (two lengths x two variants, two runs a point under
/// `--quick`) into the database `db`; returns the campaign's id.
pub(super) fn campaign(dir: &Path, agent: &str, db: &str) -> String {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        writes_plan("report", agent, "time = \"0.3s\"\nrepeat = 2\npause = \"0\""),
    )
    .expect("write the plan");
    let out = linerate(
        &["plan", "run", plan.to_str().expect("path"), "--quick", "--db", db],
        Duration::from_secs(180),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stderr(&out)
        .lines()
        .find_map(|l| l.strip_prefix("campaign ")?.split(':').next())
        .expect("the campaign's id")
        .to_string()
}

/// An agent on loopback and the path of a database `r.db` in a new temporary directory.
pub(super) fn setup() -> (Agent, tempfile::TempDir, String) {
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = dir.path().join("r.db").to_str().expect("path").to_string();
    (agent, dir, db)
}

/// `linerate report SOURCE -o DIR/FILE --db DB`, the page opened in headless Chromium with
/// `figures` drawn: the page's path, what report printed that it wrote, the DOM the browser
/// built and the page's text.
fn open_page(
    dir: &Path,
    db: &str,
    source: &str,
    file: &str,
    figures: &[&str],
) -> (PathBuf, Vec<PathBuf>, String, String) {
    let html = dir.join(file);
    let written = report(&[source, "-o", html.to_str().expect("path")], db);
    let dom = check_in_browser(dir, &html, figures);
    let page = std::fs::read_to_string(&html).expect("read the page");
    (html, written, dom, page)
}

/// `linerate report ARGS --db DB`: requires success and that it printed what it wrote.
pub(super) fn report(args: &[&str], db: &str) -> Vec<PathBuf> {
    let mut full = vec!["report"];
    full.extend_from_slice(args);
    full.extend(["--db", db]);
    let out = linerate(&full, LIMIT);
    assert!(out.status.success(), "report {args:?} failed: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect()
}

/// The text of the `<svg>` with id `id` in the page.
fn figure<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no {id} in the page"));
    let end = page[start..].find("</svg>").map_or(page.len(), |e| start + e);
    &page[start..end]
}

/// The rows of the table with id `id` in a DOM, each a list of its cells' text (head row first).
fn table_cells(dom: &str, id: &str) -> Vec<Vec<String>> {
    let start = dom
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let end = dom[start..].find("</table>").map_or(dom.len(), |e| start + e);
    let text = |html: &str| {
        let mut out = String::new();
        let mut tag = false;
        for ch in html.chars() {
            match ch {
                '<' => tag = true,
                '>' => tag = false,
                c if !tag => out.push(c),
                _ => {}
            }
        }
        out.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    };
    dom[start..end]
        .split("<tr>")
        .skip(1)
        .map(|row| {
            // Each `<th ...>` or `<td ...>` up to its closing tag (`<thead>`, `<tbody>` are not cells).
            row.match_indices("<t")
                .filter(|(i, _)| {
                    let b = row.as_bytes();
                    matches!(b.get(i + 2), Some(b'h' | b'd')) && matches!(b.get(i + 3), Some(b' ' | b'>'))
                })
                .map(|(i, _)| {
                    let cell = &row[i..];
                    text(&cell[..cell.find("</t").unwrap_or(cell.len())])
                })
                .collect()
        })
        .collect()
}

/// The stored results of `db` with the labels `labels`, as `linerate results --json` lists them.
fn stored(db: &str, labels: &[&str]) -> Vec<Value> {
    let mut args = vec!["results", "--json", "--db", db];
    for l in labels {
        args.extend(["--label", l]);
    }
    let v = json_of(&linerate(&args, LIMIT));
    v["results"].as_array().or(v.as_array()).cloned().unwrap_or_default()
}

fn document(db: &str, id: &Value) -> Value {
    json_of(&linerate(
        &["results", "show", &id.to_string(), "--json", "--db", db],
        LIMIT,
    ))
}

#[test]
fn a_campaign_report_opens_with_a_line_per_variant_and_error_bars() {
    if !can_run(&[CHROMIUM]) {
        return;
    }
    let (agent, dir, db) = setup();
    let db = db.as_str();
    let id = campaign(dir.path(), &agent.addr, db);
    let (html, written, dom, page) = open_page(dir.path(), db, &id, "campaign.html", &[PRIMARY, EFFICIENCY]);
    assert_eq!(written, std::slice::from_ref(&html));
    // The test's table as `plan show` prints it: lengths down, variants across, each cell the
    // stored mean ± half its 95 % interval and the record's id.
    let table = table_cells(&dom, "tab-campaign-writes");
    assert_eq!(table[0], ["length", "one", "two"], "{table:?}");
    for (r, length) in ["4K", "64K"].iter().enumerate() {
        let row = &table[r + 1];
        assert_eq!(row[0], *length, "{table:?}");
        for (c, variant) in ["one", "two"].iter().enumerate() {
            let rec = stored(
                db,
                &[
                    &format!("point.length={length}"),
                    &format!("campaign.variant={variant}"),
                ],
            );
            assert_eq!(rec.len(), 1, "{rec:?}");
            let agg = &document(db, &rec[0]["id"])["aggregate"][0];
            let half = (agg["ci95_high"].as_f64().expect("high") - agg["ci95_low"].as_f64().expect("low")) / 2.0;
            let cell = &row[c + 1];
            let shown = cell
                .split_once(" ± ")
                .and_then(|(_, rest)| rest.split(' ').next())
                .and_then(|h| h.replace(',', "").parse::<f64>().ok())
                .unwrap_or_else(|| panic!("no ± half-interval in {cell:?}"));
            assert!(
                (shown - half).abs() <= 0.0051 * half.abs().max(1.0),
                "{cell:?}: half-interval {half}"
            );
            assert!(cell.ends_with(&format!("#{}", rec[0]["id"])), "{cell:?}");
        }
    }
    assert!(dom.contains("Tables as text"), "the tables as text, folded");
    let primary = figure(&page, PRIMARY);
    for variant in ["one", "two"] {
        assert!(
            primary.contains(&format!("data-name=\"{variant}\"")),
            "a line for {variant}"
        );
    }
    assert!(
        primary.contains("class=\"errors\" d=\"M"),
        "error bars from the repeats' intervals"
    );
    assert!(primary.contains("(right axis)"), "CPU on the right axis");
    assert!(page.contains("id=\"tab-campaign\""));
}

#[test]
fn a_campaign_figures_csv_and_plan_show_hold_the_stored_means_and_intervals() {
    let (agent, dir, db) = setup();
    let db = db.as_str();
    let id = campaign(dir.path(), &agent.addr, db);
    let csv = dir.path().join("csv");
    report(&[&id, "--csv", csv.to_str().expect("path")], db);
    let (head, rows) = csv_rows(&csv.join(format!("{PRIMARY}.csv")));
    assert!(
        head.starts_with("series,length (bytes),receiver throughput (Mbit/s),host CPU busy (%)"),
        "{head}"
    );
    let mut checked = 0;
    for (variant, length, bytes) in [("one", "4K", 4096.0), ("two", "64K", 65536.0)] {
        let rows_stored = stored(
            db,
            &[
                &format!("point.length={length}"),
                &format!("campaign.variant={variant}"),
            ],
        );
        assert_eq!(rows_stored.len(), 1, "{rows_stored:?}");
        let doc = document(db, &rows_stored[0]["id"]);
        assert_eq!(doc["test"], "tcp repeat");
        let agg = &doc["aggregate"][0];
        assert_eq!(agg["figure"], "received_mbit_per_second");
        let row = rows
            .iter()
            .find(|r| r[0] == variant && r[1].parse::<f64>().ok() == Some(bytes))
            .unwrap_or_else(|| panic!("no row for {variant} at {bytes}: {rows:?}"));
        let num = |s: &str| s.parse::<f64>().unwrap_or_else(|_| panic!("not a number: {s:?}"));
        assert_eq!(num(&row[2]), agg["mean"].as_f64().expect("mean"), "the stored mean");
        assert_eq!(num(&row[4]), agg["ci95_low"].as_f64().expect("low"), "the interval");
        assert_eq!(num(&row[5]), agg["ci95_high"].as_f64().expect("high"), "the interval");
        checked += 1;
    }
    assert_eq!(checked, 2);
    // `plan show` reads the same documents: its cells carry the same intervals.
    let shown: Value = serde_json::from_slice(&linerate(&["plan", "show", &id, "--json", "--db", db], LIMIT).stdout)
        .expect("plan show --json");
    let table = &shown["tables"][0];
    assert_eq!(table["variants"], serde_json::json!(["one", "two"]), "{table}");
    for row in table["rows"].as_array().expect("rows") {
        for cell in row["cells"].as_array().expect("cells") {
            let agg = &document(db, &cell["id"])["aggregate"][0];
            let half = (agg["ci95_high"].as_f64().expect("high") - agg["ci95_low"].as_f64().expect("low")) / 2.0;
            assert_eq!(cell["ci95_half_width"].as_f64(), Some(half), "{cell}");
            assert_eq!(cell["value"].as_f64(), agg["mean"].as_f64(), "{cell}");
        }
    }
    let text = linerate(&["plan", "show", &id, "--db", db], LIMIT);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains(" ± "),
        "{}",
        stderr(&text)
    );
}

/// Two `tcp --repeat 3` runs stored in `db`; returns their ids.
pub(super) fn two_repeated_runs(agent: &str, db: &str) -> (String, String) {
    let mut ids = Vec::new();
    for label in ["side=a", "side=b"] {
        let out = linerate(
            &[
                "tcp", agent, "--repeat", "3", "-t", "0.3", "--pause", "0", "-i", "0", "--db", db, "--label", label,
            ],
            LIMIT,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let rows = stored(db, &[label]);
        assert_eq!(rows.len(), 1, "{rows:?}");
        ids.push(rows[0]["id"].to_string());
    }
    (ids[0].clone(), ids[1].clone())
}

#[test]
fn a_comparison_of_two_repeated_runs_opens_with_its_bars_and_verdicts() {
    if !can_run(&[CHROMIUM]) {
        return;
    }
    let (agent, dir, db) = setup();
    let db = db.as_str();
    let (a, b) = two_repeated_runs(&agent.addr, db);
    let bars = "fig-compare-received-mbit-per-second";
    let (_, _, dom, page) = open_page(dir.path(), db, &format!("{a}..{b}"), "ab.html", &[bars]);
    for table in ["id=\"tab-verdicts\"", "id=\"tab-config-diff\""] {
        assert!(page.contains(table), "{table}");
    }
    let fig = figure(&page, bars);
    assert!(fig.contains("class=\"mark label\""), "the change written on the bars");
    assert!(fig.contains(" %</text>"), "the change in %");
    // Each side's bar (three runs) carries its 95 % interval as an error bar, as the browser draws it.
    for side in ["s0", "s1"] {
        let group = figure(&dom, &format!("{bars}-{side}"));
        let group = &group[..group.find("</g>").expect("the series' end")];
        assert!(
            group.contains("class=\"errors\" d=\"M"),
            "side {side}: no error bar in {group}"
        );
    }
    // The CSV holds each side's mean and its Student t interval, t(0.975, 2) x s / sqrt(3).
    let c = json_of(&linerate(&["compare", &a, &b, "--json", "--db", db], LIMIT));
    let csv = dir.path().join("csv");
    report(&[&format!("{a}..{b}"), "--csv", csv.to_str().expect("path")], db);
    let (head, rows) = csv_rows(&csv.join(format!("{bars}.csv")));
    assert!(
        head.contains("(Mbit/s) low,") && head.contains("(Mbit/s) high,"),
        "{head}"
    );
    let figure_of = &c["points"][0]["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .find(|f| f["figure"] == "received_mbit_per_second")
        .expect("throughput compared")
        .clone();
    for (side, row) in ["a", "b"].iter().zip(&rows) {
        let xs: Vec<f64> = figure_of[side]["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect();
        assert_eq!(xs.len(), 3, "{side}: {xs:?}");
        let mean = xs.iter().sum::<f64>() / 3.0;
        let s = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        let half = 4.302_652_729_911_275 * s / 3f64.sqrt();
        let num = |i: usize| row[i].parse::<f64>().unwrap_or_else(|_| panic!("{side}: {row:?}"));
        let tol = 1e-6 * mean.max(1.0);
        assert!(
            (num(3) - mean).abs() <= tol,
            "{side}: the bar is the mean {mean}: {row:?}"
        );
        assert!(
            (num(4) - (mean - half)).abs() <= tol,
            "{side}: low {}: {row:?}",
            mean - half
        );
        assert!(
            (num(5) - (mean + half)).abs() <= tol,
            "{side}: high {}: {row:?}",
            mean + half
        );
    }
    // The same comparison through `label:` sides.
    let html2 = dir.path().join("ab2.html");
    report(&["label:side=a..label:side=b", "-o", html2.to_str().expect("path")], db);
    assert!(
        std::fs::read_to_string(&html2)
            .expect("read")
            .contains("id=\"tab-verdicts\"")
    );
}

#[test]
fn a_stored_repeated_run_opens_with_its_runs_and_its_last_runs_figures() {
    if !can_run(&[CHROMIUM]) {
        return;
    }
    let (agent, dir, db) = setup();
    let db = db.as_str();
    let out = linerate(
        &[
            "tcp",
            &agent.addr,
            "--repeat",
            "3",
            "-t",
            "1",
            "-i",
            "0.25",
            "--pause",
            "0",
            "--db",
            db,
            "--label",
            "nic=lo",
        ],
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let id = stored(db, &[])[0]["id"].to_string();
    let figures = with_every_run(&["fig-repeat-runs", "fig-timeline"]);
    let (_, _, _, page) = open_page(dir.path(), db, &id, "stored.html", &figures);
    assert!(page.contains("id=\"tab-repeat\""));
    // A stored source says how it was made: its command line and labels.
    assert!(page.contains("id=\"tab-stored\""), "the stored record's table");
    assert!(
        page.contains("label nic") && page.contains("--repeat 3"),
        "command and labels"
    );
    assert!(
        figure(&page, "fig-repeat-runs").contains("class=\"errors\" d=\"M"),
        "the mean's interval"
    );
}
