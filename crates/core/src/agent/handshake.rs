//! A control connection after its preamble, up to the test: the hello and the challenge, the
//! client's proof, its request (validated, counted against `max_tests` and the memory budget,
//! its profile applied), then the test handed to its kind's file (`tcp`, `udp`, `rr`, `http`),
//! each of which runs it with the toolkit in `session`. Out: the refusal the client is sent when
//! any of that fails; the connection's own reading and the data connections are `connection`'s.

use super::admit::OpeningSlot;
use super::budget::spec_bytes;
use super::config::{AgentEvent, HANDSHAKE_TIMEOUT};
use super::profile;
use super::refusal::{Refusal, proto_refusal};
use super::session::Test;
use super::state::{Slot, State};
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::frame;
use crate::proto::{self, ErrorKind, Message, auth};
use crate::spec::TestSpec;
use std::time::{Duration, Instant};

/// Time left of the handshake's one deadline (zero once it passed: the next read times out).
fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// A failed handshake read: past the one deadline, say so rather than how long the last wait was.
fn handshake_refusal(e: ProtoError, deadline: Instant) -> Refusal {
    match e {
        ProtoError::Timeout { .. } | ProtoError::Partial { .. } if Instant::now() >= deadline => (
            ErrorKind::Protocol,
            format!(
                "the handshake (preamble, authentication, request) did not finish within {} s",
                HANDSHAKE_TIMEOUT.as_secs()
            ),
        ),
        e => proto_refusal(e),
    }
}

/// What a client asked for after authenticating.
enum Asked {
    /// A test with this agent as one end, under the profile named.
    Test { profile: Option<String> },
    /// A third-party test from this agent to `to`.
    Relay {
        to: std::net::SocketAddr,
        start_at_unix_ns: Option<i64>,
    },
}

