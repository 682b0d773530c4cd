//! One HTTP/2 worker (`--http2`): its users on a current-thread tokio runtime, each
//! user's connection driven by its own task ([`Connection`]: the frames of [`h2frame`] over
//! [`crate::tlsio::Io`], the adapter the server's lanes use), counted into the same [`HttpRun`]
//! as the HTTP/1.1 worker's (the same `count_response`).
//!
//! The load model: a user owns one connection (ALPN `h2` on https, the preface on cleartext) and
//! keeps up to `streams` requests in flight on it, each stream slot a closed-loop sub-user with
//! the think time; users start evenly over the ramp as HTTP/1.1 users do. The server's
//! SETTINGS_MAX_CONCURRENT_STREAMS caps the slots: only the first sends until the server's
//! SETTINGS are in, and the slots above the limit retire then. Open loop (`--rps`): one schedule
//! per worker; each request waits in a queue for a free slot on any of the worker's connections
//! and is timed from its scheduled start. A request is taken from the queue (or made, in the
//! closed loop) only when its connection can send it, so none is lost with a connection that
//! failed or was GOAWAY'd; one sent and refused by a GOAWAY or reset is an error of its class
//! (`goaway`, `rst_stream`), not retried. Bytes in and out are the connection's cleartext
//! (HTTP/2 frames), counted at each read and write.
//!
//! HTTP/1.1 workers never come here: the run picks this worker once, by the spec.

use super::h2frame;
use super::tls::{self, Failure};
use super::worker::Load;
use super::worker::classify::{classify, failure_of_io, tls_class};
use super::{HIST_MAX_NS, HttpErrors, HttpRun, HttpTarget, Times};
use crate::engine::run::{Gate, Shared};
use crate::engine::sockopt;
use crate::result::StreamEnd;
use crate::spec::HttpSpec;
use crate::tlsio::{HandshakeError, Io};
use connection::Connection;
use rustls::{ClientConfig, ClientConnection, HandshakeKind};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Notify;

mod connection;
mod probe;

/// Each stream's receive window, and the connection's per stream asked for: large enough that a
/// response of a few MiB is not held back by WINDOW_UPDATEs (h2load's default is 1 GiB).
const STREAM_WINDOW: u32 = 1 << 20;
const MAX_CONNECTION_WINDOW: u32 = 1 << 30;
/// How often the running totals are published to the sampler, and the stop flags read.
const TICK: Duration = Duration::from_millis(20);

/// The most PING and SETTINGS acknowledgements a connection holds unsent: the frames
/// after them wait unread until they are out, and a server that sends another while they
/// cannot go (it does not read them) has the connection ended as a flood (`ping_flood`,
/// `settings_flood`). 1,024 of them take 17 KiB.
const MAX_PENDING_ACKS: usize = 1024;
/// Unsent bytes past which a connection stops putting new requests in its write buffer (a
/// server slow to read; at most one more request follows), and past which the connection is
/// ended as the server's fault (`unread_writes`): more than its requests, acknowledgements and
/// resets can take from a server that reads.
const REQUEST_ROOM: usize = 16 << 10;
const MAX_UNSENT: usize = 64 << 10;
/// The write buffer's capacity at most: `MAX_UNSENT` and what one turn adds past it (its
/// acknowledgements, resets and window updates), as the buffer doubles.
const WRITE_BUFFER_BYTES: usize = 128 << 10;
/// The read buffer: four of the largest frames the client accepts.
const READ_BUFFER_BYTES: usize = 4 * (h2frame::MAX_FRAME + h2frame::HEAD);
/// rustls's buffers at their limits over TLS: 64 KiB of records to send (its default buffer
/// limit), 16 KiB of plaintext received and one record being read (16 KiB, its header and
/// expansion). Its fixed state (keys, the session) is not counted.
const TLS_BUFFER_BYTES: usize = (64 << 10) + (16 << 10) + 16_384 + 2_048 + 5;

/// The most memory one HTTP/2 connection of the client holds, bytes, whatever its server sends
///: its read buffer (64 KiB), its write buffer (at most 128 KiB: 64 KiB unsent,
/// 1,024 acknowledgements), a header block cut into CONTINUATIONs (at most 64 KiB), its stream
/// slots, its task and, over TLS, rustls's buffers (about 98 KiB). A budget of the
/// `--max-memory` kind counts a run's `users` x this; the kernel's socket buffers are not in it.
pub fn connection_memory_bytes(streams: u32, tls: bool) -> u64 {
    let fixed = std::mem::size_of::<Connection<'static>>() + 1024;
    let slots = streams as usize * connection::SLOT_BYTES;
    let tls = if tls { TLS_BUFFER_BYTES } else { 0 };
    (READ_BUFFER_BYTES + WRITE_BUFFER_BYTES + h2frame::MAX_HEADER_BLOCK + slots + fixed + tls) as u64
}

type Class = fn(&mut HttpErrors) -> &mut u64;

