//! HTTP/1.1 load: simulated users (closed loop, Avalanche's method) or a request rate (open
//! loop, each request timed from its scheduled start), on a few event-driven workers.
//!
//! Each worker owns its users, its sockets (mio, edge-triggered), its histograms and counters;
//! nothing is shared in the loop but one relaxed store of its running totals per wake-up. Requests
//! are built once per URL before the clock starts; response bodies are read into one scratch
//! buffer per worker and counted, not kept.

use super::tcp::Gate;
use super::udp::{Plan, RunState, Shared, StreamInfo, sample_until_done, spawn_worker};
use super::{Control, EngineError, Sink, pin};
use crate::result::HttpErrors;
use crate::result::{Role, SideReport, StreamEnd};
use crate::spec::HttpSpec;
use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::thread;
use std::time::{Duration, Instant};

const HIST_MAX_NS: u64 = 3_600_000_000_000;
/// Largest response head read.
const MAX_HEAD: usize = 16 * 1024;
const SCRATCH: usize = 256 * 1024;

/// A URL taken apart: what to connect to and what to ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    /// `http://HOST[:PORT][/PATH]`; HOST may be `[v6]`. No https: linerate measures the network
    /// and the server, not a TLS library.
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("'{url}' is not an http:// URL"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("'{url}' has no host (or has credentials)"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6.find(']').ok_or_else(|| format!("'{url}': unclosed '['"))?;
            let port = &v6[end + 1..];
            (v6[..end].to_string(), port.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        let port = match port {
            Some(p) => p.parse().map_err(|_| format!("'{url}': bad port '{p}'"))?,
            None => 80,
        };
        if path.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(format!("'{url}': spaces or control characters in the path"));
        }
        Ok(HttpUrl {
            host,
            port,
            path: path.to_string(),
        })
    }

    /// The Host header's value.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 80 {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// One URL, resolved, with its request bytes.
#[derive(Clone, Debug)]
pub struct HttpTarget {
    pub addr: SocketAddr,
    pub request: Vec<u8>,
}

impl HttpTarget {
    pub fn new(url: &HttpUrl, addr: SocketAddr, keepalive: bool) -> HttpTarget {
        // As short as HTTP/1.1 allows (keep-alive is its default): every header is work for the
        // server under test.
        let connection = if keepalive { "" } else { "Connection: close\r\n" };
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: linerate\r\n{connection}\r\n",
            url.path,
            url.authority(),
        )
        .into_bytes();
        HttpTarget { addr, request }
    }
}

/// Counts over one interval of the run (by the time each event happened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpBucket {
    pub responses: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub connections: u64,
    pub response_time_sum_ns: u64,
    pub response_time_max_ns: u64,
}

impl HttpBucket {
    fn add(&mut self, o: &HttpBucket) {
        self.responses += o.responses;
        self.errors += o.errors;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.connections += o.connections;
        self.response_time_sum_ns += o.response_time_sum_ns;
        self.response_time_max_ns = self.response_time_max_ns.max(o.response_time_max_ns);
    }
}

/// What the client counted, inside the steady-state window unless said otherwise.
#[derive(Clone, Debug)]
pub struct HttpRun {
    /// Complete responses (any status).
    pub responses: u64,
    /// By status class: index = status / 100 (1xx to 5xx; 0 = other).
    pub status: [u64; 6],
    pub requests_started: u64,
    /// Bytes read (heads and bodies) and written (requests).
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Body bytes of complete responses.
    pub body_bytes: u64,
    pub connections_attempted: u64,
    pub connections_successful: u64,
    pub connections_unsuccessful: u64,
    pub errors: HttpErrors,
    /// Round trip of each complete response: from the request's intended start to its last byte.
    pub response_time: Histogram<u64>,
    /// From the request's intended start to the response's first byte.
    pub ttfb: Histogram<u64>,
    /// connect() to established, new connections.
    pub connect: Histogram<u64>,
    /// Requests still unanswered when the time was up (not errors).
    pub in_flight_at_end: u64,
    /// Open loop: requests that waited for a free connection past their scheduled start.
    pub queued_late: u64,
    /// The window: from the end of the ramp to the end, seconds.
    pub window_seconds: f64,
    /// Every interval of the run, ramp included, `interval_seconds` long.
    pub timeline: Vec<HttpBucket>,
    pub interval_ns: u64,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not started yet, thinking, or idle (open loop).
    Waiting,
    Connecting,
    Writing,
    Reading,
}

