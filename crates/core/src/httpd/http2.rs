//! HTTP/2 on the server: h2 by ALPN on the https port, h2c by prior knowledge on the
//! cleartext port, the same routes as HTTP/1.1 ([`super::router`]).
//!
//! In: connections a worker has recognised as HTTP/2 (TLS handshake done with ALPN `h2`, or a
//! cleartext connection whose first bytes are the preface), handed over with their socket, their
//! rustls session and the bytes already read. Out: responses, and counts published beside the
//! worker's. The framing, HPACK, streams and flow control are the `h2` crate's (0.4, the one
//! hyper uses): the client's SETTINGS (concurrent streams, stream and connection windows, frame
//! size) are honoured as it honours them. `h2` runs on tokio I/O, so each worker that meets an
//! HTTP/2 connection starts one *lane*: a thread with a current-thread tokio runtime that owns
//! the worker's HTTP/2 connections. HTTP/1.1 stays in the mio loop untouched: the worker only
//! looks at a connection's first bytes (or its ALPN) before its first request.
//!
//! Limits as for HTTP/1.1: the connection stays counted in the open and per-address counts
//! until its task ends; the preface and the first request's HEADERS must arrive within the head
//! timeout; a connection with no stream open for the idle limit ([`super::HttpdConfig::idle`])
//! is closed with a GOAWAY; header lists past [`MAX_HEAD_BYTES`] are refused as h2 refuses them.
//! A stream that can send nothing of its body for the idle limit (a window kept at zero, a
//! client that reads nothing) is reset, and its connection closed when no stream is left
//!. What a connection holds is bounded: h2 queues at most [`STREAM_BUFFER_BYTES`] of
//! a stream's DATA, `/bytes` bodies are slices of one shared buffer, and copied `/files` bodies
//! take at most [`FILE_BUFFER_BYTES`] a connection. Each lane counts in plain integers and
//! publishes to its slot every [`TICK`].

use super::body::pread;
use super::date::http_date;
use super::response::Status;
use super::router::{Route, route};
use super::rpm::{Drained, config_for, drain};
use super::{LINGER, MAX_HEAD_BYTES, PATTERN_BYTES, Shared, TICK};
use crate::tlsio::Io;
use bytes::Bytes;
use rustls::ServerConnection;
use std::cell::{Cell, RefCell};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::Release};
use std::thread::JoinHandle;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The HTTP/2 connection preface (RFC 9113 §3.4), the first bytes of an h2c connection.
pub(super) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Streams a client may have open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS),
/// nginx's default.
const MAX_STREAMS: u32 = 128;
/// The most a body's DATA is asked for at a time (flow control grants at most this).
const CHUNK: usize = 64 * 1024;

/// Whether the first bytes of a connection are the HTTP/2 preface: `Some(true)` the whole
/// preface, `Some(false)` a part of it so far (wait for more), `None` not HTTP/2.
pub(super) fn preface(first: &[u8]) -> Option<bool> {
    let n = first.len().min(PREFACE.len());
    (first[..n] == PREFACE[..n]).then_some(n == PREFACE.len())
}

/// A connection handed to a lane.
pub(super) struct Handoff {
    pub(super) stream: std::net::TcpStream,
    pub(super) tls: Option<ServerConnection>,
    /// Cleartext bytes already read from the socket (the preface, maybe more).
    pub(super) early: Vec<u8>,
    pub(super) peer: IpAddr,
}

/// What a lane publishes; only its lane writes it.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct LaneSlot {
    pub(super) requests: AtomicU64,
    pub(super) responses: [AtomicU64; 6],
    pub(super) body_bytes: AtomicU64,
    pub(super) connections: AtomicU64,
    pub(super) streams: AtomicU64,
    pub(super) resets: AtomicU64,
    pub(super) goaways: AtomicU64,
    /// When the lane last published, a [`Shared::stamp`] (stored after the counts; 0: never).
    pub(super) published: AtomicU64,
}

/// A lane's counts, plain integers on its one thread.
#[derive(Default)]
struct LaneCounts {
    requests: Cell<u64>,
    responses: [Cell<u64>; 6],
    body_bytes: Cell<u64>,
    connections: Cell<u64>,
    streams: Cell<u64>,
    resets: Cell<u64>,
    goaways: Cell<u64>,
}

fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

impl LaneCounts {
    fn publish(&self, slot: &LaneSlot, stamp: u64) {
        slot.requests.store(self.requests.get(), Relaxed);
        for (a, n) in slot.responses.iter().zip(&self.responses) {
            a.store(n.get(), Relaxed);
        }
        slot.body_bytes.store(self.body_bytes.get(), Relaxed);
        slot.connections.store(self.connections.get(), Relaxed);
        slot.streams.store(self.streams.get(), Relaxed);
        slot.resets.store(self.resets.get(), Relaxed);
        slot.goaways.store(self.goaways.get(), Relaxed);
        slot.published.store(stamp, Release);
    }

    /// A connection or stream error: GOAWAY (sent or received) and RST_STREAM apart; an I/O
    /// error is neither.
    fn error(&self, e: &h2::Error) {
        if e.is_go_away() {
            bump(&self.goaways, 1);
        } else if e.is_reset() {
            bump(&self.resets, 1);
        }
    }
}

/// A worker's lane: the sender its connections go by and the thread that serves them.
pub(super) struct Lane {
    tx: Option<mpsc::UnboundedSender<Handoff>>,
    thread: Option<JoinHandle<()>>,
}

impl Lane {
    /// Starts worker `index`'s lane thread.
    pub(super) fn start(index: usize, shared: Arc<Shared>) -> io::Result<Lane> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let thread = std::thread::Builder::new()
            .name(format!("linerate-h2-{index}"))
            .spawn(move || run(runtime, rx, index, shared))?;
        Ok(Lane {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Hands a connection over; false (and the connection closed) when the lane has ended.
    pub(super) fn send(&self, job: Handoff) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(job).is_ok())
    }
}

impl Drop for Lane {
    /// Ends the lane: its connections are dropped (closed and released) and its counts published.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a lane's tasks share.
struct Ctx {
    shared: Arc<Shared>,
    counts: LaneCounts,
    /// The pattern buffer as `Bytes`: DATA frames are slices of it, never copies.
    pattern: Bytes,
    /// The Date header of the current second.
    date: RefCell<(u64, http::HeaderValue)>,
}

impl Ctx {
    fn date(&self) -> http::HeaderValue {
        let secs = crate::unixtime::now_unix_secs();
        let mut d = self.date.borrow_mut();
        if d.0 != secs {
            *d = (
                secs,
                http::HeaderValue::from_bytes(&http_date(secs)).expect("an HTTP date is a valid header value"),
            );
        }
        d.1.clone()
    }
}

fn run(runtime: tokio::runtime::Runtime, mut rx: mpsc::UnboundedReceiver<Handoff>, index: usize, shared: Arc<Shared>) {
    let ctx = Rc::new(Ctx {
        pattern: Bytes::copy_from_slice(&shared.pattern),
        shared,
        counts: LaneCounts::default(),
        date: RefCell::new((u64::MAX, http::HeaderValue::from_static(""))),
    });
    // Stamped before the first connection is served: to a reader of settled counts a slot
    // without a stamp is then a lane not started.
    ctx.counts.publish(&ctx.shared.lanes[index], ctx.shared.stamp());
    let local = tokio::task::LocalSet::new();
    let publisher = Rc::clone(&ctx);
    local.spawn_local(async move {
        let mut tick = tokio::time::interval(TICK);
        loop {
            tick.tick().await;
            let stamp = publisher.shared.stamp();
            publisher.counts.publish(&publisher.shared.lanes[index], stamp);
        }
    });
    let serving = Rc::clone(&ctx);
    local.block_on(&runtime, async move {
        while let Some(job) = rx.recv().await {
            tokio::task::spawn_local(serve(job, Rc::clone(&serving)));
        }
    });
    // Dropping the tasks closes their connections and releases their counts.
    drop(local);
    drop(runtime);
    ctx.counts.publish(&ctx.shared.lanes[index], ctx.shared.stamp());
}

/// Releases a connection's place in the open and per-address counts when its task ends.
struct Held {
    shared: Arc<Shared>,
    peer: IpAddr,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.shared.open.fetch_sub(1, Relaxed);
        self.shared.release(self.peer);
    }
}

