//! Who gets a thread. A connection is *opening* from its accept until
//! it is settled: a data connection handed to its test, a control connection past its request.
//! Opening connections are capped per source (an IPv4 address, an IPv6 /64) and in total, so one
//! address that floods the port with idle or drip-fed connections holds a few slots for at most
//! the handshake deadline while a client from another address still gets through. Past its
//! source's cap a connection is closed at once, unless its first bytes, already in, are a data
//! header with the cookie of a running test (a client opening many data connections at once).
//!
//! At the total cap a new connection makes room by closing the oldest opening one (by accept
//! time, then accept order), if that one has been opening for at least the grace
//! ([`super::EVICTION_GRACE`]): a flood from many addresses cannot hold every slot, and an honest
//! client gets at least the grace, and in practice as long as the flood takes to turn the whole
//! table over, to finish its handshake. The table keeps a duplicate of each opening stream; the
//! accept loop shuts it down (both ways), which wakes its handshake thread's read with an error.
//! A control connection that has proved it knows the secret is never evicted (its request is one
//! message away), so with a secret an honest client needs the grace for one round trip only.
//! An evicted connection leaves the count at once; its thread's own release finds it gone and
//! does nothing, so a slot is given back exactly once.
//!
//! A client that holds the secret proves it in its first flight (`auth::first_flight`):
//! if a reserved slot is free at its accept, the first bytes already in are read without taking
//! them off the socket and checked, before any slot is spent. A valid proof takes one of
//! [`RESERVED_SLOTS`], which nothing else can take, past both caps and never evicted; a wrong MAC
//! or a copy is refused there; anything else (no proof, not in yet, a skewed clock) goes on to
//! the caps above, and a proof that comes later is checked by the connection's thread, which
//! then only protects it from eviction. So a many-address flood, however fast, cannot keep a
//! client with the secret out, and an agent without a secret works as before.
//!
//! Descriptors: the soft `RLIMIT_NOFILE` is raised to the hard one at start, and data connections
//! are refused while fewer than [`FD_RESERVE`] descriptors are left, so the control port stays
//! reachable.

use crate::proto::auth::{self, Proof, ReplayCache};
use crate::proto::frame::{self, FIRST_FLIGHT_LEN, PREAMBLE_LEN};
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Opening slots kept for connections whose first flight proved the secret: no connection
/// without a proof takes one, and they come on top of `max_connections`.
pub(super) const RESERVED_SLOTS: usize = 32;

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

/// One counted opening connection's key: its accept time, then its accept order.
pub(super) type Ticket = (Instant, u64);

/// A counted opening connection.
struct Held {
    source: Source,
    peer: SocketAddr,
    /// A duplicate of its stream to shut it down by (None if none could be made: never evicted).
    stream: Option<TcpStream>,
}

#[derive(Default)]
struct Table {
    by_source: HashMap<Source, usize>,
    /// Oldest first.
    by_age: BTreeMap<Ticket, Held>,
    accepted: u64,
}

impl Table {
    fn remove(&mut self, ticket: &Ticket) -> Option<Held> {
        let held = self.by_age.remove(ticket)?;
        if let Some(n) = self.by_source.get_mut(&held.source) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&held.source);
            }
        }
        Some(held)
    }
}

/// Connections still opening, per source and in all; the reserved slots and the nonces of the
/// proofs that took them.
#[derive(Default)]
pub(super) struct Opening {
    table: Mutex<Table>,
    /// Reserved slots held now (at most [`RESERVED_SLOTS`]).
    reserved: AtomicUsize,
    replays: Mutex<ReplayCache>,
}

/// What a connection's first flight proves.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FirstFlight {
    /// No proof (none sent, not in whole yet, a time outside the window, the cache full).
    Unproven,
    /// A valid proof: its nonce is remembered now.
    Proven,
    /// A proof refused, and why: its MAC is not of this secret, or it is a copy.
    Refused(&'static str),
}

/// The agent's clock for first flights: milliseconds since the Unix epoch.
pub(super) use crate::unixtime::now_unix_ms;

