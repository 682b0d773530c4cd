//! `lab exec`: this process becomes a command inside a lab host, with the lab's secret and name
//! in its environment, so that `linerate` run there reaches the lab's agents.

use crate::LabError;
use crate::state::load;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Replaces this process with `cmd` inside a lab host; returns only the error that stopped it.
pub fn exec(name: &str, host: &str, cmd: &[String]) -> LabError {
    let state = match load(name) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let Some(h) = state.hosts.iter().find(|h| h.name == host) else {
        let names: Vec<&str> = state.hosts.iter().map(|h| h.name.as_str()).collect();
        return LabError::NoHost {
            lab: name.to_string(),
            host: host.to_string(),
            hosts: names.join(", "),
        };
    };
    let secret = match std::fs::read_to_string(&state.secret_file) {
        Ok(s) => s,
        Err(source) => {
            return LabError::Secret {
                path: state.secret_file.clone(),
                source,
            };
        }
    };
    let Some(program) = cmd.first() else {
        return LabError::NoCommand;
    };
    // `linerate` inside the lab is this very binary, wherever it was started from.
    let program = if program == "linerate" {
        std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| program.clone())
    } else {
        program.clone()
    };
    let source = Command::new("ip")
        .args(["netns", "exec", &h.namespace, &program])
        .args(&cmd[1..])
        .env("LINERATE_SECRET", secret.trim())
        .env("LINERATE_LAB", name)
        .env("LINERATE_LAB_HOST", host)
        .exec();
    LabError::Exec {
        program,
        namespace: h.namespace.clone(),
        source,
    }
}
