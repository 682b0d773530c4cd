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
//! not reset before it has read the response. Idle connections are closed after [`IDLE`].

use crate::metrics::host::online_cpus;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use socket2::{Domain, Protocol, Socket, Type};
use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// The body of `/bytes/N`: byte `i` is `BODY_PATTERN[i % 64]` (63 printable characters and a
/// newline, so a body read by eye is lines of equal length and a shift shows).
pub const BODY_PATTERN: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n";
/// The largest N `/bytes/N` answers (1 TiB); past it the request is a 400.
pub const MAX_BODY_BYTES: u64 = 1 << 40;
/// Per-connection read buffer, allocated at accept. A request head that does not fit is a 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// An idle keep-alive connection (or one whose client stopped reading) is closed after this.
pub const IDLE: Duration = Duration::from_secs(60);
/// After a closing response, how long the client may take to close its side.
pub const LINGER: Duration = Duration::from_secs(2);

/// The pattern buffer (memory and memfd); a multiple of the pattern's 64 bytes.
const PATTERN_BYTES: usize = 1 << 20;
/// Bodies from this size on go by `sendfile` from the memfd: one copy fewer, at the price of a
/// second syscall (the head goes first with `MSG_MORE`), which pays off past a few pages.
const SENDFILE_MIN_BYTES: u64 = 32 * 1024;
/// `sendfile` moves at most 0x7ffff000 bytes a call; stay well below.
const SENDFILE_MAX_CHUNK: u64 = 1 << 30;
/// Header lines a request head may have (more is a 431, as an oversized head is).
const MAX_HEADERS: usize = 512;
/// Room for the longest response head plus an error text.
const HEAD_BUFFER_BYTES: usize = 384;
const BACKLOG: i32 = 4096;
/// Poll timeout: how often a worker looks at the stop flag, publishes counters, dates.
const TICK: Duration = Duration::from_millis(100);
/// How often idle and lingering connections are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// After an accept failure (EMFILE, ENFILE, ENOBUFS), wait this long before trying again.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// Reads one lingering connection may take per event before others get their turn.
const DRAIN_READS: usize = 64;
const EVENTS: usize = 1024;
const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX);

/// What to serve and with how many threads.
#[derive(Clone, Debug)]
pub struct HttpdConfig {
    /// Served at `/files/BASENAME`, opened at bind; their size then is their Content-Length.
    pub files: Vec<PathBuf>,
    /// Worker threads; 0 = one per online CPU.
    pub threads: usize,
    /// Connections open at once over all workers; past it new ones are closed at accept
    /// (0 = no limit). The soft open-files limit is raised toward it, up to the hard limit.
    pub max_connections: usize,
}

