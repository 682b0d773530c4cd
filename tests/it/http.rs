//! `linerate http`: simulated users against linerate's own server, a real nginx (its access log
//! is the referee), a misbehaving server, a ramp, and a lab link limited to 100 Mbit/s.

use crate::kinds::*;
use crate::nginx::Nginx;
use crate::util::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn users_against_linerates_server_are_counted_with_the_server_side() {
    let agent = http_agent();
    let url = agent.http_url("/bytes/10000");
    for keepalive in [false, true] {
        let mut args = vec![url.as_str(), "--users", "8", "-d", "1s", "--agent", &agent.addr];
        if keepalive {
            args.push("--keepalive");
        }
        let v = http_json(&args);
        let s = &v["summary"];
        let responses = u(&v, "/summary/responses");
        assert!(responses > 100, "{responses} responses");
        assert_eq!(u(&v, "/summary/body_bytes"), responses * 10_000);
        assert_eq!(s["status"]["2xx"].as_u64(), Some(responses));
        assert_eq!(u(&v, "/summary/errors/total"), 0);
        let conns = u(&v, "/summary/connections/attempted");
        if keepalive {
            assert!(conns <= 8, "{conns} connections for 8 keep-alive users");
        } else {
            // A connection per request: as many as responses, give or take those in flight.
            assert!(conns >= responses && conns <= responses + 8, "{conns} for {responses}");
        }
        assert_eq!(u(&v, "/summary/connections/unsuccessful"), 0);
        for k in ["p50", "p90", "p99", "max", "mean"] {
            assert!(s["response_time_us"][k].as_f64().is_some_and(|x| x > 0.0), "{k}");
        }
        assert!(f(&v, "/summary/ttfb_us/p50") <= f(&v, "/summary/response_time_us/p50"));
        let bits = f(&v, "/summary/bits_per_second_in");
        assert!((bits - f(&v, "/summary/received/bits_per_second")).abs() < 1e-6 * bits);
        // The agent on the server's host sampled it over the same window.
        assert!(s["server"]["cpu"]["host_percent"].is_number(), "{}", s["server"]);
        assert!(s["server"]["interfaces"].as_array().is_some_and(|a| !a.is_empty()));
    }
}

/// Processes of group `pgid` that still run (zombies, which run nothing, left out).
fn running_in_group(pgid: i32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid pgrp ...; comm may hold spaces, so split after the ')'.
            let rest: Vec<&str> = stat
                .rsplit_once(") ")
                .map_or(Vec::new(), |(_, r)| r.split(' ').collect());
            rest.len() > 2 && rest[0] != "Z" && rest[2] == pgid.to_string()
        })
        .collect()
}

#[test]
fn counts_match_nginxs_access_log() {
    let Some(nginx) = Nginx::start() else { return };
    let url = format!("http://127.0.0.1:{}/512k.bin", nginx.port);
    let v = http_json(&[&url, "--users", "16", "-d", "2s", "--no-agent"]);
    let responses = u(&v, "/summary/responses");
    let bytes_in = u(&v, "/summary/bytes_in");
    // nginx logs a request when it is done with it, including those the client left in flight:
    // wait until the log holds every response linerate counted and every byte it read.
    poll_until(Duration::from_secs(10), "nginx to log the run", || {
        let (logged, bytes_sent, _) = nginx.log();
        logged >= responses && bytes_sent >= bytes_in
    });
    let (logged, bytes_sent, body_sent) = nginx.log();
    let in_flight = u(&v, "/summary/in_flight_at_end");
    assert!(responses > 50, "{responses} responses");
    // Every request begun is a response, an error or still in flight at the end.
    assert_eq!(
        u(&v, "/summary/requests_started"),
        responses + u(&v, "/summary/errors/total") + in_flight
    );
    assert!(
        logged >= responses && logged <= responses + in_flight,
        "nginx logged {logged}, linerate counted {responses} (+{in_flight} in flight)"
    );
    assert_eq!(u(&v, "/summary/body_bytes"), responses * 512 * 1024);
    let slack = (in_flight + 1) * (512 * 1024 + 512);
    assert!(
        bytes_sent >= bytes_in && bytes_sent <= bytes_in + slack,
        "nginx sent {bytes_sent} bytes, linerate read {bytes_in} (slack {slack})"
    );
    assert!(body_sent >= responses * 512 * 1024);
    assert_eq!(u(&v, "/summary/errors/total"), 0);
    assert!(v["summary"].get("server").is_none(), "no agent was asked for");
    let group = nginx.group();
    drop(nginx);
    let left = running_in_group(group);
    assert!(left.is_empty(), "nginx processes left after the test: {left:?}");
}

