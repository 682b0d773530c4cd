//! One connection's state machine: read a request head, answer it, keep alive or linger after a
//! close, give up when idle. The worker hands it readiness and the time; it owns its buffers.

use super::body::{Body, SENDFILE_MAX_CHUNK, SENDFILE_MIN_BYTES, pattern_slice, send, sendfile};
use super::date::DATE_BYTES;
use super::parser::{Method, Parsed, Request, parse_request};
use super::response::{ConnectionHeader, HEAD_BUFFER_BYTES, Status, format_head};
use super::router::Route;
use super::{Counts, IDLE, LINGER, MAX_HEAD_BYTES, PATTERN_BYTES, Shared};
use mio::net::TcpStream;
use std::io::{self, Read};
use std::net::{IpAddr, Shutdown};
use std::os::fd::AsRawFd;
use std::time::Instant;

/// Reads one lingering connection may take per event before others get their turn.
pub(super) const DRAIN_READS: usize = 64;
pub(super) enum Next {
    Keep,
    Close,
}

/// What an event says of a connection's socket.
#[derive(Clone, Copy)]
pub(super) struct Ready {
    pub(super) readable: bool,
    pub(super) writable: bool,
    pub(super) read_closed: bool,
}

/// What a connection needs of its worker while it is driven.
pub(super) struct Turn<'a> {
    pub(super) shared: &'a Shared,
    pub(super) counts: &'a mut Counts,
    pub(super) now: Instant,
    pub(super) date: &'a [u8; DATE_BYTES],
}

pub(super) struct Conn {
    pub(super) stream: TcpStream,
    /// The client's address, whose count of open connections this one is part of.
    pub(super) peer: IpAddr,
    /// Since when a request head has been arriving (from accept for the first one, else from
    /// its first byte): the whole head must be in by this plus the head timeout, however its
    /// bytes trickle (issue 14). None while no head is under way.
    pub(super) head_since: Option<Instant>,
    /// A request was answered on this connection: an empty buffer is a keep-alive wait.
    pub(super) served: bool,
    /// Since when the connection has waited for its client (a head, the next request, its
    /// close): the oldest such one is closed first when descriptors run short.
    pub(super) quiet_since: Instant,
    /// This worker's count of accepts when it was accepted: among connections quiet since the
    /// same moment (one accept burst reads the clock once) the earlier accepted is the older.
    pub(super) accepted_as: u64,
    /// Received bytes not yet used are `buf[start..end]`.
    pub(super) buf: Box<[u8]>,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) head: [u8; HEAD_BUFFER_BYTES],
    pub(super) head_len: usize,
    pub(super) head_sent: usize,
    pub(super) body: Body,
    pub(super) status: Status,
    /// A response is being written.
    pub(super) responding: bool,
    /// Request body bytes still to read and drop.
    pub(super) discard: u64,
    /// Close once the response is written.
    pub(super) close_after: bool,
    /// Write side shut: read and drop until the client closes.
    pub(super) draining: bool,
    /// A read may find data: false after a read came back short, until a readable event.
    pub(super) read_ready: bool,
    /// The client has sent its FIN (EPOLLRDHUP): a read may find the end of the stream even
    /// after a short one, and no further event would say so.
    pub(super) read_closed: bool,
    /// A write may find room: false after EAGAIN, until a writable event.
    pub(super) write_ready: bool,
    /// Closed by the sweep at this moment.
    pub(super) deadline: Instant,
}

impl Conn {
    pub(super) fn new(
        stream: TcpStream,
        peer: IpAddr,
        now: Instant,
        accepted_as: u64,
        head_timeout: std::time::Duration,
    ) -> Conn {
        Conn {
            stream,
            peer,
            head_since: Some(now),
            served: false,
            quiet_since: now,
            accepted_as,
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
            deadline: now + head_timeout.min(IDLE),
        }
    }

    /// Whether it waits for its client rather than writes to it: such a connection may be
    /// closed to make room.
    pub(super) fn waiting(&self) -> bool {
        !self.responding
    }

    /// [`Conn::step`], then when the sweep is to close the connection: a head under way by its
    /// head deadline (set once, not moved by each byte), a response being written or a
    /// keep-alive wait by [`IDLE`] from now.
    pub(super) fn drive(&mut self, ready: Ready, turn: &mut Turn<'_>) -> Next {
        let next = self.step(ready, turn);
        if matches!(next, Next::Close) || self.draining {
            return next;
        }
        let head_under_way = self.discard == 0 && !self.responding && (self.end > self.start || !self.served);
        if head_under_way {
            let since = *self.head_since.get_or_insert(turn.now);
            self.deadline = since + turn.shared.head_timeout;
        } else {
            self.head_since = None;
            self.deadline = turn.now + IDLE;
        }
        next
    }

    /// Goes as far as the socket lets it: writes the response under way, then answers the
    /// requests buffered, reading when it needs more, until a read or write would block.
    /// Under edge-triggered readiness it must get there (or see a short read or write, which
    /// means the same) before returning, or no further event would come.
    fn step(&mut self, ready: Ready, turn: &mut Turn<'_>) -> Next {
        self.read_ready |= ready.readable || ready.read_closed;
        self.read_closed |= ready.read_closed;
        self.write_ready |= ready.writable;
        if self.draining {
            return self.drain();
        }
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
                self.quiet_since = turn.now;
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
                        self.served = true;
                        self.head_since = None;
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
    pub(super) fn respond(&mut self, req: &Request, turn: &mut Turn<'_>) {
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
    pub(super) fn fail(&mut self, status: Status, turn: &mut Turn<'_>) {
        self.start = 0;
        self.end = 0;
        self.discard = 0;
        self.start_response(status, 0, ConnectionHeader::Close, true, Body::None, turn);
        self.close_after = true;
    }

    pub(super) fn start_response(
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
    pub(super) fn write(&mut self, turn: &mut Turn<'_>) -> io::Result<bool> {
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
    pub(super) fn drain(&mut self) -> Next {
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
