//! `linerate http --probe http`: latency probes on a connection of their own through idle, load
//! and recovery, and with `--http2` self probes on the load's own connections, the two series
//! side by side on the load's time axis; HTTP/1.1 has the first only. Against the agent's HTTP
//! server on loopback; the counts asserted follow from the probe rate and the phases' lengths,
//! not from the machine's speed.

use crate::kinds::*;
use crate::util::*;
use serde_json::Value;
use std::time::Duration;

/// Probes sent in a phase (answered, lost; in flight are neither).
fn ended(phase: &Value) -> u64 {
    phase["answered"].as_u64().expect("answered") + phase["lost"].as_u64().expect("lost")
}

/// A series' counts hold: sent = answered + lost + in flight, the phases add up to the whole,
/// each sample has a round trip.
fn check_series(s: &Value) {
    let (sent, answered, lost) = (u(s, "/sent"), u(s, "/answered"), u(s, "/lost"));
    assert!(answered + lost <= sent && sent <= answered + lost + 2, "{s}");
    let phases: u64 = ["idle", "loaded", "recovery"]
        .iter()
        .filter(|p| !s[**p].is_null())
        .map(|p| ended(&s[*p]))
        .sum();
    assert_eq!(phases, answered + lost, "{s}");
    let samples = s["samples"].as_array().expect("samples");
    assert_eq!(samples.len() as u64, answered);
    assert!(samples.iter().all(|x| x["rtt_ms"].as_f64().is_some_and(|r| r > 0.0)));
}

#[test]
fn issue_41_http2_probes_on_their_own_connection_and_on_the_load_s_side_by_side() {
    let agent = Agent::start(&["--http-port", "0", "--https-port", "0"]);
    let https = agent.https_addr.clone().expect("https");
    for url in [agent.http_url("/bytes/100000"), format!("https://{https}/bytes/100000")] {
        let mut args = vec![
            url.as_str(),
            "--users",
            "2",
            "--streams",
            "4",
            "--threads",
            "1",
            "--probe",
            "http",
            "--probe-rate",
            "20",
            "--probe-idle",
            "1s",
            "--probe-recovery",
            "1s",
        ];
        if url.starts_with("https") {
            args.push("--insecure");
        }
        let v = json_of(&http2(&args));
        check_identities(&v);
        // The probes are none of the load's responses: every body counted is the URL's.
        let responses = u(&v, "/summary/responses");
        assert!(responses > 0, "{url}: {}", v["summary"]);
        assert_eq!(u(&v, "/summary/body_bytes"), responses * 100_000, "{url}");
        let l = &v["latency"];
        let end = l["load_end_s"].as_f64().expect("load_end_s");
        assert!((1.9..2.2).contains(&end), "{url}: load ends at {end} s");
        let series = l["series"].as_array().expect("series");
        assert_eq!(series.len(), 2, "{url}: {l}");
        let (own, load) = (&series[0], &series[1]);
        assert_eq!(
            (own["on"].as_str(), load["on"].as_str()),
            (Some("separate"), Some("load"))
        );
        assert_eq!(own["name"], "http2 on a connection of its own");
        assert_eq!(load["name"], "http2 on a load connection");
        check_series(own);
        check_series(load);
        // 20 a second: at least 1 s before the load (more while it starts), 2 s of load, at
        // least 1 s after it.
        let (idle, loaded, recovery) = (ended(&own["idle"]), ended(&own["loaded"]), ended(&own["recovery"]));
        assert!(idle >= 19, "{url}: {idle} idle probes: {own}");
        assert!((36..=44).contains(&loaded), "{url}: {loaded} loaded probes");
        assert!(recovery >= 19, "{url}: {recovery} recovery probes");
        assert!(u(&own["idle"], "/answered") > 0 && u(&own["loaded"], "/answered") > 0);
        // Every idle probe before the load's zero, every recovery one after its end.
        for x in own["samples"].as_array().expect("samples") {
            let t = x["t_s"].as_f64().expect("t_s");
            assert!((-30.0..end + 30.0).contains(&t), "{url}: {x}");
        }
        // The self probes exist only while the load runs: 20 a second over its 2 s at most.
        assert!(load["idle"].is_null() && load["recovery"].is_null(), "{url}: {load}");
        let sent = u(load, "/sent");
        assert!((1..=41).contains(&sent), "{url}: {sent} self probes sent");
        assert!(u(&load["loaded"], "/answered") > 0, "{url}: {load}");
        // The headline is the connection of its own's.
        assert_eq!(l["idle_ms"], own["idle"]["rtt_ms"]["p50"], "{url}");
        assert_eq!(l["loaded_ms"], own["loaded"]["rtt_ms"]["p50"], "{url}");
        let added = f(l, "/added_ms");
        assert!((added - (f(l, "/loaded_ms") - f(l, "/idle_ms"))).abs() < 1e-9);
    }
}

#[test]
fn issue_41_http11_probes_give_the_separate_series_only_and_say_why() {
    let agent = http_agent();
    let url = agent.http_url("/bytes/1000");
    let v = http_json(&[
        &url,
        "--no-agent",
        "--users",
        "2",
        "--ramp",
        "0",
        "-d",
        "1s",
        "--probe",
        "http",
        "--probe-rate",
        "20",
        "--probe-idle",
        "500ms",
        "--probe-recovery",
        "500ms",
        "--probe-size",
        "100",
    ]);
    check_identities(&v);
    let l = &v["latency"];
    let series = l["series"].as_array().expect("series");
    assert_eq!(series.len(), 1, "{l}");
    assert_eq!(series[0]["on"], "separate");
    assert_eq!(series[0]["name"], "http on a connection of its own");
    check_series(&series[0]);
    assert!((18..=22).contains(&ended(&series[0]["loaded"])), "{}", series[0]);
    assert!(u(&series[0]["idle"], "/answered") >= 9, "{}", series[0]);
    let notes = v["notes"].to_string();
    assert!(notes.contains("no self-probe series"), "{notes}");
}

#[test]
fn issue_41_a_probe_http_does_not_run_is_one_line_exit_2() {
    let limit = Duration::from_secs(20);
    for via in ["rr", "udp"] {
        let args = ["http", "http://127.0.0.1:1/", "--no-agent", "--probe", via];
        fails_with(&args, &format!("--probe {via} is not a probe http runs"), limit);
        assert_eq!(linerate(&args, limit).status.code(), Some(2));
    }
    let args = [
        "http",
        "http://127.0.0.1:1/",
        "--probe",
        "http",
        "--probe-rate",
        "50000",
    ];
    fails_with(&args, "--probe-rate", limit);
}