/// The most of `/files` bodies one connection holds copied and not yet written to its socket
///: its streams share it, a stream waits for room while it is used up (that wait is
/// no progress, bounded by the idle limit). `/bytes` bodies are slices of the one pattern
/// buffer and take none of it.
pub(super) const FILE_BUFFER_BYTES: usize = 1 << 20;
/// What h2 may hold queued of one stream's DATA before it grants the stream more capacity
/// (h2's `max_send_buffer_size`, 400 KiB by default): a client that reads nothing holds at most
/// this of each stream queued, and it is a slice of the pattern or part of [`FILE_BUFFER_BYTES`].
const STREAM_BUFFER_BYTES: usize = CHUNK;

/// The receive windows the server grants, of a stream and of a connection: what a client may
/// send of request bodies (the upload sink's) before the server has read it. A loaded path's
/// bandwidth-delay product (100 Mbit/s × 250 ms is 3 MB) fits one stream's; h2 holds at most
/// this of a connection's DATA unread, and the sink reads it as it comes.
const RECEIVE_WINDOW_BYTES: u32 = 4 << 20;

/// One connection's streams as its tasks see them.
struct Streams {
    /// The connection came over TLS: its configuration document names https URLs.
    tls: bool,
    /// Where the client reached the server: the document's authority when it named none.
    local: Option<SocketAddr>,
    /// Streams being answered.
    open: Cell<usize>,
    /// A stream was reset because it could send nothing for the idle limit: the connection is
    /// closed when no stream is left.
    stalled: Cell<bool>,
    /// The connection's task, woken when the last stream of a stalled connection ends.
    waker: RefCell<Option<std::task::Waker>>,
    /// Bytes of `/files` bodies copied for this connection and not yet written (or dropped).
    file_bytes: Arc<FileBuffer>,
}

/// A connection's copied file bytes, released as h2 drops the DATA it wrote.
#[derive(Default)]
struct FileBuffer {
    held: AtomicUsize,
    freed: tokio::sync::Notify,
}

/// A chunk of a file's body, counted in its connection's [`FileBuffer`] until h2 drops it.
struct Copied {
    bytes: Vec<u8>,
    buffer: Arc<FileBuffer>,
}

impl AsRef<[u8]> for Copied {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Copied {
    fn drop(&mut self) {
        self.buffer.held.fetch_sub(self.bytes.len(), Relaxed);
        self.buffer.freed.notify_waiters();
    }
}

/// One HTTP/2 connection: handshake, then its streams, each answered by a task of its own.
async fn serve(job: Handoff, ctx: Rc<Ctx>) {
    let _held = Held {
        shared: Arc::clone(&ctx.shared),
        peer: job.peer,
    };
    bump(&ctx.counts.connections, 1);
    let local = job.stream.local_addr().ok();
    let tls = job.tls.is_some();
    let Ok(stream) = TcpStream::from_std(job.stream) else {
        return;
    };
    let io = Io::new(stream, job.tls, job.early);
    let head_timeout = ctx.shared.head_timeout;
    let idle = ctx.shared.idle;
    let mut conn = match tokio::time::timeout(
        head_timeout,
        h2::server::Builder::new()
            .max_concurrent_streams(MAX_STREAMS)
            .max_header_list_size(MAX_HEAD_BYTES as u32)
            .max_send_buffer_size(STREAM_BUFFER_BYTES)
            .initial_window_size(RECEIVE_WINDOW_BYTES)
            .initial_connection_window_size(RECEIVE_WINDOW_BYTES)
            .handshake::<_, Bytes>(io),
    )
    .await
    {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => return ctx.counts.error(&e),
        Err(_) => return,
    };
    let streams = Rc::new(Streams {
        tls,
        local,
        open: Cell::new(0),
        stalled: Cell::new(false),
        waker: RefCell::new(None),
        file_bytes: Arc::new(FileBuffer::default()),
    });
    // The first request within the head timeout, later ones within the idle limit of the last
    // stream.
    let mut wait = head_timeout;
    loop {
        let next = tokio::time::timeout(
            wait,
            // None: every stream left was reset for making no progress.
            std::future::poll_fn(|cx| {
                if streams.stalled.get() && streams.open.get() == 0 {
                    return std::task::Poll::Ready(None);
                }
                let mut waker = streams.waker.borrow_mut();
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
                drop(waker);
                conn.poll_accept(cx).map(Some)
            }),
        )
        .await;
        match next {
            Ok(Some(Some(Ok((req, respond))))) => {
                wait = idle;
                streams.open.set(streams.open.get() + 1);
                let (ctx, streams) = (Rc::clone(&ctx), Rc::clone(&streams));
                tokio::task::spawn_local(async move {
                    answer(req, respond, &ctx, &streams).await;
                    streams.open.set(streams.open.get() - 1);
                    if streams.open.get() == 0
                        && streams.stalled.get()
                        && let Some(w) = streams.waker.borrow_mut().take()
                    {
                        w.wake();
                    }
                });
            }
            Ok(Some(Some(Err(e)))) => return ctx.counts.error(&e),
            Ok(Some(None)) => break,
            // Its streams could send nothing for the idle limit and were reset: a client that
            // grants no window (or reads nothing) is not waited for again.
            Ok(None) => {
                conn.abrupt_shutdown(h2::Reason::NO_ERROR);
                break;
            }
            // Streams still being answered: the connection is busy, not idle.
            Err(_) if streams.open.get() > 0 => {}
            Err(_) => {
                conn.graceful_shutdown();
                break;
            }
        }
    }
    // Lets the answers and the GOAWAY go out, for at most LINGER.
    if let Ok(Err(e)) = tokio::time::timeout(LINGER, std::future::poll_fn(|cx| conn.poll_closed(cx))).await {
        ctx.counts.error(&e);
    }
}

/// What a request is answered with: its status, its body's length (the status's text where it
/// is not 200), the file served (for `/files`), and whether only the head is sent (HEAD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Answer {
    status: Status,
    length: u64,
    file: Option<usize>,
    head_only: bool,
}