impl Default for HttpdConfig {
    fn default() -> Self {
        HttpdConfig {
            files: Vec::new(),
            threads: 0,
            max_connections: 65_536,
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
    max_connections: usize,
    /// The part of `/files/NAME` after `/files/`, parallel to `files`.
    names: Box<[Box<[u8]>]>,
    files: Box<[ServedFile]>,
    /// `PATTERN_BYTES` of the body pattern.
    pattern: Box<[u8]>,
    /// The same bytes in a memfd, for `sendfile`; None where memfd is not available.
    pattern_file: Option<File>,
    slots: Box<[Slot]>,
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
}

/// One worker's counters, plain integers: only it writes them.
#[derive(Default)]
struct Counts {
    accepted: u64,
    requests: u64,
    responses: [u64; 6],
    body_bytes: u64,
    accept_errors: u64,
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
        raise_open_files_limit(max_connections.saturating_add(1024));
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
            names,
            files,
            pattern,
            pattern_file,
            slots: (0..threads).map(|_| Slot::default()).collect(),
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
        let mut stats = HttpdStats::default();
        for slot in &self.shared.slots {
            stats.connections_accepted += slot.accepted.load(Relaxed);
            stats.requests += slot.requests.load(Relaxed);
            for (sum, n) in stats.responses_by_status.iter_mut().zip(&slot.responses) {
                *sum += n.load(Relaxed);
            }
            stats.body_bytes += slot.body_bytes.load(Relaxed);
        }
        stats
    }

    /// Accept failures (EMFILE and the like) and connections refused past `max_connections`.
    pub fn accept_errors(&self) -> u64 {
        self.shared.slots.iter().map(|s| s.accept_errors.load(Relaxed)).sum()
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

type Names = Box<[Box<[u8]>]>;

fn open_files(paths: &[PathBuf]) -> Result<(Names, Box<[ServedFile]>), HttpdError> {
    use std::os::unix::ffi::OsStrExt;
    let mut names: Vec<Box<[u8]>> = Vec::with_capacity(paths.len());
    let mut files = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let file = File::open(path).map_err(|source| HttpdError::File {
            path: path.clone(),
            source,
        })?;
        let meta = file.metadata().map_err(|source| HttpdError::File {
            path: path.clone(),
            source,
        })?;
        let name = path.file_name().map(|n| n.as_bytes()).unwrap_or_default();
        if !meta.is_file() || name.is_empty() {
            return Err(HttpdError::NotAFile { path: path.clone() });
        }
        if let Some(j) = names.iter().position(|n| **n == *name) {
            return Err(HttpdError::SameName {
                name: String::from_utf8_lossy(name).into_owned(),
                first: paths[j].clone(),
                second: paths[i].clone(),
            });
        }
        names.push(name.into());
        files.push(ServedFile {
            file,
            bytes: meta.len(),
        });
    }
    Ok((names.into(), files.into()))
}

/// A non-blocking listening socket on `addr`, in the port's SO_REUSEPORT group if `group`.
fn listen(addr: SocketAddr, group: bool) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Restarts find the port free although connections of the last run are in TIME_WAIT.
    socket.set_reuse_address(true)?;
    if group {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    if group {
        socket.listen(BACKLOG)?;
    }
    Ok(socket.into())
}

fn pattern_memfd(pattern: &[u8]) -> io::Result<File> {
    // SAFETY: the name is a NUL-terminated string; memfd_create returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"linerate-http-pattern".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just created and nothing else owns it.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(pattern)?;
    Ok(file)
}

/// Raises the soft RLIMIT_NOFILE to `wanted` (capped at the hard limit): the usual soft limit
/// of 1024 would refuse connections long before `max_connections`. Never lowers it.
fn raise_open_files_limit(wanted: usize) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let target = (wanted as libc::rlim_t).min(limit.rlim_max);
    if target > limit.rlim_cur {
        limit.rlim_cur = target;
        // SAFETY: setrlimit reads the struct we own; a failure leaves the old limit.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    }
}

/// `sendfile` into a socket whose client has gone raises SIGPIPE (unlike `sendmsg`, it takes
/// no MSG_NOSIGNAL). Rust programs start with it ignored; make sure nobody restored the default.
fn ignore_sigpipe() {
    // SAFETY: a null new action only reads the current one into `old`, which we own.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Requests: parsing and routing, pure functions of the bytes received.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Get,
    Head,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// `/bytes/N`.
    Bytes(u64),
    /// `/files/NAME`: the index of the file.
    File(usize),
    /// `/bytes/` followed by something that is not a number up to [`MAX_BODY_BYTES`].
    BadLength,
    NotFound,
}

/// What a request head asks for, as far as the response depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Request {
    /// Bytes of the head, request line to the empty line included.
    head_bytes: usize,
    method: Method,
    route: Route,
    /// The connection stays open after the response.
    keep_alive: bool,
    /// HTTP/1.0 (the response then says `Connection: keep-alive` when it keeps it).
    http10: bool,
    /// Request body bytes after the head (Content-Length), read and dropped.
    body_bytes: u64,
}

#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Complete(Request),
    /// More bytes needed.
    Partial,
    Malformed,
    /// More headers than we keep room for.
    TooLarge,
}

/// Parses the request head at the start of `buf`; `names` are the served file names.
fn parse_request(buf: &[u8], names: &[Box<[u8]>]) -> Parsed {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let head_bytes = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::TooLarge,
        Err(_) => return Parsed::Malformed,
    };
    let method = match req.method {
        Some("GET") => Method::Get,
        Some("HEAD") => Method::Head,
        _ => Method::Other,
    };
    let http10 = req.version == Some(0);
    let (mut close, mut keep) = (false, false);
    let mut body_bytes: Option<u64> = None;
    let mut chunked = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|b| *b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // RFC 9112 §6.3: an invalid length, or two that differ, leave the message unframed.
            match (parse_decimal(h.value.trim_ascii()), body_bytes) {
                (Some(n), None) => body_bytes = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => return Parsed::Malformed,
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = true;
        }
    }
    let keep_alive = !close && (!http10 || keep) && !chunked;
    Parsed::Complete(Request {
        head_bytes,
        method,
        route: route(req.path.unwrap_or("").as_bytes(), names),
        keep_alive,
        http10,
        // A chunked body is not read: the connection closes after the response instead
        // (RFC 9112 §9.6 lets a server close whenever it cannot frame the next request).
        body_bytes: if chunked { 0 } else { body_bytes.unwrap_or(0) },
    })
}

