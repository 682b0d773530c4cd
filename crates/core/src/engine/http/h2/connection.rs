//! One HTTP/2 connection of a user, driven by one task ([`Connection`]): the server's frames read
//! and answered, the stream slots' requests started and written, one timer for their deadlines
//! and think times (the worker and its users are in `h2.rs`).

use super::probe::{ProbeBox, ProbeOut};
use super::{
    Class, Ctx, MAX_CONNECTION_WINDOW, MAX_PENDING_ACKS, MAX_UNSENT, READ_BUFFER_BYTES, REQUEST_ROOM, STREAM_WINDOW,
};
use crate::engine::http::HIST_MAX_NS;
use crate::engine::http::h2frame;
use crate::engine::http::h2read::{self, Frame, Violation};
use crate::engine::http::worker::classify::classify;
use crate::tlsio::Io;
use rustls::ClientConnection;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Where a connection's repeated request fields stand in the server's HPACK table.
#[derive(Clone, Copy, PartialEq)]
enum Indexing {
    NotYet,
    In,
    Never,
}

/// Why a connection's session ended.
enum End {
    /// The server's GOAWAY, and nothing of this connection's is in flight any more.
    Drained,
    /// The server closed the connection.
    Closed,
    Io(io::Error),
    /// The server broke HTTP/2 (a frame too large, a head that does not decode, a push), or
    /// went past one of the client's bounds (a flood).
    Protocol(Violation),
}

/// What a stream slot takes: its state, and its stream apart for the lookup.
pub(super) const SLOT_BYTES: usize = std::mem::size_of::<Slot>() + std::mem::size_of::<u32>();

/// A request in flight on a stream slot.
#[derive(Clone, Copy, Default)]
struct Slot {
    /// Its stream; 0: the slot is free.
    stream: u32,
    intended: u64,
    deadline: u64,
    /// When its final head came (ns since time zero); 0: not yet.
    first_byte: u64,
    status: u16,
    /// The head's content-length, when it had one.
    content_length: Option<u64>,
    body: u64,
    /// Stream window taken by DATA and not yet given back.
    unacked: u32,
    /// Closed loop: the earliest start of the slot's next request (its think time).
    next: u64,
}

/// One connection, driven by one task: its stream slots, the server's frames read and answered,
/// its requests written, each read's frames answered in one write. The requests wait on no
/// timer of their own: one timer per connection wakes it at the earliest deadline or think
/// time still ahead, and may wake it early (it is re-armed only to come sooner).
pub(super) struct Connection<'a> {
    ctx: &'a Ctx,
    io: Io<ClientConnection>,
    target: usize,
    /// The clock as this turn read it (ns since time zero): the bytes of its reads and writes
    /// are counted at it.
    now: u64,
    rbuf: Box<[u8]>,
    rpos: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Written since the last flush that finished.
    unflushed: bool,
    slots: Vec<Slot>,
    /// The slots' streams, apart: the frames' lookup scans them.
    streams: Vec<u32>,
    in_flight: u64,
    /// No request in flight has a deadline before this (ns since time zero; u64::MAX: none).
    /// A bound, not exact: a request that ends leaves it as it was, and the next scan lifts it.
    earliest_deadline: u64,
    next_stream: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (usize::MAX before any).
    cap: usize,
    /// The server's first SETTINGS are in: until then one request is in flight at most, so a
    /// server's stream limit is never exceeded before it is known (nginx refuses the streams
    /// past it).
    settled: bool,
    /// The server's GOAWAY: its last stream.
    goaway: Option<u32>,
    /// The size of the server's HPACK table this end encodes for: 4096 until the server's
    /// SETTINGS_HEADER_TABLE_SIZE says less; a change goes at the start of the next block.
    encoder_table: usize,
    table_update: Option<usize>,
    /// The URL's fields in the server's table: not yet (plain requests), in (`indexed`), or
    /// never (the table is too small for them).
    indexing: Indexing,
    /// The server's frames out of `rbuf` (a header block cut into CONTINUATIONs joined there).
    reader: h2read::Reader,
    /// PING and SETTINGS acknowledgements put in `wbuf` since it was last written out whole.
    acks_unsent: usize,
    /// A PING or SETTINGS left unread in `rbuf` until the acknowledgements before it are out:
    /// the flood it is part of if they cannot go.
    held: Option<Violation>,
    connection_window: u32,
    connection_unacked: u32,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// When the timer fires (ns since time zero); u64::MAX: not armed.
    timer_at: u64,
    queued: Option<Pin<Box<tokio::sync::futures::Notified<'a>>>>,
    /// `--probe`: where the worker's schedule hands this connection a probe, and the probe in
    /// flight on it.
    probe: Option<Rc<ProbeBox>>,
    probe_out: Option<ProbeOut>,
}

