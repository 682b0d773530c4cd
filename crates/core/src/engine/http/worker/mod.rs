//! One HTTP worker: its users' state machines (connect, write the request, read the head and
//! the body, think or wait for the schedule) on one mio poll, edge-triggered, with its own
//! histograms and per-interval buckets. Out: the worker's [`HttpRun`], merged by the run.
//!
//! An https user's connection carries its rustls state beside the socket; a cleartext one has
//! none, and its reads and writes go to the socket as before (one branch on an empty option).
//! The TLS steps (handshake, writing through rustls, reading through it) are in `tls_steps`.

use super::head::parse_head;
use super::{HIST_MAX_NS, HttpBucket, HttpErrors, HttpRun, HttpTarget, TargetCounts, Times};
use crate::engine::run::{Gate, Shared};
use crate::engine::sockopt;
use crate::result::StreamEnd;
use crate::spec::HttpSpec;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use rustls::{ClientConfig, ClientConnection};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

pub(super) mod classify;
mod tls_steps;

use classify::classify;

/// Largest response head read.
const MAX_HEAD: usize = 16 * 1024;
const SCRATCH: usize = 256 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not started yet, thinking, or idle (open loop).
    Waiting,
    Connecting,
    /// TCP connected, the TLS handshake under way (https).
    Handshaking,
    Writing,
    Reading,
}

struct User {
    conn: Option<TcpStream>,
    /// The TLS session on `conn` (https); None on cleartext connections.
    tls: Option<Box<ClientConnection>>,
    /// This user's TLS configuration, with its own session cache (https URLs only).
    tls_config: Option<Arc<ClientConfig>>,
    /// When TCP connected (ns since time zero): the handshake is timed from here.
    connected_ns: u64,
    /// This thread's CPU time spent in the handshake under way, ns.
    handshake_cpu_ns: u64,
    state: State,
    target: usize,
    /// Timer generation: a timer of an older one is stale.
    generation: u32,
    intended_ns: u64,
    connect_ns: u64,
    /// Whether the connection being made counts (it began in the window): its outcome is
    /// counted with it, so attempted = successful + unsuccessful + in flight.
    connect_counted: bool,
    written: usize,
    head: Vec<u8>,
    head_len: Option<usize>,
    got_first_byte: bool,
    /// When the response's first byte came (ns since time zero): recorded as its time to first
    /// byte only once the response is complete, beside its response time.
    first_byte_ns: u64,
    content_length: Option<u64>,
    body: u64,
    status: u16,
    close_after: bool,
    /// When the request in flight times out; u64::MAX when none is.
    deadline_ns: u64,
}

/// How a request ended.
enum End {
    Done,
    Failed(fn(&mut HttpErrors) -> &mut u64),
}

struct Worker<'a> {
    spec: &'a HttpSpec,
    targets: &'a [HttpTarget],
    poll: Poll,
    users: Vec<User>,
    timers: BinaryHeap<Reverse<(u64, u32, u32)>>,
    free: Vec<usize>,
    queue: VecDeque<u64>,
    scratch: Vec<u8>,
    start: Instant,
    window_ns: u64,
    /// Where the window ends: `end_ns` less the cool-down.
    window_end_ns: u64,
    end_ns: u64,
    timeout_ns: u64,
    think_ns: u64,
    interval_ns: u64,
    next_target: usize,
    out: HttpRun,
    total_in: u64,
    total_responses: u64,
    /// Users whose next request goes out at the end of this wake-up (closed loop, no think).
    ready: Vec<usize>,
    /// The clock when the worker last woke: for counting bytes into intervals. Response
    /// times, first bytes and connects read the clock themselves.
    tick: u64,
}

