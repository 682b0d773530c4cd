//! One accepted connection: its first bytes say what it is. A data connection is handed to the
//! test that waits for its cookie; a control connection gets the preamble, the version check and
//! a control session, and any refusal is answered to the client and reported as an event. All of
//! that, up to a control connection's request, must happen within one deadline
//! ([`HANDSHAKE_TIMEOUT`]) however the bytes trickle (issue 14).

use super::admit::OpeningSlot;
use super::config::{AgentEvent, HANDSHAKE_TIMEOUT, IDLE_TIMEOUT};
use super::handshake::control_session;
use super::pending::deliver;
use super::state::State;
use crate::proto::conn::Conn;
use crate::proto::frame::{self, DATA_HEADER_LEN, PREAMBLE_LEN};
use crate::proto::{ErrorKind, VERSION};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

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
    let mut version = [0u8; PREAMBLE_LEN - 4];
    if read_exact_by(&mut stream, &mut version, deadline).is_err() {
        return;
    }
    let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    if stream.write_all(&frame::preamble(VERSION)).is_err() {
        return;
    }
    let mut conn = Conn::accepted(stream, peer);
    conn.set_message_timeout(IDLE_TIMEOUT);
    let theirs = u16::from_be_bytes([version[0], version[1]]);
    if theirs != VERSION {
        conn.send_error(
            ErrorKind::Version,
            format!("this agent speaks protocol {VERSION}, the client {theirs}"),
        );
        return;
    }
    if let Err((kind, message)) = control_session(state, events, &mut conn, deadline, slot) {
        // Closed to make room for a newer connection: the accept loop has said so already.
        if slot.evicted() {
            return;
        }
        // The message may quote what the peer sent (a bad field, up to a frame's size): the
        // event carries it cut and escaped (issue 14).
        events(&AgentEvent::Refused {
            peer,
            kind,
            message: crate::proto::peer_text(&message),
        });
        conn.send_error(kind, message);
    }
}
