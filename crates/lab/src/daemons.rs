//! The processes a lab runs: an agent (`linerate serve`) in each host and, without netem, the
//! link relay in the switch namespace. Each is this very program started again inside its
//! namespace, in its own session, logging to the lab's state directory; `lab up` waits until it
//! is ready, `lab down` stops it.

use crate::LabError;
use crate::relay::RelayConfig;
use crate::state::{LabState, file_error, state_dir};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(10);

fn spawn_daemon(args: &[&str], log: &Path) -> Result<u32, LabError> {
    let out = std::fs::File::create(log).map_err(file_error("creating", log))?;
    let err = out.try_clone().map_err(file_error("opening", log))?;
    let mut cmd = Command::new(args[0]);
    cmd.args(&args[1..]).stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: setsid is async-signal-safe; the daemon leaves our session and terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|source| LabError::Spawn {
        program: args.join(" "),
        source,
    })?;
    Ok(child.id())
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) -> Result<(), LabError> {
    let start = Instant::now();
    while start.elapsed() < READY_WITHIN {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(LabError::NotStarted {
        what: what.to_string(),
        seconds: READY_WITHIN.as_secs(),
    })
}

/// This program's path, to start it again inside a namespace.
pub(crate) fn current_exe() -> Result<PathBuf, LabError> {
    std::env::current_exe().map_err(LabError::CurrentExe)
}

fn utf8<'a>(path: &'a Path, what: &'static str) -> Result<&'a str, LabError> {
    path.to_str().ok_or(LabError::NotUtf8(what))
}

pub(crate) fn start_relay(state: &LabState) -> Result<u32, LabError> {
    let dir = state_dir(&state.name);
    let config = RelayConfig {
        ports: (1..=state.hosts.len()).map(|i| format!("p{i}")).collect(),
        specs: state.hosts.iter().map(|h| h.link.clone()).collect(),
        stats_path: dir.join("relay-stats.json"),
        queue_bytes: 64 << 20,
    };
    let path = dir.join("relay.json");
    let text = serde_json::to_string_pretty(&config).map_err(|source| LabError::Encode {
        what: "the relay configuration",
        source,
    })?;
    std::fs::write(&path, text).map_err(file_error("writing", &path))?;
    let exe = current_exe()?;
    let sw = state
        .switch_namespace
        .as_deref()
        .expect("a relay lab has a switch namespace");
    let pid = spawn_daemon(
        &[
            "ip",
            "netns",
            "exec",
            sw,
            utf8(&exe, "the linerate path")?,
            "lab",
            "relay",
            "--config",
            utf8(&path, "the state path")?,
        ],
        &dir.join("relay.log"),
    )?;
    wait_for("the link relay", || config.stats_path.exists())?;
    Ok(pid)
}

fn agent_log(state: &LabState, i: usize) -> PathBuf {
    state_dir(&state.name).join(format!("agent-{}.log", state.hosts[i].name))
}

/// Starts host `i`'s agent; [`agent_ready`] waits for it, so that a lab's agents start together.
pub(crate) fn spawn_agent(state: &LabState, i: usize) -> Result<u32, LabError> {
    let h = &state.hosts[i];
    let exe = current_exe()?;
    let log = agent_log(state, i);
    let port = crate::AGENT_PORT.to_string();
    let http_port = crate::HTTP_PORT.to_string();
    let mut args: Vec<&str> = vec![
        "ip",
        "netns",
        "exec",
        &h.namespace,
        utf8(&exe, "the linerate path")?,
        "serve",
        "--bind",
        &h.address,
        "--port",
        &port,
        "--secret-file",
        utf8(&state.secret_file, "the state path")?,
        "--max-tests",
        "16",
        "--http-port",
        &http_port,
    ];
    for p in &state.profiles {
        args.extend(["--profile", p.as_str()]);
    }
    spawn_daemon(&args, &log)
}

/// Waits until host `i`'s agent says it is listening.
pub(crate) fn agent_ready(state: &LabState, i: usize) -> Result<(), LabError> {
    let log = agent_log(state, i);
    wait_for(&format!("the agent on {}", state.hosts[i].name), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("listening"))
    })
}

pub(crate) fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid as i32, 0) } != 0 {
        return false;
    }
    // A zombie has exited: a daemon's parent is init once `lab up` is gone, and some inits
    // reap late (a second and more) or never.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z')))
}

/// Stops processes we started: SIGTERM to all at once, then SIGKILL to any still running a
/// second later; returns once none runs.
pub(crate) fn kill_and_wait(pids: &[u32]) {
    let signal = |sig| {
        for &pid in pids {
            // SAFETY: plain kill(2) on a pid we started.
            unsafe { libc::kill(pid as i32, sig) };
        }
    };
    signal(libc::SIGTERM);
    let start = Instant::now();
    while pids.iter().any(|&p| alive(p)) && start.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if pids.iter().any(|&p| alive(p)) {
        signal(libc::SIGKILL);
    }
}
