//! `linerate serve --iperf3-port` against Debian's `iperf3 -c` (issue 26): TCP and UDP, -R,
//! --bidir, -P, -n, -k, -w, -l, -O, -b; iperf3's own JSON against the document the agent stored;
//! a busy port, malformed clients, RSA authentication refused; on a 200 Mbit/s lab link beside
//! `iperf3 -s`, and the port loopback only without --iperf3-allow.

use crate::util::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Whether iperf3 is here (CI installs it: `.ci/run`).
fn have_iperf3() -> bool {
    can_run(&[Need::Program {
        name: "iperf3",
        package: "iperf3",
    }])
}

/// A `linerate serve --iperf3-port 0` process (in a namespace with `prefix`), its stderr kept;
/// killed on drop.
struct Server {
    child: Child,
    /// Where the iperf3 port listens, HOST:PORT as it printed it.
    iperf3: String,
    port: u16,
    db: std::path::PathBuf,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(prefix: &[&str], args: &[&str]) -> Server {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let db = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("it-iperf3-{}-{n}", std::process::id()))
            .join("results.db");
        let _ = std::fs::remove_file(&db);
        let mut cmd = match prefix {
            [] => Command::new(BIN),
            [first, rest @ ..] => {
                let mut c = Command::new(first);
                c.args(rest).arg(BIN);
                c
            }
        };
        cmd.arg("serve")
            .args(["--port", "0", "--iperf3-port", "0", "--db"])
            .arg(&db)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start linerate serve");
        let (stdout, err) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                kept.lock().expect("lock").push(line);
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let until = Instant::now() + Duration::from_secs(10);
        let iperf3 = loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "no 'iperf3 server listening on' line: {:?}",
                    stderr.lock().expect("lock")
                )
            });
            if let Some(addr) = line.strip_prefix("iperf3 server listening on ") {
                break addr.trim().to_string();
            }
        };
        let port = port_of(&iperf3);
        Server {
            child,
            iperf3,
            port,
            db,
            stderr,
        }
    }

    /// On 127.0.0.1.
    fn local() -> Server {
        Server::start(&[], &["--bind", "127.0.0.1"])
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().expect("lock").clone()
    }

    /// The `n`th document it stored (1-based), once its line says so.
    fn stored(&self, n: usize) -> Value {
        let needle = format!("(stored as #{n})");
        poll_until(Duration::from_secs(15), "the agent storing the test", || {
            self.stderr().iter().any(|l| l.contains(&needle))
        });
        let db = self.db.to_string_lossy().into_owned();
        json_of(&linerate(
            &["results", "show", "--db", &db, &n.to_string(), "--json"],
            Duration::from_secs(30),
        ))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = self.db.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `iperf3 -c HOST -p PORT -J ARGS` (in a namespace with `prefix`); its JSON and whether it
/// succeeded.
fn iperf3_in(prefix: &[&str], host: &str, port: u16, args: &[&str]) -> (bool, Value) {
    let port = port.to_string();
    let mut cmd = match prefix {
        [] => Command::new("iperf3"),
        [first, rest @ ..] => {
            let mut c = Command::new(first);
            c.args(rest).arg("iperf3");
            c
        }
    };
    cmd.args(["-c", host, "-p", &port, "-J"]).args(args);
    let out = run_bounded(&mut cmd, Duration::from_secs(60));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("iperf3 printed no JSON ({e}): {}", stderr(&out)));
    // iperf3 3.12 -J may exit 0 on an error it put in its JSON.
    (out.status.success() && v["error"].is_null(), v)
}

fn iperf3(server: &Server, args: &[&str]) -> Value {
    let (ok, v) = iperf3_in(&[], "127.0.0.1", server.port, args);
    assert!(
        ok,
        "iperf3 {args:?} failed: {}; agent: {:?}",
        v["error"],
        server.stderr()
    );
    v
}

/// `got` within `share` of `want` (both non-zero).
fn near(got: f64, want: f64, share: f64, what: &str) {
    assert!(want > 0.0 && got > 0.0, "{what}: {got} and {want}");
    let off = (got - want).abs() / want;
    assert!(
        off <= share,
        "{what}: {got} against {want} ({:.2} % apart)",
        off * 100.0
    );
}