impl<'a> Connection<'a> {
    pub(super) fn new(ctx: &'a Ctx, target: usize, io: Io<ClientConnection>) -> Connection<'a> {
        let connection_window = (STREAM_WINDOW as usize * ctx.streams).min(MAX_CONNECTION_WINDOW as usize) as u32;
        let mut wbuf = Vec::with_capacity(4096);
        h2frame::client_start(&mut wbuf, STREAM_WINDOW, connection_window);
        Connection {
            ctx,
            target,
            io,
            now: ctx.now(),
            rbuf: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            rpos: 0,
            rend: 0,
            wbuf,
            wpos: 0,
            unflushed: false,
            slots: vec![Slot::default(); ctx.streams],
            streams: vec![0; ctx.streams],
            in_flight: 0,
            earliest_deadline: u64::MAX,
            next_stream: 1,
            cap: usize::MAX,
            settled: false,
            goaway: None,
            encoder_table: 4096,
            table_update: None,
            indexing: Indexing::NotYet,
            reader: h2read::Reader::default(),
            acks_unsent: 0,
            held: None,
            connection_window,
            connection_unacked: 0,
            timer: Box::pin(tokio::time::sleep_until(ctx.at(0))),
            timer_at: u64::MAX,
            queued: None,
            probe: ctx.probes.as_ref().map(|p| p.join()),
            probe_out: None,
        }
    }

    /// Runs the connection until it ends; what it had in flight then ends with it, counted in
    /// the class of the end.
    pub(super) async fn run(mut self) {
        let end = poll_fn(|cx| self.poll(cx)).await;
        self.now = self.ctx.now();
        self.probe_gone();
        let class: Class = match (&end, self.goaway) {
            (End::Drained, _) => return,
            (_, Some(_)) => |x| &mut x.goaway,
            (End::Closed, None) => |x| &mut x.reset,
            (End::Io(e), None) => classify(e),
            (End::Protocol(_), None) => |x| &mut x.bad_response,
        };
        if let End::Protocol(v) = end {
            *self
                .ctx
                .out
                .borrow_mut()
                .report
                .h2_protocol_errors
                .entry(v.key())
                .or_default() += 1;
        }
        for i in 0..self.slots.len() {
            if self.slots[i].stream != 0 {
                self.fail(i, class);
            }
        }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<End> {
        // Over TLS the reads do not spend tokio's budget while the socket has data: the
        // connection yields by itself after this many turns, so the worker's other users and
        // its tick run.
        for _ in 0..TURNS {
            // A turn reads what has come (all of it, or a turn's worth), then writes every
            // answer and new request that made in one write.
            let mut drained = false;
            for _ in 0..READS {
                // Frames wait in the buffer for the acknowledgements before them to go out.
                if self.held.is_some() {
                    break;
                }
                match self.fill(cx) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(End::Closed),
                    Poll::Ready(Ok(_)) => {
                        if let Err(end) = self.frames() {
                            return Poll::Ready(end);
                        }
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(End::Io(e)),
                    Poll::Pending => {
                        drained = true;
                        break;
                    }
                }
            }
            self.now = self.ctx.now();
            self.expire();
            self.start(cx);
            self.send_probe(cx);
            if let Err(e) = self.flush(cx) {
                return Poll::Ready(End::Io(e));
            }
            if self.wbuf.len() - self.wpos > MAX_UNSENT {
                return Poll::Ready(End::Protocol(Violation::Unread));
            }
            if let Some(flood) = self.held {
                // Another acknowledgement is due and MAX_PENDING_ACKS are still unsent: the
                // server asks faster than it reads.
                if self.acks_unsent > 0 {
                    return Poll::Ready(End::Protocol(flood));
                }
                self.held = None;
                if let Err(end) = self.frames() {
                    return Poll::Ready(end);
                }
                continue;
            }
            if self.goaway.is_some() && self.in_flight == 0 {
                return Poll::Ready(End::Drained);
            }
            if !drained {
                continue;
            }
            let wake = self.next_wake();
            if wake < self.timer_at {
                self.timer.as_mut().reset(self.ctx.at(wake));
                self.timer_at = wake;
            }
            if self.timer_at != u64::MAX && self.timer.as_mut().poll(cx).is_ready() {
                self.timer_at = u64::MAX;
                continue;
            }
            return Poll::Pending;
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// How many requests may be in flight now.
    fn limit(&self) -> usize {
        if self.settled {
            self.cap.min(self.slots.len())
        } else {
            1
        }
    }

    /// The earliest deadline of a request in flight or start of a thinking slot; u64::MAX: none.
    fn next_wake(&self) -> u64 {
        let limit = self.limit();
        let mut wake = self.probe_deadline();
        for (i, s) in self.slots.iter().enumerate() {
            if s.stream != 0 {
                wake = wake.min(s.deadline);
            } else if i < limit && self.ctx.spec.rate.is_none() && s.next > 0 {
                wake = wake.min(s.next);
            }
        }
        wake
    }

    /// Requests past their deadline: cancelled (RST_STREAM CANCEL), counted as timeouts. The
    /// slots are scanned only once the earliest deadline has come, not every turn.
    fn expire(&mut self) {
        let now = self.now;
        if self.probe_deadline() <= now
            && let Some(p) = self.probe_out
        {
            h2frame::rst_stream(&mut self.wbuf, p.stream, h2frame::CANCEL);
            self.probe_ended(None);
        }
        if now < self.earliest_deadline {
            return;
        }
        let mut earliest = u64::MAX;
        for i in 0..self.slots.len() {
            let s = self.slots[i];
            if s.stream == 0 {
                continue;
            }
            if s.deadline <= now {
                h2frame::rst_stream(&mut self.wbuf, s.stream, h2frame::CANCEL);
                self.fail(i, |x| &mut x.timeout);
            } else {
                earliest = earliest.min(s.deadline);
            }
        }
        self.earliest_deadline = earliest;
    }

    /// Starts what may start: closed loop, each free slot past its think time; open loop, the
    /// queue's scheduled starts while slots are free (waiting on the queue when it is empty).
    fn start(&mut self, cx: &mut Context<'_>) {
        let now = self.now;
        if self.goaway.is_some() || self.ctx.ended() || self.next_stream > MAX_STREAM_ID {
            return;
        }
        // A server slow to read gets no more requests until the buffer has room again.
        if self.wbuf.len() - self.wpos > REQUEST_ROOM {
            return;
        }
        let limit = self.limit();
        let open = self.ctx.spec.rate.is_some();
        // Waiting on the queue only while a slot is free for what comes: a registration held
        // past that would take a start's wake-up from a connection that can send it (a dropped
        // one passes its wake-up on).
        let waiting = self.queued.take();
        for i in 0..limit {
            if self.in_flight as usize >= limit || self.wbuf.len() - self.wpos > REQUEST_ROOM {
                return;
            }
            if self.slots[i].stream != 0 || (!open && self.slots[i].next > now) {
                continue;
            }
            let intended = if open {
                let next = self.ctx.queue.borrow_mut().pop_front();
                match next {
                    Some(at) => {
                        if at + 1_000_000 < now {
                            self.ctx.out.borrow_mut().report.queued_late += 1;
                        }
                        at
                    }
                    None => {
                        self.queued = waiting;
                        self.wait_queue(cx);
                        return;
                    }
                }
            } else {
                now
            };
            self.send(i, intended, now);
        }
    }

    /// Open loop: wakes this connection when a start is queued; one that came while it waited
    /// is taken on the next turn.
    fn wait_queue(&mut self, cx: &mut Context<'_>) {
        let ctx = self.ctx;
        let queued = self.queued.get_or_insert_with(|| Box::pin(ctx.queued.notified()));
        if queued.as_mut().poll(cx).is_ready() {
            self.queued = None;
            cx.waker().wake_by_ref();
        }
    }

    fn send(&mut self, i: usize, intended: u64, now: u64) {
        let stream = self.next_stream;
        self.next_stream += 2;
        let ctx = self.ctx;
        let requests = &ctx.blocks[self.target];
        // Plain until the server's SETTINGS are in (its table's size known), then the first
        // request that indexes, then the indexed one.
        let block = match self.indexing {
            _ if !self.settled => &requests.plain,
            Indexing::NotYet if requests.table_bytes <= self.encoder_table => {
                self.indexing = Indexing::In;
                &requests.first
            }
            Indexing::NotYet => {
                self.indexing = Indexing::Never;
                &requests.plain
            }
            Indexing::In => &requests.indexed,
            Indexing::Never => &requests.plain,
        };
        let mut prefix = Vec::new();
        if let Some(size) = self.table_update.take() {
            h2frame::table_size_update(&mut prefix, size);
        }
        h2frame::request(&mut self.wbuf, stream, &prefix, block);
        started(self.ctx, self.target, now);
        let deadline = intended.max(now) + self.ctx.timeout_ns;
        self.earliest_deadline = self.earliest_deadline.min(deadline);
        self.slots[i] = Slot {
            stream,
            intended,
            deadline,
            ..Slot::default()
        };
        self.streams[i] = stream;
        self.in_flight += 1;
        self.ctx.in_flight.set(self.ctx.in_flight.get() + 1);
        let mut out = self.ctx.out.borrow_mut();
        out.report.h2_max_in_flight = out.report.h2_max_in_flight.max(self.in_flight);
    }

    /// Slot `i`'s request ended: its slot free, its next start after the think time.
    fn end(&mut self, i: usize, now: u64) {
        self.slots[i].stream = 0;
        self.slots[i].next = now + self.ctx.think_ns;
        self.streams[i] = 0;
        self.in_flight -= 1;
        self.ctx.in_flight.set(self.ctx.in_flight.get() - 1);
    }

    fn fail(&mut self, i: usize, class: Class) {
        let now = self.now;
        self.end(i, now);
        self.ctx.count_failure(self.target, self.ctx.in_window(now), class);
    }

    /// The stream ended: a response, unless its body and its content-length differ (RFC 9113
    /// 8.1.1; a 204 or 304 has no body whatever the length says).
    fn complete(&mut self, i: usize) {
        let now = self.now;
        let s = self.slots[i];
        if let Some(length) = s.content_length
            && !matches!(s.status, 204 | 304)
            && s.body != length
        {
            let class: Class = match s.body < length {
                true => |x| &mut x.short_body,
                false => |x| &mut x.bad_response,
            };
            self.fail(i, class);
            return;
        }
        self.end(i, now);
        let rt = now.saturating_sub(s.intended).clamp(1, HIST_MAX_NS);
        let ttfb = s.first_byte.saturating_sub(s.intended).clamp(1, rt);
        self.ctx.total_responses.set(self.ctx.total_responses.get() + 1);
        self.ctx
            .out
            .borrow_mut()
            .count_response(now, self.ctx.in_window(now), self.target, rt, ttfb, s.status, s.body);
    }

    fn slot_of(&self, stream: u32) -> Option<usize> {
        if stream == 0 {
            return None;
        }
        self.streams.iter().position(|&s| s == stream)
    }

    /// Writes what is buffered until it is all out or the socket is full. Over TLS the writes
    /// fill rustls's records and the flush sends them: one that could not finish is tried again
    /// on the next turn.
    fn flush(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        while self.wpos < self.wbuf.len() {
            match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    self.wpos += n;
                    self.unflushed = true;
                    self.ctx.count_bytes(self.target, n, false, self.now);
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => break,
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
            self.acks_unsent = 0;
        } else if self.wpos > 0 {
            // Partly written (a server slow to read): what is left moves to the front, so the
            // buffer holds what is unsent and no more.
            self.wbuf.drain(..self.wpos);
            self.wpos = 0;
        }
        if self.unflushed {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.unflushed = false,
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {}
            }
        }
        Ok(())
    }

    /// Reads what the socket has after the frames not yet whole.
    fn fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.rpos == self.rend {
            (self.rpos, self.rend) = (0, 0);
        } else if self.rend == self.rbuf.len() {
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            (self.rpos, self.rend) = (0, self.rend - self.rpos);
        }
        let mut buf = ReadBuf::new(&mut self.rbuf[self.rend..]);
        match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                self.rend += n;
                // The frames of this read are taken at this moment.
                self.now = self.ctx.now();
                if n > 0 {
                    self.ctx.count_bytes(self.target, n, true, self.now);
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Takes every whole frame read (up to a PING or SETTINGS whose acknowledgement has no
    /// room: `held`).
    fn frames(&mut self) -> Result<(), End> {
        let rbuf = std::mem::take(&mut self.rbuf);
        let mut reader = std::mem::take(&mut self.reader);
        let r = self.frames_in(&rbuf, &mut reader);
        self.rbuf = rbuf;
        self.reader = reader;
        r
    }

    fn frames_in(&mut self, rbuf: &[u8], reader: &mut h2read::Reader) -> Result<(), End> {
        loop {
            let buf = &rbuf[self.rpos..self.rend];
            if self.acks_unsent >= MAX_PENDING_ACKS
                && let Some(flood) = h2read::asks_ack(buf)
            {
                self.held = Some(flood);
                return Ok(());
            }
            let Some((frame, size)) = reader.next(buf, self.now).map_err(End::Protocol)? else {
                return Ok(());
            };
            self.rpos += size;
            self.frame(frame)?;
        }
    }

    fn frame(&mut self, frame: Frame<'_>) -> Result<(), End> {
        use h2frame::{ACK, PING, SETTINGS, SETTINGS_HEADER_TABLE_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS};
        match frame {
            Frame::Data {
                stream,
                end_stream,
                body,
                taken,
            } => self.data(stream, end_stream, body, taken),
            Frame::Head {
                stream,
                end_stream,
                block,
            } => self.head(stream, end_stream, block)?,
            Frame::Reset { stream } => {
                if self.is_probe(stream) {
                    self.probe_ended(None);
                } else if let Some(i) = self.slot_of(stream) {
                    self.fail(i, |x| &mut x.rst_stream);
                }
            }
            Frame::Settings(p) => {
                for s in p.chunks_exact(6) {
                    let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]) as usize;
                    match u16::from_be_bytes([s[0], s[1]]) {
                        SETTINGS_MAX_CONCURRENT_STREAMS => self.capped(value),
                        SETTINGS_HEADER_TABLE_SIZE => self.table_size(value),
                        _ => {}
                    }
                }
                self.settled = true;
                h2frame::head(&mut self.wbuf, 0, SETTINGS, ACK, 0);
                self.acks_unsent += 1;
            }
            Frame::Ping(p) => {
                h2frame::head(&mut self.wbuf, p.len(), PING, ACK, 0);
                self.wbuf.extend_from_slice(p);
                self.acks_unsent += 1;
            }
            Frame::GoAway { last } => {
                self.goaway = Some(last);
                if self.probe_out.is_some_and(|p| p.stream > last) {
                    self.probe_ended(None);
                }
                // Streams above its last were refused, unprocessed: counted, not retried.
                for i in 0..self.slots.len() {
                    if self.slots[i].stream > last {
                        self.fail(i, |x| &mut x.goaway);
                    }
                }
            }
            Frame::Other => {}
        }
        Ok(())
    }

    /// The server's table for this end's blocks is at most `size`: smaller than the one in use,
    /// it is said at the start of the next block (entries that no longer fit are gone).
    fn table_size(&mut self, size: usize) {
        if size < self.encoder_table {
            self.encoder_table = size;
            self.table_update = Some(size);
            if self.indexing == Indexing::In && self.ctx.blocks[self.target].table_bytes > size {
                self.indexing = Indexing::Never;
            }
        }
    }

    fn capped(&mut self, cap: usize) {
        self.cap = cap;
        let mut out = self.ctx.out.borrow_mut();
        let cap = cap as u64;
        out.report.h2_peer_max_streams = Some(out.report.h2_peer_max_streams.map_or(cap, |m| m.min(cap)));
    }

    /// A head: the response's (its status; informational ones wait for the final) or trailers.
    fn head(&mut self, stream: u32, end_stream: bool, block: &[u8]) -> Result<(), End> {
        let head = h2frame::response_head(block).map_err(|_| End::Protocol(Violation::Compression))?;
        if self.is_probe(stream) {
            self.probe_head(end_stream, head.status);
            return Ok(());
        }
        let Some(i) = self.slot_of(stream) else {
            return Ok(());
        };
        if self.slots[i].first_byte == 0 {
            match head.status {
                Some(100..=199) if !end_stream => return Ok(()),
                Some(status) => {
                    self.slots[i].status = status;
                    self.slots[i].content_length = head.content_length;
                    self.slots[i].first_byte = self.now.max(1);
                }
                None => {
                    h2frame::rst_stream(&mut self.wbuf, stream, h2frame::CANCEL);
                    self.fail(i, |x| &mut x.bad_response);
                    return Ok(());
                }
            }
        }
        if end_stream {
            self.complete(i);
        }
        Ok(())
    }

    /// DATA: `n` bytes of body, `taken` of the windows (padding too), given back as the windows
    /// half empty.
    fn data(&mut self, stream: u32, end_stream: bool, n: usize, taken: usize) {
        let taken = taken as u32;
        self.connection_unacked += taken;
        if self.connection_unacked >= self.connection_window / 2 {
            h2frame::window_update(&mut self.wbuf, 0, self.connection_unacked);
            self.connection_unacked = 0;
        }
        if self.is_probe(stream) {
            if end_stream {
                self.probe_head(true, None);
            }
            return;
        }
        let Some(i) = self.slot_of(stream) else {
            return;
        };
        if self.slots[i].first_byte == 0 {
            // A body before its head.
            h2frame::rst_stream(&mut self.wbuf, stream, h2frame::CANCEL);
            self.fail(i, |x| &mut x.bad_response);
            return;
        }
        self.slots[i].body += n as u64;
        if end_stream {
            self.complete(i);
            return;
        }
        self.slots[i].unacked += taken;
        if self.slots[i].unacked >= STREAM_WINDOW / 2 {
            h2frame::window_update(&mut self.wbuf, stream, self.slots[i].unacked);
            self.slots[i].unacked = 0;
        }
    }
}

impl Connection<'_> {
    fn is_probe(&self, stream: u32) -> bool {
        self.probe_out.is_some_and(|p| p.stream == stream)
    }

    /// When the probe in flight is lost (u64::MAX: none in flight).
    fn probe_deadline(&self) -> u64 {
        let timeout = self.ctx.probes.as_ref().map_or(0, |p| p.timeout_ns);
        self.probe_out.map_or(u64::MAX, |p| p.sent_ns + timeout)
    }

    /// Sends the probe the schedule handed this connection, on a stream of its own beside the
    /// slots' (a connection that cannot open one now counts it unsent).
    fn send_probe(&mut self, cx: &mut Context<'_>) {
        let (Some(b), Some(probes)) = (&self.probe, &self.ctx.probes) else {
            return;
        };
        // The task's waker, kept once: the schedule wakes the connection with it.
        if b.waker.borrow().is_none() {
            *b.waker.borrow_mut() = Some(cx.waker().clone());
        }
        if b.due.take().is_none() {
            return;
        }
        if !self.settled || self.goaway.is_some() || self.next_stream > MAX_STREAM_ID || self.probe_out.is_some() {
            b.busy.set(false);
            probes.unsent.set(probes.unsent.get() + 1);
            return;
        }
        let stream = self.next_stream;
        self.next_stream += 2;
        let mut prefix = Vec::new();
        if let Some(size) = self.table_update.take() {
            h2frame::table_size_update(&mut prefix, size);
        }
        h2frame::request(&mut self.wbuf, stream, &prefix, &probes.blocks[self.target]);
        probes.sent.set(probes.sent.get() + 1);
        self.probe_out = Some(ProbeOut {
            stream,
            sent_ns: self.now,
            status: 0,
        });
    }

    /// The probe's head (its status, informational ones skipped) or its end of stream.
    fn probe_head(&mut self, end_stream: bool, status: Option<u16>) {
        if let (Some(p), Some(status)) = (self.probe_out.as_mut(), status)
            && !(100..200).contains(&status)
        {
            p.status = status;
        }
        if end_stream {
            let ok = self.probe_out.is_some_and(|p| (200..300).contains(&p.status));
            let rtt = self.probe_out.map(|p| self.now.saturating_sub(p.sent_ns).max(1));
            self.probe_ended(rtt.filter(|_| ok));
        }
    }

    /// The probe in flight ended: answered after `rtt_ns`, or lost (None; a status other than
    /// 2xx is lost too: the server did not serve what was asked).
    fn probe_ended(&mut self, rtt_ns: Option<u64>) {
        if let (Some(p), Some(b), Some(probes)) = (self.probe_out.take(), &self.probe, &self.ctx.probes) {
            probes.ended(b, p.sent_ns, rtt_ns);
        }
    }

    /// The connection ended: its probe in flight is lost, one handed to it and not sent unsent.
    fn probe_gone(&mut self) {
        self.probe_ended(None);
        if let (Some(b), Some(probes)) = (&self.probe, &self.ctx.probes)
            && b.due.take().is_some()
        {
            probes.unsent.set(probes.unsent.get() + 1);
        }
    }
}

/// Turns of a connection's loop (each a read's frames answered) before it lets the worker's
/// other tasks run.
const TURNS: usize = 64;
/// Reads in a turn before its write.
const READS: usize = 16;

/// The last client stream a connection opens before the next connection takes over.
const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// Counts a request of URL `target` started at `now`.
fn started(ctx: &Ctx, target: usize, now: u64) {
    if ctx.in_window(now) {
        let mut out = ctx.out.borrow_mut();
        out.report.requests_started += 1;
        out.per_target[target].requests_started += 1;
    }
}
