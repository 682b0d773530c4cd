//! The handshake every control connection begins with (split from `session`): connect, the
//! preambles (with a secret, the first-flight proof), the agent's hello and the
//! challenge-response both ways; a clock reading cuts each wait at its own deadline.

use super::reach::{ClientError, ClientOptions, MAX_SETUP_MESSAGE_BYTES, REPLY_TIMEOUT, Target, connect};
use crate::proto::conn::Conn;
use crate::proto::frame;
use crate::proto::{Message, auth};
use crate::unixtime::now_unix_ms;
use std::time::{Duration, Instant};

/// Connects, exchanges preambles and authenticates (both ways when there is a secret): the
/// control connection ready for its `request` (or `profiles`).
pub(super) fn authenticated(target: &Target, opts: &ClientOptions) -> Result<Conn, ClientError> {
    authenticated_by(target, opts, None)
}

/// [`authenticated`], each of its waits (connect, preamble, hello, proof) also cut at `deadline`
/// when one is given: a clock reading's deadline for the whole reading.
pub(super) fn authenticated_by(
    target: &Target,
    opts: &ClientOptions,
    deadline: Option<Instant>,
) -> Result<Conn, ClientError> {
    let within = |t: Duration| match deadline {
        // Never zero: a zero timeout means "none" to a socket.
        Some(d) => t
            .min(d.saturating_duration_since(Instant::now()))
            .max(Duration::from_millis(1)),
        None => t,
    };
    let cut;
    let opts = match deadline {
        Some(_) => {
            cut = ClientOptions {
                connect_timeout: within(opts.connect_timeout),
                ..opts.clone()
            };
            &cut
        }
        None => opts,
    };
    let peer = target.addr;
    // With a secret, the first flight proves it (a fresh time and nonce under mac1), so that an
    // agent under a flood gives this connection a reserved slot. Made before the
    // connect: it goes out the moment the connection is up, to be in when the agent accepts.
    let first_flight = match opts.secret.as_deref() {
        Some(secret) => {
            let nonce = auth::nonce()[..auth::MAC1_NONCE_LEN]
                .try_into()
                .expect("sixteen bytes of thirty-two");
            auth::first_flight(secret, crate::proto::VERSION, now_unix_ms(), nonce).to_vec()
        }
        None => frame::preamble(crate::proto::VERSION).to_vec(),
    };
    let stream = connect(peer, opts, |_| Ok(()))?;
    let mut conn = Conn::new(stream, peer);
    conn.open_with(&first_flight, within(opts.connect_timeout))?;
    answer_challenge(conn, target, opts, &|| within(REPLY_TIMEOUT))
}

/// The rest of [`authenticated`] after the preambles: the hello, and the challenge-response
/// both ways when there is a secret; `wait` says how long each reply may take.
pub(super) fn answer_challenge(
    mut conn: Conn,
    target: &Target,
    opts: &ClientOptions,
    wait: &dyn Fn() -> Duration,
) -> Result<Conn, ClientError> {
    let peer = target.addr;
    conn.set_max_message(MAX_SETUP_MESSAGE_BYTES);
    let challenge = match conn.recv(wait(), "waiting for the agent's hello")? {
        Message::Hello { challenge, .. } => challenge,
        other => return Err(conn.unexpected("hello", &other).into()),
    };
    if let Some(challenge) = challenge {
        let agent_nonce = crate::codec::from_hex(&challenge).ok_or(ClientError::Malformed {
            peer,
            what: "challenge",
        })?;
        let secret = opts.secret.as_deref().ok_or(ClientError::NeedSecret { peer })?;
        let client_nonce = auth::nonce();
        let mac = auth::client_proof(secret, &agent_nonce, &client_nonce);
        conn.send(&Message::Auth {
            client_nonce: crate::codec::to_hex(&client_nonce),
            mac: crate::codec::to_hex(&mac),
        })?;
        match conn.recv(wait(), "authenticating")? {
            Message::AuthOk { mac } => {
                let proof = crate::codec::from_hex(&mac).ok_or(ClientError::Malformed { peer, what: "proof" })?;
                if !auth::verify_agent(secret, &agent_nonce, &client_nonce, &proof) {
                    return Err(ClientError::AgentProof { peer });
                }
            }
            other => return Err(conn.unexpected("auth_ok", &other).into()),
        }
    } else if opts.secret.is_some() && !opts.allow_unauthenticated_agent {
        // Mutual authentication or none: a client that holds a secret expects the agent to
        // prove it knows it, so `challenge: null` is a downgrade, not a shortcut.
        return Err(ClientError::Unauthenticated { peer });
    }
    Ok(conn)
}
