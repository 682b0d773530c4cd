//! One HTTP/2 worker (`--http2`, issue 27): its users on a current-thread tokio runtime, the
//! `h2` crate's client over [`crate::tlsio::Io`] (the adapter the server's lanes use), counted
//! into the same [`HttpRun`] as the HTTP/1.1 worker's (the same `count_response`).
//!
//! The load model: a user owns one connection (ALPN `h2` on https, the preface on cleartext) and
//! keeps up to `streams` requests in flight on it, each stream slot a closed-loop sub-user with
//! the think time; users start evenly over the ramp as HTTP/1.1 users do. The server's
//! SETTINGS_MAX_CONCURRENT_STREAMS caps the slots: h2 holds a stream past it until one ends, and
//! the slots above it retire once the SETTINGS are in. Open loop (`--rps`): one schedule per
//! worker; each request waits in a queue for a free slot on any of the worker's connections and
//! is timed from its scheduled start. A request not yet sent when its connection failed or was
//! GOAWAY'd goes back to the queue (open loop) or to the user's next connection (closed loop);
//! one sent and refused by a GOAWAY or reset is an error of its class (`goaway`, `rst_stream`),
//! not retried. Bytes in and out are the connection's cleartext (HTTP/2 frames), counted at
//! each read and write.
//!
//! HTTP/1.1 workers never come here: the run picks this worker once, by the spec.

use super::tls::{self, Failure};
use super::worker::Load;
use super::worker::classify::{classify, failure_of_io, tls_class};
use super::{HIST_MAX_NS, HttpErrors, HttpRun, HttpTarget, Times, empty_run};
use crate::engine::run::{Gate, Shared};
use crate::engine::sockopt;
use crate::result::StreamEnd;
use crate::spec::HttpSpec;
use crate::tlsio::{HandshakeError, Io};
use bytes::Bytes;
use rustls::{ClientConfig, ClientConnection, HandshakeKind};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Each stream's receive window, and the connection's per stream asked for: large enough that a
/// response of a few MiB is not held back by WINDOW_UPDATEs (h2load's default is 1 GiB).
const STREAM_WINDOW: u32 = 1 << 20;
const MAX_CONNECTION_WINDOW: u32 = 1 << 30;
/// How often the running totals are published to the sampler, and the stop flags read.
const TICK: Duration = Duration::from_millis(20);

type Class = fn(&mut HttpErrors) -> &mut u64;

/// What a worker's tasks share (one thread: cells, no locks).
struct Ctx {
    spec: HttpSpec,
    targets: Vec<HttpTarget>,
    /// The request of each URL, built before the clock starts; each stream sends a clone.
    requests: Vec<http::Request<()>>,
    tls: Option<Arc<ClientConfig>>,
    start: Instant,
    times: Times,
    timeout_ns: u64,
    think_ns: u64,
    streams: usize,
    out: RefCell<HttpRun>,
    total_in: Cell<u64>,
    total_responses: Cell<u64>,
    /// Requests sent and not yet ended.
    in_flight: Cell<u64>,
    /// Per URL: connections begun in the window and not yet established or failed.
    connecting: Vec<Cell<u64>>,
    /// Open loop: the scheduled starts of requests waiting for a free stream slot.
    queue: RefCell<VecDeque<u64>>,
    queued: Notify,
}

impl Ctx {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn in_window(&self, t: u64) -> bool {
        t >= self.times.ramp_ns && t <= self.times.window_end_ns
    }