/// What a worker's tasks share (one thread: cells, no locks).
struct Ctx {
    spec: HttpSpec,
    targets: Vec<HttpTarget>,
    /// The request of each URL as HPACK blocks, encoded before the clock starts.
    blocks: Vec<h2frame::Requests>,
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
    /// `--probe`: the self probes this worker sends on its connections.
    probes: Option<probe::LoadProbes>,
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
            *class(&mut out.report.errors) += 1;
            out.per_target[target].errors += 1;
        }
        let i = (now / out.report.interval_ns) as usize;
        if let Some(b) = out.report.timeline.get_mut(i) {
            b.errors += 1;
        }
    }

    /// Cleartext bytes read (`inbound`) or written on a connection to URL `target` at `now`.
    fn count_bytes(&self, target: usize, n: usize, inbound: bool, now: u64) {
        let in_window = self.in_window(now);
        let mut out = self.out.borrow_mut();
        let i = (now / out.report.interval_ns) as usize;
        if inbound {
            self.total_in.set(self.total_in.get() + n as u64);
            if in_window {
                out.report.bytes_in += n as u64;
                out.per_target[target].bytes_in += n as u64;
            }
            if let Some(b) = out.report.timeline.get_mut(i) {
                b.bytes_in += n as u64;
            }
        } else {
            if in_window {
                out.report.bytes_out += n as u64;
            }
            if let Some(b) = out.report.timeline.get_mut(i) {
                b.bytes_out += n as u64;
            }
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
    let blocks: Vec<h2frame::Requests> = targets
        .iter()
        .map(|t| h2frame::Requests::new(t.tls.is_some(), &t.server, &t.path))
        .collect();
    // The largest block, with room for a table size update before it.
    if let Some(t) = blocks
        .iter()
        .zip(targets)
        .find(|(b, _)| b.first.len() + 8 > h2frame::MAX_FRAME)
    {
        gate.arrive_and_wait(&shared.sampler);
        shared.finish(w, StreamEnd::Error);
        let url = format!("{}{}", t.1.server, t.1.path);
        return Err(io::Error::other(format!(
            "the request for {url} does not fit one HTTP/2 frame"
        )));
    }
    let mine: Vec<usize> = (w..spec.users as usize).step_by(threads).collect();
    let buckets = (times.end_ns / times.interval_ns) as usize + 2;
    let out = HttpRun::empty(buckets, times.interval_ns, targets.len());
    gate.arrive_and_wait(&shared.sampler);
    let ctx = Rc::new(Ctx {
        spec: spec.clone(),
        targets: targets.to_vec(),
        blocks,
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
        probes: spec.probe.as_ref().map(|p| {
            let path = format!("/bytes/{}", p.size_bytes);
            let blocks = targets
                .iter()
                .map(|t| h2frame::Requests::new(t.tls.is_some(), &t.server, &path).plain)
                .collect();
            let timeout_ns = u64::from(p.timeout_ms) * 1_000_000;
            probe::LoadProbes::new(w, threads, p.gap_ns().max(1), timeout_ns, blocks)
        }),
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
    if ctx.probes.is_some() {
        local.spawn_local(probe::schedule(Rc::clone(&ctx)));
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
    let mut out = std::mem::replace(&mut *ctx.out.borrow_mut(), HttpRun::empty(0, times.interval_ns, 0));
    out.report.in_flight_at_end += ctx.in_flight.get();
    for (t, c) in ctx.connecting.iter().enumerate() {
        out.report.connections_in_flight_at_end += c.get();
        out.per_target[t].connections_in_flight_at_end += c.get();
    }
    if let Some(p) = &ctx.probes {
        out.report.load_probes = p.done.take();
        out.report.load_probes_sent = p.sent.get();
        out.report.load_probes_unsent = p.unsent.get();
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
        if let Some(io) = connect(&ctx, target, config.as_ref()).await {
            Connection::new(&ctx, target, io).run().await;
        }
        // A failed or ended connection: the next one a millisecond (or a think time) later, so
        // a refusing server is not hammered at the speed of the loop.
        let pause = ctx.think_ns.max(1_000_000);
        tokio::time::sleep_until(ctx.at(ctx.now() + pause)).await;
    }
}

/// A new connection to URL `target`: TCP and the TLS handshake (ALPN `h2`); counted as
/// HTTP/1.1's are (attempted by when it began, its outcome with it). None: failed.
async fn connect(ctx: &Rc<Ctx>, target: usize, config: Option<&Arc<ClientConfig>>) -> Option<Io<ClientConnection>> {
    let began = ctx.now();
    let counted = ctx.in_window(began);
    {
        let mut out = ctx.out.borrow_mut();
        if counted {
            out.report.connections_attempted += 1;
            out.per_target[target].connections_attempted += 1;
        }
        let i = (began / out.report.interval_ns) as usize;
        if let Some(b) = out.report.timeline.get_mut(i) {
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
        let i = (began / out.report.interval_ns) as usize;
        let ok = outcome.is_ok();
        if let Some(b) = out.report.timeline.get_mut(i) {
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
                &mut out.report.connections_successful
            } else {
                &mut out.report.connections_unsuccessful
            } += 1;
        }
    }
    match outcome {
        Ok(io) => Some(io),
        Err(class) => {
            ctx.count_failure(target, counted, class);
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
            .report
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
        ctx.out.borrow_mut().report.tls.count(resumed, took, cpu_ns);
    }
    Ok(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_holds_its_buffers_its_slots_and_over_tls_rustls_s() {
        let one = connection_memory_bytes(1, false);
        assert_eq!(
            connection_memory_bytes(11, false) - one,
            10 * connection::SLOT_BYTES as u64
        );
        assert_eq!(connection_memory_bytes(1, true) - one, TLS_BUFFER_BYTES as u64);
        // The read, write and header block buffers are the bulk of it: docs/http.md says
        // "about 260 KiB cleartext and 360 KiB over TLS for one stream".
        assert!((256 << 10..272 << 10).contains(&one), "{one}");
        assert!((350 << 10..370 << 10).contains(&connection_memory_bytes(1, true)));
        // docs/http.md: "76 bytes per stream slot".
        assert_eq!(connection_memory_bytes(2, false) - one, 76);
    }
}
