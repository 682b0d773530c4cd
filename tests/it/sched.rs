//! `linerate http --sched`: the client's workers run SCHED_BATCH unless told `normal`, over
//! HTTP/1.1 and HTTP/2, and the document records a policy other than the kernel's default. Read from the kernel
//! (/proc/PID/task/TID/stat, field 41) while the run goes on.

use crate::util::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

/// The scheduling policy (sched(7) number) of each of `pid`'s threads named `prefix...`.
fn policies_of(pid: u32, prefix: &str) -> Vec<i64> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|stat| {
            // pid (comm) state ...: field 41, the 39th after the ')'.
            let (head, rest) = stat.rsplit_once(") ")?;
            let comm = head.split_once(" (")?.1;
            let policy = rest.split(' ').nth(38)?.parse().ok()?;
            comm.starts_with(prefix).then_some(policy)
        })
        .collect()
}

/// Runs `linerate http` with `args` for 3 s and returns the workers' policies seen while it ran
/// and the document.
fn policies_while_running(args: &[&str]) -> (Vec<i64>, serde_json::Value) {
    let mut full = vec!["http", "--json", "--no-agent", "--users", "4", "-d", "3s"];
    full.extend_from_slice(args);
    let child = Command::new(BIN)
        .args(&full)
        .env("LINERATE_DB", test_db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let start = Instant::now();
    let mut seen = Vec::new();
    while seen.is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(100));
        seen = policies_of(pid, "linerate-h");
    }
    let out = wait_bounded(child, LIMIT);
    (seen, json_of(&out))
}

#[test]
fn http_workers_run_batch_by_default_and_normal_when_told() {
    let agent = Agent::start(&["--http-port", "0"]);
    let url = agent.http_url("/bytes/1000");
    for http2 in [false, true] {
        let mut args = vec![url.as_str(), "--keepalive"];
        if http2 {
            args.push("--http2");
        }
        let (seen, v) = policies_while_running(&args);
        check_document(&v);
        assert!(!seen.is_empty(), "http2 {http2}: no worker thread seen");
        assert!(
            seen.iter().all(|&p| p == libc::SCHED_BATCH as i64),
            "http2 {http2}: {seen:?}"
        );
        assert_eq!(v["options"]["sched"], "batch");
        assert!(u(&v, "/summary/responses") > 0);
        args.extend(["--sched", "normal"]);
        let (seen, v) = policies_while_running(&args);
        assert!(!seen.is_empty(), "http2 {http2}: no worker thread seen");
        assert!(
            seen.iter().all(|&p| p == libc::SCHED_OTHER as i64),
            "http2 {http2}: {seen:?}"
        );
        // The kernel's default is written as documents before --sched were: no key.
        assert!(v["options"].get("sched").is_none(), "{}", v["options"]);
    }
}

#[test]
fn an_unknown_policy_is_a_one_line_error() {
    let out = linerate(
        &["http", "http://127.0.0.1:1/", "--sched", "fifo"],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("batch or normal"), "{err}");
}
