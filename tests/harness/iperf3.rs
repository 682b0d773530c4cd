//! The iperf3 peers both test targets meet: Debian's `iperf3 -s` on a free port for
//! linerate's client (`iperf3://`), and `linerate serve --iperf3-port 0` for iperf3's client;
//! each end's counts against the other's. Every process is bounded and killed on drop.
#![allow(dead_code)]

use crate::util::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const IPERF3: Need = Need::Program {
    name: "iperf3",
    package: "iperf3",
};

/// A port nothing listens on now (the kernel's pick, released).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// An `iperf3 -s -1 -J -p PORT` (in a namespace when given), killed on drop.
pub struct Iperf3Server {
    pub child: Option<Child>,
    pub port: u16,
}

impl Iperf3Server {
    pub fn start(ns: Option<&str>, port: u16) -> Iperf3Server {
        let p = port.to_string();
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "iperf3"]);
                c
            }
            None => Command::new("iperf3"),
        };
        let child = cmd
            .args(["-s", "-1", "-J", "-p", &p])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("iperf3 -s");
        let server = Iperf3Server {
            child: Some(child),
            port,
        };
        // Listening: seen by `ss`, not by connecting (a connection would be its one test).
        let filter = format!("( sport = :{port} )");
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let mut ss = match ns {
                Some(ns) => {
                    let mut c = Command::new("ip");
                    c.args(["netns", "exec", ns, "ss"]);
                    c
                }
                None => Command::new("ss"),
            };
            let out = ss.args(["-ltnH", &filter]).output().expect("ss");
            if !out.stdout.is_empty() {
                break;
            }
            assert!(Instant::now() < until, "iperf3 -s did not listen on {port} within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// Its own JSON of the test it served (it exits after one test, -1).
    pub fn json(mut self) -> Value {
        let child = self.child.take().expect("still running");
        let out = crate::util::wait_bounded(child, Duration::from_secs(15));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("iperf3's JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    }
}

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// linerate's count `a` and iperf3's `b` within `percent` % of the larger.
pub fn agree_within(a: u64, b: u64, percent: f64, what: &str) {
    let (a, b) = (a as f64, b as f64);
    assert!(
        a > 0.0 && b > 0.0,
        "{what}: linerate {a} and iperf3 {b} both counted something"
    );
    let off = (a - b).abs() / a.max(b) * 100.0;
    assert!(
        off <= percent,
        "{what}: linerate {a} vs iperf3 {b}, {off:.2} % apart (at most {percent} %)"
    );
}

/// `linerate KIND iperf3://127.0.0.1:PORT ARGS --json` against a fresh `iperf3 -s` on
/// loopback: linerate's document and iperf3's own JSON.
pub fn against_iperf3(kind: &str, args: &[&str]) -> (Value, Value) {
    let server = Iperf3Server::start(None, free_port());
    let target = format!("iperf3://127.0.0.1:{}", server.port);
    let mut full = vec![kind, target.as_str(), "--json", "--no-store"];
    full.extend_from_slice(args);
    let doc = json_of(&linerate(&full, Duration::from_secs(30)));
    (doc, server.json())
}

/// What the document keeps of the iperf3 end: a server, its version as it said it with -J,
/// and its own per-stream byte counts (by what it did) summing to its JSON's.
pub fn far_end_bytes(doc: &Value, role: &str) -> u64 {
    let p = &doc["iperf3"];
    assert_eq!(p["role"], "server", "{p}");
    assert!(p["version"].as_str().is_some_and(|v| v.starts_with("iperf 3")), "{p}");
    assert!(
        p["cpu_util_total_percent"].as_f64().is_some(),
        "its CPU as iperf3 counts it: {p}"
    );
    p["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .filter(|s| s["role"] == role)
        .map(|s| s["bytes"].as_u64().expect("bytes"))
        .sum()
}

/// Whether iperf3 is here (CI installs it: `.ci/run`).
pub fn have_iperf3() -> bool {
    can_run(&[IPERF3])
}

/// A `linerate serve --iperf3-port 0` process (in a namespace with `prefix`), its stderr kept;
/// killed on drop.
pub struct Server {
    child: Child,
    /// Where the iperf3 port listens, HOST:PORT as it printed it.
    pub iperf3: String,
    pub port: u16,
    db: std::path::PathBuf,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn start(prefix: &[&str], args: &[&str]) -> Server {
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
    pub fn local() -> Server {
        Server::start(&[], &["--bind", "127.0.0.1"])
    }

    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lock().expect("lock").clone()
    }

    /// The `n`th document it stored (1-based), once its line says so.
    pub fn stored(&self, n: usize) -> Value {
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
pub fn iperf3_in(prefix: &[&str], host: &str, port: u16, args: &[&str]) -> (bool, Value) {
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

pub fn iperf3(server: &Server, args: &[&str]) -> Value {
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
pub fn near(got: f64, want: f64, share: f64, what: &str) {
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
pub fn agree(server: &Server, n: usize, args: &[&str], v: &Value) -> Value {
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
        // What the two ends counted: the receiver counts no more than was sent. How much less
        // (what was still in the sender's buffers at TEST_END, or lost) is a share of the run
        // that the machine's speed sets: the timed tests read it (`received_of_sent`). With -O
        // each end starts counting at its own end of the omitted second, so what was in flight
        // then is the receiver's alone: there the receiver may count more.
        let (received, sent) = (f(s, "/received/bytes"), f(s, "/sent/bytes"));
        assert!(
            received > 0.0 && (received <= sent || args.contains(&"-O")),
            "{args:?}: received {received} bytes of {sent} sent"
        );
    }
    doc
}

/// A one-way document's receiver counted within `share` of what its sender counted.
pub fn received_of_sent(doc: &Value, share: f64, what: &str) {
    let s = &doc["summary"];
    near(
        f(s, "/received/bytes"),
        f(s, "/sent/bytes"),
        share,
        &format!("{what}: received of sent"),
    );
}