/// Runs one control session to its end: `Ok` once the test's report was sent (or, asked for
/// its profiles, the list). `requested` is set once a test request was read: a refusal from
/// then on is counted here, as a test refused or failed (`metrics`).
pub(super) fn control_session(
    state: &State,
    events: &dyn Fn(&AgentEvent),
    conn: &mut Conn,
    deadline: Instant,
    opening: &mut OpeningSlot<'_>,
    requested: &mut bool,
) -> Result<(), Refusal> {
    let secret = state.config.secret.as_deref();
    let nonce = secret.map(|_| auth::nonce());
    let hello = Message::Hello {
        software: format!("linerate {}", crate::VERSION),
        challenge: nonce.map(|n| proto::to_hex(&n)),
    };
    conn.send(&hello).map_err(proto_refusal)?;
    if let (Some(secret), Some(agent_nonce)) = (secret, nonce) {
        conn.set_max_message(frame::MAX_AUTH_BYTES);
        let answer = conn.recv(left(deadline), "waiting for authentication");
        conn.set_max_message(frame::MAX_REQUEST_BYTES);
        match answer.map_err(|e| handshake_refusal(e, deadline))? {
            Message::Auth { client_nonce, mac } => {
                let (Some(cn), Some(mac)) = (proto::from_hex(&client_nonce), proto::from_hex(&mac)) else {
                    return Err((ErrorKind::Auth, "malformed authentication".into()));
                };
                if !auth::verify_client(secret, &agent_nonce, &cn, &mac) {
                    return Err((ErrorKind::Auth, "wrong secret".into()));
                }
                // It knows the secret: no flood connection may close it to make room.
                if !opening.authenticated() {
                    return Err((ErrorKind::Busy, "closed to make room for a newer connection".into()));
                }
                let proof = auth::agent_proof(secret, &agent_nonce, &cn);
                conn.send(&Message::AuthOk {
                    mac: proto::to_hex(&proof),
                })
                .map_err(proto_refusal)?;
            }
            other => {
                return Err((
                    ErrorKind::Auth,
                    format!("this agent requires a secret; got '{}'", other.name()),
                ));
            }
        }
    }
    let (spec, asked) = match conn
        .recv(left(deadline), "waiting for a test request")
        .map_err(|e| handshake_refusal(e, deadline))?
    {
        Message::Request { spec, profile } => (spec, Asked::Test { profile }),
        // Which profiles it has (`plan check`): the names the refusal of an unknown one would
        // list, to a client that passed the same authentication. Nothing runs.
        Message::Profiles => {
            let names = state.config.profiles.names().iter().map(|n| n.to_string()).collect();
            return conn.send(&Message::ProfileList { names }).map_err(proto_refusal);
        }
        // Its clock, for a controller's estimate of its offset (issue 24). Nothing runs.
        Message::Clock => {
            if !opening.settle() {
                return Err((ErrorKind::Busy, "closed to make room for a newer connection".into()));
            }
            return super::clock::answer(state, conn);
        }
        // A third-party test (issue 24): only among agents that share a secret, so that one
        // cannot be made to send traffic for anyone who reaches it.
        Message::Relay {
            spec,
            to,
            start_at_unix_ns,
        } => {
            if secret.is_none() {
                return Err((
                    ErrorKind::Auth,
                    "this agent has no secret, so it runs no third-party tests (serve --secret-file)".into(),
                ));
            }
            (spec, Asked::Relay { to, start_at_unix_ns })
        }
        other => {
            return Err((
                ErrorKind::Protocol,
                format!("expected 'request', got '{}'", other.name()),
            ));
        }
    };
    let profile = match &asked {
        Asked::Test { profile } => profile.clone(),
        Asked::Relay { .. } => None,
    };
    *requested = true;
    let refused = |r: Refusal| {
        state.metrics.refused(r.0);
        r
    };
    // The handshake is over: this connection no longer counts as opening (unless it was closed
    // to make room for a newer one just before).
    if !opening.settle() {
        return Err(refused((
            ErrorKind::Busy,
            "closed to make room for a newer connection".into(),
        )));
    }
    spec.validate()
        .map_err(|e| refused((ErrorKind::BadSpec, e.to_string())))?;
    if let Some(name) = &profile {
        state.config.profiles.find(name).map_err(refused)?;
    }
    let Some(_test) = Slot::take(&state.tests, state.config.max_tests) else {
        return Err(refused((
            ErrorKind::Busy,
            format!("this agent is running {} test(s), its limit", state.config.max_tests),
        )));
    };
    let _memory = state.budget.reserve(spec_bytes(&spec)).map_err(|over| {
        let kind = if over.never_fits() {
            ErrorKind::BadSpec
        } else {
            ErrorKind::Busy
        };
        refused((kind, over.to_string()))
    })?;
    // The profile's command runs before the test is accepted, outside any measurement; its undo
    // runs when the report is made or, however the test ends, when `applied` drops.
    let mut applied = match &profile {
        Some(name) => {
            let outcome = profile::apply(&state.config.profiles, &state.profile_running, name);
            match &outcome {
                Ok(_) => state.metrics.profile_run(true),
                // Its command ran and failed (not: the agent is stopping, or another profile runs).
                Err((ErrorKind::Failed, m)) if m != profile::STOPPING => state.metrics.profile_run(false),
                Err(_) => {}
            }
            Some(outcome.map_err(refused)?)
        }
        None => None,
    };
    let (peer, test) = (conn.peer(), spec.kind());
    let began = Instant::now();
    if let Asked::Relay { to, start_at_unix_ns } = asked {
        events(&AgentEvent::TestStarted { peer, test });
        let outcome = super::relay::run(state, conn, &spec, to, start_at_unix_ns);
        state.metrics.duration(test, began.elapsed());
        events(&AgentEvent::TestEnded {
            peer,
            test,
            completed: outcome.is_ok(),
        });
        return outcome;
    }
    events(&AgentEvent::TestStarted { peer, test });
    let mut test_session = Test {
        state,
        conn,
        profile: &mut applied,
        kind: test,
    };
    let t = &mut test_session;
    let outcome = match spec {
        TestSpec::Tcp(tcp) => super::tcp::run(t, &tcp),
        TestSpec::Udp(udp) => super::udp::run(t, &udp),
        TestSpec::Rr(rr) => super::rr::run(t, &rr),
        TestSpec::Http(http) => super::http::run(t, &http),
    };
    drop(applied);
    state.metrics.duration(test, began.elapsed());
    events(&AgentEvent::TestEnded {
        peer,
        test,
        completed: outcome.is_ok(),
    });
    outcome
}
