//! A control connection after its preamble, up to the test: the hello and the challenge, the
//! client's proof, its request (validated, counted against `max_tests` and the memory budget,
//! its profile applied), then the test handed to its kind's file (`tcp`, `udp`, `rr`, `http`),
//! each of which runs it with the toolkit in `session`. Out: the refusal the client is sent when
//! any of that fails; the connection's own reading and the data connections are `connection`'s.

use super::admit::OpeningSlot;
use super::budget::{Reservation, spec_bytes};
use super::config::{AgentEvent, HANDSHAKE_TIMEOUT};
use super::profile::{self, Applied};
use super::refusal::{Refusal, proto_refusal};
use super::session::Accepted;
use super::state::{Slot, State};
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::frame;
use crate::proto::{self, ErrorKind, Message, auth};
use crate::spec::{TestSpec, Validate};
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
    Accepted { profile: Option<String> },
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
    authenticate(conn, secret, deadline, opening)?;
    let Some((spec, asked)) = read_request(state, conn, secret, deadline, opening)? else {
        return Ok(());
    };
    *requested = true;
    let admitted = admit(state, &spec, &asked, opening).inspect_err(|r| state.metrics.refused(r.0))?;
    run(state, events, conn, spec, asked, admitted)
}

/// The hello (with a challenge when this agent has a secret), then the client's proof checked
/// and this agent's own sent back.
fn authenticate(
    conn: &mut Conn,
    secret: Option<&[u8]>,
    deadline: Instant,
    opening: &mut OpeningSlot<'_>,
) -> Result<(), Refusal> {
    let nonce = secret.map(|_| auth::nonce());
    let hello = Message::Hello {
        software: format!("linerate {}", crate::VERSION),
        challenge: nonce.map(|n| proto::to_hex(&n)),
    };
    conn.send(&hello).map_err(proto_refusal)?;
    let (Some(secret), Some(agent_nonce)) = (secret, nonce) else {
        return Ok(());
    };
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
            .map_err(proto_refusal)
        }
        other => Err((
            ErrorKind::Auth,
            format!("this agent requires a secret; got '{}'", other.name()),
        )),
    }
}

/// The client's request: a test or a third-party test to run, or None once a request that runs
/// nothing (its profiles, its clock) was answered.
fn read_request(
    state: &State,
    conn: &mut Conn,
    secret: Option<&[u8]>,
    deadline: Instant,
    opening: &mut OpeningSlot<'_>,
) -> Result<Option<(TestSpec, Asked)>, Refusal> {
    Ok(Some(
        match conn
            .recv(left(deadline), "waiting for a test request")
            .map_err(|e| handshake_refusal(e, deadline))?
        {
            Message::Request { spec, profile } => (spec, Asked::Accepted { profile }),
            // Which profiles it has (`plan check`): the names the refusal of an unknown one would
            // list, to a client that passed the same authentication. Nothing runs.
            Message::Profiles => {
                let names = state.config.profiles.names().iter().map(|n| n.to_string()).collect();
                conn.send(&Message::ProfileList { names }).map_err(proto_refusal)?;
                return Ok(None);
            }
            // Its clock, for a controller's estimate of its offset. Nothing runs.
            Message::Clock => {
                if !opening.settle() {
                    return Err((ErrorKind::Busy, "closed to make room for a newer connection".into()));
                }
                super::clock::answer(state, conn)?;
                return Ok(None);
            }
            // A third-party test: only among agents that share a secret, so that one cannot be
            // made to send traffic for anyone who reaches it.
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
        },
    ))
}

/// What a test admitted holds while it runs. The fields drop in this order: the memory, then
/// the test slot.
struct Admitted<'s> {
    _memory: Reservation<'s>,
    _test: Slot<'s>,
    /// The profile applied (its undo runs when this drops).
    applied: Option<Applied<'s>>,
}