/// Up to `buf.len()` bytes already in `stream`, left on the socket, without waiting.
fn peek(stream: &TcpStream, buf: &mut [u8]) -> usize {
    // SAFETY: recv into a buffer of its stated length on a descriptor this stream owns.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

/// Why a connection was closed at its accept.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Shed {
    /// Its source already has this many connections opening.
    Source(usize),
    /// This many connections are opening in all, and none could be closed to make room (none
    /// opening for the grace yet, or no eviction asked for).
    Total(usize),
}

/// The caps a new connection is counted against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Caps {
    pub per_source: usize,
    pub total: usize,
}

impl Caps {
    /// The caps for a connection from a source whose running tests still expect `mine` data
    /// connections, of `all` expected from every source: those come on top of the caps (a
    /// client opening 256 streams at once is not a flood). A source with data connections
    /// still to come is held to its own cap only, not the total: a data connection whose header
    /// is not in yet at its accept cannot be told from a flood's, and a flood from other
    /// addresses that keeps every slot young must not cut a running test's streams.
    pub(super) fn for_source(mine: usize, all: usize, max_per_source: usize, max_total: usize) -> Caps {
        Caps {
            per_source: max_per_source + mine,
            total: if mine > 0 { usize::MAX } else { max_total + all },
        }
    }
}

/// How a connection at the total cap may make room: by closing the oldest opening connection
/// that has been opening for `grace` and that `spare` does not protect.
pub(super) struct Evict<'a> {
    pub grace: Duration,
    pub spare: &'a dyn Fn(&TcpStream) -> bool,
}

/// An opening connection closed to make room for a newer one.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Evicted {
    pub peer: SocketAddr,
    /// How long it had been opening.
    pub opening_for: Duration,
    /// Connections opening in all when it was closed.
    pub opening: usize,
}

impl Opening {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `stream`, from `peer` and accepted `now`, as opening; at the total cap, with
    /// `evict`, closes the oldest opening connection past its grace to make room. Says why not
    /// when it cannot be counted.
    pub(super) fn enter(
        &self,
        stream: &TcpStream,
        peer: SocketAddr,
        now: Instant,
        caps: Caps,
        evict: Option<Evict<'_>>,
    ) -> Result<(Ticket, Option<Evicted>), Shed> {
        let source = Source::of(&peer);
        let mut table = self.lock();
        let mine = table.by_source.get(&source).copied().unwrap_or(0);
        if mine >= caps.per_source {
            return Err(Shed::Source(mine));
        }
        let all = table.by_age.len();
        let mut evicted = None;
        if all >= caps.total {
            // One closed makes room only if the cap has not shrunk below the count (it moves with
            // the data connections running tests expect).
            let victim = evict
                .filter(|_| all == caps.total)
                .and_then(|e| oldest_past(&table, now, &e));
            let Some(ticket) = victim else {
                return Err(Shed::Total(all));
            };
            let held = table.remove(&ticket).expect("the oldest was just found in the table");
            if let Some(s) = &held.stream {
                // Wakes its handshake thread's read; that thread finds its ticket gone.
                let _ = s.shutdown(Shutdown::Both);
            }
            evicted = Some(Evicted {
                peer: held.peer,
                opening_for: now.saturating_duration_since(ticket.0),
                opening: all,
            });
        }
        table.accepted += 1;
        let ticket = (now, table.accepted);
        let held = Held {
            source,
            peer,
            stream: stream.try_clone().ok(),
        };
        table.by_age.insert(ticket, held);
        *table.by_source.entry(source).or_insert(0) += 1;
        Ok((ticket, evicted))
    }

