//! One worker thread's event loop: its own epoll instance (`mio`) and listening socket, accept,
//! drive connections on readiness, sweep idle ones, refresh the date, publish counters.

use super::conn::{Conn, Next, Ready, Turn};
use super::date::{DATE_BYTES, http_date};
use super::http2::{Handoff, Lane};
use super::tls::TlsConn;
use super::{Counts, Shared, TICK};
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::time::{Duration, Instant};

/// How often idle and lingering connections are looked for.
pub(super) const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// After an accept failure (EMFILE, ENFILE, ENOBUFS), wait this long before trying again.
pub(super) const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
pub(super) const EVENTS: usize = 1024;
/// At the connection cap, the share of waiting connections closed at once to make room.
pub(super) const EVICT_SHARE: usize = 64;
pub(super) const LISTENER: Token = Token(usize::MAX - 1);
pub(super) const WAKER: Token = Token(usize::MAX);

pub(super) struct Worker {
    pub(super) index: usize,
    pub(super) poll: Poll,
    pub(super) listener: TcpListener,
    pub(super) shared: Arc<Shared>,
    /// Connection i is registered as Token(i).
    pub(super) conns: Vec<Option<Conn>>,
    pub(super) free: Vec<usize>,
    pub(super) counts: Counts,
    pub(super) date: [u8; DATE_BYTES],
    pub(super) date_secs: u64,
    pub(super) accept_paused_until: Option<Instant>,
    /// The HTTP/2 lane, started with the worker's first HTTP/2 connection.
    pub(super) lane: Option<Lane>,
}

