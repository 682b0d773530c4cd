//! Matrix documents as the results side reads them, through the binary: stored, a
//! matrix is listed with its figures, shown as its table, exported whole and shown in its
//! campaign's `plan show`; two matrices compare cell by cell, and a matrix shares no point with
//! a plain run. The matrices are built in code (`stub_matrix`): no fleet is needed to read one.

use crate::util::*;
use linerate_core::result::{Matrix, Pattern};
use linerate_core::sweep::stub_matrix;
use linerate_results::store::{Id, Record, Store};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// A mesh of h1..h4 whose every cell measured `base` Mbit/s times `scale`, h2 -> h3 `slow`
/// times it, and h1 -> h4 failed with `error`.
fn mesh(scale: f64, slow: f64, error: &str) -> Matrix {
    let hosts = ["h1", "h2", "h3", "h4"];
    let mut cells = Vec::new();
    for from in hosts {
        for to in hosts {
            let value = match (from, to) {
                _ if from == to => continue,
                ("h1", "h4") => Err(error),
                ("h2", "h3") => Ok(94.0 * scale * slow),
                _ => Ok(94.0 * scale),
            };
            cells.push((from, to, value));
        }
    }
    stub_matrix(Pattern::Mesh, &hosts, &cells)
}

/// Stores `m` in `db` with `labels` (and a campaign), as a test command would.
fn put(db: &Path, m: &Matrix, labels: &[(&str, &str)], campaign: Option<&str>) -> Id {
    let mut store = Store::open(db).expect("open the store");
    store
        .put(&Record {
            document: linerate_report::matrix::json(m),
            outcome: m.outcome().into(),
            targets: m.hosts.iter().map(|h| h.address.clone()).collect(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            command: "linerate tcp --pattern mesh h1 h2 h3 h4".into(),
            campaign: campaign.map(str::to_string),
        })
        .expect("stored")
}

fn run(db: &Path, args: &[&str]) -> Output {
    let mut cmd = linerate_command();
    cmd.args(args).arg("--db").arg(db);
    run_bounded(&mut cmd, LIMIT)
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn issue_24_a_stored_matrix_is_listed_shown_as_its_table_and_exported_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    // A hostile agent's error text: shown escaped, never as a terminal sequence.
    let m = mesh(1.0, 0.5, "h4 refused: \u{1b}[2Jforged");
    let id = put(&db, &m, &[], None).0.to_string();

    let shown = run(&db, &["results", "show", &id]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown = text(&shown);
    assert!(!shown.contains('\u{1b}'), "{shown}");
    assert!(
        shown.contains("failed: h1 -> h4: h4 refused: \\u{1b}[2Jforged"),
        "{shown}"
    );
    let mut safe = m.clone();
    safe.cells.iter_mut().for_each(|c| {
        c.error = c.error.as_ref().map(|e| e.replace('\u{1b}', "\\u{1b}"));
    });
    assert_eq!(
        shown,
        linerate_report::matrix::text(&safe),
        "the table as the run printed it"
    );
    let h2: Vec<&str> = shown
        .lines()
        .find(|l| l.starts_with("h2 "))
        .expect("h2's row")
        .split_whitespace()
        .collect();
    assert_eq!(h2, ["h2", "94.00", "-", "47.00", "94.00"]);
    assert!(
        shown
            .lines()
            .last()
            .expect("a line")
            .starts_with("tcp matrix: partial; cells 12 (1 failed); sum ")
    );

    let list = run(&db, &["results", "--json"]);
    let row = &json_of(&list)["results"][0];
    assert_eq!(row["kind"], "tcp matrix");
    assert_eq!(row["outcome"], "partial");
    let figures: Vec<(&str, Option<f64>)> = row["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .map(|f| (f["name"].as_str().unwrap_or(""), f["value"].as_f64()))
        .collect();
    assert_eq!(figures[0], ("median cell", Some(94.0)), "{row}");
    assert_eq!(
        figures[2..],
        [("cells failed", Some(1.0)), ("cells measured", Some(11.0))]
    );
    let listed = text(&run(&db, &["results"]));
    assert!(
        listed.contains("tcp matrix") && listed.contains("94.00 Mbit/s median cell"),
        "{listed}"
    );
    // `--kind` takes a matrix's kind, and selects by it.
    let only = json_of(&run(&db, &["results", "--json", "--kind", "tcp matrix"]));
    assert_eq!(only["results"].as_array().map(Vec::len), Some(1), "{only}");
    let none = json_of(&run(&db, &["results", "--json", "--kind", "udp matrix"]));
    assert_eq!(none["results"].as_array().map(Vec::len), Some(0), "{none}");

    let exported = json_of(&run(&db, &["results", "export", &id]));
    let document: Matrix = serde_json::from_value(exported["results"][0]["document"].clone()).expect("a matrix");
    assert_eq!(document, m, "exported whole, every cell's run in it");
}

#[test]
fn issue_24_plan_show_prints_a_pattern_point_s_matrix_as_its_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let labels = [
        ("campaign.test", "fleet-mesh"),
        ("campaign.point", "0"),
        ("campaign.plan", "fleet"),
    ];
    let id = put(&db, &mesh(1.0, 1.0, "refused"), &labels, Some("fleet-1"));
    let out = run(&db, &["plan", "show", "fleet-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = text(&out);
    assert!(
        shown.contains(&format!("fleet-mesh ({id})\ntcp matrix: mesh, 4 hosts")),
        "{shown}"
    );
    assert!(shown.contains("from \\ to     h1     h2     h3      h4\n"), "{shown}");
    assert!(shown.contains("\nh1             -  94.00  94.00  failed\n"), "{shown}");
    assert!(shown.contains("tcp matrix: partial; cells 12 (1 failed)"), "{shown}");

    // A plain test planned (and stored) after the pattern prints after its matrix,
    // in the plan's order; the matrices used to follow every table.
    let run_doc = linerate_core::sweep::stub_result(
        linerate_core::spec::TestSpec::Tcp(linerate_core::spec::TcpSpec::new()),
        Default::default(),
    );
    let mut store = Store::open(&db).expect("open the store");
    store
        .put(&Record {
            document: serde_json::to_string(&run_doc).expect("json"),
            outcome: run_doc.outcome().into(),
            targets: vec!["h1:5301".into()],
            labels: [
                ("campaign.test", "after"),
                ("campaign.point", "1"),
                ("campaign.plan", "fleet"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            command: "linerate tcp h1".into(),
            campaign: Some("fleet-1".into()),
        })
        .expect("stored");
    drop(store);
    let shown = text(&run(&db, &["plan", "show", "fleet-1"]));
    let (matrix, after) = (
        shown.find("fleet-mesh (").expect("the matrix"),
        shown
            .find("after (tcp)")
            .unwrap_or_else(|| panic!("the tcp table: {shown}")),
    );
    assert!(matrix < after, "plan order: the pattern's matrix first\n{shown}");
}

/// `linerate compare A B --json` and more; its status and the comparison.
fn compare(db: &Path, a: &str, b: &str, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec!["compare", a, b, "--json"];
    args.extend_from_slice(extra);
    let mut cmd = linerate_command();
    cmd.args(&args).arg("--db").arg(db);
    let out = run_bounded(&mut cmd, LIMIT);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v, stderr(&out))
}

/// The verdict on receiver throughput of the cell from `from` to `to`.
fn verdict<'a>(c: &'a Value, from: &str, to: &str) -> &'a str {
    let point = c["points"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| {
            let at = |name: &str| {
                p["coordinates"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|x| x["name"] == name))
                    .and_then(|x| x["value"].as_str())
            };
            at("from") == Some(from) && at("to") == Some(to)
        })
        .unwrap_or_else(|| panic!("no cell {from} -> {to} in {c}"));
    point["figures"]
        .as_array()
        .and_then(|f| f.iter().find(|x| x["figure"] == "received_mbit_per_second"))
        .and_then(|f| f["verdict"].as_str())
        .expect("a verdict")
}

#[test]
fn issue_24_two_matrices_compare_cell_by_cell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let write = |name: &str, m: &Matrix| {
        let path = dir.path().join(name);
        std::fs::write(&path, linerate_report::matrix::json(m)).expect("write");
        path.to_str().expect("a path").to_string()
    };
    // One matrix a side: each cell one run a side, so no verdict but "needs repeats", and
    // --fail-if-worse has nothing significant to fail on.
    let (a, b) = (
        write("a.json", &mesh(1.0, 1.0, "x")),
        write("b.json", &mesh(1.0, 0.8, "x")),
    );
    let (code, c, err) = compare(&db, &a, &b, &["--fail-if-worse", "5"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        c["points"].as_array().map(Vec::len),
        Some(11),
        "the cells both measured: {c}"
    );
    assert_eq!(verdict(&c, "h2", "h3"), "needs_repeats");
    assert_eq!(
        c["only_a"].as_array().map(Vec::len),
        Some(0),
        "h1 -> h4 failed on both: {c}"
    );
    let mut cmd = linerate_command();
    cmd.args(["compare", &a, &b]);
    let shown = text(&run_bounded(&mut cmd, LIMIT));
    assert!(
        shown.contains("\ntcp from=h2 to=h3  (runs: A 1, B 1)\n"),
        "each cell named: {shown}"
    );

    // Three matrices a side: h2 -> h3 lost 20 % on B, the rest moved by nothing.
    for k in 0..3 {
        let jitter = 1.0 + 0.01 * f64::from(k);
        put(&db, &mesh(jitter, 1.0, "x"), &[("side", "a")], None);
        put(&db, &mesh(jitter, 0.8, "x"), &[("side", "b")], None);
    }
    let (code, c, err) = compare(&db, "label:side=a", "label:side=b", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(verdict(&c, "h2", "h3"), "worse");
    assert_eq!(verdict(&c, "h3", "h2"), "no_significant_change");
    assert_eq!(verdict(&c, "h1", "h2"), "no_significant_change");
    let (code, _, err) = compare(&db, "label:side=a", "label:side=b", &["--fail-if-worse", "5"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("tcp from=h2 to=h3 receiver throughput is worse by 20.0 %"),
        "{err}"
    );
    let (code, _, err) = compare(&db, "label:side=a", "label:side=b", &["--fail-if-worse", "25"]);
    assert_eq!(code, Some(0), "worse by 20 %, not by more than 25 %: {err}");
}

#[test]
fn issue_24_a_matrix_and_a_plain_run_share_no_point() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let m = mesh(1.0, 1.0, "x");
    let run = m.cells[0].result.as_deref().expect("a measured cell").clone();
    let (a, b) = (dir.path().join("matrix.json"), dir.path().join("run.json"));
    std::fs::write(&a, linerate_report::matrix::json(&m)).expect("write");
    std::fs::write(&b, linerate_report::json::render(&run)).expect("write");
    let (code, _, err) = compare(&db, a.to_str().expect("path"), b.to_str().expect("path"), &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nothing compared"), "{err}");
}