fn route(target: &[u8], names: &[Box<[u8]>]) -> Route {
    let path = origin_path(target);
    if let Some(n) = path.strip_prefix(b"/bytes/") {
        return match parse_decimal(n) {
            Some(n) if n <= MAX_BODY_BYTES => Route::Bytes(n),
            _ => Route::BadLength,
        };
    }
    // Names are compared as sent: no percent-decoding.
    if let Some(name) = path.strip_prefix(b"/files/")
        && let Some(i) = names.iter().position(|n| **n == *name)
    {
        return Route::File(i);
    }
    Route::NotFound
}

/// The path of a request target: origin-form without its query, or the path of an
/// absolute-form target (RFC 9112 §3.2.2, which servers must accept).
fn origin_path(target: &[u8]) -> &[u8] {
    let mut path = target;
    for scheme in [&b"http://"[..], b"https://"] {
        if path.len() >= scheme.len() && path[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &path[scheme.len()..];
            path = rest.iter().position(|b| *b == b'/').map_or(b"/", |i| &rest[i..]);
            break;
        }
    }
    let end = path.iter().position(|b| *b == b'?' || *b == b'#').unwrap_or(path.len());
    &path[..end]
}

/// A non-empty run of ASCII digits that fits in a u64.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        if !d.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

// ---------------------------------------------------------------------------------------------
// Responses: the head, formatted into a fixed buffer.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    HeadTooLarge,
}

impl Status {
    fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::HeadTooLarge => 431,
        }
    }

    fn line(self) -> &'static [u8] {
        match self {
            Status::Ok => b"HTTP/1.1 200 OK\r\n",
            Status::BadRequest => b"HTTP/1.1 400 Bad Request\r\n",
            Status::NotFound => b"HTTP/1.1 404 Not Found\r\n",
            Status::MethodNotAllowed => b"HTTP/1.1 405 Method Not Allowed\r\n",
            Status::HeadTooLarge => b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
        }
    }

    /// The body of an error response.
    fn text(self) -> &'static [u8] {
        match self {
            Status::Ok => b"",
            Status::BadRequest => b"bad request\n",
            Status::NotFound => b"not found: try /bytes/N\n",
            Status::MethodNotAllowed => b"only GET and HEAD\n",
            Status::HeadTooLarge => b"request head over 16 KiB\n",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnectionHeader {
    None,
    Close,
    KeepAlive,
}

const DATE_BYTES: usize = 29;

/// Writes a response head (and, if `text`, the error text as its body) into `out`; returns
/// its length. Content-Length is `content_length` for 200s, the text's length otherwise.
fn format_head(
    out: &mut [u8; HEAD_BUFFER_BYTES],
    status: Status,
    content_length: u64,
    connection: ConnectionHeader,
    date: &[u8; DATE_BYTES],
    text: bool,
) -> usize {
    let mut w = HeadWriter { out, len: 0 };
    w.put(status.line());
    w.put(b"Server: linerate\r\nDate: ");
    w.put(date);
    if status == Status::Ok {
        w.put(b"\r\nContent-Type: application/octet-stream\r\nContent-Length: ");
        w.put_decimal(content_length);
    } else {
        w.put(b"\r\nContent-Type: text/plain\r\nContent-Length: ");
        w.put_decimal(status.text().len() as u64);
    }
    w.put(b"\r\n");
    if status == Status::MethodNotAllowed {
        w.put(b"Allow: GET, HEAD\r\n");
    }
    match connection {
        ConnectionHeader::None => {}
        ConnectionHeader::Close => w.put(b"Connection: close\r\n"),
        ConnectionHeader::KeepAlive => w.put(b"Connection: keep-alive\r\n"),
    }
    w.put(b"\r\n");
    if text {
        w.put(status.text());
    }
    w.len
}

/// Appends to a fixed buffer; every head is shorter than it by construction (see the tests).
struct HeadWriter<'a> {
    out: &'a mut [u8; HEAD_BUFFER_BYTES],
    len: usize,
}

impl HeadWriter<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.out[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn put_decimal(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.put(&digits[i..]);
    }
}