struct User {
    conn: Option<TcpStream>,
    state: State,
    target: usize,
    /// Timer generation: a timer of an older one is stale.
    generation: u32,
    intended_ns: u64,
    connect_ns: u64,
    written: usize,
    head: Vec<u8>,
    head_len: Option<usize>,
    got_first_byte: bool,
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
        t >= self.window_ns && t <= self.end_ns
    }

    fn bucket(&mut self, t: u64) -> Option<&mut HttpBucket> {
        let i = (t / self.interval_ns) as usize;
        self.out.timeline.get_mut(i)
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
            self.out.requests_started += 1;
        }
        // Timeouts are found by a scan every few ms, not by timers: a timer per request would
        // leave the heap full of stale entries.
        self.users[u].deadline_ns = intended.max(now) + self.timeout_ns;
        if self.users[u].conn.is_some() {
            self.users[u].state = State::Writing;
            self.write(u);
            return;
        }
        if self.in_window(now) {
            self.out.connections_attempted += 1;
        }
        if let Some(b) = self.bucket(now) {
            b.connections += 1;
        }
        match TcpStream::connect(self.targets[target].addr) {
            Ok(mut s) => {
                let _ = s.set_nodelay(true);
                if let Err(_e) =
                    self.poll
                        .registry()
                        .register(&mut s, Token(u), Interest::READABLE | Interest::WRITABLE)
                {
                    self.fail_connect(u, |e| &mut e.other);
                    return;
                }
                let user = &mut self.users[u];
                user.conn = Some(s);
                user.connect_ns = now;
                user.state = State::Connecting;
            }
            Err(e) => {
                let class = classify(&e);
                self.fail_connect(u, class);
            }
        }
    }

    fn fail_connect(&mut self, u: usize, class: fn(&mut HttpErrors) -> &mut u64) {
        if self.in_window(self.tick) {
            self.out.connections_unsuccessful += 1;
        }
        self.finish(u, End::Failed(class));
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
                if self.in_window(now) {
                    self.out.connections_successful += 1;
                    let _ = self
                        .out
                        .connect
                        .record(now.saturating_sub(self.users[u].connect_ns).clamp(1, HIST_MAX_NS));
                }
                self.users[u].state = State::Writing;
                self.write(u);
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected || e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                let class = classify(&e);
                self.fail_connect(u, class);
            }
        }
    }

    fn write(&mut self, u: usize) {
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
                    let now = self.tick;
                    if self.in_window(now) {
                        self.out.bytes_out += n as u64;
                    }
                    if let Some(b) = self.bucket(now) {
                        b.bytes_out += n as u64;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let class = classify(&e);
                    self.finish(u, End::Failed(class));
                    return;
                }
            }
        }
    }

    fn read(&mut self, u: usize) {
        loop {
            let Some(s) = self.users[u].conn.as_mut() else { return };
            match s.read(&mut self.scratch) {
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
                        self.out.bytes_in += n as u64;
                    }
                    if let Some(b) = self.bucket(now) {
                        b.bytes_in += n as u64;
                    }
                    let user = &mut self.users[u];
                    if !user.got_first_byte {
                        user.got_first_byte = true;
                        let now = self.start.elapsed().as_nanos() as u64;
                        if now >= self.window_ns && now <= self.end_ns {
                            let _ = self
                                .out
                                .ttfb
                                .record(now.saturating_sub(user.intended_ns).clamp(1, HIST_MAX_NS));
                        }
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
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let class = classify(&e);
                    self.finish(u, End::Failed(class));
                    return;
                }
            }
        }
    }

    /// The request of user `u` ended: count it, close or keep the connection, start the next.
    fn finish(&mut self, u: usize, end: End) {
        let now = self.now();
        self.cancel_timer(u);
        self.users[u].deadline_ns = u64::MAX;
        let in_window = self.in_window(now);
        if now > self.end_ns {
            // Done (or failed) after the time was up, in the last batch of events: it was in
            // flight at the end.
            self.out.in_flight_at_end += 1;
        }
        let mut failed = false;
        match end {
            End::Done => {
                let user = &self.users[u];
                let rt = now.saturating_sub(user.intended_ns).clamp(1, HIST_MAX_NS);
                let class = usize::from(user.status / 100).min(5);
                let ok = (200..300).contains(&user.status);
                self.total_responses += 1;
                if in_window {
                    self.out.responses += 1;
                    self.out.status[class] += 1;
                    self.out.body_bytes += user.body;
                    let _ = self.out.response_time.record(rt);
                    if !ok {
                        self.out.errors.bad_status += 1;
                    }
                }
                if let Some(b) = self.bucket(now) {
                    b.responses += 1;
                    b.response_time_sum_ns += rt;
                    b.response_time_max_ns = b.response_time_max_ns.max(rt);
                    if !ok {
                        b.errors += 1;
                    }
                }
            }
            End::Failed(class) => {
                failed = true;
                if in_window {
                    *class(&mut self.out.errors) += 1;
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
                        self.out.queued_late += 1;
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
                self.finish(u, End::Failed(|e| &mut e.timeout));
            }
        }
    }

    fn event(&mut self, u: usize, readable: bool, writable: bool) {
        if u >= self.users.len() {
            return;
        }
        match self.users[u].state {
            State::Connecting if writable || readable => self.connected(u),
            State::Writing if writable => self.write(u),
            State::Reading if readable => self.read(u),
            _ => {}
        }
    }
}

