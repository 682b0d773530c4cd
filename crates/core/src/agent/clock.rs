//! The agent's clock, read for a controller: each `clock` is answered at once with a
//! `clock_reading` (its wall clock, Unix nanoseconds, plus the pretend offset of a test), its host
//! name and node. The controller times every exchange and keeps the fastest; this end only
//! answers.
//!
//! A clock session has left the opening caps (it settled at its request) and takes no test slot,
//! so it is held to limits of its own: at most [`MAX_CLOCK_SESSIONS`] at once (past
//! them `busy` at its request), [`MAX_READINGS`] readings, each next query within
//! [`CLOCK_IDLE`] of the last reading, and [`CLOCK_SESSION_MAX`] in all from its request. A
//! controller needs 32 readings within its own deadline for the whole reading
//! (`client::controller::CLOCK_READING_MAX`, 5 s), so none of these touches an honest one.

use super::refusal::{Refusal, proto_refusal};
use super::state::{Slot, State};
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::{ErrorKind, Message};
use std::time::{Duration, Instant, SystemTime};

/// The most readings one connection gets: a controller takes 32.
pub(super) const MAX_READINGS: usize = 64;
/// Clock sessions answered at once; past it a new one is refused `busy` at its request. A
/// controller holds one per agent at a time, for at most its reading deadline.
pub(super) const MAX_CLOCK_SESSIONS: usize = 16;
/// How long the agent waits for the next `clock` after a reading (one round trip of the
/// controller's, which sends the next query as soon as a reading is in); the query itself, first
/// byte to last, must be in by then too.
pub(super) const CLOCK_IDLE: Duration = Duration::from_secs(2);
/// The longest a clock session lasts from its request: past it the agent closes it.
pub(super) const CLOCK_SESSION_MAX: Duration = Duration::from_secs(6);

/// This agent's wall clock now, Unix nanoseconds, as it tells it (its pretend offset added).
pub(super) fn now_unix_ns(state: &State) -> i64 {
    crate::unixtime::unix_ns(SystemTime::now()).saturating_add(state.config.clock_offset_ns)
}

/// Answers `clock` until the client closes (or sends something else, or stops asking, or the
/// session's limits are reached), holding one of [`MAX_CLOCK_SESSIONS`] meanwhile.
pub(super) fn answer(state: &State, conn: &mut Conn) -> Result<(), Refusal> {
    let Some(_session) = Slot::take(&state.clocks, MAX_CLOCK_SESSIONS) else {
        return Err((
            ErrorKind::Busy,
            format!("this agent is answering {MAX_CLOCK_SESSIONS} clock sessions, its limit"),
        ));
    };
    let end = Instant::now() + CLOCK_SESSION_MAX;
    conn.set_message_timeout(CLOCK_IDLE);
    let reading = |state: &State| Message::ClockReading {
        unix_ns: now_unix_ns(state),
        host_name: state.host.hostname.clone(),
        node: state.config.node.clone(),
    };
    conn.send(&reading(state)).map_err(proto_refusal)?;
    let over = || {
        (
            ErrorKind::Protocol,
            format!(
                "a clock session gets at most {MAX_READINGS} readings in {} s",
                CLOCK_SESSION_MAX.as_secs()
            ),
        )
    };
    for _ in 1..MAX_READINGS {
        let wait = CLOCK_IDLE.min(end.saturating_duration_since(Instant::now()));
        if wait.is_zero() {
            return Err(over());
        }
        match conn.recv(wait, "waiting for the next clock query") {
            Ok(Message::Clock) => conn.send(&reading(state)).map_err(proto_refusal)?,
            Ok(other) => {
                return Err((ErrorKind::Protocol, format!("expected 'clock', got '{}'", other.name())));
            }
            // The controller has what it needs and closed.
            Err(ProtoError::Closed { .. }) => return Ok(()),
            // The wait was cut short by the session's end, not the idle deadline.
            Err(ProtoError::Timeout { .. }) if wait < CLOCK_IDLE => return Err(over()),
            Err(e) => return Err(proto_refusal(e)),
        }
    }
    Err(over())
}
