//! What a lab made, on disk under /run/linerate/labs/NAME: the state file (`state.json`, rewritten
//! after every step of the set-up, so that `lab down` can remove a half-made or crashed lab), the
//! agents' secret, and the daemons' logs.

use crate::LabError;
use linerate_core::result::lab::{Backends, LinkQueue, LinkSpec};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

const STATE_ROOT: &str = "/run/linerate/labs";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabHost {
    pub name: String,
    pub namespace: String,
    pub address: String,
    pub mac: String,
    /// This host's link: its rate both ways, the rest on what it sends.
    pub link: LinkSpec,
    pub backends: Backends,
    /// HOST:PORT of its agent.
    pub agent: String,
    pub agent_pid: Option<u32>,
    /// HOST:PORT of the HTTP server its agent runs; None in a state file from before labs kept it.
    #[serde(default)]
    pub http: Option<String>,
    /// The queues holding this host's link to its rate, each way; empty in a state file from
    /// before labs recorded them.
    #[serde(default)]
    pub queues: Vec<LinkQueue>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabState {
    pub name: String,
    /// "point-to-point", "bridge" or "relay".
    pub topology: String,
    pub hosts: Vec<LabHost>,
    pub switch_namespace: Option<String>,
    pub relay_pid: Option<u32>,
    pub secret_file: PathBuf,
    /// Whether this kernel has sch_netem (then netem emulates delay, loss and the rest).
    pub netem: bool,
    /// The agents' profiles (`serve --profile NAME=COMMAND`), for A/B of a host's configuration.
    #[serde(default)]
    pub profiles: Vec<String>,
}

pub fn state_dir(name: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(name)
}

pub(crate) fn check_name(name: &str) -> Result<(), LabError> {
    let ok = !name.is_empty()
        && name.len() <= 16
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(LabError::Name(name.to_string()))
    }
}

pub(crate) fn file_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LabError {
    let path = path.to_path_buf();
    move |source| LabError::File { action, path, source }
}

/// A fresh agent secret in `path`, readable by root alone.
pub(crate) fn write_secret(path: &Path) -> Result<(), LabError> {
    use std::os::unix::fs::OpenOptionsExt;
    let secret = &linerate_core::proto::auth::nonce()[..24];
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(file_error("writing", path))?;
    f.write_all(linerate_core::proto::to_hex(secret).as_bytes())
        .map_err(file_error("writing", path))
}

pub(crate) fn save(state: &LabState) -> Result<(), LabError> {
    let path = state_dir(&state.name).join("state.json");
    let text = serde_json::to_string_pretty(state).map_err(|source| LabError::Encode {
        what: "the lab state",
        source,
    })?;
    std::fs::write(&path, text).map_err(file_error("writing", &path))
}

/// The state of lab `name`, as its set-up last wrote it. A lab that does not exist is
/// [`LabError::NoLab`] with the names of those that do.
pub fn load(name: &str) -> Result<LabState, LabError> {
    check_name(name)?;
    let path = state_dir(name).join("state.json");
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LabError::NoLab {
            name: name.to_string(),
            labs: labs(),
        },
        _ => file_error("reading", &path)(e),
    })?;
    serde_json::from_str(&text).map_err(|source| LabError::BadState { path, source })
}

/// The names of the labs on this machine (each a state file under /run/linerate/labs), sorted.
pub fn labs() -> Vec<String> {
    labs_in(Path::new(STATE_ROOT))
}

fn labs_in(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("state.json").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labs_are_the_directories_with_a_state_file() {
        let root = std::env::temp_dir().join(format!("linerate-labs-{}", std::process::id()));
        for (name, state) in [("b", true), ("a", true), ("half", false)] {
            std::fs::create_dir_all(root.join(name)).expect("mkdir");
            if state {
                std::fs::write(root.join(name).join("state.json"), "{}").expect("write");
            }
        }
        assert_eq!(labs_in(&root), ["a", "b"]);
        assert!(labs_in(&root.join("none")).is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }
}