/// Which error class an I/O error falls in.
fn classify(e: &io::Error) -> fn(&mut HttpErrors) -> &mut u64 {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => |x| &mut x.refused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => |x| &mut x.reset,
        io::ErrorKind::TimedOut => |x| &mut x.timeout,
        _ => |x| &mut x.other,
    }
}

/// A parsed response head.
struct Head {
    len: usize,
    status: u16,
    content_length: Option<u64>,
    close: bool,
    chunked: bool,
}

/// Ok(None) while the head is incomplete; Err for a head that cannot be an HTTP/1.x response.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, ()> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut headers);
    match r.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            let mut h = Head {
                len,
                status: r.code.unwrap_or(0),
                content_length: None,
                close: r.version == Some(0),
                chunked: false,
            };
            for hd in r.headers.iter() {
                if hd.name.eq_ignore_ascii_case("content-length") {
                    let v = std::str::from_utf8(hd.value).map_err(|_| ())?;
                    h.content_length = Some(v.trim().parse().map_err(|_| ())?);
                } else if hd.name.eq_ignore_ascii_case("connection") {
                    let v = hd.value.to_ascii_lowercase();
                    if v.windows(5).any(|w| w == b"close") {
                        h.close = true;
                    } else if v.windows(10).any(|w| w == b"keep-alive") {
                        h.close = false;
                    }
                } else if hd.name.eq_ignore_ascii_case("transfer-encoding") {
                    h.chunked = hd.value.to_ascii_lowercase().windows(7).any(|w| w == b"chunked");
                }
            }
            // 1xx, 204 and 304 carry no body.
            if h.status < 200 || h.status == 204 || h.status == 304 {
                h.content_length = Some(0);
            }
            Ok(Some(h))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => Err(()),
    }
}

/// The online CPUs (at least 1).
fn online_cpus() -> usize {
    thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs the load: users start evenly over the ramp, then the window runs for the duration.
/// Returns this host's report (samplers over the window, per-worker counts) and what the users
/// measured.
pub fn run(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<(SideReport, HttpRun), EngineError> {
    pin::check_cpus(&spec.cpus)?;
    let users = spec.users as usize;
    let threads = match spec.threads {
        0 => online_cpus(),
        t => usize::from(t),
    }
    .clamp(1, users);
    let state = RunState::new(threads);
    let gate = Gate::new();
    let shared = state.shared(control);
    let ramp_ns = (spec.ramp_seconds * 1e9) as u64;
    let end_ns = ramp_ns + (spec.duration_seconds * 1e9) as u64;
    let interval_ns = if spec.interval_seconds > 0.0 {
        (spec.interval_seconds * 1e9) as u64
    } else {
        end_ns.max(1)
    };
    let plan = Plan {
        warmup: Duration::from_nanos(ramp_ns),
        deadline: Some(Duration::from_nanos(end_ns)),
        interval: (spec.interval_seconds > 0.0).then(|| Duration::from_nanos(interval_ns)),
        ends_on_stop: false,
    };
    let infos: Vec<StreamInfo> = (0..threads)
        .map(|i| StreamInfo {
            id: i as u16,
            role: Role::Send,
            grant: Default::default(),
        })
        .collect();
    let (report, outs) = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for w in 0..threads {
            let cpu = (!spec.cpus.is_empty()).then(|| spec.cpus[w % spec.cpus.len()]);
            let (shared, gate) = (&shared, &gate);
            let spawned = spawn_worker(scope, format!("linerate-h{w}"), cpu, None, move || {
                work(spec, targets, w, threads, ramp_ns, end_ns, interval_ns, shared, gate)
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    control.abort();
                    gate.open();
                    return (Err(EngineError::Spawn(e)), Vec::new());
                }
            }
        }
        let report = sample_until_done(&plan, &infos, &shared, &gate, sink);
        let outs: Vec<io::Result<HttpRun>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("worker panicked"))))
            .collect();
        (Ok(report), outs)
    });
    let mut report = report?;
    report.io = "epoll".into();
    let mut total: Option<HttpRun> = None;
    for o in outs {
        let o = o.map_err(|e| EngineError::Io {
            what: "HTTP worker",
            source: e,
        })?;
        match &mut total {
            None => total = Some(o),
            Some(t) => merge(t, &o),
        }
    }
    let mut total = total.unwrap_or_else(|| empty_run(0, interval_ns));
    let end = report.window_end_ns.min(end_ns);
    total.window_seconds = end.saturating_sub(ramp_ns.min(end)) as f64 / 1e9;
    Ok((report, total))
}

