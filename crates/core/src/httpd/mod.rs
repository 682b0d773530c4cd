//! The HTTP/1.1 server of `linerate serve --http-port`: the far end of HTTP load tests.
//!
//! In: an address, the files to serve (`--file`) and a thread count. Out: responses on the wire
//! and [`HttpdStats`]. `GET`/`HEAD /bytes/N` answers N bytes of [`BODY_PATTERN`] from memory;
//! `/files/NAME` answers a file opened at bind time; anything else is 404, other methods 405.
//! What a test measures with these responses is the client's business ([`crate::engine`]).
//!
//! One worker thread per CPU, each with its own epoll instance (`mio`) and its own listening
//! socket on the same address (`SO_REUSEPORT`, so the kernel spreads connections over the
//! workers without a shared accept lock); every socket is non-blocking and edge-triggered, read
//! and write interest registered once at accept. In the loop a worker allocates nothing: each
//! connection owns a read buffer (allocated at accept; its size is also the request head limit)
//! and a response head buffer formatted in place. Bodies are never copied per request: small
//! ones go out of one shared pattern buffer with the head in a single `sendmsg`, large ones and
//! files by `sendfile(2)` from the page cache (a memfd holds the pattern), as nginx serves files.
//! Counters are plain integers owned by the worker, published to atomics every 100 ms.
//!
//! Keep-alive follows RFC 9112 §9.3: HTTP/1.1 persists unless `Connection: close`, HTTP/1.0
//! only with `Connection: keep-alive`. A connection that is closed after a response first shuts
//! down its write side and reads until the client closes (at most [`LINGER`]), so the client is
//! not reset before it has read the response. Idle connections are closed after
//! [`HttpdConfig::idle`] ([`IDLE`] by default).
//!
//! One file per job: `setup` binds and opens what the workers share, `worker` is one worker's
//! event loop, `conn` one connection's state machine, `parser` reads request heads, `router` maps
//! a target to what answers it (`rpm` the responsiveness test's), `response` formats heads, `date` the Date header, `body` sends
//! bodies (`sendmsg` from the pattern, `sendfile` from the memfd or a file), `tls` the https
//! port's certificate, configuration and reads through rustls.
//!
//! HTTP/2 (`http2`): a TLS connection whose ALPN is `h2`, or a cleartext one that opens with the
//! HTTP/2 preface, is handed before its first request to its worker's HTTP/2 lane (a thread of
//! its own running the `h2` crate on a current-thread tokio runtime); HTTP/1.1 connections never
//! leave the mio loop, and pay one test of their first bytes.
//!
//! Over TLS (`HttpdConfig::tls`, `serve --https-port`) the same routes are served through rustls:
//! bodies are encrypted from the pattern in memory (or a file read with `pread`), never sent
//! with `sendfile`, and the handshakes are counted (full, resumed, failed).

mod body;
mod chunked;
mod conn;
mod date;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzz;
mod http2;
mod parser;
mod response;
mod router;
mod rpm;
mod setup;
mod tls;
mod worker;

pub use crate::tls::TlsError;
pub use tls::HttpsIdentity;

use crate::metrics::host::online_cpus;
use date::DATE_BYTES;
use mio::net::TcpListener;
use mio::{Interest, Poll, Waker};
use setup::{ignore_sigpipe, listen, open_files, pattern_memfd, raise_open_files_limit};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::net::IpAddr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use worker::{LISTENER, WAKER, Worker};

/// The body of `/bytes/N`: byte `i` is `BODY_PATTERN[i % 64]` (63 printable characters and a
/// newline, so a body read by eye is lines of equal length and a shift shows).
pub const BODY_PATTERN: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n";
/// The largest N `/bytes/N` answers (1 TiB); past it the request is a 400.
pub const MAX_BODY_BYTES: u64 = 1 << 40;
/// Per-connection read buffer, allocated at accept. A request head that does not fit is a 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Default for [`HttpdConfig::idle`]: an idle keep-alive connection (or one whose client stopped
/// reading), and an HTTP/2 stream that sent nothing for this long, is closed after this.
pub const IDLE: Duration = Duration::from_secs(60);
/// After a closing response, how long the client may take to close its side.
pub const LINGER: Duration = Duration::from_secs(2);
/// Poll timeout: how often a worker looks at the stop flag, publishes counters, dates; how
/// often an HTTP/2 lane publishes its counters.
pub(crate) const TICK: Duration = Duration::from_millis(100);
/// Default for [`HttpdConfig::head_timeout`].
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`HttpdConfig::max_connections_per_address`].
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 16_384;
/// Descriptors kept free below the open-files limit (the agent's control port, its tests, the
/// served files): connections past `limit - FD_RESERVE` make room by closing the oldest waiting
/// one instead of taking the last descriptors.
pub const FD_RESERVE: usize = 512;

