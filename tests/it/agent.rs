//! The agent under faults: busy, clients that vanish or send garbage, authentication.

use crate::util::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn busy_agent_answers_at_once() {
    let agent = Agent::start(&["--max-tests", "1"]);
    let long = linerate_command()
        .args(["tcp", &agent.addr, "-t", "20", "-i", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut long = scopeguard(long);
    // The long test holds the agent's one slot once its data flows.
    let port = port_of(&agent.addr);
    poll_until(LIMIT, "the long test's data to flow", || data_segments_at(port) > 100);
    let start = Instant::now();
    let out = linerate(&["tcp", &agent.addr, "-t", "1"], LIMIT);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("busy"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "answered in {:?}",
        start.elapsed()
    );
    let _ = long.0.kill();
}

/// Kills a child on drop.
struct Guard(std::process::Child);
fn scopeguard(c: std::process::Child) -> Guard {
    Guard(c)
}
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn killed_client_frees_the_agent(direction: &[&str]) {
    // One test at a time: the next test can only run if the killed one was cleaned up.
    let agent = Agent::start(&["--max-tests", "1"]);
    let mut args = vec!["tcp", agent.addr.as_str(), "-t", "30", "-i", "0"];
    args.extend_from_slice(direction);
    let mut victim = linerate_command()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let port = port_of(&agent.addr);
    poll_until(LIMIT, "the victim's data to flow", || data_segments_at(port) > 100);
    victim.kill().expect("kill -9");
    victim.wait().expect("reap");
    let killed = Instant::now();
    let mut args = vec!["tcp", agent.addr.as_str(), "-n", "10"];
    args.extend_from_slice(direction);
    // The agent is free when a new test is no longer turned away as busy.
    let (out, began) = loop {
        let began = Instant::now();
        let out = linerate(&args, LIMIT);
        if !stderr(&out).contains("busy") || killed.elapsed() > Duration::from_secs(5) {
            break (out, began);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        out.status.success(),
        "next test after a killed client failed: {}",
        stderr(&out)
    );
    assert!(
        began - killed < Duration::from_secs(1),
        "the agent stayed busy for {:?} after its client died",
        began - killed
    );
    assert!(killed.elapsed() < Duration::from_secs(5));
}

#[test]
fn killed_sending_client_frees_the_agent_within_a_second() {
    killed_client_frees_the_agent(&[]);
}

#[test]
fn killed_receiving_client_frees_the_agent_within_a_second() {
    killed_client_frees_the_agent(&["--reverse"]);
}

#[test]
fn garbage_and_silence_leave_the_agent_serving() {
    let agent = Agent::start(&[]);
    let mut g = TcpStream::connect(&agent.addr).expect("connect");
    g.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
    let mut buf = [0u8; 64];
    g.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    assert_eq!(
        g.read(&mut buf).unwrap_or(0),
        0,
        "a stranger is dropped without an answer"
    );
    // A preamble and then garbage frames.
    let mut p = TcpStream::connect(&agent.addr).expect("connect");
    p.write_all(b"LNRT\x00\x01\x00\x00\xff\xff\xff\xffjunk").expect("write");
    // Data connection with an unknown cookie.
    let mut d = TcpStream::connect(&agent.addr).expect("connect");
    d.write_all(&[
        b'L', b'N', b'R', b'D', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0,
    ])
    .expect("write");
    // A connection that never says anything is closed by the agent.
    let mut silent = TcpStream::connect(&agent.addr).expect("connect");
    silent.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
    let start = Instant::now();
    assert_eq!(silent.read(&mut buf).unwrap_or(0), 0);
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "silent connection closed after {:?}",
        start.elapsed()
    );
    let v = tcp_json(&[&agent.addr, "-n", "5"], LIMIT);
    assert_eq!(u(&v, "/summary/received/bytes"), 5 * 131_072);
}

#[test]
fn secret_is_required_checked_and_never_needed_on_the_wire() {
    let dir = tempfile::tempdir().expect("tempdir");
    let right = dir.path().join("right");
    let wrong = dir.path().join("wrong");
    std::fs::write(&right, "correct horse battery\n").expect("write");
    std::fs::write(&wrong, "battery staple horse\n").expect("write");
    let r = right.to_str().expect("utf-8");
    let agent = Agent::start(&["--secret-file", r]);
    let out = linerate(&["tcp", &agent.addr, "-n", "5"], LIMIT);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("requires a secret"), "{}", stderr(&out));
    let out = linerate(
        &[
            "tcp",
            &agent.addr,
            "-n",
            "5",
            "--secret-file",
            wrong.to_str().expect("utf-8"),
        ],
        LIMIT,
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("wrong secret"), "{}", stderr(&out));
    let v = tcp_json(&[&agent.addr, "-n", "5", "--secret-file", r], LIMIT);
    assert_eq!(u(&v, "/summary/received/bytes"), 5 * 131_072);
    let out = run_bounded(
        linerate_command()
            .args(["tcp", &agent.addr, "-n", "5", "--json"])
            .env("LINERATE_SECRET", "correct horse battery"),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "the secret from the environment: {}",
        stderr(&out)
    );
}

#[test]
fn agent_on_a_public_address_refuses_to_run_open() {
    let out = linerate(&["serve", "--bind", "0.0.0.0", "--port", "0"], Duration::from_secs(10));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("without a secret") && err.contains("--no-auth"), "{err}");
    assert_eq!(err.trim().lines().count(), 1);
    // With --no-auth it starts (and is killed at once; nothing connects to it).
    let _open = Agent::start_with(&[], &["--bind", "0.0.0.0", "--port", "0", "--no-auth"], &[], &[]);
}

#[test]
fn ipv6_loopback_works() {
    let agent = Agent::start_with(&[], &["--bind", "::1", "--port", "0"], &[], &[]);
    assert!(agent.addr.starts_with("[::1]:"), "{}", agent.addr);
    let v = tcp_json(&[&agent.addr, "-n", "10", "--reverse"], LIMIT);
    assert_eq!(u(&v, "/summary/received/bytes"), 10 * 131_072);
}

#[test]
fn several_clients_are_served_at_once() {
    let agent = Agent::start(&["--max-tests", "3"]);
    let clients: Vec<_> = (0..3)
        .map(|_| {
            linerate_command()
                .args(["tcp", &agent.addr, "-t", "1.5", "-i", "0", "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for c in clients {
        let v = json_of(&wait_bounded(c, LIMIT));
        assert_eq!(v["partial"], false);
        assert!(u(&v, "/summary/received/bytes") > 0);
    }
}