/// A server that misbehaves by turns: reset, stall, 500, short body, then a good answer.
/// Reads a request's head from `s` (blocking, 2 s at most per read): false when the connection
/// ended or stalled first.
fn read_request_head(s: &mut TcpStream) -> bool {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(k) => got.extend_from_slice(&buf[..k]),
        }
    }
    true
}

fn bad_server(stop: Arc<AtomicBool>) -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let port = l.local_addr().expect("addr").port();
    let h = std::thread::spawn(move || {
        let n = AtomicU64::new(0);
        let mut stalled = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            read_request_head(&mut s);
            match n.fetch_add(1, Ordering::Relaxed) % 5 {
                0 => {
                    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                }
                1 => stalled.push(s),
                2 => {
                    let _ = s.write_all(b"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno");
                }
                3 => {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nhalf");
                }
                _ => {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
                }
            }
        }
    });
    (port, h)
}

/// `linerate http` for `seconds` with 4 users and `timeout` against two URLs: one of
/// [`bad_server`]'s and one on a port nothing listens on (refused). Returns the document, how
/// long the run took and the refused URL.
fn against_bad_and_refused(seconds: &str, timeout: &str) -> (Value, Duration, String) {
    let stop = Arc::new(AtomicBool::new(false));
    let (port, server) = bad_server(Arc::clone(&stop));
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let good = format!("http://127.0.0.1:{port}/x");
    let refused = format!("http://127.0.0.1:{closed}/x");
    let t = Instant::now();
    let args = [
        &good,
        &refused,
        "--users",
        "4",
        "-d",
        seconds,
        "--timeout",
        timeout,
        "--no-agent",
    ];
    let v = http_json(&args);
    let took = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    (v, took, refused)
}

#[test]
fn a_misbehaving_server_gives_errors_by_class_and_the_run_ends_on_time() {
    let (v, took, _) = against_bad_and_refused("3s", "500ms");
    assert!(took < Duration::from_secs(8), "took {took:?} for a 3 s run");
    let e = &v["summary"]["errors"];
    for class in ["refused", "reset", "timeout", "bad_status", "short_body"] {
        assert!(e[class].as_u64().is_some_and(|n| n > 0), "no {class} in {e}");
    }
    assert!(u(&v, "/summary/status/2xx") > 0, "the good answers were counted");
    assert_eq!(u(&v, "/summary/status/5xx"), e["bad_status"].as_u64().expect("n"));
    assert!(u(&v, "/summary/connections/unsuccessful") >= e["refused"].as_u64().expect("n"));
    assert_eq!(v["partial"], false);
}

#[test]
fn bad_http_options_are_one_line_errors() {
    for args in [
        vec!["http", "ftp://127.0.0.1/"],
        vec!["http", "http://127.0.0.1:1/", "--users", "0"],
        vec!["http", "http://127.0.0.1:1/", "--users", "8,x"],
        vec!["http", "http://127.0.0.1:1/", "--ramp", "soon"],
        vec!["http", "http://127.0.0.1:1/", "--rate", "10", "--users", "1,2"],
        vec!["http", "http://127.0.0.1:1/", "--agent", "127.0.0.1:1", "-d", "1s"],
    ] {
        let out = linerate(&args, Duration::from_secs(20));
        assert!(!out.status.success(), "{args:?} was accepted");
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}: {}", stderr(&out));
    }
}