impl Worker<'_> {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn in_window(&self, t: u64) -> bool {
        t >= self.window_ns && t <= self.window_end_ns
    }

    fn bucket(&mut self, t: u64) -> Option<&mut HttpBucket> {
        let i = (t / self.interval_ns) as usize;
        self.out.report.timeline.get_mut(i)
    }

    /// The counts of the URL user `u` fetches now (one add beside each total: no lookup).
    fn target_of(&mut self, u: usize) -> &mut TargetCounts {
        &mut self.out.per_target[self.users[u].target]
    }

    fn set_timer(&mut self, u: usize, at: u64) {
        let user = &mut self.users[u];
        user.generation = user.generation.wrapping_add(1);
        self.timers.push(Reverse((at, u as u32, user.generation)));
    }

    fn cancel_timer(&mut self, u: usize) {
        let user = &mut self.users[u];
        user.generation = user.generation.wrapping_add(1);
    }

    /// Starts user `u`'s next request, meant to start at `intended`.
    fn begin(&mut self, u: usize, intended: u64) {
        let now = self.tick;
        let target = self.next_target;
        self.next_target = (self.next_target + 1) % self.targets.len();
        {
            let user = &mut self.users[u];
            user.target = target;
            user.intended_ns = intended;
            user.written = 0;
            user.head.clear();
            user.head_len = None;
            user.got_first_byte = false;
            user.content_length = None;
            user.body = 0;
            user.status = 0;
            user.close_after = !self.spec.keepalive;
        }
        if self.in_window(now) {
            self.out.report.requests_started += 1;
            self.out.per_target[target].requests_started += 1;
        }
        // Timeouts are found by a scan every few ms, not by timers: a timer per request would
        // leave the heap full of stale entries.
        self.users[u].deadline_ns = intended.max(now) + self.timeout_ns;
        if self.users[u].conn.is_some() {
            self.users[u].state = State::Writing;
            self.write(u);
            return;
        }
        let counted = self.in_window(now);
        if counted {
            self.out.report.connections_attempted += 1;
            self.out.per_target[target].connections_attempted += 1;
        }
        if let Some(b) = self.bucket(now) {
            b.connections += 1;
        }
        {
            let user = &mut self.users[u];
            user.state = State::Connecting;
            user.connect_counted = counted;
            user.connect_ns = now;
        }
        match TcpStream::connect(self.targets[target].addr) {
            Ok(mut s) => {
                sockopt::per_connection(&s, None, false);
                if let Err(e) = self
                    .poll
                    .registry()
                    .register(&mut s, Token(u), Interest::READABLE | Interest::WRITABLE)
                {
                    let class = classify(&e);
                    self.finish(u, End::Failed(class));
                    return;
                }
                self.users[u].conn = Some(s);
            }
            Err(e) => {
                let class = classify(&e);
                self.finish(u, End::Failed(class));
            }
        }
    }

    fn connected(&mut self, u: usize) {
        let now = self.now();
        let result = match &self.users[u].conn {
            Some(s) => match s.take_error() {
                Ok(Some(e)) | Err(e) => Err(e),
                Ok(None) => s.peer_addr().map(|_| ()),
            },
            None => return,
        };
        match result {
            Ok(()) => {
                if self.users[u].connect_counted {
                    let _ = self
                        .out
                        .report
                        .connect
                        .record(now.saturating_sub(self.users[u].connect_ns).clamp(1, HIST_MAX_NS));
                }
                let target = self.users[u].target;
                if let Some(name) = &self.targets[target].tls {
                    // https: established once the handshake is done.
                    let user = &mut self.users[u];
                    let config = Arc::clone(user.tls_config.as_ref().expect("https users have a TLS configuration"));
                    match ClientConnection::new(config, name.clone()) {
                        Ok(c) => {
                            user.tls = Some(Box::new(c));
                            user.connected_ns = now;
                            user.handshake_cpu_ns = 0;
                            user.state = State::Handshaking;
                            self.handshake(u);
                        }
                        Err(_) => self.finish(u, End::Failed(|e| &mut e.tls_other)),
                    }
                    return;
                }
                self.established(u);
                self.users[u].state = State::Writing;
                self.write(u);
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected || e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                let class = classify(&e);
                self.finish(u, End::Failed(class));
            }
        }
    }

    /// User `u`'s connection is established (TCP connected; for https, the handshake done):
    /// counted with the attempt's interval, as the summary counts it with its attempt.
    fn established(&mut self, u: usize) {
        let began = self.users[u].connect_ns;
        if let Some(b) = self.bucket(began) {
            b.connections_successful += 1;
        }
        if self.users[u].connect_counted {
            self.out.report.connections_successful += 1;
            self.target_of(u).connections_successful += 1;
        }
    }

    fn write(&mut self, u: usize) {
        if self.users[u].tls.is_some() {
            return self.write_tls(u);
        }
        let targets = self.targets;
        let req = &targets[self.users[u].target].request;
        loop {
            let user = &mut self.users[u];
            let Some(s) = user.conn.as_mut() else { return };
            if user.written >= req.len() {
                // The answer comes as a new readable edge: the last response was read to its
                // end, so nothing is left unread on the socket (no read to EAGAIN here).
                user.state = State::Reading;
                return;
            }
            match s.write(&req[user.written..]) {
                Ok(0) => {
                    self.finish(u, End::Failed(|e| &mut e.reset));
                    return;
                }
                Ok(n) => {
                    user.written += n;
                    self.wrote(n);
                }
                Err(e) => {
                    if !self.again_after(u, &e) {
                        return;
                    }
                }
            }
        }
    }

    /// Counts `n` request bytes written now.
    fn wrote(&mut self, n: usize) {
        let now = self.tick;
        if self.in_window(now) {
            self.out.report.bytes_out += n as u64;
        }
        if let Some(b) = self.bucket(now) {
            b.bytes_out += n as u64;
        }
    }

    fn read(&mut self, u: usize) {
        loop {
            let user = &mut self.users[u];
            let Some(s) = user.conn.as_mut() else { return };
            let got = match user.tls.as_deref_mut() {
                None => s.read(&mut self.scratch),
                Some(c) => tls_steps::read_tls(c, s, &mut self.scratch),
            };
            match got {
                Ok(0) => {
                    let user = &self.users[u];
                    let end = match (user.head_len, user.content_length) {
                        (None, _) => End::Failed(|e| &mut e.reset),
                        // A body delimited by the close.
                        (Some(_), None) => End::Done,
                        (Some(_), Some(cl)) if user.body >= cl => End::Done,
                        (Some(_), Some(_)) => End::Failed(|e| &mut e.short_body),
                    };
                    self.users[u].close_after = true;
                    self.finish(u, end);
                    return;
                }
                Ok(n) => {
                    let now = self.tick;
                    self.total_in += n as u64;
                    if self.in_window(now) {
                        self.out.report.bytes_in += n as u64;
                        self.target_of(u).bytes_in += n as u64;
                    }
                    if let Some(b) = self.bucket(now) {
                        b.bytes_in += n as u64;
                    }
                    let user = &mut self.users[u];
                    if !user.got_first_byte {
                        user.got_first_byte = true;
                        user.first_byte_ns = self.start.elapsed().as_nanos() as u64;
                    }
                    if user.head_len.is_none() {
                        // The usual case: the whole head in the first read, parsed where it lies.
                        let whole = user.head.is_empty();
                        let room = MAX_HEAD - user.head.len();
                        let parsed = if whole {
                            parse_head(&self.scratch[..n])
                        } else {
                            user.head.extend_from_slice(&self.scratch[..n.min(room)]);
                            parse_head(&user.head)
                        };
                        if whole && matches!(parsed, Ok(None)) {
                            user.head.extend_from_slice(&self.scratch[..n.min(room)]);
                        }
                        match parsed {
                            Ok(Some(h)) => {
                                user.head_len = Some(h.len);
                                user.status = h.status;
                                user.content_length = h.content_length;
                                user.close_after |= h.close;
                                user.body = if whole {
                                    (n - h.len) as u64
                                } else {
                                    (user.head.len() - h.len) as u64 + (n - n.min(room)) as u64
                                };
                                if h.chunked {
                                    self.finish(u, End::Failed(|e| &mut e.bad_response));
                                    return;
                                }
                                if h.content_length.is_none() {
                                    user.close_after = true;
                                }
                            }
                            Ok(None) if user.head.len() >= MAX_HEAD => {
                                self.finish(u, End::Failed(|e| &mut e.bad_response));
                                return;
                            }
                            Ok(None) => continue,
                            Err(()) => {
                                self.finish(u, End::Failed(|e| &mut e.bad_response));
                                return;
                            }
                        }
                    } else {
                        user.body += n as u64;
                    }
                    let user = &self.users[u];
                    if let Some(cl) = user.content_length {
                        if user.body == cl {
                            self.finish(u, End::Done);
                            return;
                        }
                        if user.body > cl {
                            self.finish(u, End::Failed(|e| &mut e.bad_response));
                            return;
                        }
                    }
                }
                Err(e) => {
                    if !self.again_after(u, &e) {
                        return;
                    }
                }
            }
        }
    }

    /// After a failed read or write on user `u`: true to call again (interrupted); false to
    /// leave it (it would block: the next edge wakes it; or it failed: ended, the error
    /// classified).
    fn again_after(&mut self, u: usize, e: &io::Error) -> bool {
        match e.kind() {
            io::ErrorKind::Interrupted => true,
            io::ErrorKind::WouldBlock => false,
            _ => {
                self.finish(u, End::Failed(classify(e)));
                false
            }
        }
    }

    /// The request of user `u` ended: count it, close or keep the connection, start the next.
    fn finish(&mut self, u: usize, end: End) {
        let now = self.now();
        self.cancel_timer(u);
        self.users[u].deadline_ns = u64::MAX;
        let in_window = self.in_window(now);
        // A connection that failed before it was established is counted with its attempt, and
        // so is its error: every unsuccessful connection has a class.
        let connect_failed = matches!(self.users[u].state, State::Connecting | State::Handshaking);
        let count_error = if connect_failed {
            let began = self.users[u].connect_ns;
            if let Some(b) = self.bucket(began) {
                b.connections_unsuccessful += 1;
            }
            let counted = self.users[u].connect_counted;
            if counted {
                self.out.report.connections_unsuccessful += 1;
                self.target_of(u).connections_unsuccessful += 1;
            }
            counted
        } else {
            in_window
        };
        if now > self.end_ns {
            // Done (or failed) after the time was up, in the last batch of events: it was in
            // flight at the end.
            self.out.report.in_flight_at_end += 1;
        }
        let mut failed = false;
        match end {
            End::Done => {
                let user = &self.users[u];
                let rt = now.saturating_sub(user.intended_ns).clamp(1, HIST_MAX_NS);
                // The same request's first byte, never after its last: both histograms hold the
                // same responses (a first byte counted for a request that then failed, or ended
                // past the window, put TTFB percentiles above every response time).
                let ttfb = user.first_byte_ns.saturating_sub(user.intended_ns).clamp(1, rt);
                let (target, status, body) = (user.target, user.status, user.body);
                self.total_responses += 1;
                self.out.count_response(now, in_window, target, rt, ttfb, status, body);
            }
            End::Failed(class) => {
                failed = true;
                if count_error {
                    *class(&mut self.out.report.errors) += 1;
                    self.target_of(u).errors += 1;
                }
                if let Some(b) = self.bucket(now) {
                    b.errors += 1;
                }
            }
        }
        let user = &mut self.users[u];
        if (failed || user.close_after)
            && let Some(mut s) = user.conn.take()
        {
            let _ = self.poll.registry().deregister(&mut s);
            user.tls = None;
        }
        user.state = State::Waiting;
        if now >= self.end_ns {
            return;
        }
        match self.spec.rate {
            None if self.think_ns > 0 => self.set_timer(u, now + self.think_ns),
            // A failure with no think time waits a millisecond: a refusing server is not
            // hammered at the speed of the loop.
            None if failed => self.set_timer(u, now + 1_000_000),
            // The next request goes out once this wake-up's events are all read: the server
            // then gets the batch's requests together, not one wake-up each.
            None => self.ready.push(u),
            Some(_) => match self.queue.pop_front() {
                Some(at) => {
                    if at + 1_000_000 < now {
                        self.out.report.queued_late += 1;
                    }
                    self.begin(u, at)
                }
                None => self.free.push(u),
            },
        }
    }

    fn timer(&mut self, u: usize, due: u64) {
        if self.users[u].state == State::Waiting {
            self.begin(u, due);
        }
    }

    /// Ends every request past its deadline as a timeout.
    fn expire(&mut self, now: u64) {
        for u in 0..self.users.len() {
            if self.users[u].deadline_ns <= now {
                let class: fn(&mut HttpErrors) -> &mut u64 = match self.users[u].state {
                    State::Handshaking => |e| &mut e.tls_timeout,
                    _ => |e| &mut e.timeout,
                };
                self.finish(u, End::Failed(class));
            }
        }
    }

    fn event(&mut self, u: usize, readable: bool, writable: bool) {
        if u >= self.users.len() {
            return;
        }
        match self.users[u].state {
            State::Connecting if writable || readable => self.connected(u),
            State::Handshaking if writable || readable => self.handshake(u),
            State::Writing if writable => self.write(u),
            State::Reading if readable => self.read(u),
            _ => {}
        }
    }
}