fn empty_run(buckets: usize, interval_ns: u64) -> HttpRun {
    HttpRun {
        responses: 0,
        status: [0; 6],
        requests_started: 0,
        bytes_in: 0,
        bytes_out: 0,
        body_bytes: 0,
        connections_attempted: 0,
        connections_successful: 0,
        connections_unsuccessful: 0,
        errors: HttpErrors::default(),
        response_time: histogram(),
        ttfb: histogram(),
        connect: histogram(),
        in_flight_at_end: 0,
        queued_late: 0,
        window_seconds: 0.0,
        timeline: vec![HttpBucket::default(); buckets],
        interval_ns,
    }
}

fn merge(t: &mut HttpRun, o: &HttpRun) {
    t.responses += o.responses;
    for (a, b) in t.status.iter_mut().zip(o.status) {
        *a += b;
    }
    t.requests_started += o.requests_started;
    t.bytes_in += o.bytes_in;
    t.bytes_out += o.bytes_out;
    t.body_bytes += o.body_bytes;
    t.connections_attempted += o.connections_attempted;
    t.connections_successful += o.connections_successful;
    t.connections_unsuccessful += o.connections_unsuccessful;
    t.errors.add(&o.errors);
    let _ = t.response_time.add(&o.response_time);
    let _ = t.ttfb.add(&o.ttfb);
    let _ = t.connect.add(&o.connect);
    t.in_flight_at_end += o.in_flight_at_end;
    t.queued_late += o.queued_late;
    for (a, b) in t.timeline.iter_mut().zip(&o.timeline) {
        a.add(b);
    }
}

