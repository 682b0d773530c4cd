//! `linerate rpm`: the responsiveness test against a linerate agent's responsiveness server on
//! loopback (its https port, and its cleartext port over h2c), with the draft's interval
//! shortened so that each run ends within seconds; a server with no configuration; an agent
//! killed mid-test; and a run inside a lab, from one host to another's agent.

use crate::util::*;
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(90);

/// Short runs: 300 ms intervals, MAD 2, at most 3 s a stage, 10 probe pairs a second.
const SHORT: [&str; 12] = [
    "-i",
    "300ms",
    "-t",
    "3s",
    "--mad",
    "2",
    "--mps",
    "10",
    "--idle-probes",
    "2",
    "--mnp",
    "4",
];

fn series<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["latency"]["series"]
        .as_array()
        .expect("series")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} series in {}", doc["latency"]))
}

/// The stage's RPM is the draft's formula over its trimmed means.
fn check_formula(stage: &Value, tls: bool) {
    let ms = |k: &str| stage[k].as_f64().unwrap_or_else(|| panic!("{k} in {stage}"));
    let foreign = if tls {
        60_000.0 / ((ms("tcp_handshake_ms") + ms("tls_handshake_ms") + ms("http_get_ms")) / 3.0)
    } else {
        assert!(stage["tls_handshake_ms"].is_null(), "{stage}");
        60_000.0 / ((ms("tcp_handshake_ms") + ms("http_get_ms")) / 2.0)
    };
    let own = 60_000.0 / ms("self_ms");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b;
    assert!(close(ms("foreign_rpm"), foreign), "{stage}");
    assert!(close(ms("self_rpm"), own), "{stage}");
    assert!(close(ms("rpm"), (foreign + own) / 2.0), "{stage}");
    assert!(["low", "medium", "high"].contains(&stage["confidence"].as_str().expect("confidence")));
}

#[test]
fn rpm_against_an_agent_reports_an_rpm_its_confidence_and_both_probe_kinds() {
    let agent = Agent::start(&["--https-port", "0"]);
    let https = agent.https_addr.clone().expect("https");
    let mut args = vec!["rpm", https.as_str(), "--insecure", "--json", "--no-store"];
    args.extend_from_slice(&SHORT);
    let began = Instant::now();
    let doc = json_of(&linerate(&args, LIMIT));
    // One stage of at most 3 s, the idle probes and the configuration before it.
    assert!(began.elapsed() < Duration::from_secs(30), "{:?}", began.elapsed());
    check_document(&doc);
    assert_eq!(doc["test"], "rpm");
    assert_eq!(doc["options"]["config_url"], format!("https://{https}/.well-known/nq"));
    assert_eq!(doc["partial"], false);
    assert!(u(&doc, "/summary/received/bytes") > 0 && u(&doc, "/summary/sent/bytes") > 0);
    let rpm = &doc["latency"]["rpm"];
    assert!(rpm["rpm"].as_f64().is_some_and(|x| x > 0.0), "{rpm}");
    assert_eq!(rpm["stages"].as_array().map(Vec::len), Some(1));
    let stage = &rpm["stages"][0];
    assert_eq!(stage["direction"], "both");
    assert_eq!(rpm["rpm"], stage["rpm"]);
    assert_eq!(rpm["confidence"], stage["confidence"]);
    check_formula(stage, true);
    // Foreign probes on their own connections (TCP, TLS, GET), self probes on the load.
    for (name, on) in [
        ("tcp handshake", "separate"),
        ("tls handshake per round trip", "separate"),
        ("http GET on a new connection", "separate"),
        ("http2 GET on a load connection", "load"),
    ] {
        let s = series(&doc, name);
        assert_eq!(s["on"], on, "{name}");
        assert_eq!(u(s, "/idle/answered"), 2, "{name}: the idle probes");
        assert!(u(s, "/loaded/answered") > 0, "{name}: {s}");
        assert!(u(s, "/sent") >= u(s, "/answered") + u(s, "/lost"), "{name}");
    }
    let text = linerate(
        &[&["rpm", https.as_str(), "--insecure", "--no-store"][..], &SHORT[..]].concat(),
        LIMIT,
    );
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("RESPONSIVENESS"), "{text}");
    let last = text.lines().last().expect("a headline");
    assert!(last.starts_with("rpm: complete; responsiveness "), "{last}");
}