impl User {
    /// A user before its first request; `tls_config` is its own configuration (https URLs).
    fn new(tls_config: Option<Arc<ClientConfig>>) -> User {
        User {
            conn: None,
            tls: None,
            tls_config,
            connected_ns: 0,
            handshake_cpu_ns: 0,
            state: State::Waiting,
            target: 0,
            generation: 0,
            intended_ns: 0,
            connect_ns: 0,
            connect_counted: false,
            written: 0,
            // Grown only for a head split over reads, then kept: 16 KiB for each of 100,000
            // users would take seconds to allocate before the run.
            head: Vec::new(),
            head_len: None,
            got_first_byte: false,
            first_byte_ns: 0,
            content_length: None,
            body: 0,
            status: 0,
            close_after: false,
            deadline_ns: u64::MAX,
        }
    }
}

impl<'a> Worker<'a> {
    /// Worker `w`'s state before the gate: `users` users (each with a TLS configuration of its
    /// own where resumption is on), and every buffer the loop uses sized for them.
    fn new(load: Load<'a>, users: usize, times: Times, poll: Poll, w: usize) -> Worker<'a> {
        let Load { spec, targets, tls } = load;
        let Times {
            ramp_ns,
            window_end_ns,
            end_ns,
            interval_ns,
        } = times;
        let buckets = (end_ns / interval_ns) as usize + 2;
        let resume = spec.tls.as_ref().is_none_or(|t| t.resume);
        Worker {
            spec,
            targets,
            poll,
            users: (0..users)
                .map(|_| User::new(tls.map(|c| super::tls::for_user(c, resume))))
                .collect(),
            timers: BinaryHeap::with_capacity(users * 4 + 16),
            free: Vec::with_capacity(users),
            queue: VecDeque::with_capacity(1024),
            scratch: vec![0u8; SCRATCH],
            start: Instant::now(),
            window_ns: ramp_ns,
            window_end_ns,
            end_ns,
            timeout_ns: u64::from(spec.timeout_ms) * 1_000_000,
            think_ns: (spec.think_ms * 1e6) as u64,
            interval_ns,
            next_target: w % targets.len().max(1),
            out: HttpRun::empty(buckets, interval_ns, targets.len()),
            total_in: 0,
            total_responses: 0,
            tick: 0,
            ready: Vec::with_capacity(users),
        }
    }

    /// When this worker's requests start, `mine` being its users' numbers of all: closed loop,
    /// user i (of all) starts at ramp x i / users; open loop, every user is free and requests
    /// come on the schedule. Returns the first request's due time and the gap between requests
    /// (open loop; `u64::MAX` and 0 closed).
    fn schedule_start(&mut self, mine: &[usize], w: usize, threads: usize) -> (u64, u64) {
        match self.spec.rate {
            Some(r) => {
                let gap = (1e9 * threads as f64 / r).max(1.0) as u64;
                self.free.extend((0..mine.len()).rev());
                (w as u64 * gap / threads as u64, gap)
            }
            None => {
                let total_users = self.spec.users as u64;
                for (k, global) in mine.iter().enumerate() {
                    self.set_timer(k, self.window_ns * *global as u64 / total_users);
                }
                (u64::MAX, 0)
            }
        }
    }

    /// What was in flight when the run ended: requests, and connections being made that count.
    fn count_in_flight_at_end(&mut self) {
        self.out.report.in_flight_at_end += self.users.iter().filter(|u| u.state != State::Waiting).count() as u64;
        for u in 0..self.users.len() {
            if matches!(self.users[u].state, State::Connecting | State::Handshaking) && self.users[u].connect_counted {
                self.out.report.connections_in_flight_at_end += 1;
                self.target_of(u).connections_in_flight_at_end += 1;
            }
        }
    }
}

/// What every worker of a run fetches, and how: the spec, the URLs, and for https URLs the
/// client's TLS configuration (each user clones it with a session cache of its own).
#[derive(Clone, Copy)]
pub(super) struct Load<'a> {
    pub spec: &'a HttpSpec,
    pub targets: &'a [HttpTarget],
    pub tls: Option<&'a Arc<ClientConfig>>,
}