/// One worker: users `w`, `w + threads`, ... until the end.
#[allow(clippy::too_many_arguments)]
fn work(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    w: usize,
    threads: usize,
    ramp_ns: u64,
    end_ns: u64,
    interval_ns: u64,
    shared: &Shared<'_>,
    gate: &Gate,
) -> io::Result<HttpRun> {
    let mine: Vec<usize> = (w..spec.users as usize).step_by(threads).collect();
    let buckets = (end_ns / interval_ns) as usize + 2;
    let poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            gate.arrive_and_wait(&shared.sampler);
            shared.finish(w, StreamEnd::Error);
            return Err(e);
        }
    };
    let mut wk = Worker {
        spec,
        targets,
        poll,
        users: mine
            .iter()
            .map(|_| User {
                conn: None,
                state: State::Waiting,
                target: 0,
                generation: 0,
                intended_ns: 0,
                connect_ns: 0,
                written: 0,
                head: Vec::with_capacity(MAX_HEAD),
                head_len: None,
                got_first_byte: false,
                content_length: None,
                body: 0,
                status: 0,
                close_after: false,
                deadline_ns: u64::MAX,
            })
            .collect(),
        timers: BinaryHeap::with_capacity(mine.len() * 4 + 16),
        free: Vec::with_capacity(mine.len()),
        queue: VecDeque::with_capacity(1024),
        scratch: vec![0u8; SCRATCH],
        start: Instant::now(),
        window_ns: ramp_ns,
        end_ns,
        timeout_ns: u64::from(spec.timeout_ms) * 1_000_000,
        think_ns: (spec.think_ms * 1e6) as u64,
        interval_ns,
        next_target: w % targets.len().max(1),
        out: empty_run(buckets, interval_ns),
        total_in: 0,
        total_responses: 0,
        tick: 0,
        ready: Vec::with_capacity(mine.len()),
    };
    let mut events = Events::with_capacity(1024);
    gate.arrive_and_wait(&shared.sampler);
    wk.start = *shared.t0.get().expect("time zero is set before the gate opens");
    // Closed loop: user i (of all) starts at ramp x i / users. Open loop: every user is free and
    // requests come on the schedule.
    let total_users = spec.users as u64;
    let (mut next_due, gap_ns) = match spec.rate {
        Some(r) => {
            let gap = (1e9 * threads as f64 / r).max(1.0) as u64;
            wk.free.extend((0..mine.len()).rev());
            (w as u64 * gap / threads as u64, gap)
        }
        None => {
            for (k, global) in mine.iter().enumerate() {
                wk.set_timer(k, ramp_ns * *global as u64 / total_users);
            }
            (u64::MAX, 0)
        }
    };
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
            match wk.free.pop() {
                Some(u) => wk.begin(u, next_due),
                None => wk.queue.push_back(next_due),
            }
            next_due += gap_ns;
        }
        while let Some(Reverse((due, u, generation))) = wk.timers.peek().copied() {
            if due > now {
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
            let Token(u) = ev.token();
            wk.event(
                u,
                ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                ev.is_writable() || ev.is_error(),
            );
        }
        while !wk.ready.is_empty() {
            let now = wk.now();
            let mut batch = std::mem::take(&mut wk.ready);
            for &u in &batch {
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
    wk.out.in_flight_at_end += wk.users.iter().filter(|u| u.state != State::Waiting).count() as u64;
    counter.bytes.store(wk.total_in, Relaxed);
    counter.ops.store(wk.total_responses, Relaxed);
    shared.finish(w, end);
    Ok(wk.out)
}

/// The far side of an HTTP test: an agent on the server's host samples it from `started` until
/// the client says the run is over; the window leaves out the ramp.
pub fn sample_host(spec: &HttpSpec, sink: &mut dyn Sink, control: &Control) -> SideReport {
    let state = RunState::new(1);
    let gate = Gate::new();
    let shared = state.shared(control);
    let plan = Plan {
        warmup: Duration::from_secs_f64(spec.ramp_seconds),
        deadline: None,
        interval: (spec.interval_seconds > 0.0).then(|| Duration::from_secs_f64(spec.interval_seconds)),
        ends_on_stop: true,
    };
    let infos = [StreamInfo {
        id: 0,
        role: Role::Receive,
        grant: Default::default(),
    }];
    // The whole run and a margin: a client that never says stop does not hold the agent.
    let limit = Duration::from_secs_f64(spec.ramp_seconds + spec.duration_seconds + 30.0);
    thread::scope(|scope| {
        let (shared, gate) = (&shared, &gate);
        scope.spawn(move || {
            gate.arrive_and_wait(&shared.sampler);
            let began = Instant::now();
            while !(shared.control.aborted() || shared.control.sending_stopped()) && began.elapsed() < limit {
                thread::sleep(Duration::from_millis(20));
            }
            shared.finish(0, StreamEnd::Stopped);
        });
        let mut report = sample_until_done(&plan, &infos, shared, gate, sink);
        report.streams.clear();
        report.intervals.clear();
        report.io = "none".into();
        report
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_taken_apart() {
        let u = HttpUrl::parse("http://10.0.0.2:8080/bytes/524288?x=1").expect("parses");
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("10.0.0.2", 8080, "/bytes/524288?x=1")
        );
        assert_eq!(u.authority(), "10.0.0.2:8080");
        let u = HttpUrl::parse("http://example.test").expect("parses");
        assert_eq!(
            (u.port, u.path.as_str(), u.authority().as_str()),
            (80, "/", "example.test")
        );
        let u = HttpUrl::parse("http://[::1]:81/a").expect("parses");
        assert_eq!(
            (u.host.as_str(), u.port, u.authority().as_str()),
            ("::1", 81, "[::1]:81")
        );
        for bad in [
            "https://x/",
            "x/y",
            "http://",
            "http://h:port/",
            "http://h/a b",
            "http://u@h/",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn response_heads_parse() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhello")
            .expect("valid")
            .expect("complete");
        assert_eq!(
            (h.status, h.content_length, h.close, h.chunked),
            (200, Some(12), true, false)
        );
        assert_eq!(h.len, 58);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le").expect("valid").is_none());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        let h = parse_head(b"HTTP/1.0 404 Not Found\r\n\r\n")
            .expect("valid")
            .expect("complete");
        assert_eq!((h.status, h.content_length, h.close), (404, None, true));
        let h = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .expect("valid")
            .expect("complete");
        assert!(h.chunked);
        let h = parse_head(b"HTTP/1.1 204 No Content\r\n\r\n")
            .expect("valid")
            .expect("complete");
        assert_eq!(h.content_length, Some(0));
    }
}