/// The pattern buffer (memory and memfd); a multiple of the pattern's 64 bytes.
const PATTERN_BYTES: usize = 1 << 20;
/// What to serve and with how many threads.
#[derive(Clone, Debug)]
pub struct HttpdConfig {
    /// Served at `/files/BASENAME`, opened at bind; their size then is their Content-Length.
    pub files: Vec<PathBuf>,
    /// Worker threads; 0 = one per online CPU.
    pub threads: usize,
    /// Connections open at once over all workers; past it new ones are closed at accept
    /// (0 = no limit). The soft open-files limit is raised toward it, up to the hard limit,
    /// and the cap is lowered to keep [`FD_RESERVE`] descriptors below that limit. At the cap a
    /// new connection closes the oldest ones still waiting for their clients (a head, a
    /// keep-alive wait) on the same worker, so a flood of idle connections cannot lock others
    /// out.
    pub max_connections: usize,
    /// Connections open at once from one IP address; past it that address's new connections
    /// are closed at accept (0 = no limit).
    pub max_connections_per_address: usize,
    /// A request head must arrive whole within this, from its first byte (a new connection's
    /// first head: from accept), however slowly its bytes trickle; past it the connection is
    /// closed.
    pub head_timeout: Duration,
    /// A keep-alive connection with no request under way, or one whose client has read nothing
    /// of its response, is closed after this; an HTTP/2 stream that could send nothing of its
    /// response (a zero flow-control window, a client that stopped reading) is reset after this,
    /// and its connection closed when no stream is left.
    pub idle: Duration,
    /// Serve https with this configuration (`serve --https-port`); None: cleartext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for HttpdConfig {
    fn default() -> Self {
        HttpdConfig {
            files: Vec::new(),
            threads: 0,
            max_connections: 65_536,
            max_connections_per_address: MAX_CONNECTIONS_PER_ADDRESS,
            head_timeout: HEAD_TIMEOUT,
            idle: IDLE,
            tls: None,
        }
    }
}

/// What the server counted since it started, summed over its workers (each publishes at most
/// 100 ms late; exact after [`HttpdHandle::stop`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HttpdStats {
    /// Connections accepted and served (not those refused past `max_connections`).
    pub connections_accepted: u64,
    /// Request heads answered, including malformed (400) and oversized (431) ones.
    pub requests: u64,
    /// Responses written in full, by status class: index = status / 100 (2 = 200, 4 = 4xx).
    pub responses_by_status: [u64; 6],
    /// Body bytes of 200 responses handed to the kernel (heads and error texts not included).
    pub body_bytes: u64,
    /// https: TLS handshakes completed, full and resumed, and failed.
    #[serde(default)]
    pub tls_full: u64,
    #[serde(default)]
    pub tls_resumed: u64,
    #[serde(default)]
    pub tls_failed: u64,
    /// HTTP/2: connections served as HTTP/2 (h2 by ALPN, h2c by prior knowledge),
    /// part of `connections_accepted`; their streams answered (each also one of `requests`);
    /// streams ended by a RST_STREAM (sent or received) and connections ended by a GOAWAY with
    /// an error (sent or received, a protocol error included).
    #[serde(default)]
    pub h2_connections: u64,
    #[serde(default)]
    pub h2_streams: u64,
    #[serde(default)]
    pub h2_resets: u64,
    #[serde(default)]
    pub h2_goaways: u64,
}