/// One worker: users `w`, `w + threads`, ... until the end. Its setup ([`Worker::new`],
/// [`Worker::schedule_start`]) and its end ([`Worker::count_in_flight_at_end`]) are apart; the
/// event loop between stays whole here, long as it is: it is the per-request hot path (each
/// pass reads the clock before every connect and timer so the run ends on time), and its
/// phases share the loop's locals (the schedule's next due time, the next scan, the poll's
/// events) and leave it by `break` with the stream's end, which functions of their own would
/// hand back and forth on every wake-up.
pub(super) fn work(
    load: Load<'_>,
    w: usize,
    threads: usize,
    times: Times,
    shared: &Shared<'_>,
    gate: &Gate,
) -> io::Result<HttpRun> {
    let end_ns = times.end_ns;
    let mine: Vec<usize> = (w..load.spec.users as usize).step_by(threads).collect();
    let poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            gate.arrive_and_wait(&shared.sampler);
            shared.finish(w, StreamEnd::Error);
            return Err(e);
        }
    };
    let mut wk = Worker::new(load, mine.len(), times, poll, w);
    let mut events = Events::with_capacity(1024);
    gate.arrive_and_wait(&shared.sampler);
    wk.start = *shared.t0.get().expect("time zero is set before the gate opens");
    let (mut next_due, gap_ns) = wk.schedule_start(&mine, w, threads);
    let counter = &shared.counters[w];
    let scan_every = (wk.timeout_ns / 10).clamp(1_000_000, 10_000_000);
    let mut next_scan = scan_every;
    let end = loop {
        let now = wk.now();
        wk.tick = now;
        if shared.control.aborted() || shared.control.sending_stopped() {
            break StreamEnd::Stopped;
        }
        if now >= end_ns {
            break StreamEnd::Deadline;
        }
        while next_due <= now && next_due < end_ns {
            if wk.now() >= end_ns {
                break;
            }
            match wk.free.pop() {
                Some(u) => wk.begin(u, next_due),
                None => wk.queue.push_back(next_due),
            }
            next_due += gap_ns;
        }
        // Thousands of users can fall due at once, each a connect(): the clock is read before
        // each (a vDSO call, cheap beside the syscall) so that the run still ends on time
        //.
        while let Some(Reverse((due, u, generation))) = wk.timers.peek().copied() {
            if due > now {
                break;
            }
            if wk.now() >= end_ns {
                break;
            }
            wk.timers.pop();
            if wk.users[u as usize].generation == generation {
                wk.timer(u as usize, due);
            }
        }
        let now = wk.now();
        if now >= next_scan {
            wk.expire(now);
            next_scan = now + scan_every;
        }
        let mut wake = end_ns.min(next_due).min(next_scan);
        if let Some(Reverse((due, _, _))) = wk.timers.peek() {
            wake = wake.min(*due);
        }
        let wait = Duration::from_nanos(wake.saturating_sub(now)).min(Duration::from_millis(100));
        if let Err(e) = wk.poll.poll(&mut events, Some(wait))
            && e.kind() != io::ErrorKind::Interrupted
        {
            shared.finish(w, StreamEnd::Error);
            return Err(e);
        }
        wk.tick = wk.now();
        for ev in events.iter() {
            // Under a flood of connections one event's syscalls can take milliseconds: past the
            // end, the rest are left (the requests they belong to are in flight at the end).
            if wk.now() >= end_ns {
                break;
            }
            let Token(u) = ev.token();
            wk.event(
                u,
                ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                ev.is_writable() || ev.is_error(),
            );
        }
        while !wk.ready.is_empty() {
            let now = wk.now();
            if now >= end_ns {
                break;
            }
            let mut batch = std::mem::take(&mut wk.ready);
            for &u in &batch {
                if wk.now() >= end_ns {
                    break;
                }
                wk.begin(u, now);
            }
            batch.clear();
            // Anything a begin pushed goes round again; the buffer is kept.
            batch.append(&mut wk.ready);
            wk.ready = batch;
        }
        counter.bytes.store(wk.total_in, Relaxed);
        counter.ops.store(wk.total_responses, Relaxed);
    };
    wk.count_in_flight_at_end();
    counter.bytes.store(wk.total_in, Relaxed);
    counter.ops.store(wk.total_responses, Relaxed);
    shared.finish(w, end);
    Ok(wk.out)
}