/// An IMF-fixdate (RFC 9110 §5.6.7), `Sun, 06 Nov 1994 08:49:37 GMT`, for Unix time `secs`.
fn http_date(secs: u64) -> [u8; DATE_BYTES] {
    const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01: Howard Hinnant's civil_from_days algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = (yoe + era * 400 + i64::from(month <= 2)).clamp(0, 9999) as u64;
    let mut out = [0u8; DATE_BYTES];
    let two = |n: u64| [b'0' + (n / 10 % 10) as u8, b'0' + (n % 10) as u8];
    out[..3].copy_from_slice(DAYS[(days % 7) as usize]);
    out[3..5].copy_from_slice(b", ");
    out[5..7].copy_from_slice(&two(day as u64));
    out[7] = b' ';
    out[8..11].copy_from_slice(MONTHS[(month - 1) as usize]);
    out[11] = b' ';
    out[12..14].copy_from_slice(&two(year / 100));
    out[14..16].copy_from_slice(&two(year % 100));
    out[16] = b' ';
    out[17..19].copy_from_slice(&two(rem / 3600));
    out[19] = b':';
    out[20..22].copy_from_slice(&two(rem / 60 % 60));
    out[22] = b':';
    out[23..25].copy_from_slice(&two(rem % 60));
    out[25..].copy_from_slice(b" GMT");
    out
}

/// The slice of the pattern buffer that continues a body at `offset`, at most `left` long.
fn pattern_slice(pattern: &[u8], offset: u64, left: u64) -> &[u8] {
    let start = (offset % BODY_PATTERN.len() as u64) as usize;
    let len = (pattern.len() - start).min(usize::try_from(left).unwrap_or(usize::MAX));
    &pattern[start..start + len]
}

// ---------------------------------------------------------------------------------------------
// Connections.

/// Where the rest of a response body comes from.
#[derive(Clone, Copy, Debug)]
enum Body {
    None,
    /// From the pattern buffer, continuing at body offset `offset`.
    Pattern {
        offset: u64,
        left: u64,
    },
    /// By `sendfile` from `fd` at `pos`, which goes back to 0 at `wrap` (the pattern memfd; a
    /// file never wraps). `fd` belongs to [`Shared`], which outlives every connection.
    File {
        fd: RawFd,
        pos: u64,
        left: u64,
        wrap: u64,
    },
}

impl Body {
    fn left(&self) -> u64 {
        match *self {
            Body::None => 0,
            Body::Pattern { left, .. } | Body::File { left, .. } => left,
        }
    }

    fn advance(&mut self, n: u64) {
        match self {
            Body::None => {}
            Body::Pattern { offset, left } => {
                *offset += n;
                *left -= n;
            }
            Body::File { pos, left, wrap, .. } => {
                *pos += n;
                *left -= n;
                if *pos == *wrap {
                    *pos = 0;
                }
            }
        }
    }
}

enum Next {
    Keep,
    Close,
}

/// What an event says of a connection's socket.
#[derive(Clone, Copy)]
struct Ready {
    readable: bool,
    writable: bool,
    read_closed: bool,
}

/// What a connection needs of its worker while it is driven.
struct Turn<'a> {
    shared: &'a Shared,
    counts: &'a mut Counts,
    now: Instant,
    date: &'a [u8; DATE_BYTES],
}

struct Conn {
    stream: TcpStream,
    /// Received bytes not yet used are `buf[start..end]`.
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    head: [u8; HEAD_BUFFER_BYTES],
    head_len: usize,
    head_sent: usize,
    body: Body,
    status: Status,
    /// A response is being written.
    responding: bool,
    /// Request body bytes still to read and drop.
    discard: u64,
    /// Close once the response is written.
    close_after: bool,
    /// Write side shut: read and drop until the client closes.
    draining: bool,
    /// A read may find data: false after a read came back short, until a readable event.
    read_ready: bool,
    /// The client has sent its FIN (EPOLLRDHUP): a read may find the end of the stream even
    /// after a short one, and no further event would say so.
    read_closed: bool,
    /// A write may find room: false after EAGAIN, until a writable event.
    write_ready: bool,
    /// Closed by the sweep at this moment.
    deadline: Instant,
}

