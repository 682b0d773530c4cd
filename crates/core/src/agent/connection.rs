//! One accepted connection: its first bytes say what it is. A data connection is handed to the
//! test that waits for its cookie; a control connection gets the preamble, the version check and
//! a control session, and any refusal is answered to the client and reported as an event. All of
//! that, up to a control connection's request, must happen within one deadline
//! ([`HANDSHAKE_TIMEOUT`]) however the bytes trickle.
//!
//! Before all that, at its accept, a connection whose first flight proves the secret takes a
//! reserved slot ([`admit_proven`]); one the caps turned away before its first flight
//! was in gets [`PROOF_WAIT`] more for it on one thread ([`ProofWait`]); one whose proof is
//! checked later, by its own thread, is only protected from eviction by it.

use super::admit::{FirstFlight, OpeningSlot, now_unix_ms};
use super::config::{AgentEvent, HANDSHAKE_TIMEOUT, IDLE_TIMEOUT};
use super::handshake::control_session;
use super::pending::deliver;
use super::state::State;
use crate::proto::conn::Conn;
use crate::proto::frame::{self, DATA_HEADER_LEN, FIRST_FLIGHT_LEN, PREAMBLE_LEN};
use crate::proto::{ErrorKind, Message, VERSION};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// How long a connection the caps turned away may still show its proof before it is closed: a
/// client's first flight follows its connect at once, but may not be in yet when the accept
/// loop looks.
pub(super) const PROOF_WAIT: Duration = Duration::from_millis(100);
/// Connections waiting for their proof at once; past it the oldest is closed.
const PROOF_WAITING: usize = 1024;

/// The agent's owner's callback, shared by every connection thread.
pub(super) type Events = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// At its accept, before any slot is spent: with a secret and a reserved slot free, checks the
/// first flight already in `stream`. A valid proof: the connection gets its thread with the
/// reserved slot, past every cap. A wrong MAC or a copy: refused (an `auth` error after the
/// agent's preamble) and closed. Otherwise the reserved slot goes back and the stream is
/// returned, for the caps to decide.
pub(super) fn admit_proven(
    state: &Arc<State>,
    events: &Events,
    stream: TcpStream,
    peer: SocketAddr,
) -> Option<TcpStream> {
    let Some(secret) = state.config.secret.as_deref() else {
        return Some(stream);
    };
    if !state.opening.reserve() {
        return Some(stream);
    }
    match state.opening.peek_first_flight(secret, &stream, now_unix_ms()) {
        FirstFlight::Unproven => {
            state.opening.unreserve();
            Some(stream)
        }
        FirstFlight::Refused(why) => {
            state.opening.unreserve();
            refuse_at_accept(stream, why);
            state.metrics.handshake_failed(ErrorKind::Auth);
            events(&AgentEvent::Refused {
                peer,
                kind: ErrorKind::Auth,
                message: why.into(),
            });
            None
        }
        FirstFlight::Proven => {
            let (held, events) = (Arc::clone(state), Arc::clone(events));
            let spawned = std::thread::Builder::new().name("linerate-conn".into()).spawn(move || {
                let mut slot = OpeningSlot::reserved(&held.opening);
                handle_connection(&held, &*events, stream, peer, &mut slot);
            });
            if spawned.is_err() {
                // Out of threads: this connection is dropped, the agent keeps listening.
                state.opening.unreserve();
            }
            None
        }
    }
}

/// Connections the caps turned away, each given [`PROOF_WAIT`] for a proof, on one thread that
/// polls them all: no thread per connection, at most [`PROOF_WAITING`] descriptors.
pub(super) struct ProofWait(mpsc::SyncSender<(TcpStream, SocketAddr)>);

impl ProofWait {
    /// Its thread, for an agent with a secret (without one there is no proof to wait for).
    pub(super) fn start(state: &Arc<State>, events: &Events) -> Option<ProofWait> {
        state.config.secret.as_ref()?;
        let (tx, rx) = mpsc::sync_channel(PROOF_WAITING);
        let (state, events) = (Arc::clone(state), Arc::clone(events));
        std::thread::Builder::new()
            .name("linerate-proof".into())
            .spawn(move || wait_for_proofs(&state, &events, &rx))
            .ok()?;
        Some(ProofWait(tx))
    }

    /// Hands over a connection the caps turned away (closed at once if too many wait).
    pub(super) fn offer(&self, stream: TcpStream, peer: SocketAddr) {
        let _ = self.0.try_send((stream, peer));
    }
}

