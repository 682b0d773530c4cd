//! Running the system's network tools (ip, tc, nft) for the lab: a command line in, its stdout
//! or a [`LabError`] carrying its stderr out. Also what the lab needs before it starts (root,
//! iproute2) and the namespaces that exist.

use crate::LabError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub(crate) fn need_root_and_ip() -> Result<(), LabError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LabError::NotRoot);
    }
    for tool in ["ip", "tc"] {
        if which(tool).is_none() {
            return Err(LabError::NoIproute(tool));
        }
    }
    Ok(())
}

pub(crate) fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

fn failed(args: &[&str], stderr: &[u8]) -> LabError {
    LabError::Command {
        command: args.join(" "),
        stderr: String::from_utf8_lossy(stderr).trim().to_string(),
    }
}

fn spawn_error(args: &[&str]) -> impl FnOnce(std::io::Error) -> LabError {
    let program = args[0].to_string();
    move |source| LabError::Spawn { program, source }
}

/// Runs a command; its stderr becomes the error.
pub(crate) fn run(args: &[&str]) -> Result<String, LabError> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(spawn_error(args))?;
    if !out.status.success() {
        return Err(failed(args, &out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command with `input` on its stdin.
pub(crate) fn run_stdin(args: &[&str], input: &str) -> Result<(), LabError> {
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_error(args))?;
    let written = child.stdin.take().expect("stdin is piped").write_all(input.as_bytes());
    let out = child.wait_with_output().map_err(spawn_error(args))?;
    if !out.status.success() {
        return Err(failed(args, &out.stderr));
    }
    written.map_err(spawn_error(args))
}

/// Namespaces that belong to lab `name`: NAME-hN, NAME-sw, NAME-probe.
pub(crate) fn lab_namespaces(name: &str) -> Vec<String> {
    run(&["ip", "netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|ns| {
            ns.strip_prefix(name)
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|r| {
                    r == "sw"
                        || r == "probe"
                        || r.strip_prefix('h')
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
        })
        .map(str::to_string)
        .collect()
}