impl Answer {
    /// The answer to `method` on a target routed to `routed`, as HTTP/1.1 answers it: GET and
    /// HEAD by the route, any other method 405. `file_bytes(i)` is served file `i`'s length.
    fn of(method: &http::Method, routed: Route, file_bytes: impl Fn(usize) -> u64) -> Answer {
        let head_only = method == http::Method::HEAD;
        let (status, length, file) = match routed {
            // POST and PUT are answered before ([`upload`]).
            Route::Upload => (Status::UploadOnly, 0, None),
            _ if method != http::Method::GET && !head_only => (Status::MethodNotAllowed, 0, None),
            Route::Bytes(n) => (Status::Ok, n, None),
            Route::File(i) => (Status::Ok, file_bytes(i), Some(i)),
            Route::BadLength => (Status::BadRequest, 0, None),
            // GET and HEAD of the configuration are answered before ([`config_for`]).
            Route::Config => (Status::MethodNotAllowed, 0, None),
            Route::NotFound => (Status::NotFound, 0, None),
        };
        let length = if status.ok() {
            length
        } else {
            status.text().len() as u64
        };
        Answer {
            status,
            length,
            file,
            head_only,
        }
    }

    /// The bytes of body sent: none for HEAD.
    fn body(&self) -> u64 {
        if self.head_only { 0 } else { self.length }
    }

    /// The response head: status, server, date, content type and length; `Allow` on a 405.
    fn head(&self, date: http::HeaderValue) -> http::Response<()> {
        head(self.status, self.length, date)
    }
}

/// A response head: status, server, date, content type and length; `Allow` on a 405.
fn head(status: Status, length: u64, date: http::HeaderValue) -> http::Response<()> {
    let mut head = http::Response::builder()
        .status(status.code())
        .header(http::header::SERVER, "linerate")
        .header(http::header::DATE, date)
        .header(http::header::CONTENT_TYPE, status.media())
        .header(http::header::CONTENT_LENGTH, length);
    if let Some(methods) = status.allow() {
        head = head.header(http::header::ALLOW, methods);
    }
    head.body(()).expect("a response built from valid parts")
}

