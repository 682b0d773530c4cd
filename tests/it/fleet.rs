//! Fleets: third-party runs, patterns over agents with synchronised starts, the
//! matrix document; on loopback with agents of their own, and in a lab whose one host has a
//! slower link.

use crate::kinds::*;
use crate::util::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn issue_24_a_third_party_run_comes_back_whole_with_its_from() {
    let (a, b) = (fleet_agent(&[]), fleet_agent(&[]));
    let out = with_fleet_secret(
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
    let text = with_fleet_secret(
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
    let out = with_fleet_secret(
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
fn issue_24_an_agent_killed_mid_mesh_fails_only_its_cells() {
    let agents: Vec<Agent> = (0..4).map(|_| fleet_agent(&[])).collect();
    let names: Vec<String> = agents.iter().map(|a| a.addr.clone()).collect();
    let mut args = vec!["rr", "--json", "--no-store", "--pattern", "mesh", "-t", "1"];
    args.extend(names.iter().map(String::as_str));
    let child = Command::new(BIN)
        .args(&args)
        .env("LINERATE_SECRET", FLEET_SECRET)
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

#[test]
fn issue_24_different_nodes_leaves_out_pairs_on_one_node_and_a_host_file_names_the_fleet() {
    let (a1, a2) = (
        fleet_agent(&["--node-name", "node-a"]),
        fleet_agent(&["--node-name", "node-a"]),
    );
    // The third agent says its node through the environment, as a Kubernetes pod would.
    let b_env = Agent::start_with(
        &[],
        &["--bind", "127.0.0.1", "--port", "0"],
        &[],
        &[("LINERATE_SECRET", FLEET_SECRET), ("LINERATE_NODE", "node-b")],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hosts.txt");
    std::fs::write(
        &file,
        format!("# the fleet\n{}\n\n{}\n{}\n", a1.addr, a2.addr, b_env.addr),
    )
    .expect("write");
    let hosts = format!("@{}", file.display());
    let out = with_fleet_secret(
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
