//! Agent profiles: `linerate serve --profile NAME=COMMAND` (and `NAME.undo`), asked
//! for by a client's `--profile NAME`; run around the test and recorded in the result. The
//! undo runs when the agent is stopped by a signal, and a client does not take an agent's
//! word that it applied the profile.

use crate::util::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(90);

/// A fresh directory for one test's marker files, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("profile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("make the test's directory");
        Dir(d)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The record of the one agent among the document's hosts.
fn agent_host(v: &Value) -> &Value {
    let hosts = v["hosts"].as_object().expect("hosts");
    let mut agents = hosts.values().filter(|h| h["role"] == "agent");
    let a = agents.next().expect("an agent's host record");
    assert!(agents.next().is_none(), "one agent");
    a
}

/// An agent whose profile `on` creates a file and says hello, and whose undo removes the file
/// only if it is there (so the undo's status proves the profile ran first).
fn agent_with_on(dir: &Dir) -> Agent {
    let on = dir.file("on");
    Agent::start(&[
        "--profile",
        &format!("on=touch {on}; echo hello"),
        "--profile",
        &format!("on.undo=test -e {on} && rm {on} && echo removed"),
        "--profile",
        "mtu9000=true",
    ])
}

#[test]
fn issue_16_a_profile_runs_before_the_test_and_its_undo_after_both_recorded() {
    let dir = Dir::new("on");
    let agent = agent_with_on(&dir);
    let v = tcp_json(&[&agent.addr, "-t", "1", "--profile", "on"], LIMIT);
    check_document(&v);
    assert!(u(&v, "/summary/received/bytes") > 0, "the test ran");
    let p = &agent_host(&v)["profile"];
    assert_eq!(p["name"], "on", "{p:#}");
    assert_eq!(
        p["command"].as_str(),
        Some(format!("touch {}; echo hello", dir.file("on")).as_str())
    );
    assert_eq!(p["exit_status"], 0, "{p:#}");
    assert_eq!(p["output"], "hello", "the profile's output is kept: {p:#}");
    assert!(p["duration_ms"].is_u64(), "{p:#}");
    let undo = &p["undo"];
    assert_eq!(
        undo["exit_status"], 0,
        "the undo found the file the profile made: {p:#}"
    );
    assert_eq!(undo["output"], "removed");
    assert!(
        undo["command"].as_str().is_some_and(|c| c.starts_with("test -e ")),
        "{p:#}"
    );
    assert!(!dir.0.join("on").exists(), "the undo ran after the test");
    // Without --profile the agent runs nothing and the result has no profile.
    let plain = tcp_json(&[&agent.addr, "-t", "1"], LIMIT);
    assert!(agent_host(&plain).get("profile").is_none(), "{:#}", agent_host(&plain));
    assert!(!dir.0.join("on").exists());
}

#[test]
fn issue_16_the_text_report_has_a_line_per_profiled_agent_for_rr_and_udp_too() {
    let dir = Dir::new("text");
    let agent = agent_with_on(&dir);
    for kind in ["rr", "udp"] {
        let out = linerate(&[kind, &agent.addr, "-t", "1", "--profile", "on"], LIMIT);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("profile on:"))
            .unwrap_or_else(|| panic!("{kind}: no profile line in\n{text}"));
        assert!(
            line.starts_with(&format!("agent {}: profile on: `touch ", agent.addr)),
            "{line}"
        );
        assert!(
            line.contains("exit 0 in ") && line.contains(" ms; undo `test -e "),
            "{line}"
        );
        assert!(!dir.0.join("on").exists(), "{kind}: undone");
    }
}

#[test]
fn issue_16_an_unknown_profile_is_refused_with_the_list_before_any_data() {
    let dir = Dir::new("unknown");
    let agent = agent_with_on(&dir);
    let out = linerate(
        &["tcp", &agent.addr, "-t", "1", "--json", "--profile", "toe-off"],
        LIMIT,
    );
    assert!(!out.status.success(), "refused");
    let err = stderr(&out);
    assert!(
        err.contains("agent has no profile 'toe-off' (it has: on, mtu9000)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("\"summary\""), "no test ran: {stdout}");
    assert!(!dir.0.join("on").exists(), "no profile ran");
    assert_eq!(data_segments_at(port_of(&agent.addr)), 0, "no connection left open");
}

