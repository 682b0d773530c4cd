//! What the TCP engine is handed and what its workers hold: a [`DataStream`] (a connected,
//! tuned socket and what this end does with it) and, per worker, [`WorkerStream`]s that borrow
//! them; and how a call that would block or was interrupted is told from a failure.

use crate::result::{Role, SocketGrant};
use crate::spec::ZeroCopy;
use std::io;
use std::net::TcpStream;

/// One connected data socket and what this end does with it. Under `--mix` one socket carries
/// two counted streams; its `role` is then unused (the end decides).
pub struct DataStream {
    /// Stream number reported for it.
    pub id: u16,
    pub role: Role,
    pub socket: TcpStream,
    /// What the socket-option base read back (`sockopt::configure`, `mix::configure`).
    pub grant: SocketGrant,
}

/// A one-way stream as a worker holds it.
pub(super) struct WorkerStream<'a> {
    /// Index into the counters and the plan's streams.
    pub idx: usize,
    pub role: Role,
    pub socket: &'a TcpStream,
    /// The zero-copy path a sending socket was granted (`SocketGrant::zerocopy`).
    pub zerocopy: Option<ZeroCopy>,
}

/// A blocking call that timed out (the sockets' poll slice), would block, or was interrupted:
/// the worker looks at its flags and calls again.
pub(super) fn is_again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
