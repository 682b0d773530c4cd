//! `--brief` and the headline line: every test kind on loopback prints one
//! line with `--brief` (and interval lines only with `-i`), its fields parse and equal the stored
//! document's figures, and the full text ends with the same line.

use crate::util::{Agent, f, run_bounded, stderr};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Runs `linerate ARGS --db DB`, bounded.
fn run(db: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(crate::util::BIN);
    cmd.args(args).arg("--db").arg(db);
    run_bounded(&mut cmd, LIMIT)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The id in the `stored as #N` line of `text`.
fn stored_id(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("stored as #"))
        .unwrap_or_else(|| panic!("no id in {text:?}"))
        .trim()
        .to_string()
}

/// A headline line's parts: `KIND: OUTCOME`, then each field's value (None for n/a).
fn parse(line: &str) -> (String, Vec<Option<f64>>) {
    let mut fields = line.split("; ");
    let head = fields.next().expect("a head").to_string();
    let values = fields
        .map(|field| {
            let token = field
                .split_whitespace()
                .find(|t| *t == "n/a" || t.parse::<f64>().is_ok())
                .unwrap_or_else(|| panic!("no value in field {field:?} of {line:?}"));
            token.parse::<f64>().ok()
        })
        .collect();
    (head, values)
}

/// The document's figure at `pointer` (over `scale`), None where it is null.
fn figure(doc: &Value, pointer: &str, scale: f64) -> Option<f64> {
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the document"))
        .as_f64()
        .map(|v| v / scale)
}

/// Runs `args --brief` and checks the one line against the stored document's figures at
/// `pointers` (pointer, scale); then that `results show` of the same record ends with that line.
fn brief_matches_document(
    db: &Path,
    args: &[&str],
    kind: &str,
    pointers: &[(&str, f64)],
    extra: &dyn Fn(&Value) -> Vec<Option<f64>>,
) {
    let mut full = args.to_vec();
    full.push("--brief");
    let out = run(db, &full);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{args:?}: one line without -i: {text:?}");
    let line = text.trim_end();
    let id = stored_id(&stderr(&out));
    let shown = run(db, &["results", "show", &id, "--json"]);
    let doc: Value = serde_json::from_slice(&shown.stdout).expect("the stored document");
    let (head, values) = parse(line);
    assert_eq!(head, format!("{kind}: complete"), "{line}");
    let mut want: Vec<Option<f64>> = pointers.iter().map(|(p, s)| figure(&doc, p, *s)).collect();
    want.extend(extra(&doc));
    assert_eq!(values.len(), want.len(), "{line}");
    for (got, want) in values.iter().zip(&want) {
        match (got, want) {
            (Some(g), Some(w)) => assert!(
                (g - w).abs() <= 0.05 + 0.005 * w.abs(),
                "{kind}: {g} printed, {w} in the document: {line}"
            ),
            (g, w) => assert_eq!(g, w, "{kind}: unknown stays n/a: {line}"),
        }
    }
    // The full text of the same document ends with the same line.
    let full_text = stdout(&run(db, &["results", "show", &id]));
    assert_eq!(full_text.lines().last(), Some(line), "{full_text}");
}

