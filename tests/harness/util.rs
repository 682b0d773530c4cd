//! The harness both test targets share (tests/it, functional and parallel; tests/timed, one
//! test at a time): real agents and clients as processes, every run bounded in time, and network
//! namespaces (veth pairs, tc) created per test and removed on drop. Each target uses part of it.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_linerate");

/// The binary at a path any user can execute, for tests that run it as an unprivileged user
/// (`setpriv --reuid=65534`): a checkout may sit under a directory only its owner can enter
/// (`mktemp -d` makes one 0700). A hard link (a copy across file systems) in a world-searchable
/// directory under the system's temp dir, made once per binary and kept for the next run.
pub fn bin_for_anyone() -> std::path::PathBuf {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let meta = std::fs::metadata(BIN).expect("the test binary");
        // SAFETY: geteuid(2) takes nothing and cannot fail.
        let dir = std::path::PathBuf::from("/tmp").join(format!("linerate-anyone-{}", unsafe { libc::geteuid() }));
        std::fs::create_dir_all(&dir).expect("the shared binary directory");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = dir.join(format!("linerate-{}-{}", meta.ino(), meta.mtime()));
        if !path.exists() {
            // Links of binaries built before, an hour old or more, go: each holds a whole binary.
            for old in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let stale = old
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.elapsed().ok());
                if stale.is_some_and(|age| age > Duration::from_secs(3600)) {
                    let _ = std::fs::remove_file(old.path());
                }
            }
            let part = dir.join(format!(".part-{}", std::process::id()));
            let _ = std::fs::remove_file(&part);
            if std::fs::hard_link(BIN, &part).is_err() {
                std::fs::copy(BIN, &part).expect("copy the binary");
            }
            std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            std::fs::rename(&part, &path).expect("rename the binary into place");
        }
        path
    })
    .clone()
}

/// A `linerate serve` process, killed on drop.
pub struct Agent {
    pub child: Child,
    /// HOST:PORT to give clients.
    pub addr: String,
    /// HOST:PORT of the HTTP server, when started with `--http-port`.
    pub http_addr: Option<String>,
    /// HOST:PORT of the HTTPS server, when started with `--https-port`.
    pub https_addr: Option<String>,
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
        let https_addr = args.iter().chain(extra).any(|a| *a == "--https-port").then(|| {
            let line = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("agent printed its https address within 10 s");
            assert!(line.contains("https server listening on"), "{line:?}");
            address_in(&line)
        });
        Agent {
            child,
            addr,
            http_addr,
            https_addr,
        }
    }
}

impl Agent {
    /// `http://HOST:PORT/PATH` on the agent's HTTP server (`path` starts with `/`); the agent
    /// must have been started with `--http-port`.
    pub fn http_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http_addr.as_deref().expect("http address"))
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

/// A child killed and reaped on drop.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `linerate serve` on loopback with `--metrics 127.0.0.1:0`: the agent's and the endpoint's
/// addresses, from its listening line.
pub fn agent_with_metrics() -> (Reaped, String, String) {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--metrics",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start linerate serve");
    let stdout = child.stdout.take().expect("stdout");
    let child = Reaped(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("a listening line");
    let addr = line
        .split_whitespace()
        .nth(4)
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let metrics = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in {line:?}"))
        .to_string();
    (child, addr, metrics)
}

/// The results database every linerate this test process starts stores into, so that the suite
/// never writes to the user's own (`~/.local/share/linerate/results.db`): one per test process,
/// under cargo's target/tmp; those of test processes that are gone are removed on first use.
pub fn test_db() -> &'static std::path::Path {
    static DB: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DB.get_or_init(|| {
        let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        if let Ok(entries) = std::fs::read_dir(tmp) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("it-results-")
                    && !std::path::Path::new("/proc").join(pid).exists()
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        tmp.join(format!("it-results-{}", std::process::id()))
            .join("results.db")
    })
}