    fn at(&self, ns: u64) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.start + Duration::from_nanos(ns))
    }

    fn ended(&self) -> bool {
        self.now() >= self.times.end_ns
    }

    /// A request of URL `target` failed at `now` (class `class`), counted when it began in the
    /// window, and in the timeline by `now`.
    fn count_failure(&self, target: usize, counted: bool, class: Class) {
        let now = self.now();
        let mut out = self.out.borrow_mut();
        if counted {
            *class(&mut out.errors) += 1;
            out.per_target[target].errors += 1;
        }
        let i = (now / out.interval_ns) as usize;
        if let Some(b) = out.timeline.get_mut(i) {
            b.errors += 1;
        }
    }

    /// Cleartext bytes read (`inbound`) or written on a connection to URL `target`.
    fn count_bytes(&self, target: usize, n: usize, inbound: bool) {
        let now = self.now();
        let in_window = self.in_window(now);
        let mut out = self.out.borrow_mut();
        let i = (now / out.interval_ns) as usize;
        if inbound {
            self.total_in.set(self.total_in.get() + n as u64);
            if in_window {
                out.bytes_in += n as u64;
                out.per_target[target].bytes_in += n as u64;
            }
            if let Some(b) = out.timeline.get_mut(i) {
                b.bytes_in += n as u64;
            }
        } else {
            if in_window {
                out.bytes_out += n as u64;
            }
            if let Some(b) = out.timeline.get_mut(i) {
                b.bytes_out += n as u64;
            }
        }
    }
}

/// The class of an h2 error on a request: the server's RST_STREAM and GOAWAY apart; a stream h2
/// itself reset (a response that broke the protocol) is a bad response.
fn class_of(e: &h2::Error) -> Class {
    if e.is_go_away() {
        |x| &mut x.goaway
    } else if e.is_reset() && e.is_remote() {
        |x| &mut x.rst_stream
    } else if e.is_reset() {
        |x| &mut x.bad_response
    } else if let Some(io) = e.get_io() {
        classify(io)
    } else {
        |x| &mut x.other
    }
}

/// The connection as h2 sees it, its cleartext bytes counted at each read and write.
struct Counted {
    io: Io<ClientConnection>,
    ctx: Rc<Ctx>,
    target: usize,
}

impl AsyncRead for Counted {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            this.ctx.count_bytes(this.target, n, true);
        }
        r
    }
}

