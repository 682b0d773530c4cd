//! Every number in every kind's result document names its unit, and every
//! document reads back into its type unchanged (a stored result renders from it alone): real
//! short runs on loopback (tcp, udp, rr, http against `serve --http-port 0`, a sweep) whose JSON
//! is walked key by key. Unknown figures are null, never 0 or "", and -0.0 never appears.

use crate::unit_check::check_units;
use crate::util::*;
use linerate_core::result::TestResult;
use linerate_core::sweep::Sweep;
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn run(args: &[&str]) -> Value {
    json_of(&linerate(args, LIMIT))
}

/// A document read back into its type and written again is the same document (a stored result
/// is rendered from the store alone), floats to within rounding.
pub(crate) fn check_round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(kind: &str, v: &Value) {
    fn same(a: &Value, b: &Value, path: &str, diff: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                    let null = Value::Null;
                    same(
                        x.get(k).unwrap_or(&null),
                        y.get(k).unwrap_or(&null),
                        &format!("{path}/{k}"),
                        diff,
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    same(p, q, &format!("{path}/{i}"), diff);
                }
            }
            (Value::Number(x), Value::Number(y)) => {
                let (p, q) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
                if (p - q).abs() > 1e-9 * p.abs().max(q.abs()) {
                    diff.push(format!("{path}: {p} != {q}"));
                }
            }
            _ if a == b => {}
            _ => diff.push(format!("{path}: {a} != {b}")),
        }
    }
    let typed: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{kind}: does not read back: {e}"));
    let back = serde_json::to_value(&typed).expect("writes");
    let mut diff = Vec::new();
    same(v, &back, "", &mut diff);
    diff.truncate(10);
    for d in &mut diff {
        d.truncate(300);
    }
    assert!(
        diff.is_empty(),
        "{kind}: the document read back differs:\n{}",
        diff.join("\n")
    );
}

#[test]
fn issue_13_every_number_in_every_kind_names_its_unit() {
    let agent = Agent::start(&["--http-port", "0"]);
    let tcp = run(&["tcp", "--json", &agent.addr, "-t", "0.5"]);
    check_units("tcp", &tcp);
    check_round_trip::<TestResult>("tcp", &tcp);
    let udp = run(&["udp", "--json", &agent.addr, "-t", "0.5"]);
    check_units("udp", &udp);
    check_round_trip::<TestResult>("udp", &udp);
    for s in udp["summary"]["streams"].as_array().expect("streams") {
        for side in ["sender_socket", "receiver_socket"] {
            assert!(s[side]["mss_bytes"].is_null(), "UDP has no MSS: {s}");
            assert!(s[side]["congestion"].is_null(), "nor congestion control: {s}");
        }
    }
    // A paced run adds the rate asked and sent.
    let paced = run(&["udp", "--json", &agent.addr, "-t", "0.5", "--rate", "50M"]);
    assert!(paced["summary"]["send_rate"].is_object(), "{}", paced["summary"]);
    check_units("paced udp", &paced);
    check_round_trip::<TestResult>("paced udp", &paced);
    let rr = run(&["rr", "--json", &agent.addr, "-t", "0.5"]);
    check_units("rr", &rr);
    check_round_trip::<TestResult>("rr", &rr);
    let socket = &rr["summary"]["streams"][0]["sender_socket"];
    assert!(
        socket["sndbuf_bytes"].as_u64().is_some_and(|b| b > 0),
        "read back: {socket}"
    );
    assert!(
        socket["congestion"].is_string(),
        "a TCP rr stream has its congestion control: {socket}"
    );
    let url = agent.http_url("/bytes/1000");
    let http = run(&[
        "http",
        "--json",
        &url,
        "--users",
        "2",
        "-d",
        "0.5s",
        "--agent",
        &agent.addr,
    ]);
    check_units("http", &http);
    check_round_trip::<TestResult>("http", &http);
    let sweep = run(&["http", "--json", &url, "--users", "1,2", "-d", "0.3s", "--no-agent"]);
    assert_eq!(sweep["schema"], 4);
    check_units("http sweep", &sweep);
    check_round_trip::<Sweep>("http sweep", &sweep);
}

#[test]
fn issue_13_tiny_run_gives_no_process_share_over_100() {
    let agent = Agent::start(&[]);
    let v = run(&["tcp", "--json", &agent.addr, "-n", "1", "-l", "1"]);
    for side in ["sent", "received"] {
        let c = &v["summary"][side]["cpu"]["process_percent_of_host"];
        assert!(c.is_null() || c.as_f64().is_some_and(|p| p <= 100.0), "{side}: {c}");
        let p = &v["summary"][side]["process"]["percent_of_host"];
        assert!(p.is_null() || p.as_f64().is_some_and(|p| p <= 100.0), "{side}: {p}");
    }
}

#[test]
fn issue_13_two_agents_on_one_host_count_its_counters_once() {
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let v = run(&["tcp", "--json", &a.addr, &b.addr, "-t", "0.5"]);
    let r = &v["summary"]["received"];
    assert_eq!(r["counted_by"].as_array().map(Vec::len), Some(2), "{r}");
    assert_eq!(r["hosts"], 1, "both agents run on this host: {r}");
    assert_eq!(v["summary"]["sent"]["hosts"], 1);
    let boot = |h: &str| v["hosts"][h]["boot_id"].clone();
    assert!(boot("client").is_string());
    assert_eq!(boot("client"), boot(&a.addr));
    let text = String::from_utf8_lossy(&linerate(&["tcp", &a.addr, &b.addr, "-t", "0.3"], LIMIT).stdout).into_owned();
    assert_eq!(text.matches("client and agent share one host").count(), 1, "{text}");
}

#[test]
fn issue_23_calc_goodput_gives_both_kinds_of_link_when_asked() {
    let limit = std::time::Duration::from_secs(10);
    let out = linerate(
        &["calc", "goodput", "--link", "1G", "--link-kind", "both", "--json"],
        limit,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    let tcp = |kind: &str| {
        v["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["transport"] == "tcp" && r["link_kind"] == kind)
            .map(|r| r["bits_per_second"].as_f64().expect("bits"))
            .expect("a TCP row per kind")
    };
    assert_eq!(format!("{:.1}", tcp("ethernet") / 1e6), "941.5");
    assert_eq!(format!("{:.1}", tcp("tbf") / 1e6), "956.4");
    let text = linerate(&["calc", "goodput", "--link", "1G", "--link-kind", "tbf"], limit);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("956.407 Mbit/s for TCP") && text.contains("per 1514 as tbf counts"),
        "{text}"
    );
    let bad = linerate(&["calc", "goodput", "--link", "1G", "--link-kind", "wire"], limit);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}