/// iperf3's byte counts against the stored document's: forward or reverse as the test ran, and
/// under --bidir both. Returns the document.
fn agree(server: &Server, n: usize, args: &[&str], v: &Value) -> Value {
    let doc = server.stored(n);
    check_document(&doc);
    assert_eq!(doc["partial"], false, "{args:?}: {:?}", doc["notes"]);
    assert_eq!(doc["iperf3"]["role"], "client");
    assert_eq!(doc["iperf3"]["version"], "3.12", "Debian 12's iperf3 says its version");
    // The iperf3 client's host is not this one: the document does not claim it is.
    assert_eq!(doc["hosts"]["client"]["hostname"], "", "{:?}", doc["hosts"]);
    let e = &v["end"];
    let bytes = |p: &str| f(e, p);
    let (forward, back) = (
        &doc["summary"]["directions"]["forward"],
        &doc["summary"]["directions"]["reverse"],
    );
    if args.contains(&"--bidir") {
        near(
            f(forward, "/sent/bytes"),
            bytes("/sum_sent/bytes"),
            0.02,
            "forward sent",
        );
        near(
            f(forward, "/received/bytes"),
            bytes("/sum_received/bytes"),
            0.02,
            "forward received",
        );
        near(
            f(back, "/sent/bytes"),
            bytes("/sum_sent_bidir_reverse/bytes"),
            0.02,
            "reverse sent",
        );
        near(
            f(back, "/received/bytes"),
            bytes("/sum_received_bidir_reverse/bytes"),
            0.02,
            "reverse received",
        );
    } else {
        let s = &doc["summary"];
        near(
            f(s, "/sent/bytes"),
            bytes("/sum_sent/bytes"),
            0.02,
            &format!("{args:?} sent"),
        );
        near(
            f(s, "/received/bytes"),
            bytes("/sum_received/bytes"),
            0.02,
            &format!("{args:?} received"),
        );
        // What the two ends counted agree too, loosely: a receiver misses what was still in
        // the sender's buffers at TEST_END (on a loaded box, a larger share of a short test).
        let (received, sent) = (f(s, "/received/bytes"), f(s, "/sent/bytes"));
        near(received, sent, 0.25, &format!("{args:?} received of sent"));
    }
    doc
}

#[test]
fn issue_26_iperf3_tcp_one_way_against_serve_agrees_with_the_stored_document() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    for (n, args) in [&["-t", "1"][..], &["-t", "1", "-R"], &["-t", "1", "-P", "4"]]
        .iter()
        .enumerate()
    {
        let v = iperf3(&server, args);
        let doc = agree(&server, n + 1, args, &v);
        let streams = doc["iperf3"]["streams"].as_array().expect("streams").len();
        assert_eq!(streams, if args.contains(&"-P") { 4 } else { 1 }, "{args:?}");
    }
}

#[test]
fn issue_26_iperf3_tcp_bidir_counts_and_socket_options_against_serve() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    let runs: [&[&str]; 5] = [
        &["-t", "1", "--bidir"],
        &["-n", "64M"],
        &["-k", "400"],
        &["-t", "1", "-w", "256K", "-l", "64K"],
        &["-t", "1", "-O", "1"],
    ];
    for (n, args) in runs.iter().enumerate() {
        let v = iperf3(&server, args);
        let doc = agree(&server, n + 1, args, &v);
        match args[0] {
            "-n" => assert!(f(&v, "/end/sum_sent/bytes") >= 64.0 * 1048576.0, "{v}"),
            "-k" => assert_eq!(u(&v, "/end/sum_sent/bytes"), 400 * 131_072),
            _ => {}
        }
        if args.contains(&"-l") {
            assert_eq!(u(&doc, "/options/buffer_bytes"), 65_536);
            assert_eq!(u(&doc, "/options/window_bytes"), 262_144);
        }
        if args.contains(&"-O") {
            assert_eq!(f(&doc, "/options/warmup_seconds"), 1.0);
        }
    }
}