impl HttpdStats {
    /// Adds another server's counts to these (several servers beside one agent).
    pub fn add(&mut self, o: &HttpdStats) {
        self.connections_accepted += o.connections_accepted;
        self.requests += o.requests;
        for (a, b) in self.responses_by_status.iter_mut().zip(o.responses_by_status) {
            *a += b;
        }
        self.body_bytes += o.body_bytes;
        self.tls_full += o.tls_full;
        self.tls_resumed += o.tls_resumed;
        self.tls_failed += o.tls_failed;
        self.h2_connections += o.h2_connections;
        self.h2_streams += o.h2_streams;
        self.h2_resets += o.h2_resets;
        self.h2_goaways += o.h2_goaways;
    }

    /// What was counted since `base`, an earlier reading of the same servers.
    pub fn since(&self, base: &HttpdStats) -> HttpdStats {
        let mut by_status = self.responses_by_status;
        for (a, b) in by_status.iter_mut().zip(base.responses_by_status) {
            *a = a.saturating_sub(b);
        }
        HttpdStats {
            connections_accepted: self.connections_accepted.saturating_sub(base.connections_accepted),
            requests: self.requests.saturating_sub(base.requests),
            responses_by_status: by_status,
            body_bytes: self.body_bytes.saturating_sub(base.body_bytes),
            tls_full: self.tls_full.saturating_sub(base.tls_full),
            tls_resumed: self.tls_resumed.saturating_sub(base.tls_resumed),
            tls_failed: self.tls_failed.saturating_sub(base.tls_failed),
            h2_connections: self.h2_connections.saturating_sub(base.h2_connections),
            h2_streams: self.h2_streams.saturating_sub(base.h2_streams),
            h2_resets: self.h2_resets.saturating_sub(base.h2_resets),
            h2_goaways: self.h2_goaways.saturating_sub(base.h2_goaways),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HttpdError {
    #[error("cannot listen for http on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("cannot serve {}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a regular file with a name", path.display())]
    NotAFile { path: PathBuf },
    #[error("{} and {} would both be /files/{name}", first.display(), second.display())]
    SameName {
        name: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("cannot start the http workers")]
    Start {
        #[source]
        source: io::Error,
    },
}

/// A bound server, not yet serving: [`Httpd::spawn`] starts it.
pub struct Httpd {
    addr: SocketAddr,
    listeners: Vec<std::net::TcpListener>,
    shared: Arc<Shared>,
}

/// Running workers; [`HttpdHandle::stop`] or drop ends and joins them.
pub struct HttpdHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    wakers: Vec<Waker>,
    threads: Vec<JoinHandle<()>>,
}

/// One `--file`, open for the life of the server.
struct ServedFile {
    file: File,
    bytes: u64,
}

/// What every worker reads (and the counter slots each writes its own of).
struct Shared {
    stop: AtomicBool,
    /// Connections open over all workers.
    open: AtomicUsize,
    /// The configured cap, lowered to keep [`FD_RESERVE`] descriptors free.
    max_connections: usize,
    max_per_address: usize,
    /// Open connections per client address (only kept when `max_per_address` is a limit):
    /// locked once at accept and once at close, never per request.
    per_address: Mutex<HashMap<IpAddr, usize>>,
    head_timeout: Duration,
    /// [`HttpdConfig::idle`], at least 1 ms.
    idle: Duration,
    /// The part of `/files/NAME` after `/files/`, parallel to `files`.
    names: Box<[Box<[u8]>]>,
    files: Box<[ServedFile]>,
    /// `PATTERN_BYTES` of the body pattern.
    pattern: Box<[u8]>,
    /// The same bytes in a memfd, for `sendfile`; None where memfd is not available.
    pattern_file: Option<File>,
    slots: Box<[Slot]>,
    /// Each worker's HTTP/2 lane's counts, written by that lane only.
    lanes: Box<[http2::LaneSlot]>,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// What the slots' publication stamps count from.
    epoch: Instant,
}

impl Shared {
    /// Counts a new connection from `ip` against its address's cap; false when it is over.
    fn admit(&self, ip: IpAddr) -> bool {
        if self.max_per_address == usize::MAX {
            return true;
        }
        let mut map = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(ip).or_insert(0);
        if *n >= self.max_per_address {
            return false;
        }
        *n += 1;
        true
    }

    /// A publication stamp: nanoseconds since `epoch`, plus one (0 in a slot: never published).
    fn stamp(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX - 1) + 1
    }

    /// The counts once every worker and lane has published after this call began (each does
    /// every [`TICK`]), so that all they served before it is in; after `limit` at the latest.
    /// A slot never published belongs to a lane not started: it has nothing to add.
    fn settled_stats(&self, limit: Duration) -> HttpdStats {
        let since = self.stamp();
        let begun = Instant::now();
        let fresh = |p: &AtomicU64| {
            let t = p.load(Acquire);
            t == 0 || t >= since
        };
        while !(self.slots.iter().all(|s| fresh(&s.published)) && self.lanes.iter().all(|l| fresh(&l.published)))
            && begun.elapsed() < limit
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stats()
    }

    /// The counts the workers and lanes published so far.
    fn stats(&self) -> HttpdStats {
        let mut stats = HttpdStats::default();
        for slot in &self.slots {
            stats.connections_accepted += slot.accepted.load(Relaxed);
            stats.requests += slot.requests.load(Relaxed);
            for (sum, n) in stats.responses_by_status.iter_mut().zip(&slot.responses) {
                *sum += n.load(Relaxed);
            }
            stats.body_bytes += slot.body_bytes.load(Relaxed);
            stats.tls_full += slot.tls[0].load(Relaxed);
            stats.tls_resumed += slot.tls[1].load(Relaxed);
            stats.tls_failed += slot.tls[2].load(Relaxed);
        }
        for lane in &self.lanes {
            stats.requests += lane.requests.load(Relaxed);
            for (sum, n) in stats.responses_by_status.iter_mut().zip(&lane.responses) {
                *sum += n.load(Relaxed);
            }
            stats.body_bytes += lane.body_bytes.load(Relaxed);
            stats.h2_connections += lane.connections.load(Relaxed);
            stats.h2_streams += lane.streams.load(Relaxed);
            stats.h2_resets += lane.resets.load(Relaxed);
            stats.h2_goaways += lane.goaways.load(Relaxed);
        }
        stats
    }

    /// A connection from `ip` that [`Shared::admit`] counted has closed.
    fn release(&self, ip: IpAddr) {
        if self.max_per_address == usize::MAX {
            return;
        }
        let mut map = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                map.remove(&ip);
            }
        }
    }
}

