//! The request-response engine's streams, shared by its closed and open loops: how a stream
//! reaches its peer, the histogram every round trip goes into, and the number a request carries.

use crate::codec::DATA_HEADER_LEN;
use crate::result::{Role, SocketGrant};
use hdrhistogram::Histogram;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

/// How long a blocked call waits before the worker looks at its flags again.
pub(super) const POLL: Duration = Duration::from_millis(50);
/// The longest round trip a histogram holds, ns.
pub(super) const HIST_MAX_NS: u64 = 60_000_000_000;

/// How a stream reaches its peer.
pub enum RrSocket {
    Tcp(TcpStream),
    Udp(UdpSocket),
    /// TCP_CRR, asking end: a new connection to `addr` per transaction, opening with `header`,
    /// from the local address `from` when given (the client's `-B`).
    Connect {
        addr: SocketAddr,
        header: [u8; DATA_HEADER_LEN],
        from: Option<std::net::IpAddr>,
    },
    /// TCP_CRR, answering end: connections arrive on this channel (shared by the streams).
    Accept,
}

pub struct RrStream {
    pub id: u16,
    /// Send: this end asks; Receive: this end answers.
    pub role: Role,
    pub socket: RrSocket,
    pub grant: SocketGrant,
    /// An asking stream in the open loop: every request's times and fate kept here (a latency
    /// probe session); None: only the figures.
    pub record: Option<std::sync::Arc<super::ProbeRecord>>,
}

pub(super) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds")
}

pub(super) fn hex(h: &Histogram<u64>) -> String {
    crate::codec::histogram_to_hex(h)
}

/// Writes the transaction's number into the first bytes of a request (at most 8).
pub(super) fn tag(buf: &mut [u8], seq: u64) {
    let k = buf.len().min(8);
    buf[..k].copy_from_slice(&seq.to_le_bytes()[..k]);
}

/// The fd of a stream's socket, for options.
pub fn raw_fd(s: &RrSocket) -> Option<BorrowedFd<'_>> {
    match s {
        RrSocket::Tcp(t) => Some(t.as_fd()),
        RrSocket::Udp(u) => Some(u.as_fd()),
        _ => None,
    }
}