#[test]
fn issue_26_iperf3_udp_against_serve_agrees_on_bytes_loss_and_jitter() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    let runs: [&[&str]; 2] = [&["-u", "-b", "20M", "-t", "1"], &["-u", "-b", "20M", "-t", "1", "-R"]];
    for (n, args) in runs.iter().enumerate() {
        let v = iperf3(&server, args);
        let doc = agree(&server, n + 1, args, &v);
        let sum = &v["end"]["sum"];
        // The loss the receiver counted: iperf3's, as the document keeps it per stream, and the
        // summary's (which also counts the datagrams this end sent after the client stopped
        // reading, at its TEST_END: at most a datagram or two).
        let per_stream: u64 = doc["iperf3"]["streams"]
            .as_array()
            .expect("streams")
            .iter()
            .filter_map(|s| s["lost"].as_u64())
            .sum();
        let (lost, packets) = (u(sum, "/lost_packets"), u(sum, "/packets"));
        if args.contains(&"-R") {
            assert_eq!(per_stream, lost, "{args:?}");
        }
        let summary_lost = u(&doc, "/summary/lost");
        assert!(
            summary_lost.abs_diff(lost) <= (packets / 50).max(2),
            "{args:?}: {summary_lost} lost against iperf3's {lost} of {packets}"
        );
        let (ours, theirs) = (f(&doc, "/summary/jitter_us"), f(sum, "/jitter_ms") * 1e3);
        assert!(
            (ours - theirs).abs() <= theirs * 0.02 + 0.5,
            "{args:?}: jitter {ours} us against iperf3's {theirs} us"
        );
        assert_eq!(
            doc["options"]["gap_ns"].as_u64().map(|g| g > 0),
            Some(true),
            "-b paces: {}",
            doc["options"]
        );
    }
}

#[test]
fn issue_26_a_second_iperf3_client_is_told_the_server_is_busy() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    let port = server.port.to_string();
    let first = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-J", "-t", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start iperf3");
    // A second and a half's head start: its test runs by then, and for 4 s.
    std::thread::sleep(Duration::from_millis(1500));
    let (ok, second) = iperf3_in(&[], "127.0.0.1", server.port, &["-t", "1"]);
    assert!(!ok, "{second}");
    let error = second["error"].as_str().unwrap_or_default();
    assert!(error.contains("the server is busy"), "{error}");
    let out = wait_bounded(first, Duration::from_secs(30));
    assert!(out.status.success(), "the first still completes: {}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    agree(&server, 1, &["-t", "4"], &v);
}

/// A raw control connection that sent a cookie and read PARAM_EXCHANGE.
fn at_params(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(b"abcdefghijklmnopqrstuvwxyz234567abcd\0").expect("cookie");
    let mut state = [0u8; 1];
    s.read_exact(&mut state).expect("a state");
    assert_eq!(state[0], 9, "PARAM_EXCHANGE");
    s
}

/// What a server says to `message` (a length and that many bytes): SERVER_ERROR (-2), then
/// iperf3's i_errno.
fn server_error_after(port: u16, length: u32, body: &[u8]) -> i32 {
    let mut s = at_params(port);
    s.write_all(&length.to_be_bytes()).expect("length");
    let _ = s.write_all(body);
    let mut answer = [0u8; 9];
    s.read_exact(&mut answer).expect("an answer");
    assert_eq!(answer[0] as i8, -2, "SERVER_ERROR: {answer:?}");
    i32::from_be_bytes(answer[1..5].try_into().expect("four bytes"))
}