#[test]
fn rpm_sequential_over_h2c_measures_download_then_upload_without_tls() {
    let agent = Agent::start(&["--http-port", "0"]);
    let url = format!("http://{}/.well-known/nq", agent.http_addr.clone().expect("http"));
    let mut args = vec!["rpm", url.as_str(), "--direction", "sequential", "--json", "--no-store"];
    args.extend_from_slice(&SHORT);
    let doc = json_of(&linerate(&args, LIMIT));
    let stages = doc["latency"]["rpm"]["stages"].as_array().expect("stages");
    let ways: Vec<&str> = stages.iter().map(|s| s["direction"].as_str().expect("way")).collect();
    assert_eq!(ways, ["down", "up"]);
    assert!(stages[0]["goodput_up_mbps"].is_null() && stages[0]["goodput_down_mbps"].as_f64() > Some(0.0));
    assert!(stages[1]["goodput_down_mbps"].is_null() && stages[1]["goodput_up_mbps"].as_f64() > Some(0.0));
    for s in stages {
        check_formula(s, false);
    }
    let mean = (stages[0]["rpm"].as_f64().expect("down") + stages[1]["rpm"].as_f64().expect("up")) / 2.0;
    assert!((doc["latency"]["rpm"]["rpm"].as_f64().expect("rpm") - mean).abs() <= 1e-6 * mean);
    // Cleartext: no TLS series.
    let names: Vec<&str> = doc["latency"]["series"]
        .as_array()
        .expect("series")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("tls")), "{names:?}");
}

#[test]
fn rpm_against_a_server_with_no_configuration_is_one_line_and_exit_2() {
    let agent = Agent::start(&["--https-port", "0"]);
    let https = agent.https_addr.clone().expect("https");
    // The https port, but a path that is no configuration (404).
    let url = format!("https://{https}/nothing");
    for (args, needle) in [
        (
            vec!["rpm", url.as_str(), "--insecure"],
            "no responsiveness configuration",
        ),
        // The agent's control port speaks no TLS.
        (
            vec!["rpm", agent.addr.as_str(), "--insecure"],
            "no responsiveness configuration",
        ),
        (vec!["rpm", "ftp://x/", "--insecure"], "neither a configuration URL"),
        (vec!["rpm", https.as_str(), "--insecure", "--mad", "0"], "--mad"),
    ] {
        fails_with(&args, needle, LIMIT);
        assert_eq!(linerate(&args, LIMIT).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn rpm_whose_agent_is_killed_mid_test_reports_what_it_measured_exit_3() {
    let mut agent = Agent::start(&["--https-port", "0"]);
    let https = agent.https_addr.clone().expect("https");
    let mut cmd = linerate_command();
    cmd.args([
        "rpm",
        &https,
        "--insecure",
        "--json",
        "--no-store",
        "-i",
        "300ms",
        "-t",
        "30s",
    ])
    .args(["--mps", "10", "--idle-probes", "1", "--sdt", "0"])
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = Reaped(cmd.spawn().expect("linerate rpm"));
    let mut stdout = child.0.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut text);
        text
    });
    std::thread::sleep(Duration::from_millis(2500));
    let _ = agent.child.kill();
    let _ = agent.child.wait();
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "rpm did not end after its server did"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::process::Output {
        status,
        stdout: reader.join().expect("read"),
        stderr: Vec::new(),
    };
    let doc = json_with_status(&out, 3);
    assert_eq!(doc["partial"], true);
    assert!(u(&doc, "/summary/received/bytes") > 0, "{}", doc["summary"]);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("load-generating connection failed"), "{notes}");
    assert!(doc["latency"]["rpm"]["stages"][0]["intervals"].as_u64() > Some(0));
}

#[test]
fn rpm_runs_in_a_lab_from_one_host_to_anothers_agent() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    let mut cmd = vec![
        "linerate",
        "rpm",
        "http://h2:8080/.well-known/nq",
        "--json",
        "--no-store",
    ];
    cmd.extend_from_slice(&SHORT);
    let doc = json_of(&lab.exec("h1", &cmd, LIMIT));
    assert_eq!(doc["test"], "rpm");
    assert!(doc["latency"]["rpm"]["rpm"].as_f64().is_some_and(|x| x > 0.0));
    assert!(doc["lab"].is_object(), "the lab is recorded: {}", doc["lab"]);
}