#[test]
fn issue_23_brief_prints_the_headline_line_of_every_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&["--http-port", "0"]);
    let a = agent.addr.as_str();
    let none = |_: &Value| Vec::new();
    // Every tcp line's cost figures: CPU on each side, the sender's retransmits.
    let tcp_cost = [
        ("/summary/sent/cpu/host_percent", 1.0),
        ("/summary/received/cpu/host_percent", 1.0),
        ("/summary/sent/tcp/retransmits", 1.0),
    ];
    brief_matches_document(
        &db,
        &["tcp", a, "-t", "1"],
        "tcp",
        &[&[("/summary/received/bits_per_second", 1e6)][..], &tcp_cost].concat(),
        &none,
    );
    // A --bidir run's line gives each direction's throughput, not their sum.
    brief_matches_document(
        &db,
        &["tcp", a, "-t", "1", "--bidir"],
        "tcp",
        &[
            &[
                ("/summary/directions/forward/received/bits_per_second", 1e6),
                ("/summary/directions/reverse/received/bits_per_second", 1e6),
            ][..],
            &tcp_cost,
        ]
        .concat(),
        &none,
    );
    brief_matches_document(
        &db,
        &["udp", a, "-t", "1", "--rate", "50M"],
        "udp",
        &[
            ("/summary/received/bits_per_second", 1e6),
            ("/summary/loss_percent", 1.0),
            ("/summary/jitter_us", 1.0),
        ],
        &none,
    );
    brief_matches_document(
        &db,
        &["rr", a, "-t", "1"],
        "rr",
        &[
            ("/summary/transactions_per_second", 1.0),
            ("/summary/latency_us/p50", 1.0),
            ("/summary/latency_us/p99", 1.0),
        ],
        &none,
    );
    let url = agent.http_url("/bytes/1000");
    brief_matches_document(&db, &["http", &url, "--users", "2", "-d", "1"], "http", &[], &|doc| {
        let ok = doc
            .pointer("/summary/status/2xx")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        vec![
            Some(ok / f(doc, "/summary/steady_seconds")),
            figure(doc, "/summary/response_time_us/p99", 1.0),
            figure(doc, "/summary/errors/total", 1.0),
        ]
    });
}

#[test]
fn issue_23_the_full_text_ends_with_the_headline_after_the_id_and_brief_keeps_interval_lines_with_i() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    let out = run(&db, &["tcp", &agent.addr, "-t", "1", "-i", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 20, "the whole report: {text}");
    let id = stored_id(&text);
    assert_eq!(lines[lines.len() - 2], format!("stored as #{id}"), "{text}");
    let last = lines[lines.len() - 1];
    assert!(last.starts_with("tcp: complete; receiver throughput "), "{last}");
    let (_, values) = parse(last);
    assert!(values[0].is_some_and(|v| v > 0.0), "{last}");

    // With -i, --brief keeps the interval lines, then the headline line.
    let out = run(&db, &["tcp", &agent.addr, "-t", "1.5", "-i", "0.5", "--brief"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "interval lines and the headline: {text}");
    assert!(lines[lines.len() - 1].starts_with("tcp: complete; "), "{text}");
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.contains("Mbit/s") && !l.starts_with("tcp:")),
        "interval lines only before it: {text}"
    );
    assert!(stderr(&out).contains("stored as #"), "the id on stderr");

    // --brief with --json is a usage error.
    let out = run(&db, &["tcp", &agent.addr, "--brief", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn issue_23_repeat_and_sweep_end_with_their_aggregate_headline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    let mut args = vec!["tcp", agent.addr.as_str()];
    args.extend(["--repeat", "2", "--pause", "0", "-t", "0.5", "--brief"]);
    let out = run(&db, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text:?}");
    let id = stored_id(&stderr(&out));
    let doc: Value = serde_json::from_slice(&run(&db, &["results", "show", &id, "--json"]).stdout).expect("doc");
    let (head, values) = parse(text.trim_end());
    assert_eq!(head, "tcp repeat: complete", "{text}");
    // "2 of 2 runs aggregated", then the mean receiver throughput.
    assert_eq!(values[0], Some(2.0), "{text}");
    let mean = f(&doc, "/aggregate/0/mean");
    let got = values[1].expect("a mean");
    assert!(
        (got - mean).abs() <= 0.05 + 0.005 * mean,
        "{got} against {mean}: {text}"
    );

    let out = run(&db, &["rr", &agent.addr, "--sizes", "1,100", "-t", "0.3", "--brief"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "no rows with --brief: {text:?}");
    assert!(
        text.starts_with("rr sweep: complete; points 2 (0 failed); best transactions "),
        "{text}"
    );
}
