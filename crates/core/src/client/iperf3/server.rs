//! The control connection to an iperf3 server as the client waits on it: each state read
//! within a deadline and fed to the client's [`Sequence`], and the error a refusal stands for
//! (busy, the server's error with its i_errno named, terminated, out of turn).

use super::sequence::{Action, Event, Refusal, Sequence};
use crate::proto::iperf3::{Control as Wire, Iperf3Error, STEP_TIMEOUT, State, i_errno_name};
use std::net::SocketAddr;
use std::time::Duration;

/// The control connection, with what its waits need and where the sequence stands.
pub(super) struct Server {
    pub ctl: Wire,
    pub peer: SocketAddr,
    pub seq: Sequence,
}

impl Server {
    /// Waits (at most `timeout`) for the next state and says what to do on it; a refusal is the
    /// error it stands for.
    pub(super) fn next(&mut self, timeout: Duration) -> Result<Action, Iperf3Error> {
        let what = self.seq.waiting();
        let state = self.ctl.recv_state(timeout, what)?;
        self.received(state, what)
    }

    /// What to do on `state`, read while `what`; a refusal is the error it stands for.
    pub(super) fn received(&mut self, state: State, what: &'static str) -> Result<Action, Iperf3Error> {
        self.feed(Event::Received(state), what)
    }

    /// What to do on `event`, while `what`; a refusal is the error it stands for.
    pub(super) fn feed(&mut self, event: Event<'_>, what: &'static str) -> Result<Action, Iperf3Error> {
        match self.seq.handle(event) {
            Action::Refused(r) => Err(self.refusal(r, what)),
            action => Ok(action),
        }
    }

    /// The error a state out of turn stands for.
    fn refusal(&mut self, refusal: Refusal, what: &'static str) -> Iperf3Error {
        let peer = self.peer;
        match refusal {
            Refusal::Busy => Iperf3Error::Busy { peer },
            Refusal::ServerError => {
                // Two big-endian ints follow: i_errno, then errno.
                let mut b = [0u8; 8];
                let (i_errno, errno) = match self.ctl.read_exact_within(&mut b, STEP_TIMEOUT, what) {
                    Ok(()) => (
                        i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                        i32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                    ),
                    Err(_) => (-1, 0),
                };
                Iperf3Error::ServerError {
                    peer,
                    what,
                    name: i_errno_name(i_errno),
                    i_errno,
                    errno,
                }
            }
            Refusal::Terminated => Iperf3Error::Bad {
                peer,
                what: format!("the server ended the test (SERVER_TERMINATE) while {what}"),
            },
            Refusal::Malformed(what) => Iperf3Error::Bad { peer, what },
            Refusal::Unexpected(other) => Iperf3Error::Bad {
                peer,
                what: format!("sent {other:?} while {what}"),
            },
        }
    }
}