    /// Takes a reserved slot if one is free.
    pub(super) fn reserve(&self) -> bool {
        self.reserved
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < RESERVED_SLOTS).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives a reserved slot back.
    pub(super) fn unreserve(&self) {
        let _ = self
            .reserved
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// What the first flight already in `stream` proves, checked against `secret` at the
    /// agent's clock `now_ms`; read without taking it off the socket and without waiting.
    pub(super) fn peek_first_flight(&self, secret: &[u8], stream: &TcpStream, now_ms: u64) -> FirstFlight {
        let mut flight = [0u8; FIRST_FLIGHT_LEN];
        if peek(stream, &mut flight) != FIRST_FLIGHT_LEN {
            return FirstFlight::Unproven;
        }
        self.check_first_flight(secret, &flight, now_ms)
    }

    /// What a whole first flight proves (a preamble without the proof flag: nothing).
    pub(super) fn check_first_flight(
        &self,
        secret: &[u8],
        flight: &[u8; FIRST_FLIGHT_LEN],
        now_ms: u64,
    ) -> FirstFlight {
        let preamble: &[u8; PREAMBLE_LEN] = flight[..PREAMBLE_LEN].try_into().expect("a preamble's length");
        if frame::parse_preamble(preamble).is_none() || !frame::has_proof(preamble) {
            return FirstFlight::Unproven;
        }
        let mut replays = self.replays.lock().unwrap_or_else(|e| e.into_inner());
        match auth::check_first_flight(secret, flight, now_ms, &mut replays) {
            Proof::Valid => FirstFlight::Proven,
            Proof::WrongMac => FirstFlight::Refused("wrong secret (first flight)"),
            Proof::Replayed => FirstFlight::Refused("a copy of a first flight already seen"),
            Proof::Stale | Proof::CacheFull => FirstFlight::Unproven,
        }
    }

    /// Counts one opening connection settled or closed: whether it was still counted (false: it
    /// was evicted, and its slot already given back).
    pub(super) fn leave(&self, ticket: &Ticket) -> bool {
        self.lock().remove(ticket).is_some()
    }

    /// Takes this connection's duplicate out of the table, so that it is never evicted: whether
    /// it was still counted.
    fn protect(&self, ticket: &Ticket) -> bool {
        self.lock().by_age.get_mut(ticket).map(|h| h.stream = None).is_some()
    }

    /// Whether this connection is still counted as opening.
    fn holds(&self, ticket: &Ticket) -> bool {
        self.lock().by_age.contains_key(ticket)
    }

    /// Connections opening now, in all.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().by_age.len()
    }
}

/// The oldest connection opening for at least the grace that may be closed.
fn oldest_past(table: &Table, now: Instant, evict: &Evict<'_>) -> Option<Ticket> {
    table
        .by_age
        .iter()
        .take_while(|(t, _)| now.saturating_duration_since(t.0) >= evict.grace)
        .find(|(_, h)| h.stream.as_ref().is_some_and(|s| !(evict.spare)(s)))
        .map(|(t, _)| *t)
}

/// An opening connection's place, given back when it is settled or dropped.
pub(super) struct OpeningSlot<'a> {
    opening: &'a Opening,
    ticket: Option<Ticket>,
    evicted: bool,
    /// Holds a reserved slot (its first flight proved the secret at its accept).
    reserved: bool,
}

impl<'a> OpeningSlot<'a> {
    /// The place of a connection counted under `ticket` (None: one let in uncounted).
    pub(super) fn new(opening: &'a Opening, ticket: Option<Ticket>) -> OpeningSlot<'a> {
        OpeningSlot {
            opening,
            ticket,
            evicted: false,
            reserved: false,
        }
    }

    /// The place of a connection holding a reserved slot ([`Opening::reserve`]): never evicted.
    pub(super) fn reserved(opening: &'a Opening) -> OpeningSlot<'a> {
        OpeningSlot {
            reserved: true,
            ..OpeningSlot::new(opening, None)
        }
    }

    /// Whether it holds a reserved slot: its first flight was proved at its accept.
    pub(super) fn is_reserved(&self) -> bool {
        self.reserved
    }

    /// Settled: the connection no longer counts as opening. False if it was evicted first (its
    /// stream is shut down; drop it).
    pub(super) fn settle(&mut self) -> bool {
        if let Some(t) = self.ticket.take() {
            self.evicted = !self.opening.leave(&t);
        }
        if std::mem::take(&mut self.reserved) {
            self.opening.unreserve();
        }
        !self.evicted
    }

    /// Authenticated: the connection still counts as opening but is never evicted (it has
    /// proved it knows the secret). False if it was evicted first.
    pub(super) fn authenticated(&mut self) -> bool {
        match &self.ticket {
            Some(t) => self.opening.protect(t),
            None => !self.evicted,
        }
    }

    /// Whether the accept loop closed this connection to make room for a newer one.
    pub(super) fn evicted(&self) -> bool {
        self.evicted || self.ticket.is_some_and(|t| !self.opening.holds(&t))
    }
}

impl Drop for OpeningSlot<'_> {
    fn drop(&mut self) {
        self.settle();
    }
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

    #[test]
    fn a_source_with_data_connections_to_come_is_held_to_its_own_cap_only() {
        assert_eq!(
            Caps::for_source(0, 6, 8, 256),
            Caps {
                per_source: 8,
                total: 262
            },
            "a source with none coming: the total, and room for the others' expected ones"
        );
        assert_eq!(
            Caps::for_source(4, 6, 8, 256),
            Caps {
                per_source: 12,
                total: usize::MAX
            }
        );
    }
    use std::io::Read;
    use std::net::TcpListener;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("socket address")
    }

