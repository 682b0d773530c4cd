//! One accepted connection: its first bytes say what it is. A data connection is handed to the
//! test that waits for its cookie; a control connection gets the preamble, the version check and
//! a control session, and any refusal is answered to the client and reported as an event.

use super::session::control_session;
use super::{AgentEvent, OPEN_TIMEOUT, State};
use crate::proto::conn::Conn;
use crate::proto::frame::{self, DATA_HEADER_LEN, PREAMBLE_LEN};
use crate::proto::{ErrorKind, VERSION};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn read_exact_timeout(stream: &mut TcpStream, buf: &mut [u8], timeout: Duration) -> io::Result<()> {
    stream.set_read_timeout(Some(timeout))?;
    stream.read_exact(buf)
}

pub(super) fn handle_connection(state: &State, events: &dyn Fn(&AgentEvent), mut stream: TcpStream) {
    let Ok(peer) = stream.peer_addr() else { return };
    let mut magic = [0u8; 4];
    if read_exact_timeout(&mut stream, &mut magic, OPEN_TIMEOUT).is_err() {
        return;
    }
    if magic == frame::DATA_MAGIC {
        let mut rest = [0u8; DATA_HEADER_LEN - 4];
        if read_exact_timeout(&mut stream, &mut rest, OPEN_TIMEOUT).is_err() {
            return;
        }
        let mut header = [0u8; DATA_HEADER_LEN];
        header[..4].copy_from_slice(&magic);
        header[4..].copy_from_slice(&rest);
        if let Some((cookie, index)) = frame::parse_data_header(&header) {
            let tx = state
                .pending
                .lock()
                .expect("no thread panics holding the lock")
                .get(&cookie)
                .cloned();
            if let Some(tx) = tx {
                let _ = tx.send((index, stream));
            }
        }
        // Unknown cookie, or not a data header: dropped.
        return;
    }
    if magic != frame::CONTROL_MAGIC {
        return;
    }
    let mut version = [0u8; PREAMBLE_LEN - 4];
    if read_exact_timeout(&mut stream, &mut version, OPEN_TIMEOUT).is_err() {
        return;
    }
    if stream.write_all(&frame::preamble(VERSION)).is_err() {
        return;
    }
    let mut conn = Conn::accepted(stream, peer);
    let theirs = u16::from_be_bytes([version[0], version[1]]);
    if theirs != VERSION {
        conn.send_error(
            ErrorKind::Version,
            format!("this agent speaks protocol {VERSION}, the client {theirs}"),
        );
        return;
    }
    if let Err((kind, message)) = control_session(state, events, &mut conn) {
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