/// The loop of [`ProofWait`]: what comes first on a waiting connection goes to
/// [`admit_proven`]; one that shows no proof, or nothing by [`PROOF_WAIT`], is closed, as the
/// caps said.
fn wait_for_proofs(state: &Arc<State>, events: &Events, rx: &mpsc::Receiver<(TcpStream, SocketAddr)>) {
    let mut waiting: VecDeque<(TcpStream, SocketAddr, Instant)> = VecDeque::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    // One look as it comes in (its flight is most often in by now); kept only while nothing is.
    let take = |waiting: &mut VecDeque<_>, stream, peer| {
        if let Some(stream) = admit_proven(state, events, stream, peer)
            && nothing_in(&stream)
        {
            if waiting.len() >= PROOF_WAITING {
                waiting.pop_front();
            }
            waiting.push_back((stream, peer, Instant::now()));
        }
    };
    loop {
        if waiting.is_empty() {
            let Ok((s, p)) = rx.recv() else { return };
            take(&mut waiting, s, p);
        }
        while let Ok((s, p)) = rx.try_recv() {
            take(&mut waiting, s, p);
        }
        fds.clear();
        fds.extend(waiting.iter().map(|(s, _, _)| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        // New arrivals wait on the channel at most this long to be looked at.
        // SAFETY: poll on descriptors `waiting` owns, in a buffer of the stated length.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 10) };
        let now = Instant::now();
        let mut kept = VecDeque::with_capacity(waiting.len());
        for ((stream, peer, since), fd) in waiting.drain(..).zip(&fds) {
            if fd.revents == 0 {
                if now.duration_since(since) < PROOF_WAIT {
                    kept.push_back((stream, peer, since));
                }
                continue;
            }
            // Something came, or the peer closed: one look. A first flight is 64 bytes, one
            // segment on any path, so a part of one is not waited for (it would keep the
            // descriptor readable, and this loop turning, until its deadline).
            let _ = admit_proven(state, events, stream, peer);
        }
        waiting = kept;
    }
}

/// Whether nothing has come in on `stream` yet (and it is still open).
fn nothing_in(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    // SAFETY: recv into a buffer of its stated length on a descriptor this stream owns.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            byte.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

/// Answers a refused first flight without waiting: its bytes taken off the socket (a close with
/// unread bytes sends a reset, which can discard the answer), the agent's preamble and an `auth`
/// error, then a FIN. A fresh socket's send buffer holds them.
fn refuse_at_accept(mut stream: TcpStream, why: &str) {
    let _ = stream.set_nonblocking(true);
    let mut flight = [0u8; FIRST_FLIGHT_LEN];
    let _ = stream.read(&mut flight);
    let mut answer = frame::preamble(VERSION).to_vec();
    if let Ok(error) = frame::encode(&Message::Error {
        kind: ErrorKind::Auth,
        message: why.into(),
    }) {
        answer.extend(error);
    }
    let _ = stream.write_all(&answer);
    let _ = stream.shutdown(Shutdown::Write);
}

/// Fills `buf` from `stream` by `deadline`: a byte that arrives does not move it.
fn read_exact_by(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub(super) fn handle_connection(
    state: &State,
    events: &dyn Fn(&AgentEvent),
    mut stream: TcpStream,
    peer: SocketAddr,
    slot: &mut OpeningSlot<'_>,
) {
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut magic = [0u8; 4];
    if read_exact_by(&mut stream, &mut magic, deadline).is_err() {
        return;
    }
    if magic == frame::DATA_MAGIC {
        let mut header = [0u8; DATA_HEADER_LEN];
        header[..4].copy_from_slice(&magic);
        if read_exact_by(&mut stream, &mut header[4..], deadline).is_err() {
            return;
        }
        // Settled before it is handed over, so that no eviction can shut down a stream its test
        // holds; one evicted while its header came in is dropped. Unknown cookie, not a data
        // header, or past what its test takes: dropped.
        if let Some((cookie, index)) = frame::parse_data_header(&header)
            && slot.settle()
        {
            deliver(&state.pending, state.fd_limit, cookie, index, stream);
        }
        return;
    }
    if magic != frame::CONTROL_MAGIC {
        return;
    }
    // The preamble, and the proof after it when its flags say one follows.
    let mut flight = [0u8; FIRST_FLIGHT_LEN];
    flight[..4].copy_from_slice(&magic);
    if read_exact_by(&mut stream, &mut flight[4..PREAMBLE_LEN], deadline).is_err() {
        return;
    }
    let preamble: [u8; PREAMBLE_LEN] = flight[..PREAMBLE_LEN].try_into().expect("a preamble's length");
    let proof_sent = frame::has_proof(&preamble);
    if proof_sent && read_exact_by(&mut stream, &mut flight[PREAMBLE_LEN..], deadline).is_err() {
        return;
    }
    let version = &preamble[4..6];
    let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    if stream.write_all(&frame::preamble(VERSION)).is_err() {
        return;
    }
    let mut conn = Conn::accepted(stream, peer);
    conn.set_message_timeout(IDLE_TIMEOUT);
    let theirs = u16::from_be_bytes([version[0], version[1]]);
    if theirs != VERSION {
        state.metrics.handshake_failed(ErrorKind::Version);
        conn.send_error(
            ErrorKind::Version,
            format!("this agent speaks protocol {VERSION}, the client {theirs}"),
        );
        return;
    }
    // A proof not checked at accept (no reserved slot was free, or it was not in yet) is
    // checked now: a valid one protects the connection from eviction, a wrong one or a copy is
    // refused. An agent without a secret ignores it.
    let proof = match state.config.secret.as_deref() {
        Some(secret) if proof_sent && !slot.is_reserved() => {
            state.opening.check_first_flight(secret, &flight, now_unix_ms())
        }
        _ => FirstFlight::Unproven,
    };
    // Whether the client's request was read: a refusal before it is the handshake's, one
    // after it the test request's (counted where it happens).
    let mut requested = false;
    let outcome = match proof {
        FirstFlight::Refused(why) => Err((ErrorKind::Auth, why.to_string())),
        FirstFlight::Proven if !slot.authenticated() => {
            Err((ErrorKind::Busy, "closed to make room for a newer connection".into()))
        }
        _ => control_session(state, events, &mut conn, deadline, slot, &mut requested),
    };
    if let Err((kind, message)) = outcome {
        // Closed to make room for a newer connection: the accept loop has said so already.
        if slot.evicted() {
            return;
        }
        if !requested {
            state.metrics.handshake_failed(kind);
        }
        // The message may quote what the peer sent (a bad field, up to a frame's size): the
        // event carries it cut and escaped.
        events(&AgentEvent::Refused {
            peer,
            kind,
            message: crate::proto::peer_text(&message),
        });
        conn.send_error(kind, message);
    }
}
