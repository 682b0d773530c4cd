//! The lab's one error type: what went wrong setting up, inspecting or removing a lab, with the
//! data to act on in fields and the cause as the source. The binary adds its context with anyhow.

use crate::link::LinkError;
use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("lab name '{0}' must be 1-16 characters of a-z, 0-9 and '-'")]
    Name(String),
    #[error("--hosts must be between 2 and 200, not {0}")]
    Hosts(usize),
    #[error("--link {arg}")]
    Link {
        arg: String,
        #[source]
        source: LinkError,
    },
    #[error("linerate lab needs root (it creates network namespaces)")]
    NotRoot,
    #[error("linerate lab needs '{0}' from iproute2 (Debian: apt-get install iproute2)")]
    NoIproute(&'static str),
    #[error("loss= needs 'nft' (Debian: apt-get install nftables)")]
    NoNft,
    #[error("lab '{0}' exists (or left-overs of one): run 'linerate lab down --name {0}' first")]
    Exists(String),
    #[error("no lab '{name}': {}", no_lab_hint(name, labs))]
    NoLab {
        name: String,
        /// The labs that do exist.
        labs: Vec<String>,
    },
    #[error("{} is not a lab state file", path.display())]
    BadState {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A command (ip, tc, nft) that ran and failed; its stderr says why.
    #[error("{command} failed: {stderr}")]
    Command { command: String, stderr: String },
    /// A command that could not be run at all.
    #[error("running {program}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("{action} {}", path.display())]
    File {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("encoding {what}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("finding the linerate program")]
    CurrentExe(#[source] io::Error),
    #[error("{0} is not UTF-8")]
    NotUtf8(&'static str),
    #[error("{what} did not start within {seconds} s")]
    NotStarted { what: String, seconds: u64 },
    #[error("lab '{lab}' has no host '{host}' (it has {hosts})")]
    NoHost { lab: String, host: String, hosts: String },
    #[error("reading the lab secret {}", path.display())]
    Secret {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("lab exec needs a command after --")]
    NoCommand,
    #[error("running {program} in {namespace}")]
    Exec {
        program: String,
        namespace: String,
        #[source]
        source: io::Error,
    },
}

/// What to do when lab `name` does not exist: address one that does, or make it.
fn no_lab_hint(name: &str, labs: &[String]) -> String {
    let flag = |n: &str| {
        if n == crate::DEFAULT_NAME {
            String::new()
        } else {
            format!(" --name {n}")
        }
    };
    match labs {
        [] => format!("no lab is up (linerate lab up{})", flag(name)),
        [one] => format!("the lab up is '{one}' (linerate lab status{})", flag(one)),
        more => format!(
            "the labs up are {} (linerate lab status --name LAB)",
            more.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_23_no_lab_names_the_labs_that_exist() {
        let err = |name: &str, labs: &[&str]| {
            LabError::NoLab {
                name: name.into(),
                labs: labs.iter().map(|l| l.to_string()).collect(),
            }
            .to_string()
        };
        assert_eq!(err("lab", &[]), "no lab 'lab': no lab is up (linerate lab up)");
        assert_eq!(
            err("lab", &["toe"]),
            "no lab 'lab': the lab up is 'toe' (linerate lab status --name toe)"
        );
        assert_eq!(
            err("x", &["lab", "toe"]),
            "no lab 'x': the labs up are 'lab', 'toe' (linerate lab status --name LAB)"
        );
        assert!(!err("lab", &["toe"]).contains("os error"));
    }
}