/// Whether a peer closed `s` (or reset it) within its read timeout, without sending a byte.
fn closed(s: &mut TcpStream) -> bool {
    match s.read(&mut [0u8; 8]) {
        Ok(n) => n == 0,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

#[test]
fn issue_26_malformed_iperf3_clients_are_refused_and_the_next_is_served() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    // One that says nothing: closed at the handshake deadline (5 s), meanwhile the rest go on.
    let mut silent = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    silent.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let opened = Instant::now();
    // A cookie of garbage: closed without a word.
    let mut garbage = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    garbage
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    garbage.write_all(&[b'X'; 37]).expect("write");
    assert!(closed(&mut garbage), "a garbage cookie is closed");
    // Parameters of the wrong type, and a megabyte of them: IERECVPARAMS (114).
    let wrong = br#"{"tcp":"yes","time":1}"#;
    assert_eq!(server_error_after(server.port, wrong.len() as u32, wrong), 114);
    assert_eq!(
        server_error_after(server.port, 1 << 20, &[b' '; 4096]),
        114,
        "refused at its length"
    );
    let not_json = b"{not json";
    assert_eq!(server_error_after(server.port, not_json.len() as u32, not_json), 114);
    assert!(closed(&mut silent), "the silent one is closed");
    assert!(opened.elapsed() < Duration::from_secs(9), "{:?}", opened.elapsed());
    // The next real client is served.
    let v = iperf3(&server, &["-t", "1"]);
    agree(&server, 1, &["-t", "1"], &v);
}

#[test]
fn issue_26_rsa_authentication_is_refused_with_a_clear_message() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    // As iperf3 --username sends it: a parameter `authtoken` (IEAUTHTEST, 142: iperf3 prints
    // "test authorization failed").
    let params = br#"{"tcp":true,"time":1,"parallel":1,"len":131072,"authtoken":"c2VjcmV0","client_version":"3.12"}"#;
    assert_eq!(server_error_after(server.port, params.len() as u32, params), 142);
    poll_until(Duration::from_secs(10), "the agent's line", || {
        server
            .stderr()
            .iter()
            .any(|l| l.contains("RSA authentication (--username) is not supported"))
    });
    // Debian's iperf3 is built with OpenSSL: its own --username gets the same answer.
    if on_path("openssl") {
        let dir =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("it-iperf3-rsa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (private, public) = (dir.join("private.pem"), dir.join("public.pem"));
        let made = run_bounded(
            Command::new("openssl")
                .args(["genrsa", "-out"])
                .arg(&private)
                .arg("2048"),
            Duration::from_secs(30),
        )
        .status
        .success()
            && run_bounded(
                Command::new("openssl")
                    .args(["rsa", "-pubout", "-in"])
                    .arg(&private)
                    .arg("-out")
                    .arg(&public),
                Duration::from_secs(30),
            )
            .status
            .success();
        if made {
            let public = public.to_string_lossy().into_owned();
            let port = server.port.to_string();
            let out = run_bounded(
                Command::new("iperf3")
                    .args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "--username", "u"])
                    .args(["--rsa-public-key-path", &public])
                    .env("IPERF3_PASSWORD", "pw"),
                Duration::from_secs(30),
            );
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
            assert!(!out.status.success(), "{said}");
            assert!(said.contains("test authorization failed"), "{said}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    // And the agent serves on.
    let v = iperf3(&server, &["-t", "1"]);
    agree(&server, 1, &["-t", "1"], &v);
}

#[test]
fn issue_26_on_a_200mbit_link_serve_gives_what_iperf3_s_gives_and_is_loopback_only_unless_allowed() {
    if !have_iperf3() {
        return;
    }
    // Timed on a shaped link: not beside another such test (util::quiet_machine).
    let _quiet = crate::util::quiet_machine();
    let Some(lab) = Lab::up(2, &["rate=200mbit"]) else {
        return;
    };
    let hosts = lab.status["hosts"].as_array().expect("hosts");
    let h1 = hosts[0]["address"].as_str().expect("h1's address").to_string();
    let h2 = hosts[1]["address"].as_str().expect("h2's address").to_string();
    let (ns1, ns2) = (lab.namespace("h1"), lab.namespace("h2"));
    let in_h1 = ["ip", "netns", "exec", ns1.as_str()];
    let in_h2 = ["ip", "netns", "exec", ns2.as_str()];
    // Without --iperf3-allow the port is loopback only: h1 cannot reach it.
    let closed_port = Server::start(&in_h2, &["--bind", &h2, "--no-auth"]);
    assert!(closed_port.iperf3.starts_with("127.0.0.1:"), "{}", closed_port.iperf3);
    let (ok, v) = iperf3_in(&in_h1, &h2, closed_port.port, &["-t", "1"]);
    assert!(!ok, "{v}");
    drop(closed_port);
    // With it, h1 is let in and h2's own address (outside the block) is closed at accept.
    let allow = format!("{h1}/32");
    let server = Server::start(&in_h2, &["--bind", &h2, "--no-auth", "--iperf3-allow", &allow]);
    assert_eq!(server.iperf3, format!("{h2}:{}", server.port));
    let (ok, v) = iperf3_in(&in_h2, &h2, server.port, &["-t", "1"]);
    assert!(!ok, "{v}");
    poll_until(Duration::from_secs(10), "the refusal's line", || {
        server
            .stderr()
            .iter()
            .any(|l| l.contains("outside every --iperf3-allow block"))
    });
    // iperf3 -s on the same link: a port free in h2's fresh namespace.
    let reference = in_netns(&ns2, || {
        std::net::TcpListener::bind((h2.as_str(), 0))
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port()
    });
    let runs: [&[&str]; 5] = [
        &["-t", "2"],
        &["-t", "2", "-R", "-P", "4"],
        &["-t", "2", "--bidir"],
        &["-t", "2", "-u", "-b", "150M"],
        &["-t", "2", "-u", "-b", "150M", "-R"],
    ];
    for (n, args) in runs.iter().enumerate() {
        let reference_port = reference.to_string();
        let mut iperf3_s = Command::new("ip")
            .args(["netns", "exec", &ns2, "iperf3", "-s", "-1", "-p", &reference_port])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start iperf3 -s");
        let (ok, theirs) = (0..50)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(100));
                iperf3_in(&in_h1, &h2, reference, args)
            })
            .find(|(ok, _)| *ok)
            .unwrap_or((false, Value::Null));
        let _ = iperf3_s.kill();
        let _ = iperf3_s.wait();
        assert!(ok, "iperf3 -c against iperf3 -s {args:?}: {theirs}");
        let (ok, ours) = iperf3_in(&in_h1, &h2, server.port, args);
        assert!(
            ok,
            "iperf3 -c against linerate serve {args:?}: {ours}; {:?}",
            server.stderr()
        );
        let rate = |v: &Value| f(v, "/end/sum_received/bits_per_second");
        // Under --bidir each direction's data shares the shaped link with the other's ACKs:
        // here the two servers' runs came 0.2-2.7 % apart, and once 5.7 % on a loaded CI box;
        // one-way runs stay within 0.2 %.
        let share = if args.contains(&"--bidir") { 0.08 } else { 0.05 };
        near(
            rate(&ours),
            rate(&theirs),
            share,
            &format!("{args:?}: received, linerate serve against iperf3 -s"),
        );
        let expected = if args.contains(&"-u") { 150e6 } else { 200e6 };
        near(
            rate(&ours),
            expected,
            0.1,
            &format!("{args:?}: the rate asked or the link's"),
        );
        agree(&server, n + 1, args, &ours);
    }
}

