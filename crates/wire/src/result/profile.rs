//! An agent profile run around one test (`linerate serve --profile NAME=COMMAND`): the
//! profile's command before the test, its undo after, as the agent recorded them. Plain data.

use serde::{Deserialize, Serialize};

/// The profile an agent ran around a test: its name, its command and, when the owner gave one,
/// its undo (`NAME.undo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    pub name: String,
    /// The profile's command, run before the test, outside the measurement window.
    #[serde(flatten)]
    pub run: CommandRecord,
    /// Its undo, run after the test (after the agent read its configuration under the profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<CommandRecord>,
}

/// One command the agent ran with `sh -c`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    pub command: String,
    /// Its exit status; null when it did not exit (killed at the time-out, or by a signal).
    pub exit_status: Option<i32>,
    /// It ran past the agent's time-out (`proto::PROFILE_TIMEOUT`) and was killed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Its standard output and error together, the first 4 KiB, control characters escaped
    /// (`\u{a}` for a newline), trailing white space trimmed.
    pub output: String,
    /// From start to exit (or kill), wall-clock milliseconds.
    pub duration_ms: u64,
}

impl CommandRecord {
    /// Exited with status 0.
    pub fn succeeded(&self) -> bool {
        self.exit_status == Some(0)
    }
}