/// A running server's counts, readable from another thread (the agent's, for the window of an
/// HTTP test against this server): its address, whether it is https, and [`HttpdHandle::stats`].
#[derive(Clone)]
pub struct HttpdCounters {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl HttpdCounters {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the server speaks TLS on its port (`--https-port`).
    pub fn is_https(&self) -> bool {
        self.shared.tls.is_some()
    }

    /// The counts published so far (each worker's at most 100 ms old).
    pub fn stats(&self) -> HttpdStats {
        self.shared.stats()
    }

    /// The counts with everything served before this call in: it waits for every worker's
    /// next publication (at most about 100 ms), or `limit` where one is late.
    pub fn settled_stats(&self, limit: Duration) -> HttpdStats {
        self.shared.settled_stats(limit)
    }
}

impl std::fmt::Debug for HttpdCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpdCounters")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// One worker's published counters, on a cache line no other worker writes.
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    accepted: AtomicU64,
    requests: AtomicU64,
    responses: [AtomicU64; 6],
    body_bytes: AtomicU64,
    accept_errors: AtomicU64,
    evicted: AtomicU64,
    tls: [AtomicU64; 3],
    /// When the worker last published, a [`Shared::stamp`] (stored after the counts).
    published: AtomicU64,
}

/// One worker's counters, plain integers: only it writes them.
#[derive(Default)]
struct Counts {
    accepted: u64,
    requests: u64,
    responses: [u64; 6],
    body_bytes: u64,
    accept_errors: u64,
    /// Waiting connections closed to make room at the connection cap.
    evicted: u64,
    /// TLS handshakes: full, resumed, failed.
    tls_full: u64,
    tls_resumed: u64,
    tls_failed: u64,
}

