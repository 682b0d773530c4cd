//! `--probe` beside tcp and udp tests on loopback: a probe session of its own through idle, load
//! and recovery, each probe on the load's time axis, its one-way split from the agent's clock,
//! and the load's own TCP_INFO RTT; flags that cannot run refused in one line.

use crate::util::*;
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// One probed run's `latency` block, the document checked as any other.
fn probed(kind: &str, agent: &Agent, extra: &[&str]) -> Value {
    let mut args = vec![kind, "--json", agent.addr.as_str(), "-t", "2"];
    args.extend_from_slice(&["--probe-idle", "1", "--probe-recovery", "1", "--probe-rate", "50"]);
    args.extend_from_slice(extra);
    let v = json_of(&linerate(&args, LIMIT));
    check_document(&v);
    v
}

/// The separate series at 50/s: its counts add up (sent = answered + lost + in flight), each
/// phase holds about rate x its length, the samples span the idle second before the load to the
/// recovery second after it, and the one-way legs add up to the round trip within the clock's
/// uncertainty (one host: the offset is about 0).
fn check_separate(v: &Value, name: &str) {
    let l = &v["latency"];
    let load_end = f(l, "/load_end_s");
    assert!((1.9..2.6).contains(&load_end), "load end {load_end}");
    let clock = &l["clock"];
    let (offset, uncertainty) = (f(clock, "/offset_ms"), f(clock, "/uncertainty_ms"));
    assert!(
        offset.abs() <= uncertainty + 0.5,
        "one host: offset {offset} ± {uncertainty} ms"
    );
    let s = l["series"]
        .as_array()
        .expect("series")
        .iter()
        .find(|s| s["on"] == "separate")
        .expect("a separate series");
    assert_eq!(s["name"], name);
    let (sent, answered, lost) = (u(s, "/sent"), u(s, "/answered"), u(s, "/lost"));
    assert!(
        answered + lost <= sent && sent - answered - lost <= 2,
        "{sent} {answered} {lost}"
    );
    assert_eq!(lost, 0, "loopback loses no probe");
    let phase = |p: &str| u(s, &format!("/{p}/answered")) as f64;
    // Idle: 1 s and the test's set-up; loaded: the load's length; recovery: 1 s and the stop.
    let (idle, loaded, recovery) = (phase("idle"), phase("loaded"), phase("recovery"));
    assert!((48.0..=60.0).contains(&idle), "idle {idle}");
    assert!(
        (loaded - 50.0 * load_end).abs() <= 3.0,
        "loaded {loaded} over {load_end} s"
    );
    assert!((48.0..=62.0).contains(&recovery), "recovery {recovery}");
    assert_eq!((idle + loaded + recovery) as u64, answered);
    let samples = s["samples"].as_array().expect("samples");
    assert_eq!(samples.len() as u64, answered);
    let first = f(&samples[0], "/t_s");
    let last = f(&samples[samples.len() - 1], "/t_s");
    assert!((-1.3..-0.95).contains(&first), "first probe at {first} s");
    assert!(last > load_end + 0.9 && last < load_end + 1.3, "last probe at {last} s");
    for p in samples {
        let (rtt, up, down) = (f(p, "/rtt_ms"), f(p, "/up_ms"), f(p, "/down_ms"));
        assert!(rtt > 0.0 && rtt < 1000.0, "{p}");
        // up + down = the round trip, each leg no less than minus the clock's uncertainty.
        assert!((up + down - rtt).abs() < 0.001, "{p}");
        assert!(up >= -uncertainty && down >= -uncertainty, "{p} ± {uncertainty}");
    }
    assert_eq!(u(s, "/clock_errors"), 0);
    for k in ["idle_ms", "loaded_ms", "added_ms", "added_up_ms", "added_down_ms"] {
        assert!(l[k].is_number(), "{k}: {l}");
    }
}

