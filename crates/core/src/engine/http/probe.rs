//! Latency probes of an HTTP test on a connection of their own (`--probe http`): a small GET on
//! schedule, an open loop (a probe is due every gap, whatever the ones before it are doing) and
//! timed from when it is written, on one keep-alive connection to the server: HTTP/1.1 with the
//! requests pipelined, or HTTP/2 when the test is `--http2` (a stream each); over TLS with the
//! test's settings when the URL is https. The connection is made with the load's own pieces (its
//! TLS configuration, its requests, its response heads and HTTP/2 frames), on a thread of its own
//! with a current-thread runtime, so the load's workers carry none of it.
//!
//! A probe unanswered within the timeout is lost. HTTP/1.1 answers come in order: when the
//! oldest probe is lost the connection is closed (the ones behind it with it) and the next one
//! opened. A probe due while a connection is being opened waits for it; one no connection
//! carries within the timeout is lost. A status other than 2xx is counted apart
//! (`bad_status`) and the probe lost: the server did not serve what was asked.

use super::h2frame;
use super::h2read::{Frame, Reader};
use super::head::parse_head;
use super::tls;
use super::{HttpTarget, test_tls};
use crate::engine::{EngineError, sockopt};
use crate::spec::{HttpSpec, ProbeSpec};
use crate::tlsio::Io;
use rustls::{ClientConfig, ClientConnection};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How often a session with nothing to do looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);
/// The probe connection's HTTP/2 windows: a probe's body is at most 1 MiB.
const WINDOW: u32 = 1 << 20;

/// Probes running beside a load; [`Probing::stop`] ends them and hands back what they saw.
pub struct Probing {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<ProbeLog>>,
    origin: Instant,
}

/// What a probe series on a connection of its own saw.
#[derive(Clone, Debug, Default)]
pub struct ProbeLog {
    /// Each probe ended so far: when it was written (when it was due for one never written), ns
    /// since `Probing`'s origin, and its round trip from then (None: lost).
    pub probes: Vec<SentProbe>,
    /// Probes due and not yet answered nor lost when the probing stopped.
    pub in_flight: u64,
    /// Answers whose status was not 2xx (each counted lost).
    pub bad_status: u64,
    pub connections: u64,
    pub failed_connections: u64,
}

/// One probe: sent at `sent_ns`, answered after `rtt_ns` (None: lost).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SentProbe {
    pub sent_ns: u64,
    pub rtt_ns: Option<u64>,
}