impl Httpd {
    /// Opens the files and binds one listening socket per worker on `addr` (port 0: a free
    /// port, the same for every worker; see [`Httpd::local_addr`]).
    pub fn bind(addr: SocketAddr, config: HttpdConfig) -> Result<Httpd, HttpdError> {
        let (names, files) = open_files(&config.files)?;
        let threads = if config.threads == 0 {
            online_cpus()
        } else {
            config.threads
        };
        let max_connections = if config.max_connections == 0 {
            usize::MAX
        } else {
            config.max_connections
        };
        let fd_limit = raise_open_files_limit(max_connections.saturating_add(FD_RESERVE + 1024));
        let max_connections = max_connections.min(fd_limit.saturating_sub(FD_RESERVE).max(1));
        // Every socket of a SO_REUSEPORT group shares the port's traffic, so a second server
        // of the same user would silently take half of it. A socket without the option is
        // refused while anyone listens there: bind one first to find out (and to learn the
        // port when asked for 0), then bind the group.
        let probe = listen(addr, false).map_err(|source| HttpdError::Bind { addr, source })?;
        let addr = probe.local_addr().map_err(|source| HttpdError::Bind { addr, source })?;
        drop(probe);
        let listeners = (0..threads)
            .map(|_| listen(addr, true))
            .collect::<io::Result<Vec<_>>>()
            .map_err(|source| HttpdError::Bind { addr, source })?;
        let pattern: Box<[u8]> = (0..PATTERN_BYTES)
            .map(|i| BODY_PATTERN[i % BODY_PATTERN.len()])
            .collect();
        // Without a memfd (old kernel, seccomp), large bodies are written from memory instead.
        let pattern_file = pattern_memfd(&pattern).ok();
        let shared = Shared {
            stop: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            max_connections,
            max_per_address: match config.max_connections_per_address {
                0 => usize::MAX,
                n => n,
            },
            per_address: Mutex::new(HashMap::new()),
            head_timeout: config.head_timeout.max(Duration::from_millis(1)),
            idle: config.idle.max(Duration::from_millis(1)),
            names,
            files,
            pattern,
            pattern_file,
            slots: (0..threads).map(|_| Slot::default()).collect(),
            lanes: (0..threads).map(|_| http2::LaneSlot::default()).collect(),
            tls: config.tls.clone(),
            epoch: Instant::now(),
        };
        Ok(Httpd {
            addr,
            listeners,
            shared: Arc::new(shared),
        })
    }

    /// Where it listens, with the port chosen when 0 was asked for.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts the workers and returns at once.
    pub fn spawn(self) -> Result<HttpdHandle, HttpdError> {
        ignore_sigpipe();
        let Httpd {
            addr,
            listeners,
            shared,
        } = self;
        let start = |source| HttpdError::Start { source };
        // Built up as workers start, so a failure part-way stops the ones already running.
        let mut handle = HttpdHandle {
            addr,
            shared: Arc::clone(&shared),
            wakers: Vec::with_capacity(listeners.len()),
            threads: Vec::with_capacity(listeners.len()),
        };
        for (index, listener) in listeners.into_iter().enumerate() {
            let poll = Poll::new().map_err(start)?;
            let mut listener = TcpListener::from_std(listener);
            poll.registry()
                .register(&mut listener, LISTENER, Interest::READABLE)
                .map_err(start)?;
            let waker = Waker::new(poll.registry(), WAKER).map_err(start)?;
            let worker = Worker {
                index,
                poll,
                listener,
                shared: Arc::clone(&shared),
                conns: Vec::new(),
                free: Vec::new(),
                counts: Counts::default(),
                date: [0; DATE_BYTES],
                date_secs: u64::MAX,
                accept_paused_until: None,
                lane: None,
            };
            let thread = std::thread::Builder::new()
                .name(format!("linerate-http-{index}"))
                .spawn(move || worker.run())
                .map_err(start)?;
            handle.wakers.push(waker);
            handle.threads.push(thread);
        }
        Ok(handle)
    }
}

