//! The agent's counters for Prometheus: `serve --metrics` counts a real test and a
//! refused one, `promtool check metrics` finds no problem in the exposition, a real Prometheus
//! scrapes it and gives the same bytes back through its query API, and `results export
//! --format openmetrics` passes promtool too.

use crate::util::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

/// `GET PATH` on `addr` with these extra header lines: the status line's code, the headers and
/// the body. Bounded by the socket's timeouts.
fn get(addr: &str, path: &str, headers: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.set_write_timeout(Some(Duration::from_secs(10))).expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the answer");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let code = head.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("a status");
    (code, head.to_string(), body.to_string())
}

/// The value of the sample `name{labels}` (labels exactly as the exposition writes them).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .map(|v| v.trim().parse().expect("a number"))
}

/// `promtool check metrics` on `text`: its status and what it said.
fn promtool(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed promtool");
    let out = wait_bounded(child, Duration::from_secs(20));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

fn run(db: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = linerate_command();
    cmd.args(args).arg("--db").arg(db);
    run_bounded(&mut cmd, LIMIT)
}

#[test]
fn issue_25_the_agent_counts_tests_and_bytes_prometheus_scrapes_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("results.db");
    let (_agent, addr, metrics) = agent_with_metrics();
    // Before any test: the endpoint answers, in OpenMetrics unless asked otherwise.
    let (code, head, body) = get(&metrics, "/metrics", "");
    assert_eq!(code, 200, "{head}");
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{head}"
    );
    assert!(
        body.ends_with("# EOF\n") && body.contains("linerate_tests_running 0\n"),
        "{body}"
    );
    assert_eq!(get(&metrics, "/other", "").0, 404);

    // A real test, and one refused (a profile this agent does not have).
    let out = run(
        &db,
        &[
            "tcp",
            &addr,
            "-t",
            "1",
            "--json",
            "--campaign",
            "c25",
            "--label",
            "nic=lo",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    let id = stderr(&out)
        .lines()
        .find_map(|l| l.strip_prefix("stored as #"))
        .map(|n| n.trim().to_string())
        .expect("with --json the id goes to stderr");
    let window_bytes = u(&v, "/summary/received/bytes");
    assert!(window_bytes > 0);
    let refused = run(&db, &["tcp", &addr, "-t", "1", "--profile", "nosuch"]);
    assert!(!refused.status.success(), "refused: {}", stderr(&refused));

    let (_, _, om) = get(
        &metrics,
        "/metrics",
        "Accept: application/openmetrics-text; version=1.0.0\r\n",
    );
    assert_eq!(
        sample(&om, r#"linerate_tests_accepted_total{kind="tcp"}"#),
        Some(1.0),
        "{om}"
    );
    assert_eq!(
        sample(&om, r#"linerate_tests_refused_total{reason="bad_spec"}"#),
        Some(1.0),
        "{om}"
    );
    assert_eq!(sample(&om, "linerate_tests_running"), Some(0.0), "{om}");
    assert_eq!(
        sample(&om, r#"linerate_test_duration_seconds_count{kind="tcp"}"#),
        Some(1.0),
        "{om}"
    );
    // The agent received (a forward test): at least the window's bytes, over the whole run.
    let received = sample(&om, r#"linerate_test_bytes_total{kind="tcp",direction="received"}"#).expect("bytes");
    assert!(received >= window_bytes as f64, "{received} < {window_bytes}: {om}");
    assert_eq!(
        sample(&om, r#"linerate_test_bytes_total{kind="tcp",direction="sent"}"#),
        Some(0.0),
        "{om}"
    );

    // promtool lints the Prometheus text format (its parser does not read OpenMetrics' counters).
    let (code, head, text) = get(&metrics, "/metrics", "Accept: text/plain; version=0.0.4\r\n");
    assert_eq!(code, 200);
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    // The stored run's headline, chosen by its campaign, as gauges with its labels.
    let exported = run(
        &db,
        &["results", "export", "--campaign", "c25", "--format", "openmetrics"],
    );
    assert!(exported.status.success(), "{}", stderr(&exported));
    let export = String::from_utf8_lossy(&exported.stdout).into_owned();
    let throughput = format!(
        "linerate_result_receiver_throughput_bytes_per_second{{id=\"{id}\",kind=\"tcp\",outcome=\"complete\",campaign=\"c25\",nic=\"lo\"}} "
    );
    assert!(export.contains(&throughput), "{throughput} not in {export}");
    let by_id = run(&db, &["results", "export", &id, "--format", "openmetrics"]);
    assert_eq!(String::from_utf8_lossy(&by_id.stdout), export, "the same run by its id");
    if can_run(&[Need::Program {
        name: "promtool",
        package: "prometheus",
    }]) {
        let (ok, said) = promtool(&text);
        assert!(
            ok && said.trim().is_empty(),
            "promtool on the agent's metrics: {said}\n{text}"
        );
        let (ok, said) = promtool(&export);
        assert!(ok && said.trim().is_empty(), "promtool on the export: {said}\n{export}");
    }

    if !can_run(&[Need::Program {
        name: "prometheus",
        package: "prometheus",
    }]) {
        return;
    }
    // A real Prometheus scrapes the agent every second; its query API gives the bytes back.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: linerate\n    static_configs:\n      - targets: ['{metrics}']\n"
        ),
    )
    .expect("write the config");
    let web = format!("127.0.0.1:{port}");
    let _prometheus = Reaped(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let query = "/api/v1/query?query=linerate_test_bytes_total%7Bkind%3D%22tcp%22%2Cdirection%3D%22received%22%7D";
    let until = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    let scraped = loop {
        if TcpStream::connect(&web).is_ok() {
            let (_, _, body) = get(&web, query, "");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if let Some(value) = v.pointer("/data/result/0/value/1").and_then(|x| x.as_str()) {
                break Some(value.parse::<f64>().expect("a number"));
            }
            last = body;
        }
        if Instant::now() >= until {
            break None;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let scraped = scraped.unwrap_or_else(|| panic!("prometheus had no sample within 30 s; last answer: {last}"));
    assert_eq!(scraped, received, "what prometheus stored is what the agent exposed");
}