impl Worker {
    pub(super) fn run(mut self) {
        let mut events = Events::with_capacity(EVENTS);
        let mut last_tick = Instant::now();
        let mut last_sweep = last_tick;
        self.refresh_date();
        // Stamped at once: to a reader of settled counts a slot without a stamp is then a
        // worker not started, with nothing served.
        self.publish();
        while !self.shared.stop.load(Relaxed) {
            if let Err(e) = self.poll.poll(&mut events, Some(TICK))
                && e.kind() != io::ErrorKind::Interrupted
            {
                // epoll_wait fails only on bad arguments; do not spin if it ever does.
                std::thread::sleep(TICK);
                continue;
            }
            // One clock read per batch of events: deadlines need no finer grain.
            let now = Instant::now();
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(now),
                    WAKER => {}
                    Token(i) => {
                        // An error or hang-up shows in the next read or write.
                        let ready = Ready {
                            readable: event.is_readable() || event.is_error(),
                            writable: event.is_writable() || event.is_write_closed() || event.is_error(),
                            read_closed: event.is_read_closed(),
                        };
                        self.drive(i, ready, now);
                    }
                }
            }
            if self.accept_paused_until.is_some_and(|t| now >= t) {
                self.accept(now);
            }
            if now.duration_since(last_tick) >= TICK {
                last_tick = now;
                self.refresh_date();
                self.publish();
            }
            if now.duration_since(last_sweep) >= SWEEP_EVERY {
                last_sweep = now;
                self.sweep(now);
            }
        }
        self.publish();
        // Ends the lane: its connections close, its counts are published.
        self.lane = None;
    }

    pub(super) fn accept(&mut self, now: Instant) {
        self.accept_paused_until = None;
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    let ip = peer.ip();
                    // One address over its cap: its new connections close at once, and the
                    // room it would take stays for others.
                    if !self.shared.admit(ip) {
                        self.counts.accept_errors += 1;
                        continue;
                    }
                    // At the cap (which keeps a reserve of descriptors), the oldest connection
                    // waiting for its client makes room: a flood of idle or trickling ones
                    // cannot keep a new client out.
                    if self.shared.open.fetch_add(1, Relaxed) >= self.shared.max_connections
                        && !self.evict_oldest_waiting()
                    {
                        self.shared.open.fetch_sub(1, Relaxed);
                        self.shared.release(ip);
                        self.counts.accept_errors += 1;
                        continue;
                    }
                    // Without it the last segment of a body can wait for the ACK of the one
                    // before (Nagle), a round trip per response on keep-alive connections.
                    let _ = stream.set_nodelay(true);
                    let i = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    let tls = match &self.shared.tls {
                        None => None,
                        Some(config) => match TlsConn::new(config) {
                            Ok(t) => Some(Box::new(t)),
                            Err(_) => {
                                self.free.push(i);
                                self.shared.open.fetch_sub(1, Relaxed);
                                self.shared.release(ip);
                                self.counts.accept_errors += 1;
                                continue;
                            }
                        },
                    };
                    let mut conn = Conn::new(
                        stream,
                        ip,
                        now,
                        self.counts.accepted,
                        self.shared.head_timeout,
                        self.shared.idle,
                    );
                    conn.tls = tls;
                    // Both interests once, edge-triggered: no epoll_ctl as the state changes.
                    let registered = self.poll.registry().register(
                        &mut conn.stream,
                        Token(i),
                        Interest::READABLE | Interest::WRITABLE,
                    );
                    if registered.is_err() {
                        self.free.push(i);
                        self.shared.open.fetch_sub(1, Relaxed);
                        self.shared.release(ip);
                        self.counts.accept_errors += 1;
                        continue;
                    }
                    self.conns[i] = Some(conn);
                    self.counts.accepted += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted) => {}
                Err(_) => {
                    // Out of descriptors or memory. The connection stays queued, and under
                    // edge triggering nothing would report it again: try later.
                    self.counts.accept_errors += 1;
                    self.accept_paused_until = Some(now + ACCEPT_PAUSE);
                    return;
                }
            }
        }
    }

    pub(super) fn drive(&mut self, i: usize, ready: Ready, now: Instant) {
        let Some(Some(conn)) = self.conns.get_mut(i) else {
            return;
        };
        let mut turn = Turn {
            shared: &self.shared,
            counts: &mut self.counts,
            now,
            date: &self.date,
        };
        match conn.drive(ready, &mut turn) {
            Next::Keep => {}
            Next::Close => self.close(i),
            Next::Http2 => self.hand_over(i),
        }
    }

    /// Moves connection `i` to the HTTP/2 lane, which keeps its place in the open and
    /// per-address counts until it ends; closes it if no lane can take it.
    fn hand_over(&mut self, i: usize) {
        let Some(mut conn) = self.conns[i].take() else {
            return;
        };
        self.free.push(i);
        let _ = self.poll.registry().deregister(&mut conn.stream);
        if self.lane.is_none() {
            self.lane = Lane::start(self.index, Arc::clone(&self.shared)).ok();
        }
        let early = conn.buf[conn.start..conn.end].to_vec();
        let job = Handoff {
            stream: conn.stream.into(),
            tls: conn.tls.map(|t| t.session),
            early,
            peer: conn.peer,
        };
        if !self.lane.as_ref().is_some_and(|lane| lane.send(job)) {
            self.shared.open.fetch_sub(1, Relaxed);
            self.shared.release(conn.peer);
            self.counts.accept_errors += 1;
        }
    }

    pub(super) fn close(&mut self, i: usize) {
        // Dropping the socket closes it, which also takes it out of the epoll set.
        if let Some(conn) = self.conns[i].take() {
            self.free.push(i);
            self.shared.open.fetch_sub(1, Relaxed);
            self.shared.release(conn.peer);
        }
    }

    /// Closes this worker's connections that have waited longest for their clients (a partial
    /// or absent head, a keep-alive wait, a linger): the oldest 1/[`EVICT_SHARE`] of them, at
    /// least one, so that one scan makes room for many accepts and a flood at the cap costs
    /// no scan per connection. False when every connection is being answered.
    pub(super) fn evict_oldest_waiting(&mut self) -> bool {
        // Oldest first by when they went quiet, then by accept order: a burst accepted in
        // one pass shares one clock reading, and without the second key its newest could go
        // before its oldest.
        let mut waiting: Vec<((Instant, u64), usize)> = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                c.as_ref()
                    .filter(|c| c.waiting())
                    .map(|c| ((c.quiet_since, c.accepted_as), i))
            })
            .collect();
        if waiting.is_empty() {
            return false;
        }
        let batch = (waiting.len() / EVICT_SHARE).max(1);
        if batch < waiting.len() {
            waiting.select_nth_unstable(batch - 1);
        }
        for &(_, i) in &waiting[..batch] {
            self.close(i);
            self.counts.evicted += 1;
        }
        true
    }

    /// Closes connections idle past the idle limit and lingering past [`LINGER`].
    pub(super) fn sweep(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            if self.conns[i].as_ref().is_some_and(|c| c.deadline <= now) {
                self.close(i);
            }
        }
    }

    pub(super) fn refresh_date(&mut self) {
        let secs = crate::unixtime::now_unix_secs();
        if secs != self.date_secs {
            self.date_secs = secs;
            self.date = http_date(secs);
        }
    }

    pub(super) fn publish(&self) {
        let slot = &self.shared.slots[self.index];
        let c = &self.counts;
        slot.accepted.store(c.accepted, Relaxed);
        slot.requests.store(c.requests, Relaxed);
        for (a, n) in slot.responses.iter().zip(c.responses) {
            a.store(n, Relaxed);
        }
        slot.body_bytes.store(c.body_bytes, Relaxed);
        slot.accept_errors.store(c.accept_errors, Relaxed);
        slot.evicted.store(c.evicted, Relaxed);
        for (a, n) in slot.tls.iter().zip([c.tls_full, c.tls_resumed, c.tls_failed]) {
            a.store(n, Relaxed);
        }
        slot.published.store(self.shared.stamp(), Release);
    }
}