/// `linerate` as a command that stores into [`test_db`] (unless the test sets LINERATE_DB or
/// gives `--db` itself).
pub fn linerate_command() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env("LINERATE_DB", test_db());
    cmd
}

/// Runs a command to completion within `limit`, killing it and failing the test past that. A
/// linerate it starts (itself, or under `ip netns exec`, `setpriv`...) stores into [`test_db`]
/// unless the command sets LINERATE_DB.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    if !cmd.get_envs().any(|(k, _)| k == "LINERATE_DB") {
        cmd.env("LINERATE_DB", test_db());
    }
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

/// Runs `cmd` to completion within `limit` under GNU time (`/usr/bin/time -f %M`) and returns its
/// output and its own peak resident memory, KiB. GNU time forks the command from its own small
/// process and reads its ru_maxrss from wait4 when it exits: the figure is the command's. The test
/// process cannot take it itself: a child it spawns (vfork, then exec) carries the test
/// process's high-water mark into its ru_maxrss, and polling /proc/PID/status's VmHWM misses
/// what the last milliseconds before exit add. GNU time and the command are one
/// process group, killed whole if the test fails. Needs [`PEAK_RSS`].
pub fn run_with_peak_rss(cmd: &Command, limit: Duration) -> (Output, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("peak-rss");
    let mut timed = Command::new("time");
    timed
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        timed.current_dir(d);
    }
    std::os::unix::process::CommandExt::process_group(&mut timed, 0);
    struct Group(i32);
    impl Drop for Group {
        fn drop(&mut self) {
            // SAFETY: kill(2) on the group this call started; a group already gone is ESRCH.
            unsafe { libc::kill(-self.0, libc::SIGKILL) };
        }
    }
    timed.stdin(Stdio::null());
    if !timed.get_envs().any(|(k, _)| k == "LINERATE_DB") {
        timed.env("LINERATE_DB", test_db());
    }
    let child = timed
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn under GNU time");
    let _group = Group(i32::try_from(child.id()).expect("a pid"));
    let out = wait_bounded(child, limit);
    // GNU time writes "Command exited with non-zero status N" first when it did: the figure is
    // the last line.
    let text = std::fs::read_to_string(&report).expect("GNU time's report");
    let kib = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in GNU time's report: {text:?}"));
    (out, kib)
}

/// GNU time, the launcher [`run_with_peak_rss`] measures a command's peak memory through.
pub const PEAK_RSS: Need = Need::Program {
    name: "time",
    package: "time",
};

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

/// The JSON document of a run that exited with `code` (README, "Exit status": 3 partial, 4
/// failed): such a run still prints its document.
pub fn json_with_status(out: &Output, code: i32) -> Value {
    assert_eq!(
        out.status.code(),
        Some(code),
        "exit status; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `linerate ARGS` must fail with one line on stderr, `linerate: ...` naming `needle`, and no
/// panic.
pub fn fails_with(args: &[&str], needle: &str, limit: Duration) {
    let out = linerate(args, limit);
    let err = stderr(&out);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err:?}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: not one line: {err:?}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
    assert!(err.starts_with("linerate: "), "{err}");
}

/// The flags of a small `linerate http` user sweep: 1, 4 and 16 users, 0.5 s each, 10 ms of
/// think time (so that each user is bounded and more users make more responses), no agent.
pub const USER_SWEEP: [&str; 7] = ["--users", "1,4,16", "-d", "0.5s", "--think", "10ms", "--no-agent"];

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
    assert_eq!(v["schema"], 4);
    assert!(v.get("error").is_some(), "error is present (null when fine)");
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
        assert!(s["cpu"].get("process_percent_of_host").is_some());
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

/// Why lab tests need root.
pub const NAMESPACES: &str = "to create network namespaces, veth pairs and qdiscs";

/// What a test needs of the machine beyond Linux and the built binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Root, `why` saying for what (network namespaces, veth pairs, tc and nftables need
    /// CAP_NET_ADMIN and CAP_SYS_ADMIN).
    Root { why: &'static str },
    /// A program on PATH, named with the Debian package that has it.
    Program { name: &'static str, package: &'static str },
    /// io_uring: a kernel may be built without it or have it switched off
    /// (`kernel.io_uring_disabled`, seccomp in containers).
    IoUring,
}

/// What the machine offers, as [`unmet`] asks it.
pub struct Machine<'a> {
    pub root: bool,
    pub on_path: &'a dyn Fn(&str) -> bool,
    pub io_uring: &'a dyn Fn() -> bool,
}

