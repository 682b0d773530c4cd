//! The agent's clock, read for a controller (issue 24): each `clock` is answered at once with a
//! `clock_reading` (its wall clock, Unix nanoseconds, plus the pretend offset of a test), its host
//! name and node. The controller times every exchange and keeps the fastest; this end only
//! answers, up to [`MAX_READINGS`], each within the idle timeout of the last.

use super::config::IDLE_TIMEOUT;
use super::refusal::{Refusal, proto_refusal};
use super::state::State;
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::{ErrorKind, Message};
use std::time::SystemTime;

/// The most readings one connection gets: a controller needs tens.
pub(super) const MAX_READINGS: usize = 1000;

/// This agent's wall clock now, Unix nanoseconds, as it tells it (its pretend offset added).
pub(super) fn now_unix_ns(state: &State) -> i64 {
    crate::client::unix_ns(SystemTime::now()).saturating_add(state.config.clock_offset_ns)
}

/// Answers `clock` until the client closes (or sends something else, or stops asking).
pub(super) fn answer(state: &State, conn: &mut Conn) -> Result<(), Refusal> {
    let reading = |state: &State| Message::ClockReading {
        unix_ns: now_unix_ns(state),
        host_name: state.host.hostname.clone(),
        node: state.config.node.clone(),
    };
    conn.send(&reading(state)).map_err(proto_refusal)?;
    for _ in 1..MAX_READINGS {
        match conn.recv(IDLE_TIMEOUT, "waiting for the next clock query") {
            Ok(Message::Clock) => conn.send(&reading(state)).map_err(proto_refusal)?,
            Ok(other) => {
                return Err((ErrorKind::Protocol, format!("expected 'clock', got '{}'", other.name())));
            }
            // The controller has what it needs and closed.
            Err(ProtoError::Closed { .. }) => return Ok(()),
            Err(e) => return Err(proto_refusal(e)),
        }
    }
    Ok(())
}