impl Probing {
    /// When the probes' clock reads zero: the first probe is due then.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Stops the probes (those in flight stay so) and returns what they saw.
    pub fn stop(mut self) -> ProbeLog {
        self.stop.store(true, Relaxed);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

impl Drop for Probing {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

/// Starts probes to `target` (a small object on the test's server) as `probe` says, over HTTP/2
/// when the test is `--http2`, with the test's TLS settings when the URL is https.
pub fn start_probes(spec: &HttpSpec, probe: &ProbeSpec, target: &HttpTarget) -> Result<Probing, EngineError> {
    let tls = test_tls(spec, std::slice::from_ref(target), &tls::Refusal::default())?;
    let stop = Arc::new(AtomicBool::new(false));
    let origin = Instant::now();
    let prober = Prober {
        h2: spec
            .http2
            .map(|_| h2frame::Requests::new(target.tls.is_some(), &target.server, &target.path).plain),
        target: target.clone(),
        tls,
        origin,
        gap_ns: probe.gap_ns().max(1),
        timeout_ns: u64::from(probe.timeout_ms) * 1_000_000,
        next_due: 0,
        waiting: VecDeque::new(),
        out: VecDeque::new(),
        log: ProbeLog::default(),
        stop: Arc::clone(&stop),
    };
    let thread = std::thread::Builder::new()
        .name("linerate-probe".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt.block_on(prober.run()),
                // No runtime: no probe goes out, which the series shows (none sent).
                Err(_) => ProbeLog::default(),
            }
        })
        .map_err(EngineError::Spawn)?;
    Ok(Probing {
        stop,
        thread: Some(thread),
        origin,
    })
}

/// A probe written on the connection: when (ns since the origin), its HTTP/2 stream (0 over
/// HTTP/1.1) and its status once its head came.
#[derive(Clone, Copy)]
struct Out {
    sent: u64,
    stream: u32,
    status: u16,
}

struct Prober {
    target: HttpTarget,
    /// HTTP/2: the probe's request block; None: HTTP/1.1 (the target's request bytes).
    h2: Option<Vec<u8>>,
    tls: Option<Arc<ClientConfig>>,
    origin: Instant,
    gap_ns: u64,
    timeout_ns: u64,
    next_due: u64,
    /// Due and not yet written (no connection): when each was due.
    waiting: VecDeque<u64>,
    /// Written, oldest first.
    out: VecDeque<Out>,
    log: ProbeLog,
    stop: Arc<AtomicBool>,
}

/// One connection's state.
struct Session {
    io: Io<ClientConnection>,
    rbuf: Vec<u8>,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Written since the last flush that finished (over TLS the flush sends the records).
    unflushed: bool,
    /// HTTP/1.1: the body bytes of the oldest probe's response still to come (None: its head).
    body_left: Option<u64>,
    /// HTTP/1.1: the server closes after the current response.
    closing: bool,
    reader: Reader,
    next_stream: u32,
    unacked: u32,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Prober {
    fn now(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    fn stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }

    async fn run(mut self) -> ProbeLog {
        while !self.stopped() {
            self.schedule();
            match self.connect().await {
                Some(io) => {
                    self.log.connections += 1;
                    self.session(io).await;
                }
                None => {
                    self.log.failed_connections += 1;
                    self.schedule();
                    let pause = Duration::from_millis(50).min(Duration::from_nanos(self.timeout_ns));
                    tokio::time::sleep(pause).await;
                }
            }
            // What the connection had in flight went with it.
            while let Some(o) = self.out.pop_front() {
                self.answer(o.sent, None);
            }
        }
        self.log.in_flight = (self.waiting.len() + self.out.len()) as u64;
        self.log
    }

    /// Probes come due up to now; those waiting for a connection past their timeout are lost.
    fn schedule(&mut self) {
        let now = self.now();
        while self.next_due <= now {
            self.waiting.push_back(self.next_due);
            self.next_due += self.gap_ns;
        }
        while let Some(&due) = self.waiting.front() {
            if due + self.timeout_ns > now {
                break;
            }
            self.waiting.pop_front();
            self.answer(due, None);
        }
    }

    fn answer(&mut self, at: u64, rtt_ns: Option<u64>) {
        self.log.probes.push(SentProbe { sent_ns: at, rtt_ns });
    }

    /// A new connection (TCP, then TLS with ALPN `h2` or `http/1.1` as the load's), within the
    /// probe timeout. None: it failed.
    async fn connect(&self) -> Option<Io<ClientConnection>> {
        let deadline = tokio::time::Instant::now() + Duration::from_nanos(self.timeout_ns);
        let stream = tokio::time::timeout_at(deadline, TcpStream::connect(self.target.addr))
            .await
            .ok()?
            .ok()?;
        sockopt::per_connection(&stream, None, false);
        let (Some(name), Some(config)) = (&self.target.tls, &self.tls) else {
            return Some(Io::new(stream, None, Vec::new()));
        };
        let session = ClientConnection::new(Arc::clone(config), name.clone()).ok()?;
        let mut io = Io::new(stream, Some(session), Vec::new());
        tokio::time::timeout_at(deadline, poll_fn(|cx| io.poll_handshake(cx)))
            .await
            .ok()?
            .ok()?;
        let alpn = io.tls.as_ref().and_then(|s| s.alpn_protocol());
        if self.h2.is_some() && alpn != Some(b"h2") {
            return None;
        }
        Some(io)
    }

    /// Probes on one connection until it ends or the probing stops.
    async fn session(&mut self, io: Io<ClientConnection>) {
        let mut wbuf = Vec::with_capacity(4096);
        if self.h2.is_some() {
            h2frame::client_start(&mut wbuf, WINDOW, WINDOW);
        }
        let mut s = Session {
            io,
            rbuf: vec![0; 64 << 10],
            rend: 0,
            wbuf,
            wpos: 0,
            unflushed: false,
            body_left: None,
            closing: false,
            reader: Reader::default(),
            next_stream: 1,
            unacked: 0,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
        };
        poll_fn(|cx| self.poll(&mut s, cx)).await;
    }

    /// One turn: probes due written, answers read, the lost ones counted; Ready when the
    /// connection ends (or the probing stops).
    fn poll(&mut self, s: &mut Session, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.stopped() {
                return Poll::Ready(());
            }
            self.schedule();
            if !self.expire(s) {
                return Poll::Ready(());
            }
            let now = self.now();
            while self.waiting.pop_front().is_some() {
                let stream = match &self.h2 {
                    Some(block) => {
                        let stream = s.next_stream;
                        s.next_stream += 2;
                        h2frame::request(&mut s.wbuf, stream, &[], block);
                        stream
                    }
                    None => {
                        s.wbuf.extend_from_slice(&self.target.request);
                        0
                    }
                };
                self.out.push_back(Out {
                    sent: now,
                    stream,
                    status: 0,
                });
            }
            if flush(s, cx).is_err() {
                return Poll::Ready(());
            }
            let mut buf = ReadBuf::new(&mut s.rbuf[s.rend..]);
            match Pin::new(&mut s.io).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) => {
                    let n = buf.filled().len();
                    if n == 0 {
                        return Poll::Ready(());
                    }
                    s.rend += n;
                    let ok = match self.h2.is_some() {
                        true => self.frames(s),
                        false => self.responses(s),
                    };
                    if !ok {
                        return Poll::Ready(());
                    }
                    continue;
                }
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Pending => {}
            }
            let now = self.now();
            let deadline = self.out.front().map_or(u64::MAX, |o| o.sent + self.timeout_ns);
            let wake = self.next_due.min(deadline).min(now + STOP_CHECK.as_nanos() as u64);
            let at = tokio::time::Instant::from_std(self.origin + Duration::from_nanos(wake));
            s.timer.as_mut().reset(at);
            if s.timer.as_mut().poll(cx).is_ready() {
                continue;
            }
            return Poll::Pending;
        }
    }

    /// Probes past their timeout are lost. HTTP/1.1: the oldest one lost ends the connection
    /// (false), the answers being in order; HTTP/2: each lost one's stream is cancelled.
    fn expire(&mut self, s: &mut Session) -> bool {
        let now = self.now();
        let timeout = self.timeout_ns;
        let late = move |o: &Out| o.sent + timeout <= now;
        if self.h2.is_none() {
            return !self.out.front().is_some_and(late);
        }
        let mut i = 0;
        while i < self.out.len() {
            if late(&self.out[i]) {
                let o = self.out.remove(i).expect("in range");
                h2frame::rst_stream(&mut s.wbuf, o.stream, h2frame::CANCEL);
                self.answer(o.sent, None);
            } else {
                i += 1;
            }
        }
        true
    }

    /// The probe `o` answered now with its status.
    fn complete(&mut self, o: Out) {
        let rtt = self.now().saturating_sub(o.sent).max(1);
        if (200..300).contains(&o.status) {
            self.answer(o.sent, Some(rtt));
        } else {
            self.log.bad_status += 1;
            self.answer(o.sent, None);
        }
    }

    /// HTTP/1.1: the responses read, in order; false when the connection must end (a response
    /// that cannot be read, or the server's close after its last).
    fn responses(&mut self, s: &mut Session) -> bool {
        let mut at = 0;
        loop {
            let buf = &s.rbuf[at..s.rend];
            match s.body_left {
                None => match parse_head(buf) {
                    Ok(None) => break,
                    Ok(Some(head)) => {
                        // Unknown lengths (chunked, or read to the close) are not probes'.
                        let (Some(length), false) = (head.content_length, head.chunked) else {
                            return false;
                        };
                        let Some(front) = self.out.front_mut() else {
                            return false;
                        };
                        front.status = head.status;
                        s.closing = head.close;
                        s.body_left = Some(length);
                        at += head.len;
                    }
                    Err(()) => return false,
                },
                Some(left) => {
                    let take = (buf.len() as u64).min(left);
                    at += take as usize;
                    s.body_left = Some(left - take);
                    if left > take {
                        break;
                    }
                    s.body_left = None;
                    let o = self.out.pop_front().expect("a head came for it");
                    self.complete(o);
                    if s.closing {
                        return false;
                    }
                }
            }
        }
        s.rbuf.copy_within(at..s.rend, 0);
        s.rend -= at;
        // A head larger than the buffer cannot be a probe's.
        s.rend < s.rbuf.len()
    }

    /// HTTP/2: the server's frames, answered (SETTINGS and PING acknowledged, windows given
    /// back); false when the connection must end (a frame that breaks HTTP/2, a GOAWAY).
    fn frames(&mut self, s: &mut Session) -> bool {
        use h2frame::{ACK, PING, SETTINGS};
        let mut at = 0;
        let now = self.now();
        let mut reader = std::mem::take(&mut s.reader);
        let ok = loop {
            let next = match reader.next(&s.rbuf[at..s.rend], now) {
                Ok(Some(f)) => f,
                Ok(None) => break true,
                Err(_) => break false,
            };
            let (frame, size) = next;
            at += size;
            let ended = match frame {
                Frame::Settings(_) => {
                    h2frame::head(&mut s.wbuf, 0, SETTINGS, ACK, 0);
                    continue;
                }
                Frame::Ping(p) => {
                    h2frame::head(&mut s.wbuf, p.len(), PING, ACK, 0);
                    s.wbuf.extend_from_slice(p);
                    continue;
                }
                Frame::GoAway { .. } => break false,
                Frame::Other => continue,
                Frame::Reset { stream } => {
                    if let Some(i) = self.out.iter().position(|o| o.stream == stream) {
                        let o = self.out.remove(i).expect("in range");
                        self.answer(o.sent, None);
                    }
                    continue;
                }
                Frame::Head {
                    stream,
                    end_stream,
                    block,
                } => {
                    let Ok(head) = h2frame::response_head(block) else {
                        break false;
                    };
                    if let (Some(o), Some(status)) = (self.out.iter_mut().find(|o| o.stream == stream), head.status)
                        && !(100..200).contains(&status)
                    {
                        o.status = status;
                    }
                    (stream, end_stream)
                }
                Frame::Data {
                    stream,
                    end_stream,
                    taken,
                    ..
                } => {
                    s.unacked += taken as u32;
                    if s.unacked >= WINDOW / 2 {
                        h2frame::window_update(&mut s.wbuf, 0, s.unacked);
                        s.unacked = 0;
                    }
                    (stream, end_stream)
                }
            };
            if let (stream, true) = ended
                && let Some(i) = self.out.iter().position(|o| o.stream == stream)
            {
                let o = self.out.remove(i).expect("in range");
                self.complete(o);
            }
        };
        s.reader = reader;
        s.rbuf.copy_within(at..s.rend, 0);
        s.rend -= at;
        ok && s.rend < s.rbuf.len()
    }
}

/// Writes what is buffered until it is all out or the socket is full.
fn flush(s: &mut Session, cx: &mut Context<'_>) -> std::io::Result<()> {
    while s.wpos < s.wbuf.len() {
        match Pin::new(&mut s.io).poll_write(cx, &s.wbuf[s.wpos..]) {
            Poll::Ready(Ok(0)) => return Err(std::io::ErrorKind::WriteZero.into()),
            Poll::Ready(Ok(n)) => {
                s.wpos += n;
                s.unflushed = true;
            }
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => break,
        }
    }
    if s.wpos == s.wbuf.len() {
        s.wbuf.clear();
        s.wpos = 0;
    }
    if s.unflushed {
        match Pin::new(&mut s.io).poll_flush(cx) {
            Poll::Ready(Ok(())) => s.unflushed = false,
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => {}
        }
    }
    Ok(())
}