/// One stream: the route of its `:path` ([`Answer::of`]), a response head, the body within the
/// flow control windows the client grants ([`send_body`]), counted as a response of its class
/// once all of it is sent. A stream that can send nothing for the idle limit (no window
/// granted, h2's queue for it full because the client reads nothing, no room in the
/// connection's file buffer) is reset (CANCEL) and marks its connection stalled.
async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    ctx: &Ctx,
    streams: &Streams,
) {
    let counts = &ctx.counts;
    bump(&counts.requests, 1);
    bump(&counts.streams, 1);
    let shared = &ctx.shared;
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let routed = route(target.as_bytes(), &shared.names);
    let method = req.method();
    let head_only = method == http::Method::HEAD;
    match routed {
        Route::Upload if method == http::Method::POST || method == http::Method::PUT => {
            return upload(req, respond, ctx).await;
        }
        Route::Config if method == http::Method::GET || head_only => {
            return match config_for(&req, streams.tls, streams.local) {
                Some(doc) => reply(respond, Status::Document, doc, head_only, ctx),
                None => reply(respond, Status::BadRequest, Bytes::new(), head_only, ctx),
            };
        }
        _ => {}
    }
    let answer = Answer::of(method, routed, |i| shared.files[i].bytes);
    drop(req);
    let send = match respond.send_response(answer.head(ctx.date()), answer.body() == 0) {
        Ok(send) => send,
        Err(e) => return counts.error(&e),
    };
    if send_body(send, answer, ctx, streams).await {
        bump(&counts.responses[usize::from(answer.status.code() / 100)], 1);
    }
}

/// The upload sink: the request body read to its end and dropped ([`drain`]), then answered
/// with its length. An upload that sends nothing for the idle limit is reset.
async fn upload(req: http::Request<h2::RecvStream>, mut respond: h2::server::SendResponse<Bytes>, ctx: &Ctx) {
    let mut body = req.into_body();
    match drain(&mut body, ctx.shared.idle).await {
        Ok(bytes) => reply(respond, Status::Received, Bytes::from(format!("{bytes}\n")), false, ctx),
        Err(Drained::Stalled) => {
            respond.send_reset(h2::Reason::CANCEL);
            bump(&ctx.counts.resets, 1);
        }
        Err(Drained::Failed(e)) => ctx.counts.error(&e),
    }
}

/// A short response sent whole: `body` for a 200, the status's text otherwise (neither for a
/// HEAD), counted as [`answer`] counts.
fn reply(mut respond: h2::server::SendResponse<Bytes>, status: Status, body: Bytes, head_only: bool, ctx: &Ctx) {
    let counts = &ctx.counts;
    let body = if status.ok() {
        body
    } else {
        Bytes::from_static(status.text())
    };
    let length = body.len() as u64;
    let sent = if head_only { 0 } else { length };
    let mut send = match respond.send_response(head(status, length, ctx.date()), sent == 0) {
        Ok(send) => send,
        Err(e) => return counts.error(&e),
    };
    // A few KiB at most, within any window a client grants at first; h2 holds it until then.
    if sent > 0
        && let Err(e) = send.send_data(body, true)
    {
        return counts.error(&e);
    }
    bump(&counts.responses[usize::from(status.code() / 100)], 1);
    if status.ok() {
        bump(&counts.body_bytes, sent);
    }
}

/// Room in the connection's file buffer, waited for until `until` (None: no room came, the
/// stream is stalled).
async fn file_room(buffer: &FileBuffer, until: tokio::time::Instant) -> Option<usize> {
    loop {
        let mut freed = std::pin::pin!(buffer.freed.notified());
        freed.as_mut().enable();
        let held = buffer.held.load(Relaxed);
        if held < FILE_BUFFER_BYTES {
            return Some(FILE_BUFFER_BYTES - held);
        }
        if tokio::time::timeout_at(until, freed).await.is_err() {
            return None;
        }
    }
}

