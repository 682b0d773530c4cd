//! What the functional and the timed tests of one kind both run: tcp on loopback and `--mix`,
//! http and HTTP/2 with their identities, rr, udp, `--repeat`, fleets, a side's interfaces.
#![allow(dead_code)]

use crate::util::*;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// The secret of the fleet tests' agents.
pub const FLEET_SECRET: &str = "fleet-secret-for-tests";

/// An agent on loopback that knows the fleet's secret.
pub fn fleet_agent(extra: &[&str]) -> Agent {
    Agent::start_with(
        &[],
        &["--bind", "127.0.0.1", "--port", "0"],
        extra,
        &[("LINERATE_SECRET", FLEET_SECRET)],
    )
}

/// `linerate ARGS` with the fleet's secret, bounded.
pub fn with_fleet_secret(args: &[&str], limit: Duration) -> std::process::Output {
    run_bounded(Command::new(BIN).args(args).env("LINERATE_SECRET", FLEET_SECRET), limit)
}

/// `linerate tcp --json --no-store --pattern incast --from FROM TO -t 1 -i 0.2` with the fleet's
/// secret: a 1 s incast of loopback agents, bounded at 90 s.
pub fn loopback_incast(from: &str, to: &str) -> std::process::Output {
    let args = [
        "tcp",
        "--json",
        "--no-store",
        "--pattern",
        "incast",
        "--from",
        from,
        to,
        "-t",
        "1",
        "-i",
        "0.2",
    ];
    with_fleet_secret(&args, Duration::from_secs(90))
}

/// A matrix document's cells.
pub fn cells(m: &Value) -> &Vec<Value> {
    m["cells"].as_array().expect("cells")
}

/// `linerate http --json ARGS`, checked as an http document.
pub fn http_json(args: &[&str]) -> Value {
    let mut full = vec!["http", "--json"];
    full.extend_from_slice(args);
    let out = linerate(&full, Duration::from_secs(120));
    let v = json_of(&out);
    check_document(&v);
    assert_eq!(v["test"], "http");
    v
}

/// An agent on loopback with its HTTP server on a free port.
pub fn http_agent() -> Agent {
    Agent::start(&["--http-port", "0"])
}

/// `linerate rr --json ARGS`, checked as an rr document.
pub fn rr_json(args: &[&str]) -> Value {
    let mut full = vec!["rr", "--json"];
    full.extend_from_slice(args);
    let v = json_of(&linerate(&full, Duration::from_secs(120)));
    check_document(&v);
    assert_eq!(v["test"], "rr");
    v
}

/// The latency figures are ordered and the histogram holds the transactions it summarises.
pub fn check_latency(v: &Value) {
    let l = &v["summary"]["latency_us"];
    let at = |k: &str| l[k].as_f64().unwrap_or_else(|| panic!("latency_us.{k} in {l}"));
    assert!(at("min") > 0.0);
    for (a, b) in [
        ("min", "p50"),
        ("p50", "p90"),
        ("p90", "p99"),
        ("p99", "p999"),
        ("p999", "max"),
    ] {
        assert!(at(a) <= at(b), "{a} {} > {b} {}", at(a), at(b));
    }
    assert!(at("min") <= at("mean") && at("mean") <= at("max"));
    let bins = v["summary"]["histogram"].as_array().expect("histogram bins");
    assert!(!bins.is_empty() && bins.len() <= 102, "{} bins", bins.len());
    let binned: u64 = bins.iter().map(|b| b["count"].as_u64().expect("count")).sum();
    let n = u(v, "/summary/transactions");
    // The bins span the 0.1th to the 99.9th percentile.
    assert!(binned <= n && binned * 1000 >= n * 990, "{binned} binned of {n}");
    assert!(!v["summary"]["peaks"].as_array().expect("peaks").is_empty());
}

/// `linerate udp --json ARGS`, checked as a udp document.
pub fn udp_json(args: &[&str]) -> Value {
    let mut full = vec!["udp", "--json"];
    full.extend_from_slice(args);
    let v = json_of(&linerate(&full, Duration::from_secs(120)));
    check_document(&v);
    assert_eq!(v["test"], "udp");
    v
}

/// A repeated test's document: its kind says repeat, and each run's document is whole.
pub fn check_repeated(v: &Value) {
    assert_eq!(v["schema"], 4);
    assert!(
        v["test"].as_str().is_some_and(|t| t.ends_with(" repeat")),
        "{}",
        v["test"]
    );
    for run in v["runs"].as_array().expect("runs") {
        check_document(run);
    }
}

/// The aggregate entry of `figure`.
pub fn figure<'a>(v: &'a Value, figure: &str) -> &'a Value {
    v["aggregate"]
        .as_array()
        .expect("aggregate")
        .iter()
        .find(|f| f["figure"] == figure)
        .unwrap_or_else(|| panic!("no {figure} in {}", v["aggregate"]))
}

