//! The control connection to an iperf3 server as the client waits on it: a state expected
//! within a deadline, and what any other state stands for (busy, the server's error with its
//! i_errno named, terminated).

use crate::proto::iperf3::{Control as Wire, Iperf3Error, STEP_TIMEOUT, State, i_errno_name};
use std::net::SocketAddr;
use std::time::Duration;

/// The control connection, with what its waits need.
pub(super) struct Server {
    pub ctl: Wire,
    pub peer: SocketAddr,
}

impl Server {
    /// Waits (at most `timeout`) for `want`; ACCESS_DENIED, SERVER_ERROR and any other state
    /// are the errors they say.
    pub(super) fn expect(&mut self, want: State, timeout: Duration, what: &'static str) -> Result<(), Iperf3Error> {
        match self.ctl.recv_state(timeout, what)? {
            s if s == want => Ok(()),
            other => Err(self.refusal(other, what)),
        }
    }

    /// The error a state other than the one expected stands for.
    pub(super) fn refusal(&mut self, state: State, what: &'static str) -> Iperf3Error {
        let peer = self.peer;
        match state {
            State::AccessDenied => Iperf3Error::Busy { peer },
            State::ServerError => {
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
            State::ServerTerminate => Iperf3Error::Bad {
                peer,
                what: format!("the server ended the test (SERVER_TERMINATE) while {what}"),
            },
            other => Iperf3Error::Bad {
                peer,
                what: format!("sent {other:?} while {what}"),
            },
        }
    }
}
