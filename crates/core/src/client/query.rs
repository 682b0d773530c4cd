//! What a client asks an agent without running a test: which profiles it has, so that
//! `plan check` can find a campaign's missing profile before its first point rather than have the
//! agent refuse every point that asks for it. In: an agent and how to reach it; out: its answer.
//! The handshake is the test's own (`handshake::authenticated`); docs/protocol.md has the messages.

use super::handshake::authenticated;
use super::session::{ClientError, ClientOptions, Target};
use crate::proto::{Message, peer_text};
use std::time::Duration;

/// How long the agent has to answer `profiles` once asked.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The profiles the agent at `target` has (`linerate serve --profile`), in the order its owner
/// gave them, escaped for printing. Nothing runs on the agent. An agent built before it could
/// answer refuses with a protocol error.
pub fn agent_profiles(target: &Target, opts: &ClientOptions) -> Result<Vec<String>, ClientError> {
    let mut conn = authenticated(target, opts)?;
    conn.send(&Message::Profiles)?;
    match conn.recv(ANSWER_TIMEOUT, "waiting for the agent's profiles")? {
        Message::ProfileList { names } => Ok(names.iter().map(|n| peer_text(n)).collect()),
        other => Err(conn.unexpected("profile_list", &other).into()),
    }
}
