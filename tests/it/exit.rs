//! The exit status contract (README, "Exit status"; issue 13): 0 complete, 1 setup error,
//! 2 usage, 3 partial (Ctrl-C, an agent lost), 4 failed (nothing measured). A partial or failed
//! run still prints its document with `--json`.

use crate::util::*;
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

fn spawn(args: &[&str]) -> Child {
    linerate_command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid of a child this test started.
    unsafe { libc::kill(pid as i32, sig) };
}

#[test]
fn issue_13_a_complete_run_exits_0() {
    let agent = Agent::start(&[]);
    let out = linerate(&["udp", &agent.addr, "-n", "100", "-i", "0", "--json"], LIMIT);
    let v = json_with_status(&out, 0);
    assert_eq!(v["partial"], false);
    assert!(v["error"].is_null(), "{}", v["error"]);
}

#[test]
fn issue_13_a_usage_error_exits_2_and_a_setup_error_1() {
    assert_eq!(
        linerate(&["tcp", "127.0.0.1", "-t", "-1"], LIMIT).status.code(),
        Some(2)
    );
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
        .to_string();
    let out = linerate(&["udp", "127.0.0.1", "-p", &closed, "-n", "1"], LIMIT);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn issue_13_ctrl_c_mid_run_exits_partial_with_the_document() {
    let agent = Agent::start(&[]);
    let child = spawn(&["udp", &agent.addr, "-t", "10", "-b", "100M", "--json"]);
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id(), libc::SIGINT);
    let t = Instant::now();
    let out = wait_bounded(child, LIMIT);
    assert!(t.elapsed() < Duration::from_secs(3), "stopped after {:?}", t.elapsed());
    let v = json_with_status(&out, 3);
    assert_eq!(v["partial"], true);
    assert!(u(&v, "/summary/sent/bytes") > 0);
}

/// kill -9 the agent 1 s into a 10 s run: the client ends within 3 s, partial, status 3.
fn killed_agent_ends_the_run(args: &[&str]) {
    let mut agent = Agent::start(&[]);
    let mut full = args.to_vec();
    full.extend_from_slice(&[agent.addr.as_str(), "-t", "10", "--json"]);
    let child = spawn(&full);
    std::thread::sleep(Duration::from_millis(1000));
    agent.child.kill().expect("kill -9 the agent");
    let _ = agent.child.wait();
    let t = Instant::now();
    let out = wait_bounded(child, LIMIT);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "{args:?}: ended {:?} after the kill",
        t.elapsed()
    );
    let v = json_with_status(&out, 3);
    assert_eq!(v["partial"], true, "{args:?}");
}

#[test]
fn issue_13_udp_ends_within_3_s_of_the_agent_killed() {
    killed_agent_ends_the_run(&["udp", "-b", "100M"]);
}

#[test]
fn issue_13_udp_rr_ends_within_3_s_of_the_agent_killed() {
    killed_agent_ends_the_run(&["rr", "--proto", "udp"]);
}

#[test]
fn issue_13_an_http_run_against_a_refused_port_exits_failed() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{closed}/x");
    let out = linerate(
        &["http", &url, "--users", "2", "-d", "1s", "--no-agent", "--json"],
        LIMIT,
    );
    let v = json_with_status(&out, 4);
    assert_eq!(u(&v, "/summary/responses"), 0);
}

#[test]
fn issue_13_an_interrupted_udp_sweep_stops_at_once_and_exits_partial() {
    let agent = Agent::start(&[]);
    let child = spawn(&[
        "udp",
        &agent.addr,
        "--gaps",
        "10,20,30,40",
        "-t",
        "1",
        "-l",
        "100",
        "--json",
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id(), libc::SIGINT);
    let t = Instant::now();
    let out = wait_bounded(child, LIMIT);
    assert!(t.elapsed() < Duration::from_secs(2), "stopped after {:?}", t.elapsed());
    let v = json_with_status(&out, 3);
    assert_eq!(v["partial"], true);
    let points = v["points"].as_array().expect("points");
    assert!((1..4).contains(&points.len()), "{} points", points.len());
    for p in points {
        let bytes = p["result"]["summary"]["sent"]["bytes"].as_u64().unwrap_or(0);
        assert!(bytes > 0, "a zero-filled point: {p}");
    }
    assert!(v.get("fit").is_none_or(|f| f.is_null()));
}