    /// Connected pairs on loopback: (the agent's end, the client's end).
    fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let to = listener.local_addr().expect("address");
        (0..n)
            .map(|_| {
                let client = TcpStream::connect(to).expect("connect");
                let (agent, _) = listener.accept().expect("accept");
                (agent, client)
            })
            .collect()
    }

    const CAPS: Caps = Caps {
        per_source: 8,
        total: 10,
    };

    fn never(_: &TcpStream) -> bool {
        false
    }

    fn evict(grace_ms: u64) -> Option<Evict<'static>> {
        Some(Evict {
            grace: Duration::from_millis(grace_ms),
            spare: &never,
        })
    }

    /// Whether the client's end sees the agent's end closed (not a read that timed out).
    fn closed(client: &mut TcpStream) -> bool {
        client.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut b = [0u8; 8];
        match client.read(&mut b) {
            Ok(n) => n == 0,
            Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        }
    }

    #[test]
    fn issue_14_one_source_cannot_take_every_opening_slot() {
        let opening = Opening::default();
        let conns = pairs(1);
        let s = &conns[0].0;
        let now = Instant::now();
        let flood = addr("127.0.0.1:1000");
        let mut tickets: Vec<Ticket> = (0..8)
            .map(|_| opening.enter(s, flood, now, CAPS, None).expect("under the caps").0)
            .collect();
        assert_eq!(opening.enter(s, flood, now, CAPS, None).err(), Some(Shed::Source(8)));
        let other = addr("127.0.0.2:1000");
        opening
            .enter(s, other, now, CAPS, None)
            .expect("another address gets through");
        opening.enter(s, other, now, CAPS, None).expect("and another");
        assert_eq!(
            opening.enter(s, addr("127.0.0.3:1"), now, CAPS, None).err(),
            Some(Shed::Total(10))
        );
        assert!(opening.leave(&tickets.pop().expect("eight")));
        opening
            .enter(s, flood, now, CAPS, None)
            .expect("a slot given back is taken again");
    }

    #[test]
    fn many_address_flood_at_the_cap_the_oldest_past_its_grace_makes_room() {
        let opening = Opening::default();
        let mut conns = pairs(11);
        let t0 = Instant::now();
        let mut tickets = Vec::new();
        for (i, (agent, _)) in conns.iter().take(10).enumerate() {
            let peer = addr(&format!("127.0.1.{}:1", i + 1));
            let at = t0 + Duration::from_millis(10 * i as u64);
            tickets.push(
                opening
                    .enter(agent, peer, at, CAPS, evict(250))
                    .expect("under the cap")
                    .0,
            );
        }
        // 100 ms after the last one: the oldest has been opening 190 ms, under the grace.
        let newcomer = addr("127.0.0.2:1");
        let soon = t0 + Duration::from_millis(190);
        assert_eq!(
            opening.enter(&conns[10].0, newcomer, soon, CAPS, evict(250)).err(),
            Some(Shed::Total(10))
        );
        // Without eviction nothing changes however old they are.
        let late = t0 + Duration::from_millis(300);
        assert_eq!(
            opening.enter(&conns[10].0, newcomer, late, CAPS, None).err(),
            Some(Shed::Total(10))
        );
        let (ticket, evicted) = opening
            .enter(&conns[10].0, newcomer, late, CAPS, evict(250))
            .expect("room made");
        assert_eq!(
            evicted,
            Some(Evicted {
                peer: addr("127.0.1.1:1"),
                opening_for: Duration::from_millis(300),
                opening: 10,
            })
        );
        assert_eq!(opening.len(), 10, "one out, one in");
        assert!(closed(&mut conns[0].1), "the evicted connection is shut down");
        // Its thread's release finds it gone: no slot is given back twice.
        assert!(!opening.leave(&tickets[0]), "released by the eviction already");
        assert_eq!(opening.len(), 10);
        // The next one goes second.
        let (_, next) = opening
            .enter(&conns[10].0, addr("127.0.0.3:1"), late, CAPS, evict(250))
            .expect("room made again");
        assert_eq!(next.map(|e| e.peer), Some(addr("127.0.1.2:1")));
        assert!(opening.leave(&ticket), "the newcomer still counts");
    }

    #[test]
    fn ties_in_accept_time_go_by_accept_order_and_spared_ones_are_skipped() {
        let opening = Opening::default();
        let mut conns = pairs(5);
        let t0 = Instant::now();
        let caps = Caps {
            per_source: 8,
            total: 4,
        };
        for (i, (agent, _)) in conns.iter().take(4).enumerate() {
            let peer = addr(&format!("127.0.1.{}:1", i + 1));
            opening.enter(agent, peer, t0, caps, None).expect("under the cap");
        }
        // The first accepted (same clock reading as the rest) is spared, say a data connection
        // of a running test: the second goes.
        let first = conns[0].0.local_addr().ok().zip(conns[0].0.peer_addr().ok());
        let spare = move |s: &TcpStream| s.local_addr().ok().zip(s.peer_addr().ok()) == first;
        let later = t0 + Duration::from_secs(1);
        let (_, evicted) = opening
            .enter(
                &conns[4].0,
                addr("127.0.0.2:1"),
                later,
                caps,
                Some(Evict {
                    grace: Duration::from_millis(250),
                    spare: &spare,
                }),
            )
            .expect("room made");
        assert_eq!(evicted.map(|e| e.peer), Some(addr("127.0.1.2:1")));
        assert!(closed(&mut conns[1].1));
    }

    /// Room for two opening connections (eight a source), and three connections to fill it.
    const TWO: Caps = Caps {
        per_source: 8,
        total: 2,
    };

    /// Connection `i` of `conns` entered at `t0`, from 127.0.1.`i+1`, without eviction.
    fn entered(opening: &Opening, conns: &[(TcpStream, TcpStream)], i: usize, t0: Instant) -> Ticket {
        let peer = addr(&format!("127.0.1.{}:1", i + 1));
        opening.enter(&conns[i].0, peer, t0, TWO, None).expect("in").0
    }

    #[test]
    fn an_evicted_slot_settles_false_and_gives_nothing_back_twice() {
        let opening = Opening::default();
        let conns = pairs(3);
        let t0 = Instant::now();
        let caps = TWO;
        let a = entered(&opening, &conns, 0, t0);
        let b = entered(&opening, &conns, 1, t0);
        let mut slot_a = OpeningSlot::new(&opening, Some(a));
        let mut slot_b = OpeningSlot::new(&opening, Some(b));
        assert!(!slot_a.evicted());
        let later = t0 + Duration::from_secs(1);
        let (_, evicted) = opening
            .enter(&conns[2].0, addr("127.0.1.3:1"), later, caps, evict(250))
            .expect("room made");
        assert_eq!(evicted.map(|e| e.peer), Some(addr("127.0.1.1:1")));
        assert!(slot_a.evicted());
        assert!(!slot_a.settle(), "evicted before it settled");
        assert!(slot_b.settle(), "settled in time");
        assert_eq!(opening.len(), 1, "only the newcomer is opening");
        drop((slot_a, slot_b));
        assert_eq!(opening.len(), 1, "dropping settled slots gives nothing back again");
        let uncounted = OpeningSlot::new(&opening, None);
        assert!(!uncounted.evicted());
    }

    #[test]
    fn an_authenticated_connection_is_never_evicted_but_still_counts() {
        let opening = Opening::default();
        let conns = pairs(3);
        let t0 = Instant::now();
        let caps = TWO;
        let a = entered(&opening, &conns, 0, t0);
        entered(&opening, &conns, 1, t0);
        let mut slot_a = OpeningSlot::new(&opening, Some(a));
        assert!(slot_a.authenticated());
        let later = t0 + Duration::from_secs(1);
        let (_, evicted) = opening
            .enter(&conns[2].0, addr("127.0.1.3:1"), later, caps, evict(250))
            .expect("room made");
        assert_eq!(
            evicted.map(|e| e.peer),
            Some(addr("127.0.1.2:1")),
            "the younger one went"
        );
        assert_eq!(
            opening
                .enter(&conns[2].0, addr("127.0.1.4:1"), later, caps, evict(250))
                .err(),
            Some(Shed::Total(2)),
            "the authenticated one stays, counted"
        );
        assert!(!slot_a.evicted());
        assert!(slot_a.settle());
        assert_eq!(opening.len(), 1);
    }

    /// Writes each flight on its own connection and waits (bounded) until the agent's end has
    /// all of it in: the agent's ends.
    fn flights_in(flights: &[[u8; FIRST_FLIGHT_LEN]]) -> Vec<(TcpStream, TcpStream)> {
        use std::io::Write;
        let mut conns = pairs(flights.len());
        for ((agent, client), f) in conns.iter_mut().zip(flights) {
            client.write_all(f).expect("write the first flight");
            let start = Instant::now();
            while peek(agent, &mut [0u8; FIRST_FLIGHT_LEN]) < FIRST_FLIGHT_LEN {
                assert!(start.elapsed() < Duration::from_secs(10), "the flight never came in");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        conns
    }

    #[test]
    fn issue_22_a_wrong_copied_or_stale_first_flight_is_refused_before_a_slot_is_spent() {
        let opening = Opening::default();
        let now = now_unix_ms();
        let version = crate::proto::VERSION;
        let good = auth::first_flight(b"s3cret", version, now, [1; 16]);
        let flights = [
            good,
            good,
            auth::first_flight(b"not it", version, now, [2; 16]),
            auth::first_flight(b"s3cret", version, now - 31_000, [3; 16]),
            frame::preamble(version)
                .iter()
                .chain(&[0u8; FIRST_FLIGHT_LEN - PREAMBLE_LEN])
                .copied()
                .collect::<Vec<u8>>()
                .try_into()
                .expect("a flight's length"),
        ];
        let conns = flights_in(&flights);
        let proof = |i: usize| opening.peek_first_flight(b"s3cret", &conns[i].0, now);
        assert_eq!(proof(0), FirstFlight::Proven);
        // The same bytes on another connection (or read again): a copy.
        assert_eq!(proof(1), FirstFlight::Refused("a copy of a first flight already seen"));
        assert_eq!(proof(0), FirstFlight::Refused("a copy of a first flight already seen"));
        assert_eq!(proof(2), FirstFlight::Refused("wrong secret (first flight)"));
        // 31 s old: outside the window, so no proof (the caps decide, as without one).
        assert_eq!(proof(3), FirstFlight::Unproven);
        assert_eq!(proof(4), FirstFlight::Unproven, "a preamble without the proof flag");
        assert_eq!(opening.len(), 0, "no opening slot was spent on any of them");
        assert_eq!(opening.reserved.load(Ordering::SeqCst), 0);
        // Nothing in yet: no proof, and nothing waited for.
        let empty = pairs(1);
        let start = Instant::now();
        assert_eq!(
            opening.peek_first_flight(b"s3cret", &empty[0].0, now),
            FirstFlight::Unproven
        );
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn issue_22_the_reserved_slots_are_bounded_and_given_back_once() {
        let opening = Opening::default();
        assert!((0..RESERVED_SLOTS).all(|_| opening.reserve()));
        assert!(!opening.reserve(), "all {RESERVED_SLOTS} taken");
        let mut slot = OpeningSlot::reserved(&opening);
        assert!(slot.is_reserved() && slot.authenticated() && !slot.evicted());
        assert!(slot.settle());
        assert!(!slot.is_reserved());
        drop(slot);
        assert_eq!(
            opening.reserved.load(Ordering::SeqCst),
            RESERVED_SLOTS - 1,
            "given back once"
        );
        assert!(opening.reserve());
        assert_eq!(opening.len(), 0, "the unreserved table is untouched");
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
