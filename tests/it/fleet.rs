//! Fleets (issue 24): third-party runs, patterns over agents with synchronised starts, the
//! matrix document; on loopback with agents of their own, and in a lab whose one host has a
//! slower link.

use crate::util::{Agent, BIN, Lab, check_document, json_of, json_with_status, linerate};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "fleet-secret-for-tests";

/// An agent on loopback that knows the fleet's secret.
fn agent(extra: &[&str]) -> Agent {
    Agent::start_with(
        &[],
        &["--bind", "127.0.0.1", "--port", "0"],
        extra,
        &[("LINERATE_SECRET", SECRET)],
    )
}

/// `linerate ARGS` with the fleet's secret, bounded.
fn with_secret(args: &[&str], limit: Duration) -> std::process::Output {
    crate::util::run_bounded(Command::new(BIN).args(args).env("LINERATE_SECRET", SECRET), limit)
}

fn f(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer}"))
}

fn cells(m: &Value) -> &Vec<Value> {
    m["cells"].as_array().expect("cells")
}

#[test]
fn issue_24_a_third_party_run_comes_back_whole_with_its_from() {
    let (a, b) = (agent(&[]), agent(&[]));
    let out = with_secret(
        &["tcp", "--json", "--no-store", "--from", &a.addr, &b.addr, "-t", "1"],
        Duration::from_secs(60),
    );
    let v = json_of(&out);
    check_document(&v);
    assert_eq!(v["from"], a.addr.as_str(), "the run records who ran it");
    assert_eq!(v["hosts"]["client"]["role"], "client");
    assert!(
        v["hosts"][b.addr.as_str()].is_object(),
        "the far agent is an end: {}",
        v["hosts"]
    );
    assert!(
        f(&v, "/summary/received/bytes") > 0.0,
        "the far agent counted what came"
    );
    let text = with_secret(
        &["rr", "--no-store", "--from", &a.addr, &b.addr, "-t", "0.5"],
        Duration::from_secs(60),
    );
    assert!(text.status.success(), "{}", String::from_utf8_lossy(&text.stderr));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("run from agent {} (a third-party test)", a.addr)),
        "the text says who ran it: {text}"
    );

    // An agent with no secret runs no third-party tests: it cannot be made a reflector.
    let open = Agent::start(&[]);
    let out = with_secret(
        &[
            "tcp",
            "--json",
            "--no-store",
            "--allow-unauthenticated-agent",
            "--from",
            &open.addr,
            &b.addr,
            "-t",
            "1",
        ],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused");
    assert!(err.contains("no secret"), "says why: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn issue_24_an_incast_starts_together_through_an_agent_whose_clock_is_2_s_off() {
    let (a, b, to) = (agent(&[]), agent(&[]), agent(&[]));
    let off = agent(&["--pretend-clock-offset-ms", "2000"]);
    let from = format!("{},{},{}", a.addr, b.addr, off.addr);
    let out = with_secret(
        &[
            "tcp",
            "--json",
            "--no-store",
            "--pattern",
            "incast",
            "--from",
            &from,
            &to.addr,
            "-t",
            "1",
            "-i",
            "0.2",
        ],
        Duration::from_secs(90),
    );
    let m = json_of(&out);
    assert_eq!(m["test"], "tcp matrix");
    assert_eq!(m["pattern"], "incast");
    assert_eq!(cells(&m).len(), 3);
    assert_eq!(
        m["rounds"].as_array().expect("rounds").len(),
        1,
        "an incast is one round"
    );
    let host = |name: &str| {
        m["hosts"]
            .as_array()
            .expect("hosts")
            .iter()
            .find(|h| h["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in hosts"))
    };
    let offset_ms = f(&host(&off.addr), "/clock/offset_ns") / 1e6;
    assert!(
        (offset_ms - 2000.0).abs() < 1.0,
        "the 2 s offset estimated within 1 ms: {offset_ms:.3} ms"
    );
    let honest_ms = f(&host(&a.addr), "/clock/offset_ns") / 1e6;
    assert!(honest_ms.abs() < 1.0, "an honest clock reads ~0: {honest_ms:.3} ms");
    let skew_ms = f(&m, "/rounds/0/start_skew_ns") / 1e6;
    assert!(skew_ms < 10.0, "the group started within 10 ms: {skew_ms:.3} ms");
    for c in cells(&m) {
        assert!(c["error"].is_null(), "{}", c["error"]);
        assert!(f(c, "/value") > 0.0);
        let start = &c["start"];
        let late_ms = (f(start, "/actual_unix_ns") - f(start, "/scheduled_unix_ns")) / 1e6;
        assert!(
            (-5.0..200.0).contains(&late_ms),
            "started near its scheduled instant, in the controller's clock: {late_ms:.3} ms"
        );
        let answered_ms = (f(start, "/answered_unix_ns") - f(start, "/actual_unix_ns")) / 1e6;
        assert!(
            (0.0..1000.0).contains(&answered_ms),
            "the far end answered after the start went out: {answered_ms:.3} ms"
        );
        assert_eq!(c["result"]["from"], c["from"]);
    }
    let sum: f64 = cells(&m).iter().map(|c| f(c, "/value")).sum();
    assert!(
        (f(&m, "/sum") - sum).abs() < 1e-6 * sum.max(1.0),
        "the sum is the cells'"
    );
    let jain = f(&m, "/jain");
    assert!(
        jain > 1.0 / 3.0 - 1e-9 && jain <= 1.0 + 1e-9,
        "Jain's index in [1/n, 1]: {jain}"
    );
}

#[test]
fn issue_24_an_agent_killed_mid_mesh_fails_only_its_cells() {
    let agents: Vec<Agent> = (0..4).map(|_| agent(&[])).collect();
    let names: Vec<String> = agents.iter().map(|a| a.addr.clone()).collect();
    let mut args = vec!["rr", "--json", "--no-store", "--pattern", "mesh", "-t", "1"];
    args.extend(names.iter().map(String::as_str));
    let child = Command::new(BIN)
        .args(&args)
        .env("LINERATE_SECRET", SECRET)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the mesh");
    let mut agents = agents;
    let victim = names[3].clone();
    // Into the mesh: its first round has run (each is about 2 s).
    std::thread::sleep(Duration::from_millis(3500));
    let mut killed = agents.pop().expect("four");
    let _ = killed.child.kill();
    let _ = killed.child.wait();
    let start = Instant::now();
    let out = child.wait_with_output().expect("the mesh ends");
    assert!(start.elapsed() < Duration::from_secs(120), "bounded");
    let m = json_with_status(&out, 3);
    assert_eq!(cells(&m).len(), 12, "every ordered pair of 4");
    assert_eq!(
        m["rounds"].as_array().expect("rounds").len(),
        6,
        "2(n-1) rounds for n = 4"
    );
    let mut failed = 0;
    for c in cells(&m) {
        let involved = c["from"] == victim.as_str() || c["to"] == victim.as_str();
        if c["error"].is_null() {
            assert!(f(c, "/value") > 0.0, "a measured cell has its p50: {c}");
        } else {
            failed += 1;
            assert!(
                involved,
                "only the killed agent's cells fail: {} -> {}",
                c["from"], c["to"]
            );
        }
        if !involved {
            assert!(c["error"].is_null(), "{} -> {}: {}", c["from"], c["to"], c["error"]);
        }
    }
    assert!(failed >= 1, "the killed agent's later cells failed");
    assert_eq!(m["failed"].as_array().expect("failed").len(), failed);
}

#[test]
fn issue_24_bad_patterns_are_usage_errors() {
    for (args, says) in [
        (vec!["tcp", "--pattern", "mesh", "127.0.0.1:9"], "2"),
        (
            vec![
                "tcp",
                "--pattern",
                "incast",
                "--from",
                "127.0.0.1:9",
                "127.0.0.1:10",
                "127.0.0.1:11",
            ],
            "one",
        ),
        (vec!["tcp", "--pattern", "star", "127.0.0.1:9"], "mesh"),
        (vec!["tcp", "--pair", "127.0.0.1:9,127.0.0.1:10"], "--pattern"),
        (
            vec!["tcp", "--from", "127.0.0.1:9", "127.0.0.1:10", "127.0.0.1:11"],
            "--pattern",
        ),
    ] {
        let out = linerate(&args, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
}

/// A lab's matrix run from h1 (`lab exec` gives it the lab's secret).
fn lab_matrix(lab: &Lab, args: &[&str], limit: Duration) -> Value {
    let mut cmd = vec!["linerate", "tcp", "--json", "--no-store"];
    cmd.extend_from_slice(args);
    json_of(&lab.exec("h1", &cmd, limit))
}

#[test]
fn issue_24_a_lab_mesh_reads_half_on_the_slow_hosts_row_and_column_and_its_incast_meets_its_link() {
    let Some(lab) = Lab::up(6, &["rate=100mbit", "h5:rate=50mbit"]) else {
        return;
    };
    let m = lab_matrix(
        &lab,
        &[
            "--pattern",
            "mesh",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "-t",
            "2",
            "--warmup",
            "0.5",
        ],
        Duration::from_secs(240),
    );
    assert_eq!(cells(&m).len(), 20, "every ordered pair of 5");
    assert_eq!(
        m["rounds"].as_array().expect("rounds").len(),
        10,
        "2n rounds for odd n = 5"
    );
    for c in cells(&m) {
        assert!(c["error"].is_null(), "{} -> {}: {}", c["from"], c["to"], c["error"]);
        let mbps = f(c, "/value");
        let slow = c["from"] == "h5" || c["to"] == "h5";
        let want = if slow { 40.0..=52.0 } else { 80.0..=101.0 };
        assert!(
            want.contains(&mbps),
            "{} -> {}: {mbps:.1} Mbit/s (h5's link is 50, the others' 100)",
            c["from"],
            c["to"]
        );
    }

    let m = lab_matrix(
        &lab,
        &[
            "--pattern",
            "incast",
            "--from",
            "h2,h3,h4,h6",
            "h5",
            "-t",
            "3",
            "--warmup",
            "1",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(cells(&m).len(), 4);
    let sum = f(&m, "/sum");
    assert!(
        (45.0..=55.0).contains(&sum),
        "4 senders into h5's 50 Mbit/s link sum to it: {sum:.1} Mbit/s"
    );
    let jain = f(&m, "/jain");
    assert!((0.25..=1.0).contains(&jain), "Jain's index: {jain}");
    for c in cells(&m) {
        let share = f(c, "/value") / sum;
        assert!(share > 0.0, "every flow got a share: {} {share:.3}", c["from"]);
    }
}

#[test]
fn issue_24_different_nodes_leaves_out_pairs_on_one_node_and_a_host_file_names_the_fleet() {
    let (a1, a2) = (agent(&["--node-name", "node-a"]), agent(&["--node-name", "node-a"]));
    // The third agent says its node through the environment, as a Kubernetes pod would.
    let b_env = Agent::start_with(
        &[],
        &["--bind", "127.0.0.1", "--port", "0"],
        &[],
        &[("LINERATE_SECRET", SECRET), ("LINERATE_NODE", "node-b")],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hosts.txt");
    std::fs::write(
        &file,
        format!("# the fleet\n{}\n\n{}\n{}\n", a1.addr, a2.addr, b_env.addr),
    )
    .expect("write");
    let hosts = format!("@{}", file.display());
    let out = with_secret(
        &[
            "rr",
            "--json",
            "--no-store",
            "--pattern",
            "mesh",
            &hosts,
            "--different-nodes",
            "-t",
            "0.3",
        ],
        Duration::from_secs(60),
    );
    let m = json_of(&out);
    let pairs: Vec<(String, String)> = cells(&m)
        .iter()
        .map(|c| {
            (
                c["from"].as_str().expect("from").into(),
                c["to"].as_str().expect("to").into(),
            )
        })
        .collect();
    assert_eq!(pairs.len(), 4, "a1 <-> b and a2 <-> b only: {pairs:?}");
    assert!(
        pairs.iter().all(|(f, t)| f == &b_env.addr || t == &b_env.addr),
        "no pair within node-a: {pairs:?}"
    );
    let nodes: Vec<&str> = m["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .map(|h| h["node"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(nodes, ["node-a", "node-a", "node-b"], "each agent's node as it said it");
    assert!(
        m["notes"]
            .as_array()
            .expect("notes")
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("2 pair(s) on one node left out"))),
        "{}",
        m["notes"]
    );
}

#[test]
fn issue_25_a_plain_test_takes_a_host_file_and_runs_against_every_agent_in_it() {
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("agents.txt");
    std::fs::write(&file, format!("{}\n# a comment\n{}\n", a.addr, b.addr)).expect("write");
    let hosts = format!("@{}", file.display());
    let v = json_of(&linerate(
        &["tcp", "--json", "--no-store", &hosts, "-t", "0.5"],
        Duration::from_secs(60),
    ));
    let agents: Vec<&str> = v["summary"]["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|x| x["agent"].as_str().expect("name"))
        .collect();
    assert_eq!(
        agents,
        [a.addr.as_str(), b.addr.as_str()],
        "both agents of the file, at once"
    );
    let out = linerate(&["tcp", "@/nonexistent/agents.txt"], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2), "a missing host file is a usage error");
}
