//! Who gets a thread (issue 14, items 2 and 3). A connection is *opening* from its accept until
//! it is settled: a data connection handed to its test, a control connection past its request.
//! Opening connections are capped per source (an IPv4 address, an IPv6 /64) and in total, so one
//! address that floods the port with idle or drip-fed connections holds a few slots for at most
//! the handshake deadline while a client from another address still gets through. Past its
//! source's cap a connection is closed at once, unless its first bytes, already in, are a data
//! header with the cookie of a running test (a client opening many data connections at once).
//!
//! Descriptors: the soft `RLIMIT_NOFILE` is raised to the hard one at start, and data connections
//! are refused while fewer than [`FD_RESERVE`] descriptors are left, so the control port stays
//! reachable.

use super::State;
use crate::proto::frame::{self, DATA_HEADER_LEN};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Mutex;

/// Descriptors kept for control connections and the agent's own files: data connections are
/// refused once an accepted one's descriptor number comes this close to the limit.
pub(super) const FD_RESERVE: u64 = 512;

/// Where a connection comes from, for the per-source cap: an IPv4 address (an IPv4-mapped IPv6
/// one too), or the /64 of an IPv6 one (one host commonly holds a whole /64).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(super) enum Source {
    V4([u8; 4]),
    V6Prefix([u8; 8]),
}

impl Source {
    pub(super) fn of(addr: &SocketAddr) -> Source {
        match addr.ip().to_canonical() {
            IpAddr::V4(v4) => Source::V4(v4.octets()),
            IpAddr::V6(v6) => {
                let o = v6.octets();
                Source::V6Prefix(o[..8].try_into().expect("eight of sixteen"))
            }
        }
    }
}

/// Connections still opening, per source and in all.
#[derive(Default)]
pub(super) struct Opening {
    by_source: Mutex<HashMap<Source, usize>>,
}

/// Why a connection was closed at its accept.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Shed {
    /// Its source already has this many connections opening.
    Source(usize),
    /// This many connections are opening in all.
    Total(usize),
}

impl Opening {
    /// Counts one more opening connection from `source`, or says why not.
    pub(super) fn enter(&self, source: Source, per_source: usize, total: usize) -> Result<(), Shed> {
        let mut map = self.by_source.lock().unwrap_or_else(|e| e.into_inner());
        let all: usize = map.values().sum();
        let mine = map.get(&source).copied().unwrap_or(0);
        if mine >= per_source {
            return Err(Shed::Source(mine));
        }
        if all >= total {
            return Err(Shed::Total(all));
        }
        *map.entry(source).or_insert(0) += 1;
        Ok(())
    }

    /// Counts one opening connection from `source` settled or closed.
    pub(super) fn leave(&self, source: Source) {
        let mut map = self.by_source.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                map.remove(&source);
            }
        }
    }
}

/// An opening connection's place, given back when it is settled or dropped.
pub(super) struct OpeningSlot<'a> {
    opening: &'a Opening,
    source: Option<Source>,
}

impl<'a> OpeningSlot<'a> {
    /// The place of a connection counted from `source` (None: one let in uncounted).
    pub(super) fn new(opening: &'a Opening, source: Option<Source>) -> OpeningSlot<'a> {
        OpeningSlot { opening, source }
    }

    /// Settled: the connection no longer counts as opening.
    pub(super) fn settle(&mut self) {
        if let Some(s) = self.source.take() {
            self.opening.leave(s);
        }
    }
}

impl Drop for OpeningSlot<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}

/// Whether the first bytes already in `stream` are a data header for a test this agent runs
/// (read without taking them off the socket and without waiting).
pub(super) fn is_known_data(state: &State, stream: &TcpStream) -> bool {
    let mut header = [0u8; DATA_HEADER_LEN];
    // SAFETY: recv into a buffer of its stated length on a descriptor this stream owns.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            header.as_mut_ptr().cast(),
            header.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n != DATA_HEADER_LEN as isize {
        return false;
    }
    frame::parse_data_header(&header)
        .is_some_and(|(cookie, _)| state.pending.lock().is_ok_and(|p| p.contains_key(&cookie)))
}

/// Raises the soft descriptor limit to the hard one; returns the soft limit now in force.
pub(super) fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a struct this function owns.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    lim.rlim_cur
}

/// Whether a data connection on this descriptor leaves too few for the control port. The
/// kernel hands out the lowest free number, so a number this high means at least that many are
/// open.
pub(super) fn near_fd_limit(stream: &TcpStream, soft_limit: u64) -> bool {
    let fd = stream.as_raw_fd() as u64;
    fd + FD_RESERVE >= soft_limit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("socket address")
    }

    #[test]
    fn issue_14_one_source_cannot_take_every_opening_slot() {
        let opening = Opening::default();
        let flood = Source::of(&addr("127.0.0.1:1000"));
        for _ in 0..8 {
            opening.enter(flood, 8, 10).expect("under the caps");
        }
        assert_eq!(opening.enter(flood, 8, 10), Err(Shed::Source(8)));
        let other = Source::of(&addr("127.0.0.2:1000"));
        opening.enter(other, 8, 10).expect("another address gets through");
        opening.enter(other, 8, 10).expect("and another");
        assert_eq!(
            opening.enter(Source::of(&addr("127.0.0.3:1")), 8, 10),
            Err(Shed::Total(10))
        );
        opening.leave(flood);
        opening.enter(flood, 8, 10).expect("a slot given back is taken again");
    }

    #[test]
    fn sources_group_ipv6_by_64_and_see_mapped_ipv4_as_ipv4() {
        assert_eq!(
            Source::of(&addr("[2001:db8::1]:1")),
            Source::of(&addr("[2001:db8::ffff:2]:1"))
        );
        assert_ne!(
            Source::of(&addr("[2001:db8::1]:1")),
            Source::of(&addr("[2001:db8:0:1::1]:1"))
        );
        assert_eq!(
            Source::of(&addr("[::ffff:10.0.0.1]:1")),
            Source::of(&addr("10.0.0.1:2"))
        );
    }

    #[test]
    fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
        let soft = raise_fd_limit();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit into a local struct.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(soft, lim.rlim_cur);
        assert_eq!(lim.rlim_cur, lim.rlim_max);
    }
}
