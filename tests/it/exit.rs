//! The exit status contract (README, "Exit status"): 0 complete, 1 setup error,
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
    // A runtime failure keeps its status in every kind, not the usage error's 2.
    for kind in ["udp", "tcp", "rr"] {
        let out = linerate(&[kind, "127.0.0.1", "-p", &closed, "-n", "1", "--no-store"], LIMIT);
        assert_eq!(out.status.code(), Some(1), "{kind}: {}", stderr(&out));
    }
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

/// `linerate ARGS` is a usage error: status 2, one line on stderr naming `needle`.
fn usage_error(args: &[&str], needle: &str) {
    let out = linerate(args, LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: not one line: {err:?}");
    assert!(err.starts_with("linerate: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err:?}");
}

/// Every range and combination error exits 2, whether clap or a check after it finds
/// it, in every command; each before any traffic: the port they name listens, and is never
/// connected to.
#[test]
fn issue_23_every_usage_error_exits_2_before_any_traffic() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port().to_string();
    let url = format!("http://127.0.0.1:{port}/x");
    let agent = |kind: &'static str, more: &[&'static str]| {
        let mut args = vec![kind, "127.0.0.1", "-p", port.as_str(), "--no-store"];
        args.extend_from_slice(more);
        args
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // The examples of the issue, then one of each kind of check per command.
        (agent("tcp", &["-t", "0"]), "seconds (-t) must be between 0.01"),
        (agent("tcp", &["-P", "0"]), "-P must be between 1 and 1024"),
        (agent("tcp", &["-P", "100000"]), "-P must be between 1 and 1024"),
        (agent("tcp", &["-l", "0"]), "buffer length (-l) must be between 1"),
        (agent("tcp", &["--threads", "500"]), "threads must be between 0 and 128"),
        (agent("tcp", &["--repeat", "0"]), "--repeat must be between 1"),
        (agent("tcp", &["--best", "3"]), "--best needs --repeat"),
        (
            agent("tcp", &["--warmup", "5", "-t", "3"]),
            "leave nothing of a 3 s test",
        ),
        (agent("tcp", &["--sizes", "8K:1K:1K"]), "the end at or above the start"),
        (
            agent("tcp", &["--repeat", "3", "--sizes", "1K,2K"]),
            "does not combine with a sweep",
        ),
        (
            agent("tcp", &["--repeat", "3", "--best", "4"]),
            "--best 4 is more than the 3 runs",
        ),
        (
            agent("tcp", &["--sizes", "1K,0"]),
            "buffer length (-l) must be between 1",
        ),
        (
            agent("tcp", &["--mix", "70:30", "--depth", "4"]),
            "--depth does not apply",
        ),
        (agent("tcp", &["-n", "5", "--cooldown", "1"]), "needs a time limit (-t)"),
        (agent("tcp", &["--connect-timeout", "0"]), "--connect-timeout"),
        (agent("tcp", &["-i", "-1"]), "--interval: a negative value is not"),
        (agent("tcp", &["-l", "-1"]), "--length: a negative value is not allowed"),
        (agent("tcp", &["--warmup", "-1s"]), "--warmup: a negative value"),
        (agent("udp", &["-l", "10"]), "datagram payload (-l) must be between 32"),
        (agent("udp", &["--gaps", "10,x"]), "--gaps: 'x'"),
        (agent("udp", &["--multicast", "10.0.0.1"]), "is not a multicast address"),
        (agent("udp", &["--gap", "1e9"]), "--gap must be between 0 and"),
        (agent("udp", &["--sizes", "100,20"]), "datagram payload (-l) must"),
        (agent("rr", &["--tps", "0"]), "rate (transactions/s) must be between"),
        (agent("rr", &["--request", "0"]), "request bytes must be between"),
        (agent("rr", &["--sizes", "1,x"]), "--sizes: 'x'"),
        (agent("rr", &["--proto", "udp", "--sizes", "1,70000"]), "request bytes"),
        (agent("rr", &["--sizes", "64,128", "--expect", "0"]), "--expect"),
        (
            vec!["http", &url, "--no-agent", "--users", "0"],
            "--users '0' is not a count",
        ),
        (
            vec!["http", &url, "--no-agent", "--users", "1,2", "--rps", "10"],
            "--users takes one count",
        ),
        (
            vec!["http", &url, "--no-agent", "-t", "0"],
            "duration seconds must be between",
        ),
        (
            vec!["http", "ftp://127.0.0.1/", "--no-agent"],
            "is not an http:// or https:// URL",
        ),
        (vec!["quick", "-t", "0", "--no-store"], "seconds (-t) must be between"),
        (vec!["quick", "-P", "0", "--no-store"], "streams (-P) must be between"),
        (
            vec!["plan", "check", "/nonexistent/plan.toml"],
            "plan /nonexistent/plan.toml",
        ),
        (vec!["results", "--kind", "foo"], "[possible values: tcp, udp, rr, http"),
        // The id is checked before the database is looked for (none exists at this path).
        (
            vec!["results", "show", "x1", "--db", "/nonexistent/linerate-exit23.db"],
            "'x1' is not a result id",
        ),
        (
            vec![
                "results",
                "label",
                "x1",
                "a=b",
                "--db",
                "/nonexistent/linerate-exit23.db",
            ],
            "'x1' is not a result id",
        ),
        (
            vec!["compare", "a.json", "b.json", "--fail-if-worse", "-1"],
            "--fail-if-worse takes a percentage",
        ),
        (
            vec!["compare", "a.json", "b.json", "--threshold", "-1"],
            "--threshold takes a percentage",
        ),
        (vec!["compare", "label:nic", "b.json"], "side A 'label:nic'"),
        (
            vec!["report", "20", "-o", "x.txt"],
            "-o x.txt: give a file ending in .html or .svg",
        ),
        (vec!["report", "20"], "nothing to write"),
        (vec!["calc", "goodput", "--link", "0"], "--link"),
        (
            vec!["lab", "up", "--name", "lr-exit23", "--hosts", "0"],
            "--hosts must be between 2",
        ),
        (
            vec!["lab", "up", "--name", "lr-exit23", "--link", "garbage"],
            "--link garbage",
        ),
        (vec!["lab", "status", "--name", "a b"], "lab name 'a b'"),
        // A lab that does not exist, and a CPU this host does not have.
        (vec!["lab", "down", "--name", "lr-nosuch38"], "no lab 'lr-nosuch38'"),
        (vec!["lab", "status", "--name", "lr-nosuch38"], "no lab 'lr-nosuch38'"),
        (
            agent("tcp", &["--cpus", "4000"]),
            "--cpus: CPU 4000 does not exist here",
        ),
        (
            agent("udp", &["--cpus", "0,4000"]),
            "--cpus: CPU 4000 does not exist here",
        ),
        (agent("rr", &["--cpus", "4000"]), "--cpus: CPU 4000 does not exist here"),
        (
            vec!["http", &url, "--no-agent", "--cpus", "4000"],
            "--cpus: CPU 4000 does not exist here",
        ),
        (
            vec!["tcp", "iperf3://127.0.0.1:1", "--no-store", "--cpus", "4000"],
            "--cpus: CPU 4000 does not exist here",
        ),
        (vec!["calc", "goodput", "--link", "1G", "--mtu", "10"], "--mtu"),
        (vec!["sys", "-i", "0", "-n", "1"], "--interval 0 is not between"),
        (vec!["doctor", "--rate", "0"], "--rate"),
        (vec!["serve", "-p", "0", "--max-tests", "0"], "--max-tests"),
        (
            vec!["serve", "-p", "0", "--http-port", "0", "--http-head-timeout", "0"],
            "--http-head-timeout",
        ),
        (
            vec!["serve", "-p", "0", "--http-port", "0", "--http-idle-timeout", "0"],
            "--http-idle-timeout",
        ),
        // The sites that printed and returned a literal 2 outside `Usage`,
        // and the range checks of `sys.rs`'s commands and of `rr --expect` past zero.
        (
            vec![
                "plan",
                "run",
                "/nonexistent/plan.toml",
                "--db",
                "/nonexistent/linerate-exit40.db",
            ],
            "plan /nonexistent/plan.toml",
        ),
        (
            vec!["http", &url, "--no-agent", "--profile", "mtu9000"],
            "--profile needs --agent",
        ),
        (
            vec!["serve", "-p", "0", "--no-auth", "--profile", "x.undo=true"],
            "--profile x.undo",
        ),
        (
            vec!["serve", "-p", "0", "--no-auth", "--profile", "nocommand"],
            "--profile 'nocommand'",
        ),
        (vec!["calc", "goodput", "--link", "-1"], "--link"),
        (vec!["calc", "goodput", "--link", "1G", "--mtu", "70000"], "--mtu"),
        (vec!["doctor", "--rate", "-5"], "--rate"),
        (
            vec!["serve", "-p", "0", "--http-port", "0", "--http-head-timeout", "-1"],
            "--http-head-timeout",
        ),
        (agent("rr", &["--sizes", "64,128", "--expect", "10G,x"]), "--expect"),
        (agent("rr", &["--sizes", "64,128", "--expect", "-1"]), "--expect"),
    ];
    for (args, needle) in &cases {
        usage_error(args, needle);
    }
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a usage error reached the agent's port: {other:?}"),
    }
}