/// The first of `needs` that `machine` does not meet, as the reason to print; `None` when the
/// test can run.
pub fn unmet(needs: &[Need], machine: &Machine<'_>) -> Option<String> {
    needs.iter().find_map(|n| match *n {
        Need::Root { why } if !machine.root => Some(format!("needs root {why}")),
        Need::Program { name, package } if !(machine.on_path)(name) => {
            Some(format!("needs '{name}' on PATH (Debian: apt-get install {package})"))
        }
        Need::IoUring if !(machine.io_uring)() => Some("needs io_uring, which this kernel refuses".to_string()),
        _ => None,
    })
}

/// Whether the test can run here. When it cannot, prints `skipped: REASON` and returns false
/// (the caller returns at once), so a developer's `cargo test` as a user passes. CI runs as root
/// with every package installed, so nothing skips there; with `LINERATE_TEST_NO_SKIP=1` in the
/// environment a skip fails the test instead, so CI can make sure of it.
pub fn can_run(needs: &[Need]) -> bool {
    let machine = Machine {
        root: is_root(),
        on_path: &on_path,
        io_uring: &io_uring_works,
    };
    let Some(reason) = unmet(needs, &machine) else {
        return true;
    };
    assert!(
        std::env::var_os("LINERATE_TEST_NO_SKIP").is_none(),
        "LINERATE_TEST_NO_SKIP is set but this test {reason}"
    );
    eprintln!("skipped: {reason}");
    false
}

/// Whether an executable `program` is in a directory of PATH.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Whether this process may set up an io_uring instance (one entry, closed at once).
pub fn io_uring_works() -> bool {
    // struct io_uring_params is 120 bytes; zeroed asks for nothing special.
    let mut params = [0u8; 120];
    // SAFETY: io_uring_setup(2) reads and writes `params`, which is 120 bytes as the kernel expects.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
    if fd < 0 {
        return false;
    }
    // SAFETY: `fd` is the ring this call just made and nothing else holds.
    unsafe { libc::close(fd as i32) };
    true
}

/// Polls `ready` every 20 ms until it holds, failing the test after `limit`: tests wait for
/// state they can observe, never for a guessed time.
pub fn poll_until(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < until, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// TCP data segments in and out of the established sockets whose local port is `port` (as
/// `ss -ti` counts them): on an agent's port, whether a test's data is flowing.
pub fn data_segments_at(port: u16) -> u64 {
    let filter = format!("( sport = :{port} )");
    let out = Command::new("ss")
        .args(["-tinH", "state", "established", &filter])
        .output()
        .expect("ss (Debian: apt-get install iproute2)");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| {
            w.strip_prefix("data_segs_in:")
                .or_else(|| w.strip_prefix("data_segs_out:"))
        })
        .filter_map(|n| n.parse::<u64>().ok())
        .sum()
}

/// The port of a HOST:PORT address.
pub fn port_of(addr: &str) -> u16 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {addr}"))
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A `linerate lab` made for one test, with a name no other test uses, taken down on drop.
pub struct Lab {
    pub name: String,
    /// What `lab up --json` printed: hosts, addresses, links, backends.
    pub status: Value,
}