/// Sends `answer`'s body on `send`, a chunk at a time as the client's window grants it: true
/// once all of it is sent; false when the stream ended first (an error, a reset, a stall past
/// the idle limit, a file that shrank), counted as such.
async fn send_body(mut send: h2::SendStream<Bytes>, answer: Answer, ctx: &Ctx, streams: &Streams) -> bool {
    let (counts, shared) = (&ctx.counts, &ctx.shared);
    let (body, file, status) = (answer.body(), answer.file, answer.status);
    let idle = shared.idle;
    let buffer = &streams.file_bytes;
    let stalled = |send: &mut h2::SendStream<Bytes>| {
        send.send_reset(h2::Reason::CANCEL);
        bump(&counts.resets, 1);
        streams.stalled.set(true);
        false
    };
    // When the stream last sent something (its response head at first).
    let mut progress = tokio::time::Instant::now();
    let mut sent = 0u64;
    while sent < body {
        let mut ask = (body - sent).min(CHUNK as u64) as usize;
        if file.is_some() {
            // Room in the connection's file buffer first, taken before the window is asked for.
            let Some(room) = file_room(buffer, progress + idle).await else {
                return stalled(&mut send);
            };
            ask = ask.min(room);
            buffer.held.fetch_add(ask, Relaxed);
        }
        // What was taken of the file buffer and is not (or no longer) going to be sent.
        let give_back = |n: usize| {
            if file.is_some() && n > 0 {
                buffer.held.fetch_sub(n, Relaxed);
                buffer.freed.notify_waiters();
            }
        };
        send.reserve_capacity(ask);
        let granted = match send.capacity() {
            0 => {
                match tokio::time::timeout_at(progress + idle, std::future::poll_fn(|cx| send.poll_capacity(cx))).await
                {
                    Ok(Some(Ok(n))) => n,
                    Ok(Some(Err(e))) => {
                        give_back(ask);
                        counts.error(&e);
                        return false;
                    }
                    // The stream was reset by the client.
                    Ok(None) => {
                        give_back(ask);
                        bump(&counts.resets, 1);
                        return false;
                    }
                    Err(_) => {
                        give_back(ask);
                        return stalled(&mut send);
                    }
                }
            }
            n => n,
        };
        let want = ask.min(granted);
        give_back(ask - want);
        if want == 0 {
            continue;
        }
        let data = if !status.ok() {
            Bytes::from_static(status.text())
        } else if let Some(i) = file {
            let mut chunk = vec![0; want];
            match pread(shared.files[i].file.as_raw_fd(), &mut chunk, sent) {
                Ok(n) if n > 0 => {
                    give_back(want - n);
                    chunk.truncate(n);
                    Bytes::from_owner(Copied {
                        bytes: chunk,
                        buffer: Arc::clone(buffer),
                    })
                }
                // The file shrank since bind: the promised length cannot be kept.
                _ => {
                    give_back(want);
                    send.send_reset(h2::Reason::INTERNAL_ERROR);
                    bump(&counts.resets, 1);
                    return false;
                }
            }
        } else {
            let start = (sent % super::BODY_PATTERN.len() as u64) as usize;
            let len = want.min(PATTERN_BYTES - start);
            ctx.pattern.slice(start..start + len)
        };
        let n = data.len() as u64;
        if let Err(e) = send.send_data(data, sent + n == body) {
            counts.error(&e);
            return false;
        }
        sent += n;
        progress = tokio::time::Instant::now();
        if status.ok() {
            bump(&counts.body_bytes, n);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_decided_by_method_and_route_as_http1_decides_it() {
        let file_bytes = |i: usize| 1000 + i as u64;
        let get = Answer::of(&http::Method::GET, Route::Bytes(10), file_bytes);
        assert_eq!(
            (get.status, get.length, get.file, get.body()),
            (Status::Ok, 10, None, 10)
        );
        let head = Answer::of(&http::Method::HEAD, Route::File(2), file_bytes);
        assert_eq!((head.status, head.length, head.file), (Status::Ok, 1002, Some(2)));
        assert_eq!(head.body(), 0, "HEAD sends the length, not the body");
        let post = Answer::of(&http::Method::POST, Route::Bytes(10), file_bytes);
        assert_eq!(post.status, Status::MethodNotAllowed);
        assert_eq!(post.length, Status::MethodNotAllowed.text().len() as u64);
        assert_eq!(post.file, None);
        for (route, status) in [
            (Route::NotFound, Status::NotFound),
            (Route::BadLength, Status::BadRequest),
        ] {
            let a = Answer::of(&http::Method::GET, route, file_bytes);
            assert_eq!((a.status, a.length), (status, status.text().len() as u64));
        }
        let zero = Answer::of(&http::Method::GET, Route::Bytes(0), file_bytes);
        assert_eq!(zero.body(), 0);

        let date = http::HeaderValue::from_static("Sun, 29 Nov 2026 11:00:00 GMT");
        let h = post.head(date.clone());
        assert_eq!(h.status(), 405);
        assert_eq!(h.headers()[http::header::ALLOW], "GET, HEAD");
        assert_eq!(h.headers()[http::header::CONTENT_TYPE], "text/plain");
        assert_eq!(
            h.headers()[http::header::CONTENT_LENGTH],
            post.length.to_string().as_str()
        );
        let h = head.head(date.clone());
        assert_eq!(h.status(), 200);
        assert_eq!(h.headers()[http::header::CONTENT_LENGTH], "1002");
        assert_eq!(h.headers()[http::header::CONTENT_TYPE], "application/octet-stream");
        assert_eq!(h.headers()[http::header::DATE], date);
        assert_eq!(h.headers()[http::header::SERVER], "linerate");
        assert!(h.headers().get(http::header::ALLOW).is_none());
    }
    use crate::httpd::on_loopback;
    use std::time::Duration;

    /// Three streams on one h2c connection (the h2 crate as the client), then a connection that
    /// sends garbage after the preface: bodies whole, streams and the GOAWAY counted.
    #[test]
    fn issue_27_h2c_streams_are_answered_and_counted_and_garbage_gets_a_goaway() {
        let server = on_loopback(1);
        let addr = server.local_addr();
        let handle = server.spawn().expect("spawn");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let lengths = runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(20), async {
                let tcp = TcpStream::connect(addr).await.expect("connect");
                let (client, conn) = h2::client::handshake(tcp).await.expect("handshake");
                tokio::spawn(conn);
                let mut client = client.ready().await.expect("ready");
                let mut pending = Vec::new();
                for path in ["/bytes/0", "/bytes/1", "/bytes/100000", "/nothing"] {
                    let req = http::Request::get(format!("http://localhost{path}"))
                        .body(())
                        .expect("request");
                    let (resp, _) = client.send_request(req, true).expect("send");
                    pending.push(resp);
                    client = client.ready().await.expect("ready");
                }
                let mut lengths = Vec::new();
                for resp in pending {
                    let resp = resp.await.expect("response");
                    let status = resp.status().as_u16();
                    let mut body = resp.into_body();
                    let mut got = Vec::new();
                    while let Some(data) = body.data().await {
                        let data = data.expect("data");
                        let _ = body.flow_control().release_capacity(data.len());
                        got.extend_from_slice(&data);
                    }
                    if status == 200 {
                        assert!(
                            got.iter()
                                .enumerate()
                                .all(|(i, b)| *b == super::super::BODY_PATTERN[i % 64])
                        );
                    }
                    lengths.push((status, got.len()));
                }
                lengths
            })
            .await
            .expect("answered within 20 s")
        });
        assert_eq!(lengths, [(200, 0), (200, 1), (200, 100_000), (404, 24)]);
        {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
            s.write_all(PREFACE).expect("preface");
            s.write_all(&[0xff; 16]).expect("garbage");
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got);
        }
        let stats = handle.stop();
        assert_eq!(stats.h2_connections, 2);
        assert_eq!(stats.h2_streams, 4);
        assert_eq!(stats.requests, 4);
        assert_eq!(stats.responses_by_status, [0, 0, 3, 0, 1, 0]);
        assert_eq!(stats.body_bytes, 100_001);
        assert_eq!(stats.h2_goaways, 1);
        assert_eq!(stats.h2_resets, 0);
    }

    #[test]
    fn issue_27_the_preface_is_told_from_http1_and_from_its_parts() {
        assert_eq!(preface(PREFACE), Some(true));
        assert_eq!(preface(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\x12\x04"), Some(true));
        assert_eq!(preface(b"PRI * HTTP/2"), Some(false));
        assert_eq!(preface(b"P"), Some(false));
        assert_eq!(preface(b"PRI / HTTP/1.1\r\n"), None);
        assert_eq!(preface(b"POST / HTTP/1.1\r\n"), None);
        assert_eq!(preface(b"GET /bytes/1 HTTP/1.1\r\n\r\n"), None);
    }
}
