//! linerate's client against Debian's `iperf3 -s`: the target
//! `iperf3://HOST:PORT` in `linerate tcp` and `linerate udp`. Each test starts its own
//! `iperf3 -s -1 -J` on a free port (never 5201), reads linerate's document and iperf3's own JSON
//! of the same run, and compares their counts; every process is bounded and killed on drop.

use crate::iperf3::*;
use crate::util::*;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn issue_26_a_count_maps_to_iperf3s_blocks_and_ends_when_received_in_reverse() {
    if !can_run(&[IPERF3]) {
        return;
    }
    // -n is per stream here, iperf3's block count over all streams: 2 x 100 blocks of 128 KiB.
    // In -R the end is seen from the kernel's count, not an interval sample (-i 0 has none).
    let started = Instant::now();
    let (doc, theirs) = against_iperf3("tcp", &["-n", "100", "-P", "2", "-R", "-i", "0"]);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let blocks = 2 * 100 * 131_072;
    assert_eq!(u(&theirs, "/end/sum_sent/bytes"), blocks, "iperf3 sent its block count");
    assert_eq!(u(&doc, "/summary/received/bytes"), blocks);
    assert_eq!(doc["partial"], false, "{}", doc["notes"]);
    let (doc, theirs) = against_iperf3("tcp", &["-n", "100"]);
    assert_eq!(u(&doc, "/summary/sent/bytes"), 100 * 131_072);
    assert_eq!(u(&theirs, "/end/sum_received/bytes"), 100 * 131_072);
}

#[test]
fn issue_26_a_stored_run_against_iperf3_shows_again_and_repeats() {
    if !can_run(&[IPERF3]) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("linerate-i26-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let db = dir.join("results.db");
    let db = db.to_str().expect("utf-8");
    let server = Iperf3Server::start(None, free_port());
    let target = format!("iperf3://127.0.0.1:{}", server.port);
    let out = linerate(&["tcp", &target, "-t", "1", "-i", "0", "--db", db], LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    drop(server);
    let shown = linerate(&["results", "show", "1", "--json", "--db", db], LIMIT);
    let v = json_of(&shown);
    assert_eq!(v["iperf3"]["role"], "server", "{}", v["iperf3"]);
    assert!(u(&v, "/iperf3/streams/0/bytes") > 0);
    let text = linerate(&["results", "show", "1", "--db", db], LIMIT);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("IPERF3 SERVER at 127.0.0.1:"), "{text}");

    // --repeat against an iperf3 -s that serves every test (no -1).
    let port = free_port();
    let mut many = Command::new("iperf3")
        .args(["-s", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    crate::util::poll_until(Duration::from_secs(10), "iperf3 -s listening", || {
        Command::new("ss")
            .args(["-ltnH", &format!("( sport = :{port} )")])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    });
    let target = format!("iperf3://127.0.0.1:{port}");
    let out = linerate(
        &[
            "tcp", &target, "-t", "1", "--repeat", "3", "--pause", "0.2", "--json", "--db", db,
        ],
        LIMIT,
    );
    let _ = many.kill();
    let _ = many.wait();
    let v = json_of(&out);
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{v}");
    assert!(runs.iter().all(|r| r["iperf3"]["role"] == "server"));
    let listed = linerate(&["results", "--db", db], LIMIT);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("tcp repeat"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn issue_26_a_busy_server_says_so_and_dead_or_silent_ones_fail_in_bounded_time() {
    if !can_run(&[IPERF3]) {
        return;
    }
    // Busy: an iperf3 client already runs against it.
    let server = Iperf3Server::start(None, free_port());
    let port = server.port.to_string();
    let mut other = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -c");
    crate::util::poll_until(Duration::from_secs(5), "the other test's data", || {
        data_segments_at(server.port) > 0
    });
    let target = format!("iperf3://127.0.0.1:{port}");
    let started = Instant::now();
    let out = linerate(&["tcp", &target, "-t", "1", "--no-store"], LIMIT);
    let _ = other.kill();
    let _ = other.wait();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "a setup error (README, Exit status): {err}");
    assert!(err.contains("is busy"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    drop(server);

    // Nothing listening.
    let target = format!("iperf3://127.0.0.1:{}", free_port());
    let started = Instant::now();
    let out = linerate(&["tcp", &target, "-t", "1", "--no-store"], LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // A server that accepts and says nothing: given up after --connect-timeout.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let target = format!("iperf3://{}", silent.local_addr().expect("addr"));
    let held = std::thread::spawn(move || silent.accept().map(|(s, _)| s));
    let started = Instant::now();
    let out = linerate(
        &["udp", &target, "-t", "1", "--connect-timeout", "1", "--no-store"],
        LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("sent nothing for 1 s"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    drop(held.join());
}

#[test]
fn issue_26_a_server_that_ends_mid_run_stops_the_run_at_once_partial() {
    if !can_run(&[IPERF3]) {
        return;
    }
    let mut server = Iperf3Server::start(None, free_port());
    let target = format!("iperf3://127.0.0.1:{}", server.port);
    let mut cmd = crate::util::linerate_command();
    cmd.args(["tcp", &target, "-t", "10", "--json", "--no-store"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let client = cmd.spawn().expect("linerate");
    // Past the control connection's few segments: the data streams are moving.
    crate::util::poll_until(Duration::from_secs(10), "the test's data", || {
        data_segments_at(server.port) > 1_000
    });
    // SIGTERM: iperf3 sends SERVER_TERMINATE and exits.
    let pid = server.child.as_ref().expect("running").id();
    // SAFETY: kill(2) on the iperf3 this test started and has not reaped.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let stopped = Instant::now();
    let out = crate::util::wait_bounded(client, LIMIT);
    assert!(
        stopped.elapsed() < Duration::from_secs(3),
        "{:?} after the server ended",
        stopped.elapsed()
    );
    let v = crate::util::json_with_status(&out, 3);
    assert_eq!(v["partial"], true);
    assert!(v["notes"].to_string().contains("SERVER_TERMINATE"), "{}", v["notes"]);
    assert!(u(&v, "/summary/sent/bytes") > 0, "what was sent until then");
    drop(server.child.take().map(|mut c| c.wait()));
}

#[test]
fn issue_26_flags_iperf3_cannot_take_are_usage_errors() {
    for (args, flag) in [
        (vec!["tcp", "iperf3://127.0.0.1:9", "--mix", "70:30"], "--mix"),
        (vec!["tcp", "iperf3://127.0.0.1:9", "127.0.0.1"], "only HOST"),
        (vec!["udp", "iperf3://127.0.0.1:9", "--warmup", "0.5"], "--warmup"),
        (vec!["udp", "iperf3://127.0.0.1:9", "--peer-cpus", "0-1"], "--peer-cpus"),
        (vec!["tcp", "iperf3://127.0.0.1:9", "--pattern", "mesh"], "--pattern"),
        // Only tcp and udp speak to an iperf3 server.
        (
            vec!["rr", "iperf3://127.0.0.1:9"],
            "`linerate tcp` or `linerate udp` only",
        ),
    ] {
        let out = linerate(&args, LIMIT);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(flag) && err.trim_end().lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}