impl AsyncWrite for Counted {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r
            && n > 0
        {
            this.ctx.count_bytes(this.target, n, false);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// One connection's state its stream slots share.
struct Conn {
    target: usize,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS as h2 holds it (usize::MAX before any).
    cap: Cell<usize>,
    in_flight: Cell<u64>,
    /// The server's SETTINGS are in: its first frames, so true once a response's head came
    /// (or the first request ended). Until then only slot 0 sends, so a server's stream limit
    /// is never exceeded before it is known (nginx refuses the streams past it).
    settled: Cell<bool>,
    settle: Notify,
}

impl Conn {
    fn settled(&self) {
        if !self.settled.get() {
            self.settled.set(true);
            self.settle.notify_waiters();
        }
    }
}

/// One worker: users `w`, `w + threads`, ... until the end.
pub(super) fn work(
    load: Load<'_>,
    w: usize,
    threads: usize,
    times: Times,
    shared: &Shared<'_>,
    gate: &Gate,
) -> io::Result<HttpRun> {
    let Load { spec, targets, tls } = load;
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            gate.arrive_and_wait(&shared.sampler);
            shared.finish(w, StreamEnd::Error);
            return Err(e);
        }
    };
    let requests = targets
        .iter()
        .map(|t| {
            let scheme = if t.tls.is_some() { "https" } else { "http" };
            http::Request::get(format!("{scheme}://{}{}", t.server, t.path))
                .header(http::header::USER_AGENT, "linerate")
                .body(())
                .map_err(io::Error::other)
        })
        .collect::<io::Result<Vec<_>>>();
    let requests = match requests {
        Ok(r) => r,
        Err(e) => {
            gate.arrive_and_wait(&shared.sampler);
            shared.finish(w, StreamEnd::Error);
            return Err(e);
        }
    };
    let mine: Vec<usize> = (w..spec.users as usize).step_by(threads).collect();
    let buckets = (times.end_ns / times.interval_ns) as usize + 2;
    let out = empty_run(buckets, times.interval_ns, targets.len());
    gate.arrive_and_wait(&shared.sampler);
    let ctx = Rc::new(Ctx {
        spec: spec.clone(),
        targets: targets.to_vec(),
        requests,
        tls: tls.cloned(),
        start: *shared.t0.get().expect("time zero is set before the gate opens"),
        times,
        timeout_ns: u64::from(spec.timeout_ms) * 1_000_000,
        think_ns: (spec.think_ms * 1e6) as u64,
        streams: spec.http2.map_or(1, |h| h.streams.max(1) as usize),
        out: RefCell::new(out),
        total_in: Cell::new(0),
        total_responses: Cell::new(0),
        in_flight: Cell::new(0),
        connecting: (0..targets.len()).map(|_| Cell::new(0)).collect(),
        queue: RefCell::new(VecDeque::with_capacity(1024)),
        queued: Notify::new(),
    });
    let local = tokio::task::LocalSet::new();
    let total_users = u64::from(spec.users);
    for &global in &mine {
        // Closed loop: user i (of all) starts at ramp x i / users; open loop: every user
        // connects at the start and waits for the schedule.
        let first = match spec.rate {
            Some(_) => 0,
            None => times.ramp_ns * global as u64 / total_users,
        };
        local.spawn_local(user(Rc::clone(&ctx), global, first));
    }
    if let Some(rate) = spec.rate {
        let gap = (1e9 * threads as f64 / rate).max(1.0) as u64;
        local.spawn_local(schedule(Rc::clone(&ctx), w as u64 * gap / threads as u64, gap));
    }
    let counter = &shared.counters[w];
    let end = local.block_on(&runtime, async {
        loop {
            counter.bytes.store(ctx.total_in.get(), Relaxed);
            counter.ops.store(ctx.total_responses.get(), Relaxed);
            if shared.control.aborted() || shared.control.sending_stopped() {
                break StreamEnd::Stopped;
            }
            let now = ctx.now();
            if now >= times.end_ns {
                break StreamEnd::Deadline;
            }
            tokio::time::sleep_until(ctx.at((now + TICK.as_nanos() as u64).min(times.end_ns))).await;
        }
    });
    // The users' tasks end here, their connections closed; what was in flight is counted so.
    drop(local);
    drop(runtime);
    let mut out = std::mem::replace(&mut *ctx.out.borrow_mut(), empty_run(0, times.interval_ns, 0));
    out.in_flight_at_end += ctx.in_flight.get();
    for (t, c) in ctx.connecting.iter().enumerate() {
        out.connections_in_flight_at_end += c.get();
        out.per_target[t].connections_in_flight_at_end += c.get();
    }
    counter.bytes.store(ctx.total_in.get(), Relaxed);
    counter.ops.store(ctx.total_responses.get(), Relaxed);
    shared.finish(w, end);
    Ok(out)
}

/// Open loop: a request due every `gap` ns from `first`, queued for the next free stream slot.
async fn schedule(ctx: Rc<Ctx>, first: u64, gap: u64) {
    let mut next = first;
    let end = ctx.times.end_ns;
    while next < end {
        tokio::time::sleep_until(ctx.at(next)).await;
        let now = ctx.now();
        while next <= now && next < end {
            ctx.queue.borrow_mut().push_back(next);
            ctx.queued.notify_one();
            next += gap;
        }
    }
}

/// One user: a connection, its stream slots until it ends, then the next connection.
async fn user(ctx: Rc<Ctx>, global: usize, first: u64) {
    tokio::time::sleep_until(ctx.at(first)).await;
    let target = global % ctx.targets.len();
    let resume = ctx.spec.tls.as_ref().is_none_or(|t| t.resume);
    let config = ctx.tls.as_ref().map(|c| tls::for_user(c, resume));
    while !ctx.ended() {
        if let Some((send, connection)) = connect(&ctx, target, config.as_ref()).await {
            run_connection(&ctx, target, send, connection).await;
        }
        // A failed or ended connection: the next one a millisecond (or a think time) later, so
        // a refusing server is not hammered at the speed of the loop.
        let pause = ctx.think_ns.max(1_000_000);
        tokio::time::sleep_until(ctx.at(ctx.now() + pause)).await;
    }
}

