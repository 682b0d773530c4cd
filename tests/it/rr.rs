//! `linerate rr`: request-response round trips timed on loopback and across lab links with a
//! known delay and loss; size sweeps and their fitted line; TCP_CRR.

use crate::kinds::*;
use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn tcp_and_udp_round_trips_on_loopback_are_each_timed() {
    let agent = Agent::start(&[]);
    for proto in ["tcp", "udp"] {
        let v = rr_json(&[
            &agent.addr,
            "--proto",
            proto,
            "-n",
            "15000",
            "--request",
            "100",
            "--response",
            "200",
        ]);
        assert_eq!(
            u(&v, "/summary/transactions") + u(&v, "/summary/lost"),
            15_000,
            "{proto}"
        );
        assert_eq!(u(&v, "/summary/errors"), 0);
        assert!(f(&v, "/summary/transactions_per_second") > 0.0);
        check_latency(&v);
        // Every transaction carried 100 bytes out and 200 back.
        let done = u(&v, "/summary/transactions");
        assert_eq!(u(&v, "/summary/sent/bytes"), done * 300, "{proto}");
        // Long enough (about a second) for the CPU counters' ticks to count.
        let cpu = &v["summary"]["cpu_us_per_transaction"]["client"];
        assert!(
            cpu.as_f64().is_some_and(|c| c > 0.0),
            "{proto}: CPU per transaction {cpu}"
        );
    }
}

#[test]
fn connect_mode_times_connections() {
    let agent = Agent::start(&[]);
    let v = rr_json(&[&agent.addr, "--connect", "-n", "400", "-P", "2"]);
    assert_eq!(u(&v, "/summary/transactions"), 800);
    let c = &v["summary"]["connect"];
    assert!(c["connections_per_second"].as_f64().is_some_and(|r| r > 0.0), "{c}");
    let p50 = c["connect_us"]["p50"].as_f64().expect("connect p50");
    assert!(p50 > 0.0 && p50 <= f(&v, "/summary/latency_us/p50"), "{c}");
}

/// TCP_CRR over many streams: every answering stream takes new connections from one queue, and
/// still sees the end of the test in time (held 50 ms a turn, 256 streams took 12.8 s to go round
/// and the run ended partial).
#[test]
fn connect_mode_over_256_streams_ends_complete() {
    let agent = Agent::start(&[]);
    let out = linerate(
        &[
            "rr",
            &agent.addr,
            "--connect",
            "-P",
            "256",
            "-t",
            "1",
            "-i",
            "0",
            "--json",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json_of(&out);
    assert_eq!(v["partial"], false);
    assert!(u(&v, "/summary/transactions") > 256, "{}", v["summary"]["transactions"]);
}

#[test]
fn bad_rr_options_are_one_line_errors() {
    for args in [
        vec!["rr", "127.0.0.1:1", "--proto", "udp", "--connect"],
        vec!["rr", "127.0.0.1:1", "--request", "0"],
        vec!["rr", "127.0.0.1:1", "--proto", "udp", "--request", "70000"],
        vec!["rr", "127.0.0.1:1", "--rate", "0"],
        vec!["rr", "127.0.0.1:1", "--sizes", "1:x:3"],
        vec!["rr", "127.0.0.1:1", "--expect", "1G"],
        vec!["rr", "127.0.0.1:1", "--sizes", "64", "--expect", "0"],
        vec!["rr", "127.0.0.1:1", "--timeout", "0"],
    ] {
        let out = linerate(&args, Duration::from_secs(10));
        assert!(!out.status.success(), "{args:?} was accepted");
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_sweep_past_the_mtu_goes_on_and_says_so() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    for proto in ["udp", "tcp"] {
        let cmd = [
            "linerate",
            "rr",
            "--json",
            "h2",
            "--proto",
            proto,
            "--sizes",
            "1000,3000,9000",
            "-t",
            "0.5",
        ];
        let v = json_of(&lab.exec("h1", &cmd, LIMIT));
        assert_eq!(v["mtu_bytes"], 1500);
        let points = v["points"].as_array().expect("points");
        assert_eq!(points.len(), 3);
        for p in points {
            assert!(
                p["result"]["summary"]["transactions"].as_u64().is_some_and(|n| n > 0),
                "{proto} {}: {}",
                p["request_bytes"],
                p["note"]
            );
        }
        assert_eq!(points[0]["note"], "");
        let note = points[2]["note"].as_str().expect("note");
        assert!(note.contains("over MTU 1500"), "{proto}: {note}");
        // The veth has no link speed: no expected slope without --expect.
        assert!(v["summary"]["fit"]["slope_us_per_byte"].is_number());
    }
    // With the stages given, the expected slope is the sum of 8/bandwidth.
    let cmd = [
        "linerate", "rr", "--json", "h2", "--sizes", "100,1000", "-t", "0.3", "--expect", "10G,8.5G",
    ];
    let v = json_of(&lab.exec("h1", &cmd, LIMIT));
    let e = v["summary"]["expected_slope_us_per_byte"]
        .as_f64()
        .expect("expected slope");
    assert!((e - (8.0 / 10e3 + 8.0 / 8.5e3)).abs() < 1e-9, "{e}");
}

#[test]
fn a_peer_that_goes_silent_does_not_hang_the_run() {
    let agent = Agent::start(&[]);
    let pid = agent.child.id().to_string();
    let child = linerate_command()
        .args(["rr", "--json", &agent.addr, "-t", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Transactions are under way once the agent has answered some.
    let port = port_of(&agent.addr);
    poll_until(Duration::from_secs(30), "transactions to flow", || {
        data_segments_at(port) > 100
    });
    // The agent stops answering mid-run without closing anything.
    let _ = std::process::Command::new("kill").args(["-STOP", &pid]).status();
    let t = std::time::Instant::now();
    let out = wait_bounded(child, Duration::from_secs(60));
    let _ = std::process::Command::new("kill").args(["-CONT", &pid]).status();
    assert!(t.elapsed() < Duration::from_secs(40), "took {:?}", t.elapsed());
    let v = json_with_status(&out, 3);
    assert!(
        u(&v, "/summary/transactions") > 0,
        "what came before the silence is kept"
    );
    assert_eq!(v["partial"], true, "the agent's report is missing");
}