impl Lab {
    /// `linerate lab up --hosts N --link ... --no-netem`: linerate's own emulation (tbf, nftables,
    /// the relay) whether or not the kernel has netem, so a test's backends do not depend on the
    /// kernel. `None`, after printing why, where a lab cannot be made (see [`can_run`]).
    pub fn up(hosts: usize, links: &[&str]) -> Option<Lab> {
        Lab::make(hosts, links, false, &[])
    }

    /// `linerate lab up` whose agents are started with these `NAME=COMMAND` profiles.
    pub fn up_with_profiles(hosts: usize, links: &[&str], profiles: &[&str]) -> Option<Lab> {
        Lab::make(hosts, links, false, profiles)
    }

    /// `linerate lab up` letting the lab use netem where the kernel has it.
    pub fn up_netem(hosts: usize, links: &[&str]) -> Option<Lab> {
        Lab::make(hosts, links, true, &[])
    }

    fn make(hosts: usize, links: &[&str], netem: bool, profiles: &[&str]) -> Option<Lab> {
        let mut needs = vec![
            Need::Root { why: NAMESPACES },
            Need::Program {
                name: "ip",
                package: "iproute2",
            },
            Need::Program {
                name: "tc",
                package: "iproute2",
            },
        ];
        if links.iter().any(|l| l.contains("loss=")) {
            needs.push(Need::Program {
                name: "nft",
                package: "nftables",
            });
        }
        if !can_run(&needs) {
            return None;
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("it{}-{n}", std::process::id() % 100_000);
        let hosts_arg = hosts.to_string();
        let mut args = vec!["lab", "up", "--name", &name, "--hosts", &hosts_arg, "--json"];
        for l in links {
            args.extend(["--link", l]);
        }
        if !netem {
            args.push("--no-netem");
        }
        for p in profiles {
            args.extend(["--profile", p]);
        }
        let out = linerate(&args, Duration::from_secs(60));
        // The guard exists before anything can fail, so a failed `up` is still taken down.
        let mut lab = Lab {
            name,
            status: Value::Null,
        };
        lab.status = json_of(&out);
        Some(lab)
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

    /// `linerate udp --multicast GROUP TO... -n DATAGRAMS --gap 50 -l 200` from h1, its document.
    pub fn multicast_from_h1(&self, group: &str, to: &[&str], datagrams: &str, limit: Duration) -> Value {
        let mut cmd = vec!["linerate", "udp", "--json", "--multicast", group];
        cmd.extend_from_slice(to);
        cmd.extend(["-n", datagrams, "--gap", "50", "-l", "200"]);
        // `lab exec` gives the client the lab's secret; the agents joined run open.
        cmd.push("--allow-unauthenticated-agent");
        json_of(&self.exec("h1", &cmd, limit))
    }

    /// An agent in `host` on `args` (`--port` and `--bind`) that runs open and joins `group`.
    pub fn joined_agent(&self, host: &str, args: &[&str], group: &str) -> Agent {
        let ns = self.namespace(host);
        let mut all = args.to_vec();
        all.extend(["--no-auth", "--join", group]);
        Agent::start_with(&["ip", "netns", "exec", &ns], &all, &[], &[])
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

/// A campaign plan named `name` against `agent`: test `writes` (tcp, 30 s) over two lengths (4K,
/// 64K) x two variants (`one`: -P 1, `two`: -P 2), no interval lines, and `quick` as the body of
/// its `[quick]` overlay. More `[[test]]`s may be appended.
pub fn writes_plan(name: &str, agent: &str, quick: &str) -> String {
    format!(
        r#"name = "{name}"
[defaults]
interval = "0"
[quick]
{quick}

[[test]]
name = "writes"
kind = "tcp"
targets = ["{agent}"]
time = "30s"
vary = {{ length = ["4K", "64K"] }}
[[test.variant]]
name = "one"
parallel = 1
[[test.variant]]
name = "two"
parallel = 2
"#
    )
}