type Connection = h2::client::Connection<Counted, Bytes>;

/// A new connection to URL `target`: TCP, the TLS handshake (ALPN `h2`), HTTP/2's preface;
/// counted as HTTP/1.1's are (attempted by when it began, its outcome with it). None: failed.
async fn connect(
    ctx: &Rc<Ctx>,
    target: usize,
    config: Option<&Arc<ClientConfig>>,
) -> Option<(h2::client::SendRequest<Bytes>, Connection)> {
    let began = ctx.now();
    let counted = ctx.in_window(began);
    {
        let mut out = ctx.out.borrow_mut();
        if counted {
            out.connections_attempted += 1;
            out.per_target[target].connections_attempted += 1;
        }
        let i = (began / out.interval_ns) as usize;
        if let Some(b) = out.timeline.get_mut(i) {
            b.connections += 1;
        }
    }
    let pending = &ctx.connecting[target];
    if counted {
        pending.set(pending.get() + 1);
    }
    let deadline = ctx.at(began + ctx.timeout_ns);
    let outcome = establish(ctx, target, config, began, counted, deadline).await;
    if counted {
        pending.set(pending.get() - 1);
    }
    // The outcome counted with the attempt, by when it began.
    {
        let mut out = ctx.out.borrow_mut();
        let i = (began / out.interval_ns) as usize;
        let ok = outcome.is_ok();
        if let Some(b) = out.timeline.get_mut(i) {
            *if ok {
                &mut b.connections_successful
            } else {
                &mut b.connections_unsuccessful
            } += 1;
        }
        if counted {
            let t = &mut out.per_target[target];
            *if ok {
                &mut t.connections_successful
            } else {
                &mut t.connections_unsuccessful
            } += 1;
            *if ok {
                &mut out.connections_successful
            } else {
                &mut out.connections_unsuccessful
            } += 1;
        }
    }
    let io = match outcome {
        Ok(io) => io,
        Err(class) => {
            ctx.count_failure(target, counted, class);
            return None;
        }
    };
    let window = (STREAM_WINDOW as usize * ctx.streams).min(MAX_CONNECTION_WINDOW as usize) as u32;
    let io = Counted {
        io,
        ctx: Rc::clone(ctx),
        target,
    };
    // Only the preface and SETTINGS are written here: it fails only with the socket.
    match h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(window)
        .handshake::<_, Bytes>(io)
        .await
    {
        Ok(pair) => Some(pair),
        Err(e) => {
            ctx.count_failure(target, counted, class_of(&e));
            None
        }
    }
}

