//! The harness: real agents and clients as processes, every run bounded in time, and network
//! namespaces (veth pairs, tc) created per test and removed on drop.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_linerate");

/// A `linerate serve` process, killed on drop.
pub struct Agent {
    pub child: Child,
    /// HOST:PORT to give clients.
    pub addr: String,
    /// HOST:PORT of the HTTP server, when started with `--http-port`.
    pub http_addr: Option<String>,
}

impl Agent {
    /// Starts an agent on 127.0.0.1 with any free port.
    pub fn start(extra: &[&str]) -> Agent {
        Agent::start_with(&[], &["--bind", "127.0.0.1", "--port", "0"], extra, &[])
    }

    /// Starts `prefix... linerate serve ARGS EXTRA` with environment `env` and waits for its
    /// "listening on" line.
    pub fn start_with(prefix: &[&str], args: &[&str], extra: &[&str], env: &[(&str, &str)]) -> Agent {
        let mut cmd = if prefix.is_empty() {
            Command::new(BIN)
        } else {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]).arg(BIN);
            c
        };
        cmd.arg("serve")
            .args(args)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start linerate serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads stdout to its end, so the agent never writes into a closed pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("agent printed its address within 10 s");
        let addr = address_in(&line);
        let http_addr = args.iter().chain(extra).any(|a| *a == "--http-port").then(|| {
            let line = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("agent printed its http address within 10 s");
            assert!(line.contains("http server listening on"), "{line:?}");
            address_in(&line)
        });
        Agent { child, addr, http_addr }
    }
}

/// The HOST:PORT in a "listening on" line.
fn address_in(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.contains(':') && w.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '['))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string()
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command to completion within `limit`, killing it and failing the test past that.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_bounded(child, limit)
}

pub fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    // Read both pipes on threads so a chatty child never blocks on a full pipe.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut v);
        v
    });
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Output {
                status,
                stdout: o.join().expect("stdout"),
                stderr: e.join().expect("stderr"),
            };
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("command ran past its {} s limit", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `linerate ARGS`, bounded.
pub fn linerate(args: &[&str], limit: Duration) -> Output {
    run_bounded(Command::new(BIN).args(args), limit)
}

/// Runs `linerate tcp ... --json`, requires success and returns the document.
pub fn tcp_json(args: &[&str], limit: Duration) -> Value {
    let mut full = vec!["tcp", "--json"];
    full.extend_from_slice(args);
    json_of(&linerate(&full, limit))
}

pub fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "linerate failed: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A u64 at a JSON pointer.
pub fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer at {ptr}"))
}

/// An f64 at a JSON pointer.
pub fn f(v: &Value, ptr: &str) -> f64 {
    v.pointer(ptr)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {ptr}"))
}

/// Checks the parts of a result document every test relies on (docs/results.md).
pub fn check_document(v: &Value) {
    assert_eq!(v["schema"], 2);
    assert!(v["linerate"].is_string());
    assert!(v["test"].is_string());
    assert!(v["options"].is_object());
    assert!(v["hosts"]["client"]["kernel"].is_string());
    assert!(v["intervals"].is_array());
    for side in ["sent", "received"] {
        let s = &v["summary"][side];
        for key in ["bytes", "seconds", "bits_per_second"] {
            assert!(s[key].is_number(), "summary.{side}.{key} missing");
        }
        assert!(s["cpu"].get("host_percent").is_some());
        assert!(s["cpu"].get("process_percent").is_some());
        let (bytes, secs, bps) = (u(s, "/bytes") as f64, f(s, "/seconds"), f(s, "/bits_per_second"));
        if secs > 0.0 {
            assert!(
                (bps - bytes * 8.0 / secs).abs() <= 1e-6 * bps.max(1.0),
                "{side}: bits_per_second is bytes x 8 / seconds"
            );
        }
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A `linerate lab` made for one test, with a name no other test uses, taken down on drop.
pub struct Lab {
    pub name: String,
    /// What `lab up --json` printed: hosts, addresses, links, backends.
    pub status: Value,
}

impl Lab {
    /// `linerate lab up --hosts N --link ...`.
    pub fn up(hosts: usize, links: &[&str]) -> Lab {
        assert!(is_root(), "lab tests need root (CI runs as root)");
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("it{}-{n}", std::process::id() % 100_000);
        let hosts_arg = hosts.to_string();
        let mut args = vec!["lab", "up", "--name", &name, "--hosts", &hosts_arg, "--json"];
        for l in links {
            args.extend(["--link", l]);
        }
        let out = linerate(&args, Duration::from_secs(60));
        // The guard exists before anything can fail, so a failed `up` is still taken down.
        let mut lab = Lab {
            name,
            status: Value::Null,
        };
        lab.status = json_of(&out);
        lab
    }

    pub fn namespace(&self, host: &str) -> String {
        format!("{}-{host}", self.name)
    }

    /// `linerate lab exec HOST -- CMD...`, bounded.
    pub fn exec(&self, host: &str, cmd: &[&str], limit: Duration) -> Output {
        let mut args = vec!["lab", "exec", "--name", &self.name, host, "--"];
        args.extend_from_slice(cmd);
        linerate(&args, limit)
    }

    /// `linerate tcp --json TO ARGS` run in host `from`; requires success.
    pub fn tcp(&self, from: &str, to: &str, args: &[&str]) -> Value {
        let mut cmd = vec!["linerate", "tcp", "--json", to];
        cmd.extend_from_slice(args);
        let v = json_of(&self.exec(from, &cmd, Duration::from_secs(90)));
        check_document(&v);
        v
    }

    pub fn status(&self) -> Value {
        json_of(&linerate(
            &["lab", "status", "--name", &self.name, "--json"],
            Duration::from_secs(30),
        ))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = linerate(&["lab", "down", "--name", &self.name], Duration::from_secs(60));
    }
}

/// Runs `f` with this thread inside network namespace `ns` (sockets it opens live there).
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::scope(|s| {
        s.spawn(|| {
            let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // SAFETY: setns on this (scoped, short-lived) thread only; the fd is valid.
            let rc = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {ns}: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("namespace thread")
    })
}