/// The request admitted: the connection settled, the spec valid, its profile known, a test slot
/// and its memory taken, then the profile's command run (before the test is accepted, outside
/// any measurement). Each refusal is the client's answer.
fn admit<'s>(
    state: &'s State,
    spec: &TestSpec,
    asked: &Asked,
    opening: &mut OpeningSlot<'_>,
) -> Result<Admitted<'s>, Refusal> {
    let profile = match asked {
        Asked::Accepted { profile } => profile.as_deref(),
        Asked::Relay { .. } => None,
    };
    // The handshake is over: this connection no longer counts as opening (unless it was closed
    // to make room for a newer one just before).
    if !opening.settle() {
        return Err((ErrorKind::Busy, "closed to make room for a newer connection".into()));
    }
    spec.validate().map_err(|e| (ErrorKind::BadSpec, e.to_string()))?;
    if matches!(spec, TestSpec::Rpm(_)) {
        return Err((
            ErrorKind::BadSpec,
            "rpm reaches no agent: its far end is a responsiveness server (serve --https-port)".into(),
        ));
    }
    if let Some(name) = profile {
        state.config.profiles.find(name)?;
    }
    let (slots, limit) = if is_probe(spec) {
        (&state.probes, state.config.max_tests * PROBES_PER_TEST)
    } else {
        (&state.tests, state.config.max_tests)
    };
    let Some(test) = Slot::take(slots, limit) else {
        return Err((
            ErrorKind::Busy,
            format!("this agent is running {} test(s), its limit", state.config.max_tests),
        ));
    };
    let memory = state.budget.reserve(spec_bytes(spec)).map_err(|over| {
        let kind = if over.never_fits() {
            ErrorKind::BadSpec
        } else {
            ErrorKind::Busy
        };
        (kind, over.to_string())
    })?;
    // Its undo runs when the report is made or, however the test ends, when `applied` drops.
    let applied = match profile {
        Some(name) => {
            let outcome = profile::apply(&state.config.profiles, &state.profile_running, name);
            match &outcome {
                Ok(_) => state.metrics.profile_run(true),
                // Its command ran and failed (not: the agent is stopping, or another profile runs).
                Err((ErrorKind::Failed, m)) if m != profile::STOPPING => state.metrics.profile_run(false),
                Err(_) => {}
            }
            Some(outcome?)
        }
        None => None,
    };
    Ok(Admitted {
        _memory: memory,
        _test: test,
        applied,
    })
}

/// Probe sessions admitted per test slot: `linerate rrul` probes each of flent's four DSCP
/// classes on a session of its own beside its load.
const PROBES_PER_TEST: usize = 4;

/// A latency probe session (`--probe`): one open-loop rr stream that asks for stamps, at most
/// 10,000 requests a second of at most 1 MiB (`ProbeSpec`'s bounds). It takes a slot of its own,
/// so that it runs beside the test it probes on an agent that runs one test at a time.
fn is_probe(spec: &TestSpec) -> bool {
    match spec {
        TestSpec::Rr(r) => {
            r.stamp
                && r.streams == 1
                && !r.connect
                && r.rate.is_some_and(|t| t <= 10_000.0)
                && r.request_bytes.max(r.response_bytes) <= 1 << 20
        }
        _ => false,
    }
}

/// The admitted test run to its end: a third-party test through `relay`, else its kind's
/// file with the toolkit; its events and duration counted.
fn run(
    state: &State,
    events: &dyn Fn(&AgentEvent),
    conn: &mut Conn,
    spec: TestSpec,
    asked: Asked,
    mut admitted: Admitted<'_>,
) -> Result<(), Refusal> {
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
    let mut test_session = Accepted {
        state,
        conn,
        profile: &mut admitted.applied,
        kind: test,
    };
    let t = &mut test_session;
    let outcome = match spec {
        TestSpec::Tcp(tcp) => super::tcp::run(t, &tcp),
        TestSpec::Udp(udp) => super::udp::run(t, &udp),
        TestSpec::Rr(rr) => super::rr::run(t, &rr),
        TestSpec::Http(http) => super::http::run(t, &http),
        TestSpec::Rpm(_) => unreachable!("refused at admission"),
    };
    drop(admitted.applied.take());
    state.metrics.duration(test, began.elapsed());
    events(&AgentEvent::TestEnded {
        peer,
        test,
        completed: outcome.is_ok(),
    });
    outcome
}