/// TCP connected and, over TLS, the handshake done with ALPN `h2` (counted: full or resumed, its
/// time from TCP connected, this thread's CPU in it); else the failure's class.
async fn establish(
    ctx: &Ctx,
    target: usize,
    config: Option<&Arc<ClientConfig>>,
    began: u64,
    counted: bool,
    deadline: tokio::time::Instant,
) -> Result<Io<ClientConnection>, Class> {
    let t = &ctx.targets[target];
    let stream = match tokio::time::timeout_at(deadline, TcpStream::connect(t.addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(classify(&e)),
        Err(_) => return Err(|x| &mut x.timeout),
    };
    sockopt::per_connection(&stream, None, false);
    let connected = ctx.now();
    if counted {
        let _ = ctx
            .out
            .borrow_mut()
            .connect
            .record(connected.saturating_sub(began).clamp(1, HIST_MAX_NS));
    }
    let (Some(name), Some(config)) = (&t.tls, config) else {
        return Ok(Io::new(stream, None, Vec::new()));
    };
    let session =
        ClientConnection::new(Arc::clone(config), name.clone()).map_err(|_| -> Class { |x| &mut x.tls_other })?;
    let mut io = Io::new(stream, Some(session), Vec::new());
    let mut cpu_ns = 0u64;
    let shaken = tokio::time::timeout_at(
        deadline,
        poll_fn(|cx| {
            let before = tls::thread_cpu_ns();
            let r = io.poll_handshake(cx);
            cpu_ns += tls::thread_cpu_ns().saturating_sub(before);
            r
        }),
    )
    .await;
    let failure = match shaken {
        Err(_) => return Err(|x| &mut x.tls_timeout),
        Ok(Ok(())) => None,
        Ok(Err(HandshakeError::Tls(e))) => Some(tls::failure_of(&e)),
        Ok(Err(HandshakeError::Io(e))) => Some(failure_of_io(&e)),
        Ok(Err(HandshakeError::Closed)) => Some(Failure::Protocol),
    };
    if let Some(f) = failure {
        return Err(tls_class(f));
    }
    let session = io.tls.as_ref().expect("a TLS connection");
    // A server that did not choose h2 would be spoken HTTP/2 to against its will.
    if session.alpn_protocol() != Some(b"h2") {
        return Err(|x| &mut x.tls_protocol);
    }
    if counted {
        let resumed = session.handshake_kind() == Some(HandshakeKind::Resumed);
        let took = ctx.now().saturating_sub(connected);
        ctx.out.borrow_mut().tls.count(resumed, took, cpu_ns);
    }
    Ok(io)
}

/// Runs a connection until it ends: its stream slots as tasks, the connection itself here
/// (reading the server's stream limit after each turn).
async fn run_connection(
    ctx: &Rc<Ctx>,
    target: usize,
    send: h2::client::SendRequest<Bytes>,
    mut connection: Connection,
) {
    let conn = Rc::new(Conn {
        target,
        cap: Cell::new(usize::MAX),
        in_flight: Cell::new(0),
        settled: Cell::new(false),
        settle: Notify::new(),
    });
    for slot in 0..ctx.streams {
        tokio::task::spawn_local(stream_slot(Rc::clone(ctx), send.clone(), slot, Rc::clone(&conn)));
    }
    drop(send);
    let _ = poll_fn(|cx| {
        let r = Pin::new(&mut connection).poll(cx);
        let cap = connection.max_concurrent_send_streams();
        if cap != conn.cap.get() {
            conn.cap.set(cap);
            if cap < usize::MAX {
                let mut out = ctx.out.borrow_mut();
                let cap = cap as u64;
                out.h2_peer_max_streams = Some(out.h2_peer_max_streams.map_or(cap, |m| m.min(cap)));
            }
        }
        r
    })
    .await;
}

/// One stream slot of a connection: a closed-loop sub-user (request, response, think), or in the
/// open loop a taker of scheduled requests; it ends with its connection.
async fn stream_slot(ctx: Rc<Ctx>, mut send: h2::client::SendRequest<Bytes>, slot: usize, conn: Rc<Conn>) {
    while slot > 0 && !conn.settled.get() {
        let settled = conn.settle.notified();
        if conn.settled.get() {
            break;
        }
        settled.await;
    }
    loop {
        // Slots past the server's limit retire once its SETTINGS are in.
        if slot >= conn.cap.get() || ctx.ended() {
            return;
        }
        let (intended, scheduled) = match ctx.spec.rate {
            None => (ctx.now(), false),
            Some(_) => (next_scheduled(&ctx).await, true),
        };
        if slot >= conn.cap.get() || !request(&ctx, &mut send, intended, &conn).await {
            // Not sent: the connection is gone; the scheduled start goes to another slot.
            if scheduled {
                ctx.queue.borrow_mut().push_front(intended);
                ctx.queued.notify_one();
            }
            return;
        }
        if ctx.think_ns > 0 && !scheduled {
            tokio::time::sleep_until(ctx.at(ctx.now() + ctx.think_ns)).await;
        }
    }
}

/// Open loop: the next scheduled start, waiting for one; one over a millisecond past due is
/// counted late.
async fn next_scheduled(ctx: &Ctx) -> u64 {
    loop {
        let next = ctx.queue.borrow_mut().pop_front();
        if let Some(at) = next {
            if at + 1_000_000 < ctx.now() {
                ctx.out.borrow_mut().queued_late += 1;
            }
            return at;
        }
        ctx.queued.notified().await;
    }
}

/// One request on the connection, timed from `intended`: false when it could not be sent (the
/// connection has ended; nothing counted), true once it ended (counted: a response or an error
/// of its class).
async fn request(ctx: &Ctx, send: &mut h2::client::SendRequest<Bytes>, intended: u64, conn: &Conn) -> bool {
    let target = conn.target;
    let deadline = ctx.at(intended.max(ctx.now()) + ctx.timeout_ns);
    // h2 holds a stream past the server's limit here until one of the connection's ends. Most
    // often it is ready at once, and no timer is armed for the wait.
    let ready = match poll_fn(|cx| Poll::Ready(send.poll_ready(cx))).await {
        Poll::Ready(r) => Ok(r),
        Poll::Pending => tokio::time::timeout_at(deadline, poll_fn(|cx| send.poll_ready(cx))).await,
    };
    match ready {
        Ok(Ok(())) => {}
        Ok(Err(_)) => return false,
        Err(_) => {
            let counted = started(ctx, target);
            ctx.count_failure(target, counted, |x| &mut x.timeout);
            return true;
        }
    }
    started(ctx, target);
    let in_flight = conn.in_flight.get() + 1;
    conn.in_flight.set(in_flight);
    ctx.in_flight.set(ctx.in_flight.get() + 1);
    {
        let mut out = ctx.out.borrow_mut();
        out.h2_max_in_flight = out.h2_max_in_flight.max(in_flight);
    }
    let got = match send.send_request(ctx.requests[target].clone(), true) {
        Ok((response, _)) => tokio::time::timeout_at(deadline, receive(ctx, response, conn)).await,
        Err(e) => Ok(Err(e)),
    };
    conn.settled();
    conn.in_flight.set(conn.in_flight.get() - 1);
    ctx.in_flight.set(ctx.in_flight.get() - 1);
    let now = ctx.now();
    let in_window = ctx.in_window(now);
    match got {
        Ok(Ok((status, first_byte, body))) => {
            let rt = now.saturating_sub(intended).clamp(1, HIST_MAX_NS);
            let ttfb = first_byte.saturating_sub(intended).clamp(1, rt);
            ctx.total_responses.set(ctx.total_responses.get() + 1);
            ctx.out
                .borrow_mut()
                .count_response(now, in_window, target, rt, ttfb, status, body);
        }
        Ok(Err(e)) => ctx.count_failure(target, in_window, class_of(&e)),
        // Dropped on time out: h2 cancels the stream (RST_STREAM CANCEL).
        Err(_) => ctx.count_failure(target, in_window, |x| &mut x.timeout),
    }
    true
}

/// Counts a request of URL `target` started now; whether it began in the window.
fn started(ctx: &Ctx, target: usize) -> bool {
    let counted = ctx.in_window(ctx.now());
    if counted {
        let mut out = ctx.out.borrow_mut();
        out.requests_started += 1;
        out.per_target[target].requests_started += 1;
    }
    counted
}

/// The response: its status, when its head came (ns since time zero), its body's length, each
/// DATA frame's bytes given back to the flow-control windows as they are counted.
async fn receive(ctx: &Ctx, response: h2::client::ResponseFuture, conn: &Conn) -> Result<(u16, u64, u64), h2::Error> {
    let response = response.await?;
    let first_byte = ctx.now();
    conn.settled();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = 0u64;
    while let Some(data) = body.data().await {
        let data = data?;
        bytes += data.len() as u64;
        let _ = body.flow_control().release_capacity(data.len());
    }
    Ok((status, first_byte, bytes))
}