impl Conn {
    fn new(stream: TcpStream, now: Instant) -> Conn {
        Conn {
            stream,
            buf: vec![0; MAX_HEAD_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            head: [0; HEAD_BUFFER_BYTES],
            head_len: 0,
            head_sent: 0,
            body: Body::None,
            status: Status::Ok,
            responding: false,
            discard: 0,
            close_after: false,
            draining: false,
            read_ready: true,
            read_closed: false,
            write_ready: true,
            deadline: now + IDLE,
        }
    }

    /// Goes as far as the socket lets it: writes the response under way, then answers the
    /// requests buffered, reading when it needs more, until a read or write would block.
    /// Under edge-triggered readiness it must get there (or see a short read or write, which
    /// means the same) before returning, or no further event would come.
    fn drive(&mut self, ready: Ready, turn: &mut Turn<'_>) -> Next {
        self.read_ready |= ready.readable || ready.read_closed;
        self.read_closed |= ready.read_closed;
        self.write_ready |= ready.writable;
        if self.draining {
            return self.drain();
        }
        self.deadline = turn.now + IDLE;
        loop {
            if self.responding {
                if !self.write_ready {
                    return Next::Keep;
                }
                match self.write(turn) {
                    Ok(true) => {}
                    Ok(false) => {
                        self.write_ready = false;
                        return Next::Keep;
                    }
                    Err(_) => return Next::Close,
                }
                turn.counts.responses[usize::from(self.status.code() / 100)] += 1;
                self.responding = false;
                if self.close_after {
                    // FIN after the response, then wait for the client's: closing with its
                    // bytes unread would send a reset that can destroy the response in flight.
                    let _ = self.stream.shutdown(Shutdown::Write);
                    self.draining = true;
                    self.deadline = turn.now + LINGER;
                    return self.drain();
                }
            }
            if self.discard > 0 {
                let n = self.discard.min((self.end - self.start) as u64);
                self.start += n as usize;
                self.discard -= n;
            }
            if self.discard == 0 && self.end > self.start {
                match parse_request(&self.buf[self.start..self.end], &turn.shared.names) {
                    Parsed::Complete(req) => {
                        self.start += req.head_bytes;
                        self.respond(&req, turn);
                        continue;
                    }
                    Parsed::Partial if self.end - self.start < self.buf.len() => {}
                    Parsed::Partial | Parsed::TooLarge => {
                        self.fail(Status::HeadTooLarge, turn);
                        continue;
                    }
                    Parsed::Malformed => {
                        self.fail(Status::BadRequest, turn);
                        continue;
                    }
                }
            }
            // Need more bytes: make room at the end of the buffer.
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            } else if self.end == self.buf.len() {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if !self.read_ready {
                return Next::Keep;
            }
            let room = self.buf.len() - self.end;
            match (&self.stream).read(&mut self.buf[self.end..]) {
                Ok(0) => return Next::Close,
                Ok(n) => {
                    self.end += n;
                    // A short read emptied the socket: the next byte to arrive brings an event.
                    self.read_ready = n == room || self.read_closed;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.read_ready = false;
                    return Next::Keep;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Next::Close,
            }
        }
    }

    /// Sets up the response to a parsed request.
    fn respond(&mut self, req: &Request, turn: &mut Turn<'_>) {
        let shared = turn.shared;
        let (status, content_length, body) = match (req.method, req.route) {
            (Method::Other, _) => (Status::MethodNotAllowed, 0, Body::None),
            (_, Route::Bytes(n)) => {
                let body = match &shared.pattern_file {
                    Some(file) if n >= SENDFILE_MIN_BYTES => Body::File {
                        fd: file.as_raw_fd(),
                        pos: 0,
                        left: n,
                        wrap: PATTERN_BYTES as u64,
                    },
                    _ => Body::Pattern { offset: 0, left: n },
                };
                (Status::Ok, n, body)
            }
            (_, Route::File(i)) => {
                let f = &shared.files[i];
                let body = Body::File {
                    fd: f.file.as_raw_fd(),
                    pos: 0,
                    left: f.bytes,
                    wrap: u64::MAX,
                };
                (Status::Ok, f.bytes, body)
            }
            (_, Route::BadLength) => (Status::BadRequest, 0, Body::None),
            (_, Route::NotFound) => (Status::NotFound, 0, Body::None),
        };
        let connection = if !req.keep_alive {
            ConnectionHeader::Close
        } else if req.http10 {
            ConnectionHeader::KeepAlive
        } else {
            ConnectionHeader::None
        };
        let head_only = req.method == Method::Head;
        let text = status != Status::Ok && !head_only;
        let body = if head_only { Body::None } else { body };
        self.start_response(status, content_length, connection, text, body, turn);
        self.close_after = !req.keep_alive;
        self.discard = req.body_bytes;
    }

    /// Answers a request that cannot be parsed, then closes: where the next one would start
    /// is unknown.
    fn fail(&mut self, status: Status, turn: &mut Turn<'_>) {
        self.start = 0;
        self.end = 0;
        self.discard = 0;
        self.start_response(status, 0, ConnectionHeader::Close, true, Body::None, turn);
        self.close_after = true;
    }

    fn start_response(
        &mut self,
        status: Status,
        content_length: u64,
        connection: ConnectionHeader,
        text: bool,
        body: Body,
        turn: &mut Turn<'_>,
    ) {
        turn.counts.requests += 1;
        self.head_len = format_head(&mut self.head, status, content_length, connection, turn.date, text);
        self.head_sent = 0;
        self.body = body;
        self.status = status;
        self.responding = true;
    }

    /// Writes the response under way: Ok(true) when all of it is with the kernel, Ok(false)
    /// when the socket is full.
    fn write(&mut self, turn: &mut Turn<'_>) -> io::Result<bool> {
        let fd = self.stream.as_raw_fd();
        loop {
            let head = &self.head[self.head_sent..self.head_len];
            let left = self.body.left();
            let result = match self.body {
                _ if head.is_empty() && left == 0 => return Ok(true),
                Body::File { fd: src, pos, wrap, .. } if head.is_empty() => {
                    let count = left.min(wrap - pos).min(SENDFILE_MAX_CHUNK);
                    match sendfile(fd, src, pos, count) {
                        // The file shrank since bind: the promised length cannot be kept.
                        Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                        // A short sendfile need not mean a full socket: go on until EAGAIN.
                        Ok(n) => Ok((n, usize::MAX)),
                        Err(e) => Err(e),
                    }
                }
                Body::Pattern { offset, left } => {
                    let body = pattern_slice(&turn.shared.pattern, offset, left);
                    send(fd, head, body, false).map(|n| (n, head.len() + body.len()))
                }
                // The head of a sendfile body: MSG_MORE keeps it for the body's first segment.
                Body::File { .. } => send(fd, head, &[], left > 0).map(|n| (n, head.len())),
                Body::None => send(fd, head, &[], false).map(|n| (n, head.len())),
            };
            match result {
                Ok((n, wanted)) => {
                    let from_head = n.min(head.len());
                    self.head_sent += from_head;
                    let body_bytes = (n - from_head) as u64;
                    self.body.advance(body_bytes);
                    turn.counts.body_bytes += body_bytes;
                    // A short sendmsg means the send buffer is full; sendmsg with MSG_DONTWAIT
                    // stops only there. Asking again would just return EAGAIN.
                    if n < wanted && wanted != usize::MAX {
                        return Ok(false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads and drops what the client still sends after a closing response, until it closes.
    fn drain(&mut self) -> Next {
        for _ in 0..DRAIN_READS {
            match (&self.stream).read(&mut self.buf) {
                Ok(0) => return Next::Close,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Keep,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Next::Close,
            }
        }
        // Still sending: more bytes bring another event, and the linger deadline ends it.
        Next::Keep
    }
}

/// `sendmsg` of one or two slices, never raising SIGPIPE, never blocking.
fn send(fd: RawFd, a: &[u8], b: &[u8], more: bool) -> io::Result<usize> {
    let mut iov = [
        libc::iovec {
            iov_base: a.as_ptr() as *mut libc::c_void,
            iov_len: a.len(),
        },
        libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        },
    ];
    // SAFETY: msghdr is plain data; all-zero is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = if b.is_empty() { 1 } else { 2 };
    let mut flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
    if more {
        flags |= libc::MSG_MORE;
    }
    // SAFETY: the iovecs point into `a` and `b`, which outlive the call; sendmsg only reads them.
    let n = unsafe { libc::sendmsg(fd, &msg, flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn sendfile(out: RawFd, src: RawFd, pos: u64, count: u64) -> io::Result<usize> {
    let mut offset = pos as libc::off_t;
    // SAFETY: both descriptors are open for the duration (the connection's socket and a file
    // owned by Shared); sendfile reads and updates only `offset`, which we own.
    let n = unsafe { libc::sendfile(out, src, &mut offset, count as usize) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

// ---------------------------------------------------------------------------------------------
// Workers.

struct Worker {
    index: usize,
    poll: Poll,
    listener: TcpListener,
    shared: Arc<Shared>,
    /// Connection i is registered as Token(i).
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    counts: Counts,
    date: [u8; DATE_BYTES],
    date_secs: u64,
    accept_paused_until: Option<Instant>,
}

impl Worker {
    fn run(mut self) {
        let mut events = Events::with_capacity(EVENTS);
        let mut last_tick = Instant::now();
        let mut last_sweep = last_tick;
        self.refresh_date();
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
    }

    fn accept(&mut self, now: Instant) {
        self.accept_paused_until = None;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if self.shared.open.fetch_add(1, Relaxed) >= self.shared.max_connections {
                        self.shared.open.fetch_sub(1, Relaxed);
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
                    let mut conn = Conn::new(stream, now);
                    // Both interests once, edge-triggered: no epoll_ctl as the state changes.
                    let registered = self.poll.registry().register(
                        &mut conn.stream,
                        Token(i),
                        Interest::READABLE | Interest::WRITABLE,
                    );
                    if registered.is_err() {
                        self.free.push(i);
                        self.shared.open.fetch_sub(1, Relaxed);
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

    fn drive(&mut self, i: usize, ready: Ready, now: Instant) {
        let Some(Some(conn)) = self.conns.get_mut(i) else {
            return;
        };
        let mut turn = Turn {
            shared: &self.shared,
            counts: &mut self.counts,
            now,
            date: &self.date,
        };
        if let Next::Close = conn.drive(ready, &mut turn) {
            self.close(i);
        }
    }

    fn close(&mut self, i: usize) {
        // Dropping the socket closes it, which also takes it out of the epoll set.
        if self.conns[i].take().is_some() {
            self.free.push(i);
            self.shared.open.fetch_sub(1, Relaxed);
        }
    }

    /// Closes connections idle past [`IDLE`] and lingering past [`LINGER`].
    fn sweep(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            if self.conns[i].as_ref().is_some_and(|c| c.deadline <= now) {
                self.close(i);
            }
        }
    }

    fn refresh_date(&mut self) {
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if secs != self.date_secs {
            self.date_secs = secs;
            self.date = http_date(secs);
        }
    }

    fn publish(&self) {
        let slot = &self.shared.slots[self.index];
        let c = &self.counts;
        slot.accepted.store(c.accepted, Relaxed);
        slot.requests.store(c.requests, Relaxed);
        for (a, n) in slot.responses.iter().zip(c.responses) {
            a.store(n, Relaxed);
        }
        slot.body_bytes.store(c.body_bytes, Relaxed);
        slot.accept_errors.store(c.accept_errors, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpStream as StdStream};

    fn names() -> Vec<Box<[u8]>> {
        vec![b"a.bin".to_vec().into(), b"b c".to_vec().into()]
    }

    fn complete(buf: &[u8]) -> Request {
        match parse_request(buf, &names()) {
            Parsed::Complete(r) => r,
            other => panic!("{other:?} for {:?}", String::from_utf8_lossy(buf)),
        }
    }

    #[test]
    fn bytes_length_is_decimal_up_to_a_tebibyte() {
        let n = &names();
        assert_eq!(route(b"/bytes/0", n), Route::Bytes(0));
        assert_eq!(route(b"/bytes/1", n), Route::Bytes(1));
        assert_eq!(route(b"/bytes/007", n), Route::Bytes(7));
        assert_eq!(route(b"/bytes/1099511627776", n), Route::Bytes(1 << 40));
        assert_eq!(route(b"/bytes/1099511627777", n), Route::BadLength);
        assert_eq!(route(b"/bytes/99999999999999999999999", n), Route::BadLength);
        for bad in [
            "/bytes/",
            "/bytes/-1",
            "/bytes/+1",
            "/bytes/1k",
            "/bytes/ 1",
            "/bytes/1/2",
            "/bytes/0x10",
        ] {
            assert_eq!(route(bad.as_bytes(), n), Route::BadLength, "{bad}");
        }
    }

    #[test]
    fn targets_route_by_path() {
        let n = &names();
        assert_eq!(route(b"/bytes/10?x=1", n), Route::Bytes(10));
        assert_eq!(route(b"/bytes/10#f", n), Route::Bytes(10));
        assert_eq!(route(b"http://host:80/bytes/5", n), Route::Bytes(5));
        assert_eq!(route(b"HTTP://host/files/a.bin", n), Route::File(0));
        assert_eq!(route(b"http://host", n), Route::NotFound);
        assert_eq!(route(b"/files/a.bin", n), Route::File(0));
        assert_eq!(route(b"/files/b c", n), Route::File(1));
        assert_eq!(route(b"/files/a.bi", n), Route::NotFound);
        assert_eq!(route(b"/files/", n), Route::NotFound);
        assert_eq!(route(b"/", n), Route::NotFound);
        assert_eq!(route(b"/bytes", n), Route::NotFound);
        assert_eq!(route(b"/bytesx/1", n), Route::NotFound);
        assert_eq!(route(b"*", n), Route::NotFound);
    }

    #[test]
    fn keep_alive_follows_version_and_connection() {
        assert!(complete(b"GET /bytes/1 HTTP/1.1\r\nHost: x\r\n\r\n").keep_alive);
        assert!(!complete(b"GET /bytes/1 HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
        assert!(!complete(b"GET /bytes/1 HTTP/1.1\r\nconnection: Upgrade, CLOSE\r\n\r\n").keep_alive);
        let r10 = complete(b"GET /bytes/1 HTTP/1.0\r\n\r\n");
        assert!(!r10.keep_alive && r10.http10);
        assert!(complete(b"GET /bytes/1 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(!complete(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").keep_alive);
    }

    #[test]
    fn heads_parse_with_their_length_and_body() {
        let two = b"GET /bytes/5 HTTP/1.1\r\n\r\nHEAD /files/a.bin HTTP/1.1\r\n\r\n";
        let first = complete(two);
        assert_eq!(first.head_bytes, 25);
        assert_eq!(first.route, Route::Bytes(5));
        assert_eq!(first.method, Method::Get);
        let second = complete(&two[first.head_bytes..]);
        assert_eq!((second.method, second.route), (Method::Head, Route::File(0)));
        let post = complete(b"POST /x HTTP/1.1\r\nContent-Length: 12\r\n\r\nhello");
        assert_eq!((post.method, post.body_bytes), (Method::Other, 12));
        let same = complete(b"GET / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n");
        assert_eq!(same.body_bytes, 3);
        let p = |b: &[u8]| parse_request(b, &names());
        assert_eq!(p(b"GET /bytes/5 HTTP/1.1\r\nHost: x\r\n"), Parsed::Partial);
        assert_eq!(p(b"GET"), Parsed::Partial);
        assert_eq!(p(b"GARBAGE\r\n\r\n"), Parsed::Malformed);
        assert_eq!(p(b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"), Parsed::Malformed);
        assert_eq!(
            p(b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Parsed::Malformed
        );
        assert_eq!(p(b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), Parsed::Malformed);
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(p(&many), Parsed::TooLarge);
    }

    const DATE: &[u8; DATE_BYTES] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    fn head(status: Status, length: u64, connection: ConnectionHeader, text: bool) -> String {
        let mut out = [0; HEAD_BUFFER_BYTES];
        let n = format_head(&mut out, status, length, connection, DATE, text);
        String::from_utf8(out[..n].to_vec()).expect("ascii")
    }

    #[test]
    fn heads_are_formatted_in_place() {
        assert_eq!(
            head(Status::Ok, 1_048_583, ConnectionHeader::None, false),
            "HTTP/1.1 200 OK\r\nServer: linerate\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: 1048583\r\n\r\n"
        );
        assert_eq!(
            head(Status::Ok, 0, ConnectionHeader::KeepAlive, false),
            "HTTP/1.1 200 OK\r\nServer: linerate\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        );
        assert_eq!(
            head(Status::NotFound, 0, ConnectionHeader::Close, true),
            "HTTP/1.1 404 Not Found\r\nServer: linerate\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: text/plain\r\nContent-Length: 24\r\nConnection: close\r\n\r\nnot found: try /bytes/N\n"
        );
        let h = head(Status::MethodNotAllowed, 0, ConnectionHeader::None, false);
        assert!(
            h.contains("\r\nAllow: GET, HEAD\r\n") && h.ends_with("Content-Length: 18\r\nAllow: GET, HEAD\r\n\r\n")
        );
        // The longest possible head fits the buffer.
        for s in [
            Status::Ok,
            Status::BadRequest,
            Status::NotFound,
            Status::MethodNotAllowed,
            Status::HeadTooLarge,
        ] {
            let h = head(s, u64::MAX, ConnectionHeader::KeepAlive, true);
            assert!(h.starts_with(&format!("HTTP/1.1 {} ", s.code())));
            assert!(h.len() < HEAD_BUFFER_BYTES - 100, "{} bytes", h.len());
        }
    }

    #[test]
    fn dates_are_imf_fixdates() {
        assert_eq!(&http_date(784_111_777), DATE);
        assert_eq!(&http_date(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&http_date(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(&http_date(1_767_225_599), b"Wed, 31 Dec 2025 23:59:59 GMT");
    }

    #[test]
    fn pattern_slices_continue_the_body() {
        let pattern: Vec<u8> = (0..PATTERN_BYTES).map(|i| BODY_PATTERN[i % 64]).collect();
        for offset in [0u64, 1, 63, 64, 1_000_003, 5 << 20] {
            let s = pattern_slice(&pattern, offset, 100);
            assert_eq!(s.len(), 100);
            for (k, b) in s.iter().enumerate() {
                assert_eq!(*b, BODY_PATTERN[((offset + k as u64) % 64) as usize]);
            }
        }
        assert_eq!(pattern_slice(&pattern, 63, u64::MAX).len(), PATTERN_BYTES - 63);
        assert_eq!(pattern_slice(&pattern, 0, 0).len(), 0);
    }

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
    fn a_fin_that_came_with_the_request_is_seen() {
        // Request and FIN both queued before the worker starts: one event carries both, and
        // the read that takes the request comes back short with the FIN still unread.
        let server = Httpd::bind(
            SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            HttpdConfig {
                threads: 1,
                ..HttpdConfig::default()
            },
        )
        .expect("bind");
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