#[test]
fn tcp_with_rr_probes_reads_idle_loaded_and_recovery_round_trips_and_its_own_tcp_info() {
    let agent = Agent::start(&[]);
    let v = probed("tcp", &agent, &["--probe", "rr"]);
    check_separate(&v, "tcp round trip");
    assert_eq!(v["options"]["probe"]["via"], "rr");
    let series = v["latency"]["series"].as_array().expect("series");
    let info = series
        .iter()
        .find(|s| s["name"] == "tcp_info rtt")
        .expect("the load's own TCP_INFO series");
    assert_eq!(info["on"], "load");
    assert!(
        info["sent"].is_null() && info["lost"].is_null(),
        "read, not sent: {info}"
    );
    assert!(u(info, "/loaded/answered") >= 2, "{info}");
    assert!(info["idle"].is_null(), "no load before time zero: {info}");
}

#[test]
fn udp_with_udp_probes_reads_the_same_phases() {
    let agent = Agent::start(&[]);
    let v = probed("udp", &agent, &["--probe", "udp", "-b", "20m"]);
    check_separate(&v, "udp round trip");
    assert_eq!(
        v["latency"]["series"].as_array().map(Vec::len),
        Some(1),
        "no TCP_INFO on udp"
    );
}

#[test]
fn probe_flags_that_cannot_run_are_one_line() {
    let agent = Agent::start(&[]);
    let a = agent.addr.as_str();
    fails_with(&["tcp", a, "--probe-rate", "5"], "--probe", LIMIT);
    fails_with(
        &["tcp", a, "--probe", "http"],
        "--probe http is not a probe tcp runs",
        LIMIT,
    );
    fails_with(
        &["udp", a, "--probe", "rr", "--probe-rate", "20000"],
        "--probe-rate",
        LIMIT,
    );
    fails_with(&["tcp", a, "--probe", "rr", "--probe-size", "8"], "--probe-size", LIMIT);
    fails_with(
        &[
            "udp",
            a,
            "-b",
            "1m",
            "--probe",
            "udp",
            "--probe-rate",
            "5000",
            "--probe-size",
            "1K",
        ],
        "over the 1000000 bit/s",
        LIMIT,
    );
    fails_with(
        &["tcp", a, "--probe", "rr", "-n", "100"],
        "--probe needs a time limit",
        LIMIT,
    );
    fails_with(
        &["tcp", "iperf3://127.0.0.1:1", "--probe", "rr"],
        "iperf3 server answers no probes",
        LIMIT,
    );
    for args in [&["tcp", a, "--probe-rate", "5"][..], &["tcp", a, "--probe", "icmp"]] {
        assert_eq!(linerate(args, LIMIT).status.code(), Some(2), "{args:?}");
    }
}

/// An agent lost in the middle of the load: the run ends partial (exit 3) and still holds the
/// probes measured until then.
#[test]
fn a_lost_agent_leaves_the_probes_measured_and_exit_3() {
    let mut agent = Agent::start(&[]);
    let addr = agent.addr.clone();
    let args = [
        "tcp",
        "--json",
        &addr,
        "-t",
        "8",
        "--probe",
        "rr",
        "--probe-idle",
        "1",
        "--probe-rate",
        "20",
    ];
    let out = std::thread::scope(|s| {
        let run = s.spawn(|| linerate(&args, LIMIT));
        // The idle second, the test's set-up and a second or more of its load.
        std::thread::sleep(Duration::from_secs(4));
        agent.child.kill().expect("the agent stops");
        run.join().expect("the client's thread")
    });
    let v = json_with_status(&out, 3);
    assert_eq!(v["partial"], true);
    let s = &v["latency"]["series"][0];
    assert_eq!(s["name"], "tcp round trip");
    assert!(u(s, "/idle/answered") >= 10, "{s}");
    assert!(u(s, "/answered") + u(s, "/lost") <= u(s, "/sent"), "{s}");
}
