//! Bad input: a one-line error naming the problem, a non-zero exit, no panic, no hang.

use crate::util::*;
use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

fn fails_with(args: &[&str], needle: &str) {
    crate::util::fails_with(args, needle, LIMIT);
}

#[test]
fn bad_values_are_named() {
    fails_with(&["tcp", "127.0.0.1", "-l", "0"], "buffer length (-l) must be between 1");
    fails_with(&["tcp", "127.0.0.1", "-P", "100000"], "-P must be between 1 and 1024");
    fails_with(&["tcp", "127.0.0.1", "--bogus"], "--bogus");
    fails_with(&["tcp", "127.0.0.1", "-l", "lots"], "'lots' is not a size");
    fails_with(&["tcp", "127.0.0.1", "-t", "-3"], "-3");
    fails_with(&["tcp", "127.0.0.1", "-n", "5", "-t", "5"], "cannot be used with");
    fails_with(
        &["tcp", "127.0.0.1", "--cpus", "999", "-n", "1"],
        "CPU 999 does not exist",
    );
    fails_with(&["tcp"], "required");
    fails_with(&["frobnicate"], "frobnicate");
    fails_with(&["tcp", "no such host!"], "is not a host name or address");
}

#[test]
fn refused_port_is_named() {
    // A port nothing listens on: bind one, note it, close it.
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let addr = format!("127.0.0.1:{port}");
    fails_with(&["tcp", &addr, "-n", "1"], "cannot connect to");
    fails_with(&["tcp", &addr, "-n", "1"], "refused");
}

#[test]
fn a_port_that_is_not_an_agent_is_named() {
    let talker = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = talker.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for c in talker.incoming().flatten() {
            let mut c = c;
            let _ = c.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    fails_with(&["tcp", &addr, "-n", "1"], "is not a linerate agent");

    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = silent.local_addr().expect("addr").to_string();
    let start = Instant::now();
    fails_with(&["tcp", &addr, "-n", "1", "--connect-timeout", "1"], "sent nothing");
    assert!(start.elapsed() < Duration::from_secs(5));
    drop(silent);
}

#[test]
fn unreachable_host_fails_fast_without_leaving_the_machine() {
    // Inside a fresh network namespace with no route, no packet can leave: connect(2) fails with
    // "network is unreachable" at once.
    if !can_run(&[
        Need::Root { why: NAMESPACES },
        Need::Program {
            name: "ip",
            package: "iproute2",
        },
    ]) {
        return;
    }
    let ns = format!("lrtun{}", std::process::id());
    assert!(
        std::process::Command::new("ip")
            .args(["netns", "add", &ns])
            .status()
            .expect("ip")
            .success()
    );
    let out = run_bounded(
        std::process::Command::new("ip").args(["netns", "exec", &ns, BIN, "tcp", "10.231.255.1", "-n", "1"]),
        LIMIT,
    );
    let _ = std::process::Command::new("ip").args(["netns", "del", &ns]).status();
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot connect to 10.231.255.1") && err.to_lowercase().contains("unreachable"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn help_and_version_succeed() {
    for args in [&["--help"][..], &["--version"], &["tcp", "--help"], &["serve", "-h"]] {
        let out = linerate(args, LIMIT);
        assert!(out.status.success(), "{args:?}");
        assert!(!out.stdout.is_empty());
    }
    let out = linerate(&["tcp", "--help"], LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("io_uring"), "--depth explains itself");
}