/// The document on stdout, whatever the exit status (a partial run or one whose requests all
/// failed has its own status; see README).
fn document_of(out: &std::process::Output) -> Value {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    });
    check_document(&v);
    assert_eq!(v["test"], "http");
    v
}

/// Every connection begun is established, failed (with an error class) or still open.
fn assert_connections_add_up(v: &Value) {
    let c = &v["summary"]["connections"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("no connections.{k} in {c}"));
    assert_eq!(
        n("attempted"),
        n("successful") + n("unsuccessful") + n("in_flight_at_end"),
        "{c}"
    );
    let e = &v["summary"]["errors"];
    let classes: u64 = ["refused", "reset", "timeout", "local_limit", "other"]
        .iter()
        .map(|k| e[k].as_u64().unwrap_or_else(|| panic!("no errors.{k} in {e}")))
        .sum();
    assert!(
        classes >= n("unsuccessful"),
        "failed connections without a class: {c} {e}"
    );
}

#[test]
fn issue_13_connections_add_up_with_and_without_keepalive() {
    let agent = http_agent();
    let url = agent.http_url("/bytes/1000");
    for keepalive in [false, true] {
        // A ramp: connections begun in it and established after are not counted as ok.
        let mut args = vec![
            url.as_str(),
            "--users",
            "16",
            "--ramp",
            "500ms",
            "-d",
            "1s",
            "--no-agent",
        ];
        if keepalive {
            args.push("--keepalive");
        }
        let v = http_json(&args);
        assert_connections_add_up(&v);
        let ok = u(&v, "/summary/connections/successful");
        if keepalive {
            // Each user's one connection began in the ramp: none counts in the window.
            assert!(ok <= 16, "{ok} connections for 16 keep-alive users");
        } else {
            assert!(ok > 0);
        }
        assert_eq!(u(&v, "/summary/errors/local_limit"), 0);
        assert!(
            !v["notes"].to_string().contains("every request failed"),
            "{}",
            v["notes"]
        );
    }
}

#[test]
fn issue_13_a_resetting_server_and_a_refusing_one_keep_the_identity() {
    let (v, _, refused) = against_bad_and_refused("2s", "300ms");
    assert_connections_add_up(&v);
    assert!(u(&v, "/summary/errors/refused") > 0);
    assert!(u(&v, "/summary/connections/unsuccessful") >= u(&v, "/summary/errors/refused"));

    // Nothing but refusals: every request failed, and the document says so.
    let out = linerate(
        &["http", "--json", &refused, "--users", "2", "-d", "1s", "--no-agent"],
        LIMIT,
    );
    let v = document_of(&out);
    assert_connections_add_up(&v);
    assert_eq!(u(&v, "/summary/responses"), 0);
    assert!(u(&v, "/summary/errors/refused") > 0);
    assert!(
        v["summary"]["status"].get("2xx").is_none(),
        "{}",
        v["summary"]["status"]
    );
    assert!(
        v["notes"].to_string().contains("every request failed"),
        "{}",
        v["notes"]
    );
}

/// `linerate http ARGS` with its open files limited to `files` (soft and hard).
fn http_with_open_files(files: u64, args: &[&str]) -> std::process::Output {
    let mut cmd = linerate_command();
    cmd.arg("http").args(args);
    // SAFETY: between fork and exec only setrlimit runs, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: files,
                rlim_max: files,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    run_bounded(&mut cmd, LIMIT)
}

