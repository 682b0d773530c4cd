//! What a lab made, on disk under /run/linerate/labs/NAME: the state file (`state.json`, rewritten
//! after every step of the set-up, so that `lab down` can remove a half-made or crashed lab), the
//! agents' secret, and the daemons' logs.

use crate::LabError;
use linerate_core::result::lab::{Backends, LinkSpec};
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
    /// What this host's egress does to the packets it sends.
    pub link: LinkSpec,
    pub backends: Backends,
    /// HOST:PORT of its agent.
    pub agent: String,
    pub agent_pid: Option<u32>,
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

/// The state of lab `name`, as its set-up last wrote it.
pub fn load(name: &str) -> Result<LabState, LabError> {
    check_name(name)?;
    let path = state_dir(name).join("state.json");
    let text = std::fs::read_to_string(&path).map_err(|source| LabError::NoLab {
        name: name.to_string(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| LabError::BadState { path, source })
}