/// `compare` of a tcp run against an rr run compares nothing: status 2 with one line
/// saying why, with `--fail-if-worse` or without; a run against itself still exits 0.
#[test]
fn issue_23_compare_of_sides_that_share_no_point_exits_2() {
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |kind: &str, name: &str| {
        let out = linerate(
            &[kind, &agent.addr, "-n", "50", "-i", "0", "--json", "--no-store"],
            LIMIT,
        );
        let path = dir.path().join(name);
        std::fs::write(&path, json_of(&out).to_string()).expect("write");
        path.to_str().expect("path").to_string()
    };
    let (tcp, rr) = (run("tcp", "tcp.json"), run("rr", "rr.json"));
    for extra in [&[][..], &["--fail-if-worse", "5"][..], &["--json"][..]] {
        let mut args = vec!["compare", tcp.as_str(), rr.as_str()];
        args.extend_from_slice(extra);
        let out = linerate(&args, LIMIT);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains("nothing compared: the two sides share no point") && err.contains("A has tcp, B has rr"),
            "{err}"
        );
    }
    let out = linerate(&["compare", &tcp, &tcp, "--fail-if-worse", "5"], LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A secret of a byte (or anything under 16) is refused as a usage error naming the
/// bound and the fix, by a client and by an agent, from a file or the environment; 16 bytes do.
#[test]
fn issue_38_a_short_secret_is_a_usage_error() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port().to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("secret");
    std::fs::write(&file, "x\n").expect("write");
    let file = file.to_str().expect("utf-8");
    usage_error(
        &["tcp", "127.0.0.1", "-p", &port, "--no-store", "--secret-file", file],
        "the shared secret is 1 bytes: at least 16 are needed (`linerate secret new`",
    );
    usage_error(
        &["serve", "--port", "0", "--secret-file", file],
        "the shared secret is 1 bytes: at least 16",
    );
    let out = run_bounded(
        linerate_command()
            .args(["tcp", "127.0.0.1", "-p", &port, "--no-store"])
            .env("LINERATE_SECRET", "fifteen bytes!!"),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the shared secret is 15 bytes"),
        "{}",
        stderr(&out)
    );
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a refused secret reached the agent's port: {other:?}"),
    }
}

/// Status 2 is chosen in one place, `main`, for an error whose chain holds a
/// `Usage` (or core's typed spec errors); no command prints a refusal and returns a literal 2 of
/// its own, which a new check could copy and get wrong (print twice, or return 1). Fails on a
/// planted `return Ok(ExitCode::from(2))` anywhere under src/ but main.rs and cli/usage.rs.
#[test]
fn issue_40_status_2_is_chosen_only_through_usage() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root.clone()];
    let mut found = Vec::new();
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src/") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            files += 1;
            let rel = path
                .strip_prefix(&root)
                .expect("under src/")
                .to_string_lossy()
                .into_owned();
            if rel == "main.rs" || rel == "cli/usage.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
                if compact.contains("ExitCode::from(2)")
                    || compact.contains("EXIT_USAGE")
                    || compact.contains("exit(2)")
                {
                    found.push(format!("src/{rel}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(files > 30, "read only {files} files under {}", root.display());
    assert!(
        found.is_empty(),
        "status 2 returned outside `Usage` (return a `Usage` error instead):\n{}",
        found.join("\n")
    );
}