#[test]
fn issue_26_an_iperf3_client_killed_mid_test_leaves_the_port_to_the_next() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    let port = server.port.to_string();
    for args in [&["-t", "10"][..], &["-t", "10", "-u", "-b", "10M", "-R"]] {
        let mut doomed = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start iperf3");
        std::thread::sleep(Duration::from_secs(1));
        let _ = doomed.kill();
        let _ = doomed.wait();
        let killed = Instant::now();
        // Its test is aborted once its control connection closes: the port is free within
        // moments, not at the end of the 10 s it asked for.
        let served = std::iter::repeat_with(|| {
            std::thread::sleep(Duration::from_millis(200));
            iperf3_in(&[], "127.0.0.1", server.port, &["-t", "1"])
        })
        .take_while(|_| killed.elapsed() < Duration::from_secs(5))
        .find(|(ok, _)| *ok);
        assert!(
            served.is_some(),
            "{args:?}: no client served after the kill; {:?}",
            server.stderr()
        );
        assert!(killed.elapsed() < Duration::from_secs(7), "{:?}", killed.elapsed());
    }
    assert!(
        server
            .stderr()
            .iter()
            .any(|l| l.contains("closed the control connection while running its test")),
        "{:?}",
        server.stderr()
    );
}

#[test]
fn issue_26_the_agents_memory_budget_refuses_an_iperf3_test_that_does_not_fit() {
    if !have_iperf3() {
        return;
    }
    let server = Server::start(&[], &["--bind", "127.0.0.1", "--max-memory", "4M"]);
    // 8 streams of 1 MiB buffers: past the 4 MiB budget, refused before any stream is made.
    let (ok, v) = iperf3_in(&[], "127.0.0.1", server.port, &["-t", "1", "-P", "8", "-l", "1M"]);
    assert!(!ok, "{v}");
    let error = v["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("unable to create a new test: Cannot allocate memory"),
        "{error}"
    );
    poll_until(Duration::from_secs(10), "the agent's line", || {
        server.stderr().iter().any(|l| l.contains("its budget is 4.0 MiB"))
    });
    // What fits still runs.
    let v = iperf3(&server, &["-t", "1"]);
    agree(&server, 1, &["-t", "1"], &v);
}