/// Bytes counted by `side` ("sent"/"received") in `direction` ("forward"/"reverse"), summed over
/// streams.
pub fn stream_bytes(v: &Value, direction: &str, side: &str) -> u64 {
    v["summary"]["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .filter(|s| s["direction"] == direction)
        .map(|s| s[side]["bytes"].as_u64().expect("bytes"))
        .sum()
}

/// `linerate tcp --json` against an agent of its own on loopback: `-P STREAMS -l 64K -i 0.25`,
/// the direction flag and the limit `mode`; a whole tcp document that records the agent's host.
pub fn tcp_on_loopback(direction: &[&str], streams: u32, mode: &[&str]) -> Value {
    let agent = Agent::start(&[]);
    let p = streams.to_string();
    let mut args = vec![agent.addr.as_str(), "-P", &p, "-l", "64K", "-i", "0.25"];
    args.extend_from_slice(direction);
    args.extend_from_slice(mode);
    let v = tcp_json(&args, Duration::from_secs(60));
    check_document(&v);
    assert_eq!(v["test"], "tcp");
    assert_eq!(v["partial"], false, "notes: {}", v["notes"]);
    assert!(
        v["hosts"][agent.addr.as_str()]["kernel"].is_string(),
        "the agent's host is recorded"
    );
    v
}

/// The directions a tcp direction flag (none, `--reverse`, `--bidir`) measures.
pub fn directions_of(flag: &[&str]) -> Vec<&'static str> {
    match flag {
        [] => vec!["forward"],
        ["--reverse"] => vec!["reverse"],
        _ => vec!["forward", "reverse"],
    }
}

/// The transfer length of the `--mix` tests (`-l 16K`), bytes.
pub const MIX_LENGTH: u64 = 16 * 1024;

/// `linerate tcp --json` of `-l 16K -i 0` and `extra` against an agent of its own on loopback; a
/// whole document that is not partial.
pub fn mixed(extra: &[&str]) -> Value {
    let agent = Agent::start(&[]);
    let mut args = vec![agent.addr.as_str(), "-l", "16K", "-i", "0"];
    args.extend_from_slice(extra);
    let v = tcp_json(&args, Duration::from_secs(90));
    check_document(&v);
    assert_eq!(v["partial"], false, "notes: {}", v["notes"]);
    v
}

/// Every stream's bytes as its sender and its receiver counted them: the two ends agree exactly,
/// and a transfer moves -l bytes, so bytes are whole transfers.
pub fn assert_exact_per_stream(v: &Value) {
    let streams = v["summary"]["streams"].as_array().expect("streams");
    for s in streams {
        let (sent, received) = (u(s, "/sent/bytes"), u(s, "/received/bytes"));
        assert_eq!(
            sent, received,
            "stream {}: the agent's count against the client's",
            s["stream"]
        );
        assert_eq!(received % MIX_LENGTH, 0, "stream {}: whole transfers only", s["stream"]);
    }
}

/// Efficiency is throughput (Mbit/s) per CPU %, for each end; with `known`, both ends' CPU
/// must have been measured (a run of a few ticks may leave it unknown: null, and so the
/// efficiency).
pub fn assert_efficiency(m: &Value, known: bool) {
    for end in ["client", "agent"] {
        if !known && m[format!("{end}_cpu_percent")].is_null() {
            assert!(m[format!("{end}_mbit_per_second_per_cpu_percent")].is_null());
            continue;
        }
        let cpu = f(m, &format!("/{end}_cpu_percent"));
        let eff = f(m, &format!("/{end}_mbit_per_second_per_cpu_percent"));
        let want = f(m, "/bits_per_second") / 1e6 / cpu;
        assert!(
            (eff - want).abs() <= 1e-9 * want.max(1.0),
            "{end}: {eff} against {want}"
        );
    }
}

/// The connection identity holds and every failed connection is a failed handshake.
pub fn check_identity(v: &Value) {
    let c = |k: &str| u(v, &format!("/summary/connections/{k}"));
    assert_eq!(
        c("attempted"),
        c("successful") + c("unsuccessful") + c("in_flight_at_end"),
        "{}",
        v["summary"]["connections"]
    );
}

/// `linerate http --json --no-agent --ramp 0 -d 2s --http2 ARGS` (a later `-d` wins), bounded.
pub fn http2(args: &[&str]) -> std::process::Output {
    let mut full = vec!["http", "--json", "--no-agent", "--ramp", "0", "-d", "2s", "--http2"];
    full.extend_from_slice(args);
    linerate(&full, Duration::from_secs(60))
}

/// The identities of connections and of requests hold.
pub fn check_identities(v: &Value) {
    check_identity(v);
    // Every request begun in the window ended as a response or an error, or was in flight at
    // the end (those that ended past the window's end are neither: at most the in-flight).
    let started = u(v, "/summary/requests_started");
    let ended = u(v, "/summary/responses") + u(v, "/summary/errors/total") - u(v, "/summary/errors/bad_status");
    assert!(
        ended <= started && started <= ended + u(v, "/summary/in_flight_at_end") + 2 * 10 * 4,
        "started {started}, ended {ended}: {}",
        v["summary"]
    );
}

/// The interface of that name among a side's interfaces.
pub fn interface<'a>(side: &'a Value, name: &str) -> &'a Value {
    side["interfaces"]
        .as_array()
        .and_then(|v| v.iter().find(|i| i["name"] == name))
        .unwrap_or_else(|| panic!("no interface {name} in {:#}", side["interfaces"]))
}