impl HttpdHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counts published so far (each worker's at most 100 ms old).
    pub fn stats(&self) -> HttpdStats {
        self.shared.stats()
    }

    /// A reader of this server's counts for another thread: the agent keeps one to report
    /// its server's counts over a test's window.
    pub fn counters(&self) -> HttpdCounters {
        HttpdCounters {
            addr: self.addr,
            shared: Arc::clone(&self.shared),
        }
    }

    /// Accept failures (EMFILE and the like) and connections refused past `max_connections`.
    pub fn accept_errors(&self) -> u64 {
        self.shared.slots.iter().map(|s| s.accept_errors.load(Relaxed)).sum()
    }

    /// Waiting connections closed to make room for new ones at the connection cap.
    pub fn evicted(&self) -> u64 {
        self.shared.slots.iter().map(|s| s.evicted.load(Relaxed)).sum()
    }

    /// Stops the workers, closes every connection, and returns the final counts.
    pub fn stop(mut self) -> HttpdStats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Relaxed);
        for waker in &self.wakers {
            // A worker that cannot be woken still sees the flag within one poll timeout.
            let _ = waker.wake();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for HttpdHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The served file names the parser and router tests use.
#[cfg(test)]
fn names() -> Vec<Box<[u8]>> {
    vec![b"a.bin".to_vec().into(), b"b c".to_vec().into()]
}

/// A server with `threads` workers bound to a free loopback port, for the tests; not started.
#[cfg(test)]
fn on_loopback(threads: usize) -> Httpd {
    let config = HttpdConfig {
        threads,
        ..HttpdConfig::default()
    };
    Httpd::bind(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)), config).expect("bind")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, Shutdown, TcpStream as StdStream};
    use std::time::Instant;

    /// One request on a new connection; returns head and body.
    fn fetch(addr: SocketAddr, request: &str) -> (String, Vec<u8>) {
        let mut s = StdStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(request.as_bytes()).expect("send");
        let mut all = Vec::new();
        s.read_to_end(&mut all).expect("read to the server's close");
        let end = all.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
        let body = all.split_off(end);
        (String::from_utf8(all).expect("ascii head"), body)
    }

    #[test]
    fn serves_memory_and_sendfile_bodies_counts_and_stops_promptly() {
        let path = std::env::temp_dir().join(format!("linerate-httpd-test-{}.bin", std::process::id()));
        let content: Vec<u8> = (0..100_003u32).map(|i| (i * 7 % 256) as u8).collect();
        std::fs::write(&path, &content).expect("write the file");
        let config = HttpdConfig {
            files: vec![path.clone()],
            threads: 2,
            ..HttpdConfig::default()
        };
        let server = Httpd::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config).expect("bind");
        std::fs::remove_file(&path).expect("remove");
        let addr = server.local_addr();
        assert_ne!(addr.port(), 0);
        let handle = server.spawn().expect("spawn");
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        // 100 bytes from memory, 200 000 through the memfd (a wrap of its 1 MiB is in the
        // integration tests), the file through sendfile.
        for n in [100u64, 200_000] {
            let (head, body) = fetch(addr, &format!("GET /bytes/{n} HTTP/1.1\r\nConnection: close\r\n\r\n"));
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert!(head.contains(&format!("\r\nContent-Length: {n}\r\n")), "{head}");
            assert_eq!(body.len() as u64, n);
            assert!(body.iter().enumerate().all(|(i, b)| *b == BODY_PATTERN[i % 64]));
        }
        let (head, body) = fetch(addr, &format!("GET /files/{name} HTTP/1.0\r\n\r\n"));
        assert!(head.contains("\r\nContent-Length: 100003\r\n"), "{head}");
        assert!(body == content, "file body differs");
        let (head, body) = fetch(addr, "DELETE /bytes/1 HTTP/1.0\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 405 ") && body == b"only GET and HEAD\n",
            "{head}"
        );
        let t = Instant::now();
        let stats = handle.stop();
        assert!(t.elapsed() < Duration::from_millis(500), "stopped in {:?}", t.elapsed());
        assert_eq!(stats.connections_accepted, 4);
        assert_eq!(stats.requests, 4);
        assert_eq!(stats.responses_by_status, [0, 0, 3, 0, 1, 0]);
        assert_eq!(stats.body_bytes, 100 + 200_000 + 100_003);
        assert!(StdStream::connect(addr).is_err(), "still listening after stop");
    }

    #[test]
    fn settled_counts_hold_every_request_served_before_the_call() {
        let server = on_loopback(2);
        let addr = server.local_addr();
        let handle = server.spawn().expect("spawn");
        let counters = handle.counters();
        for round in 1..=3u64 {
            for _ in 0..4 {
                let (head, _) = fetch(addr, "GET /bytes/10 HTTP/1.1\r\nConnection: close\r\n\r\n");
                assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            }
            // The workers publish every 100 ms, so a plain read now may miss the last requests;
            // a settled one may not.
            assert_eq!(counters.settled_stats(Duration::from_secs(10)).requests, 4 * round);
        }
    }

    #[test]
    fn a_fin_that_came_with_the_request_is_seen() {
        // Request and FIN both queued before the worker starts: one event carries both, and
        // the read that takes the request comes back short with the FIN still unread.
        let server = on_loopback(1);
        let mut s = StdStream::connect(server.local_addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(b"GET /bytes/3 HTTP/1.1\r\n\r\n").expect("send");
        s.shutdown(Shutdown::Write).expect("shutdown");
        std::thread::sleep(Duration::from_millis(50));
        let _handle = server.spawn().expect("spawn");
        let mut all = Vec::new();
        s.read_to_end(&mut all)
            .expect("the response, then the server's close, within 5 s");
        assert!(all.starts_with(b"HTTP/1.1 200 OK\r\n") && all.ends_with(b"\r\n\r\n012"));
    }

    #[test]
    fn at_the_cap_a_burst_of_accepts_keeps_its_newest() {
        // 40 connections queued before the worker starts: one accept pass takes them all at
        // one clock reading, 10 may stay open, and the 30 closed to make room must be the
        // first 30 accepted, not whichever slot was freed last.
        let server = Httpd::bind(
            SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            HttpdConfig {
                threads: 1,
                max_connections: 10,
                max_connections_per_address: 0,
                ..HttpdConfig::default()
            },
        )
        .expect("bind");
        let conns: Vec<StdStream> = (0..40)
            .map(|_| StdStream::connect(server.local_addr()).expect("connect"))
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let handle = server.spawn().expect("spawn");
        let deadline = Instant::now() + Duration::from_secs(10);
        while handle.evicted() < 30 {
            assert!(Instant::now() < deadline, "{} evicted after 10 s", handle.evicted());
            std::thread::sleep(Duration::from_millis(10));
        }
        let open: Vec<bool> = conns
            .iter()
            .map(|s| {
                // A closed one shows its FIN (the closes were done before they were counted).
                s.set_nonblocking(true).expect("nonblocking");
                !matches!(s.peek(&mut [0u8; 1]), Ok(0))
            })
            .collect();
        let kept: Vec<usize> = (0..40).filter(|&i| open[i]).collect();
        assert_eq!(kept, (30..40).collect::<Vec<_>>(), "the connections left open");
    }

    #[test]
    fn bind_errors_name_the_address_or_the_file() {
        let missing = PathBuf::from("/nonexistent/linerate-test-file");
        let config = HttpdConfig {
            files: vec![missing],
            ..HttpdConfig::default()
        };
        let err = Httpd::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config)
            .err()
            .expect("an error");
        assert_eq!(err.to_string(), "cannot serve /nonexistent/linerate-test-file");
        let config = HttpdConfig {
            files: vec!["/".into()],
            ..HttpdConfig::default()
        };
        let err = Httpd::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config)
            .err()
            .expect("an error");
        assert!(matches!(err, HttpdError::NotAFile { .. }), "{err}");
        // A port already served (here by another server) is refused, not shared.
        let first = Httpd::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), HttpdConfig::default()).expect("bind");
        let taken = first.local_addr();
        let err = Httpd::bind(taken, HttpdConfig::default()).err().expect("an error");
        assert_eq!(err.to_string(), format!("cannot listen for http on {taken}"));
    }
}