#[test]
fn issue_13_users_past_the_open_files_limit_are_local_limit_errors() {
    let agent = http_agent();
    let url = agent.http_url("/bytes/1000");
    let args = ["--users", "2000", "-d", "2s", "--no-agent"];
    let t = Instant::now();
    let mut json = vec!["--json", url.as_str()];
    json.extend_from_slice(&args);
    let out = http_with_open_files(256, &json);
    let took = t.elapsed();
    let v = document_of(&out);
    assert!(took < Duration::from_secs(5), "took {took:?} for a 2 s run");
    assert!(u(&v, "/summary/errors/local_limit") > 0, "{}", v["summary"]["errors"]);
    assert_connections_add_up(&v);
    assert!(
        v["notes"]
            .to_string()
            .contains("ran out of file descriptors or local ports"),
        "{}",
        v["notes"]
    );
    let mut text = vec![url.as_str()];
    text.extend_from_slice(&args);
    let out = http_with_open_files(256, &text);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("WARNING: the load generator ran out of file descriptors"),
        "{text}"
    );
}

#[test]
fn issue_13_http_stops_when_its_agent_dies() {
    let mut agent = http_agent();
    let url = agent.http_url("/bytes/1000");
    let t = Instant::now();
    let client = linerate_command()
        .args([
            "http",
            "--json",
            &url,
            "--users",
            "4",
            "-d",
            "10s",
            "--agent",
            &agent.addr,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn linerate http");
    std::thread::sleep(Duration::from_secs(1));
    agent.child.kill().expect("SIGKILL the agent");
    let _ = agent.child.wait();
    let out = wait_bounded(client, LIMIT);
    let took = t.elapsed();
    let v = document_of(&out);
    assert!(
        took < Duration::from_secs(4),
        "took {took:?} after the agent died at 1 s"
    );
    assert_eq!(v["partial"], true);
    assert!(
        v["notes"].to_string().contains("control connection was lost"),
        "{}",
        v["notes"]
    );
    assert!(f(&v, "/summary/steady_seconds") < 3.0);
}

/// `linerate http --json ARGS` with its exit status, and the document it printed (a failed run
/// prints one too).
fn http_status(args: &[&str]) -> (Option<i32>, Value) {
    let mut full = vec!["http", "--json"];
    full.extend_from_slice(args);
    let out = linerate(&full, LIMIT);
    let v = document_of(&out);
    (out.status.code(), v)
}

/// A response other than 2xx is a failed request, not throughput. A run of
/// nothing but 404s fails (exit 4); one where half fail is complete by default and fails past
/// the `--max-errors` the user gates on, by count or by share.
#[test]
fn issue_23_failed_responses_fail_the_run_and_max_errors_gates_it() {
    let agent = http_agent();
    let missing = agent.http_url("/issue-23/not-here");
    let found = agent.http_url("/bytes/100");
    let run = ["--users", "2", "-d", "1s", "--no-agent"];

    let mut args = vec![missing.as_str()];
    args.extend_from_slice(&run);
    let (code, v) = http_status(&args);
    assert_eq!(code, Some(4), "every response a 404: {}", v["notes"]);
    let responses = u(&v, "/summary/responses");
    assert!(responses > 0, "the 404s were read");
    assert_eq!(u(&v, "/summary/status/4xx"), responses);
    assert_eq!(u(&v, "/summary/errors/bad_status"), responses);
    assert!(f(&v, "/summary/responses_per_second") > 0.0);
    assert_eq!(f(&v, "/summary/successful_responses_per_second"), 0.0);
    assert_eq!(f(&v, "/summary/failed_percent"), 100.0);
    assert!(v["summary"]["max_errors"].is_null());
    // The text leads with the successful responses, and says why the run failed.
    let mut text = vec!["http", missing.as_str()];
    text.extend_from_slice(&run);
    let out = linerate(&text, LIMIT);
    assert_eq!(out.status.code(), Some(4));
    let text = String::from_utf8_lossy(&out.stdout);
    let ok_line = text
        .lines()
        .find(|l| l.contains("Successful responses (2xx)"))
        .unwrap_or_else(|| panic!("no successful responses line in {text}"));
    assert!(ok_line.ends_with(" 0 (0.0 per second)"), "{ok_line}");
    assert!(text.contains("FAILED: not one request got a 2xx response"), "{text}");

    // The users take the two URLs in turn: about half the requests fail.
    let mixed = |extra: &[&str]| {
        let mut args = vec![found.as_str(), missing.as_str()];
        args.extend_from_slice(&run);
        args.extend_from_slice(extra);
        http_status(&args)
    };
    let (code, v) = mixed(&[]);
    assert_eq!(code, Some(0), "some succeeded, no budget: {}", v["notes"]);
    let (ok, bad) = (u(&v, "/summary/status/2xx"), u(&v, "/summary/status/4xx"));
    assert!(ok > 0 && bad > 0, "{ok} 2xx, {bad} 4xx");
    assert_eq!(u(&v, "/summary/errors/total"), bad);
    let share = f(&v, "/summary/failed_percent");
    assert!((share - bad as f64 * 100.0 / (ok + bad) as f64).abs() < 1e-9, "{share}");
    assert!((40.0..=60.0).contains(&share), "{share} % failed of URLs taken in turn");
    let ok_per_s = f(&v, "/summary/successful_responses_per_second");
    assert!((ok_per_s - ok as f64 / f(&v, "/summary/steady_seconds")).abs() < 1e-6 * ok_per_s);
    assert!(ok_per_s < f(&v, "/summary/responses_per_second"));

    let (code, v) = mixed(&["--max-errors", "70%"]);
    assert_eq!(code, Some(0), "under its budget: {}", v["notes"]);
    assert_eq!(v["summary"]["max_errors"]["percent"], 70.0);
    let (code, v) = mixed(&["--max-errors", "10%"]);
    assert_eq!(code, Some(4), "over its budget: {}", v["summary"]);
    assert_eq!(v["summary"]["max_errors"]["percent"], 10.0);
    assert!(
        v["notes"].to_string().contains("over --max-errors 10%"),
        "{}",
        v["notes"]
    );
    let (code, v) = mixed(&["--max-errors", "0"]);
    assert_eq!(code, Some(4), "any failure is over 0: {}", v["summary"]["errors"]);
    assert_eq!(v["summary"]["max_errors"]["count"], 0);
    let (code, _) = mixed(&["--max-errors", "100000000"]);
    assert_eq!(code, Some(0));
    // A bad budget is a usage error.
    let out = linerate(&["http", &found, "--max-errors", "150%", "--no-agent"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// A server whose every other answer comes 300 ms late and stops short of its Content-Length
/// (the client counts a short body: a failed request with a first byte), the rest at once and
/// whole. One thread per connection, so a slow answer holds up no other.
fn late_and_short_server(stop: Arc<AtomicBool>) -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let port = l.local_addr().expect("addr").port();
    let h = std::thread::spawn(move || {
        let mut n = 0u64;
        let mut answering = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            n += 1;
            let late = n.is_multiple_of(2);
            answering.push(std::thread::spawn(move || {
                if !read_request_head(&mut s) {
                    return;
                }
                if late {
                    std::thread::sleep(Duration::from_millis(300));
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nhalf");
                } else {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
                }
            }));
        }
        for a in answering {
            let _ = a.join();
        }
    });
    (port, h)
}

/// The time to first byte and the response time cover the same responses, so
/// no TTFB percentile passes the response time's. The late answers that end short were counted
/// in the first and not the second: TTFB p99 300 ms beside a response time max under 1 ms.
#[test]
fn issue_23_ttfb_never_exceeds_the_response_time() {
    let stop = Arc::new(AtomicBool::new(false));
    let (port, server) = late_and_short_server(Arc::clone(&stop));
    let url = format!("http://127.0.0.1:{port}/x");
    let v = http_json(&[&url, "--users", "4", "-d", "2s", "--timeout", "5s", "--no-agent"]);
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    assert!(u(&v, "/summary/errors/short_body") > 0, "{}", v["summary"]["errors"]);
    assert!(u(&v, "/summary/status/2xx") > 0);
    let (ttfb, rt) = (&v["summary"]["ttfb_us"], &v["summary"]["response_time_us"]);
    for k in ["min", "mean", "p50", "p90", "p99", "p999", "max"] {
        let (t, r) = (ttfb[k].as_f64().expect(k), rt[k].as_f64().expect(k));
        assert!(t <= r, "ttfb {k} {t} us over the response time's {r} us");
        assert!(t <= f(&v, "/summary/response_time_us/max"), "ttfb {k} {t} us");
    }
}

/// A load over two servers, each with its agent (on 127.0.0.1 and
/// 127.0.0.2), reports each server's share and its host's cost, and their total: a COST
/// column per server, as Avalanche's per-port figures.
#[test]
fn issue_23_two_servers_each_get_a_column_and_a_total() {
    let one = Agent::start_with(&[], &["--bind", "127.0.0.1", "--port", "0"], &["--http-port", "0"], &[]);
    let two = Agent::start_with(&[], &["--bind", "127.0.0.2", "--port", "0"], &["--http-port", "0"], &[]);
    let urls = [one.http_url("/bytes/1000"), two.http_url("/bytes/3000")];
    let run = [
        urls[0].as_str(),
        urls[1].as_str(),
        "--users",
        "4",
        "-d",
        "1s",
        "--agent",
        &one.addr,
        "--agent",
        &two.addr,
    ];
    let v = http_json(&run);
    let s = &v["summary"];
    let servers = s["servers"].as_array().expect("summary.servers");
    assert_eq!(servers.len(), 2, "{}", s["servers"]);
    let mut sums = [0u64; 4];
    for (i, (server, agent)) in servers.iter().zip([&one, &two]).enumerate() {
        let http = agent.http_addr.as_deref().expect("http address");
        assert_eq!(server["server"], http);
        assert_eq!(server["agent"], agent.addr.as_str());
        let responses = u(server, "/responses");
        assert!(responses > 0, "server {i}: {server}");
        // Each URL's body length tells its bytes apart: every response read whole from its own.
        let body = [1000, 3000][i];
        assert!(u(server, "/bytes_in") > responses * body, "server {i}: {server}");
        assert!(
            server["host"]["cpu"]["host_percent"].is_number(),
            "server {i}: {server}"
        );
        assert_eq!(u(server, "/host/bytes"), u(server, "/bytes_in"));
        let c = &server["connections"];
        assert_eq!(
            u(c, "/attempted"),
            u(c, "/successful") + u(c, "/unsuccessful") + u(c, "/in_flight_at_end"),
            "server {i}: {c}"
        );
        for (sum, key) in sums
            .iter_mut()
            .zip(["/responses", "/errors", "/bytes_in", "/connections/attempted"])
        {
            *sum += u(server, key);
        }
    }
    assert_eq!(sums[0], u(&v, "/summary/responses"));
    assert_eq!(sums[1], u(&v, "/summary/errors/total"));
    assert_eq!(sums[2], u(&v, "/summary/bytes_in"));
    assert_eq!(sums[3], u(&v, "/summary/connections/attempted"));
    // The servers' total: both agents counted, the one machine they share once.
    let counted: Vec<&str> = s["server"]["counted_by"]
        .as_array()
        .expect("counted_by")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(counted, [one.addr.as_str(), two.addr.as_str()]);
    assert_eq!(u(&v, "/summary/server/hosts"), 1);
    assert_eq!(u(&v, "/summary/server/bytes"), u(&v, "/summary/bytes_in"));

    let out = linerate(&[&["http"][..], &run[..]].concat(), LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let cost = text
        .lines()
        .find(|l| l.starts_with("COST"))
        .unwrap_or_else(|| panic!("no COST block in {text}"));
    for column in [
        format!("server {}", one.http_addr.as_deref().expect("addr")),
        format!("server {}", two.http_addr.as_deref().expect("addr")),
        "servers total".to_string(),
    ] {
        assert!(cost.contains(&column), "no {column:?} in {cost:?}");
    }
    assert!(text.contains("PER SERVER"), "{text}");
}