#[test]
fn issue_16_a_failing_profile_refuses_the_test_with_its_status_and_is_undone() {
    let dir = Dir::new("fail");
    let undone = dir.file("undone");
    let agent = Agent::start(&[
        "--profile",
        "bad=echo broken >&2; exit 3",
        "--profile",
        &format!("bad.undo=touch {undone}"),
    ]);
    let out = linerate(&["tcp", &agent.addr, "-t", "1", "--profile", "bad"], LIMIT);
    assert!(!out.status.success(), "refused");
    let err = stderr(&out);
    assert!(
        err.contains("profile 'bad'") && err.contains("exited with status 3"),
        "{err}"
    );
    assert!(err.contains("broken"), "its output: {err}");
    assert!(dir.0.join("undone").exists(), "the undo ran");
}

#[test]
fn issue_16_one_profiled_test_at_a_time_plain_tests_still_run() {
    let dir = Dir::new("busy");
    let agent = agent_with_on(&dir);
    let long = linerate_command()
        .args(["tcp", &agent.addr, "-t", "20", "-i", "0", "--profile", "on"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut long = Kill(long);
    poll_until(LIMIT, "the profiled test's data to flow", || {
        data_segments_at(port_of(&agent.addr)) > 100
    });
    assert!(dir.0.join("on").exists(), "the profile is in force");
    let other = linerate(&["tcp", &agent.addr, "-t", "1", "--profile", "mtu9000"], LIMIT);
    assert!(!other.status.success());
    let err = stderr(&other);
    assert!(err.contains("busy") && err.contains("under its profile 'on'"), "{err}");
    let plain = tcp_json(&[&agent.addr, "-t", "1"], LIMIT);
    assert!(
        u(&plain, "/summary/received/bytes") > 0,
        "a test without a profile runs"
    );
    // The client killed mid-test: the agent undoes the profile all the same.
    let _ = long.0.kill();
    poll_until(LIMIT, "the undo after the killed client", || !dir.0.join("on").exists());
}

/// Kills a child on drop.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn issue_16_the_agents_configuration_is_read_under_its_profile() {
    let Some(lab) = Lab::up(2, &[]) else {
        return;
    };
    let mtu = |lab: &Lab| {
        let out = lab.exec("h2", &["cat", "/sys/class/net/eth0/mtu"], LIMIT);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let before = mtu(&lab);
    assert_ne!(before, "9000", "the lab's MTU is not already 9000");
    let ns = lab.namespace("h2");
    let agent = Agent::start_with(
        &["ip", "netns", "exec", &ns],
        &["--bind", "0.0.0.0", "--port", "5313", "--no-auth"],
        &[
            "--profile",
            "mtu9000=ip link set dev eth0 mtu 9000",
            "--profile",
            &format!("mtu9000.undo=ip link set dev eth0 mtu {before}"),
        ],
        &[],
    );
    let h2 = lab.status["hosts"][1]["address"]
        .as_str()
        .expect("h2 address")
        .to_string();
    let target = format!("{h2}:5313");
    let v = json_of(&lab.exec(
        "h1",
        &[
            "linerate",
            "tcp",
            "--json",
            &target,
            "-t",
            "1",
            "--profile",
            "mtu9000",
            "--allow-unauthenticated-agent",
        ],
        LIMIT,
    ));
    check_document(&v);
    let host = &v["hosts"][&target];
    assert_eq!(host["profile"]["exit_status"], 0, "{:#}", host["profile"]);
    let eth0 = host["config"]["interfaces"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["name"] == "eth0"))
        .unwrap_or_else(|| panic!("no eth0 in {:#}", host["config"]));
    assert_eq!(eth0["mtu_bytes"], 9000, "read under the profile: {eth0:#}");
    assert_eq!(mtu(&lab), before, "undone after the test");
    drop(agent);
}

#[test]
fn issue_16_http_asks_its_agent_for_the_profile() {
    let dir = Dir::new("http");
    let on = dir.file("on");
    let agent = Agent::start(&[
        "--http-port",
        "0",
        "--profile",
        &format!("on=touch {on}"),
        "--profile",
        &format!("on.undo=rm {on}"),
    ]);
    let url = agent.http_url("/bytes/1000");
    let base = ["http", "--json", url.as_str(), "--users", "2", "--ramp", "0", "-t", "1"];
    let mut args = base.to_vec();
    args.extend(["--agent", &agent.addr, "--profile", "on"]);
    let v = json_of(&linerate(&args, LIMIT));
    let p = &v["hosts"][&agent.addr]["profile"];
    assert_eq!(
        (p["name"].as_str(), p["exit_status"].as_i64()),
        (Some("on"), Some(0)),
        "{:#}",
        v["hosts"]
    );
    assert_eq!(p["undo"]["exit_status"], 0, "{p:#}");
    assert!(!dir.0.join("on").exists(), "undone");
    // Without --agent there is no agent to ask: a usage error.
    let mut no_agent = base.to_vec();
    no_agent.extend(["--profile", "on"]);
    let out = linerate(&no_agent, LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--profile needs --agent"), "{}", stderr(&out));
}

#[test]
fn issue_16_bad_profiles_stop_the_agent_at_start_in_one_line() {
    for (args, says) in [
        (vec!["--profile", "x.undo=true"], "there is no profile 'x' to undo"),
        (vec!["--profile", "a b=true"], "--profile name 'a b'"),
        (vec!["--profile", "nocommand"], "expected NAME=COMMAND"),
    ] {
        let mut full = vec!["serve", "--bind", "127.0.0.1", "--port", "0"];
        full.extend(args);
        let out = linerate(&full, LIMIT);
        assert_eq!(out.status.code(), Some(2), "{full:?}");
        let err = stderr(&out);
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{full:?}: {err}");
    }
}

#[test]
fn issue_22_sigterm_during_a_profiled_test_runs_the_undo_and_the_result_is_partial() {
    let dir = Dir::new("sigterm");
    let mut agent = agent_with_on(&dir);
    let client = linerate_command()
        .args(["tcp", &agent.addr, "-t", "60", "-i", "0", "--json", "--profile", "on"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    poll_until(LIMIT, "the profiled test's data to flow", || {
        data_segments_at(port_of(&agent.addr)) > 100
    });
    assert!(dir.0.join("on").exists(), "the profile is in force");
    let pid = i32::try_from(agent.child.id()).expect("a pid");
    // SAFETY: kill(2) on the agent this test started and has not reaped; it touches no memory.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    // It ends its test, runs the undo and exits 0 (it once died at once, undo not run).
    let stopped = Instant::now();
    let status = loop {
        if let Some(s) = agent.child.try_wait().expect("wait for the agent") {
            break s;
        }
        assert!(stopped.elapsed() < LIMIT, "the agent did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!dir.0.join("on").exists(), "the undo ran");
    let v = json_with_status(&wait_bounded(client, LIMIT), 3);
    assert_eq!(v["partial"], true);
    let notes = v["notes"].to_string();
    assert!(notes.contains("the agent is stopping"), "{notes}");
    assert_eq!(
        agent_host(&v)["profile"]["undo"]["exit_status"],
        0,
        "{:#}",
        agent_host(&v)
    );
}

/// A relay on 127.0.0.1 in front of the agent at `agent`: every connection is passed through,
/// and the report in the agent's `result` is changed by `lie` on its way to the client.
fn lying_relay(agent: &str, lie: fn(&mut Value)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    listener.set_nonblocking(true).expect("nonblocking");
    let agent = agent.to_string();
    std::thread::spawn(move || {
        let until = Instant::now() + LIMIT;
        while Instant::now() < until {
            let Ok((client, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            client.set_nonblocking(false).expect("blocking");
            let Ok(upstream) = TcpStream::connect(&agent) else {
                continue;
            };
            let (mut from_client, mut to_agent) =
                (client.try_clone().expect("clone"), upstream.try_clone().expect("clone"));
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_client, &mut to_agent);
                let _ = to_agent.shutdown(Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = relay_to_client(upstream, &client, lie);
                let _ = client.shutdown(Shutdown::Both);
            });
        }
    });
    addr
}

/// What the agent sends, passed on; on a control connection (it begins with the agent's
/// preamble) frame by frame, its result's report changed by `lie`.
fn relay_to_client(mut from: TcpStream, mut to: &TcpStream, lie: fn(&mut Value)) -> std::io::Result<()> {
    let mut head = [0u8; 8];
    from.read_exact(&mut head[..4])?;
    if &head[..4] != b"LNRT" {
        to.write_all(&head[..4])?;
        std::io::copy(&mut from, &mut to)?;
        return Ok(());
    }
    from.read_exact(&mut head[4..])?;
    to.write_all(&head)?;
    loop {
        let mut len = [0u8; 4];
        from.read_exact(&mut len)?;
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        from.read_exact(&mut body)?;
        let mut message: Value = serde_json::from_slice(&body).expect("the agent sends JSON");
        if message["type"] == "result" {
            lie(&mut message["report"]);
            body = serde_json::to_vec(&message).expect("json");
        }
        to.write_all(&(body.len() as u32).to_be_bytes())?;
        to.write_all(&body)?;
    }
}

#[test]
fn issue_22_a_missing_or_wrong_profile_record_fails_the_run() {
    let dir = Dir::new("lie");
    let agent = agent_with_on(&dir);
    let run = |lie: fn(&mut Value)| {
        let relay = lying_relay(&agent.addr, lie);
        let out = linerate(&["tcp", &relay, "-n", "5", "--json", "--profile", "on"], LIMIT);
        (relay, out)
    };
    let none: fn(&mut Value) = |r| {
        r.as_object_mut().expect("a report").remove("profile");
    };
    let other: fn(&mut Value) = |r| {
        r["profile"]["name"] = json!("other");
        r["profile"]["exit_status"] = json!(1);
    };
    for (lie, says) in [
        (none, "asked for profile 'on', its result has no profile record"),
        (other, "asked for profile 'on', its result says it applied 'other'"),
    ] {
        let (relay, out) = run(lie);
        let v = json_with_status(&out, 4);
        assert_eq!(v["error"], format!("agent {relay}: {says}"), "{:#}", v["notes"]);
        assert!(v["notes"].to_string().contains(says), "{:#}", v["notes"]);
    }
    let failed: fn(&mut Value) = |r| r["profile"]["exit_status"] = json!(1);
    let (relay, out) = run(failed);
    let v = json_with_status(&out, 4);
    let on = dir.file("on");
    assert_eq!(
        v["error"],
        format!("agent {relay}: profile 'on' was not applied: `touch {on}; echo hello` exited with status 1")
    );
    // Passed on unchanged, the same run is complete.
    let (_, out) = run(|_| {});
    let v = json_with_status(&out, 0);
    assert!(v["error"].is_null(), "{}", v["error"]);
}

/// Profile commands inherited `LINERATE_SECRET`, so a profile that printed its
/// environment sent the secret to the client and into the store. The command now runs without
/// it, and with no descriptor of the secret file (read whole and closed at start): an agent
/// given both prints neither through a profile that lists its environment and descriptors.
#[test]
fn issue_22_a_profile_running_env_shows_no_secret() {
    let dir = Dir::new("secret");
    let secret = "issue22-s3cret-0123456789abcdef0123456789";
    let file = dir.file("agent-secret");
    std::fs::write(&file, secret).expect("write the secret file");
    // The environment's lines that matter (the whole of it may pass the 4 KiB kept).
    let show = "env | grep -e SECRET -e s3cret -e ^PATH=; ls -l /proc/$$/fd";
    let agent = Agent::start_with(
        &[],
        &["--bind", "127.0.0.1", "--port", "0", "--secret-file", &file],
        &["--profile", &format!("show={show}")],
        &[("LINERATE_SECRET", secret)],
    );
    let mut cmd = linerate_command();
    cmd.env("LINERATE_SECRET", secret).args([
        "tcp",
        "--json",
        agent.addr.as_str(),
        "-t",
        "0.3",
        "-i",
        "0",
        "--profile",
        "show",
    ]);
    let v = json_of(&run_bounded(&mut cmd, LIMIT));
    let p = &agent_host(&v)["profile"];
    assert_eq!(p["exit_status"], 0, "{p:#}");
    let output = p["output"].as_str().expect("the profile's output");
    assert!(output.contains("PATH="), "the environment is listed: {output}");
    assert!(output.contains("/dev/null"), "the descriptors are listed: {output}");
    assert!(!output.contains(secret), "the secret reached the profile: {output}");
    assert!(!output.contains("LINERATE_SECRET"), "{output}");
    assert!(
        !output.contains("agent-secret"),
        "a descriptor of the secret file: {output}"
    );
}
