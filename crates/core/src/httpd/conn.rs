//! One connection's state machine: read a request head, answer it, keep alive or linger after a
//! close, give up when idle. The worker hands it readiness and the time; it owns its buffers.
//! Over https its reads and writes go through its rustls session; otherwise straight to the
//! socket, as before (one branch on an empty option per read or write).

use super::body::{Body, SENDFILE_MAX_CHUNK, SENDFILE_MIN_BYTES, pattern_slice, pread, send, sendfile};
use super::chunked::Chunked;
use super::date::DATE_BYTES;
use super::http2::{PREFACE, preface};
use super::parser::{Method, Parsed, Request, parse_request};
use super::response::{ConnectionHeader, HEAD_BUFFER_BYTES, Status, format_head};
use super::router::Route;
use super::rpm::{config_document, config_document_at};
use super::tls::TlsConn;
use super::{Counts, LINGER, MAX_HEAD_BYTES, PATTERN_BYTES, Shared};
use mio::net::TcpStream;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown};
use std::os::fd::AsRawFd;
use std::time::Instant;

/// Reads one lingering connection may take per event before others get their turn.
pub(super) const DRAIN_READS: usize = 64;
/// An upload to the sink, read and dropped as it arrives.
#[derive(Clone, Copy, Debug)]
pub(super) struct Upload {
    /// Body bytes read so far.
    bytes: u64,
    /// Its framing: chunked, or this many bytes still to come (Content-Length).
    chunked: Option<Chunked>,
    left: u64,
    /// The request asked to close after the response.
    close: bool,
    connection: ConnectionHeader,
}

pub(super) enum Next {
    Keep,
    Close,
    /// An HTTP/2 connection: hand it to the worker's HTTP/2 lane.
    Http2,
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
    /// https: the rustls session on `stream`; None on the cleartext port.
    pub(super) tls: Option<Box<TlsConn>>,
    /// The client's address, whose count of open connections this one is part of.
    pub(super) peer: IpAddr,
    /// Since when a request head has been arriving (from accept for the first one, else from
    /// its first byte): the whole head must be in by this plus the head timeout, however its
    /// bytes trickle. None while no head is under way.
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
    /// The upload sink's request body being read (the response waits for its end).
    pub(super) upload: Option<Upload>,
    /// The response under way is an interim `100 Continue`: not counted, nothing follows it.
    pub(super) interim: bool,
    /// Bodies made for this connection (a configuration document, an upload's count): empty
    /// until the first, then reused.
    pub(super) doc: Vec<u8>,
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
        idle: std::time::Duration,
    ) -> Conn {
        Conn {
            stream,
            tls: None,
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
            upload: None,
            interim: false,
            doc: Vec::new(),
            close_after: false,
            draining: false,
            read_ready: true,
            read_closed: false,
            write_ready: true,
            deadline: now + head_timeout.min(idle),
        }
    }

    /// Whether it waits for its client rather than writes to it: such a connection may be
    /// closed to make room.
    pub(super) fn waiting(&self) -> bool {
        !self.responding && self.upload.is_none()
    }

    /// [`Conn::step`], then when the sweep is to close the connection: a head under way by its
    /// head deadline (set once, not moved by each byte), a response being written or a
    /// keep-alive wait by the idle limit ([`super::HttpdConfig::idle`]) from now.
    pub(super) fn drive(&mut self, ready: Ready, turn: &mut Turn<'_>) -> Next {
        let next = self.step(ready, turn);
        if matches!(next, Next::Close) || self.draining {
            return next;
        }
        let head_under_way =
            self.discard == 0 && self.upload.is_none() && !self.responding && (self.end > self.start || !self.served);
        if head_under_way {
            let since = *self.head_since.get_or_insert(turn.now);
            self.deadline = since + turn.shared.head_timeout;
        } else {
            self.head_since = None;
            self.deadline = turn.now + turn.shared.idle;
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
        // A handshake answer the socket had no room for goes out on the writable edge.
        if let Some(t) = self.tls.as_deref_mut()
            && !self.responding
            && self.write_ready
        {
            match t.flush(&mut self.stream) {
                Ok(all) => self.write_ready = all,
                Err(_) => return Next::Close,
            }
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
                self.responding = false;
                if std::mem::take(&mut self.interim) {
                    continue;
                }
                turn.counts.responses[usize::from(self.status.code() / 100)] += 1;
                self.quiet_since = turn.now;
                if self.close_after {
                    // FIN after the response, then wait for the client's: closing with its
                    // bytes unread would send a reset that can destroy the response in flight.
                    // Over TLS a close_notify first, as RFC 8446 §6.1 asks.
                    if let Some(t) = self.tls.as_deref_mut() {
                        t.session.send_close_notify();
                        let _ = t.flush(&mut self.stream);
                    }
                    let _ = self.stream.shutdown(Shutdown::Write);
                    self.draining = true;
                    self.deadline = turn.now + LINGER;
                    return self.drain();
                }
            }
            // Before its first request a connection may turn out to be HTTP/2; once one request
            // is served this is one test of a bool.
            let mut wait_for_preface = false;
            if !self.served && !self.responding {
                match self.http2() {
                    Some(true) => return Next::Http2,
                    Some(false) => wait_for_preface = true,
                    None => {}
                }
            }
            if self.discard > 0 {
                let n = self.discard.min((self.end - self.start) as u64);
                self.start += n as usize;
                self.discard -= n;
            }
            if self.upload.is_some() && !self.responding {
                match self.take_upload(turn) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(()) => {
                        self.fail(Status::BadRequest, turn);
                        continue;
                    }
                }
            }
            if self.discard == 0 && self.upload.is_none() && self.end > self.start && !wait_for_preface {
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
            let got = match self.tls.as_deref_mut() {
                None => (&self.stream).read(&mut self.buf[self.end..]),
                Some(t) => t.read(
                    &mut self.stream,
                    &mut self.buf[self.end..],
                    &mut self.write_ready,
                    turn.counts,
                ),
            };
            match got {
                Ok(0) => return Next::Close,
                Ok(n) => {
                    self.end += n;
                    // A short read emptied the socket: the next byte to arrive brings an event.
                    // Over TLS a short read says nothing of the socket: read on to WouldBlock.
                    self.read_ready = n == room || self.read_closed || self.tls.is_some();
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

    /// Whether this not yet served connection speaks HTTP/2: `Some(true)` yes (TLS with ALPN
    /// `h2`, or cleartext that opens with the whole preface), `Some(false)` the cleartext bytes
    /// so far are the start of the preface, `None` HTTP/1 (or a handshake still under way).
    fn http2(&self) -> Option<bool> {
        match self.tls.as_deref() {
            Some(t) => (!t.session.is_handshaking() && t.session.alpn_protocol() == Some(b"h2")).then_some(true),
            None if self.end > self.start && self.buf[self.start] == PREFACE[0] => {
                preface(&self.buf[self.start..self.end])
            }
            None => None,
        }
    }

    /// Sets up the response to a parsed request.
    pub(super) fn respond(&mut self, req: &Request, turn: &mut Turn<'_>) {
        let shared = turn.shared;
        let (status, content_length, body) = match (req.method, req.route) {
            (Method::Upload, Route::Upload) => return self.begin_upload(req),
            (_, Route::Upload) => (Status::UploadOnly, 0, Body::None),
            (Method::Other | Method::Upload, _) => (Status::MethodNotAllowed, 0, Body::None),
            (_, Route::Config) => self.config(req),
            (_, Route::Bytes(n)) => {
                let body = match &shared.pattern_file {
                    // Over TLS the bytes are encrypted from memory: sendfile cannot help.
                    Some(file) if n >= SENDFILE_MIN_BYTES && self.tls.is_none() => Body::File {
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
        let text = !status.ok() && !head_only;
        let body = if head_only { Body::None } else { body };
        self.start_response(status, content_length, connection, text, body, turn);
        self.close_after = !req.keep_alive;
        self.discard = req.body_bytes;
    }

    /// The responsiveness configuration for the request just parsed (its head ends at
    /// `start`), for the `Host` it named or else the address it reached; a 400 for a `Host`
    /// that cannot go into the document's URLs.
    fn config(&mut self, req: &Request) -> (Status, u64, Body) {
        let head = self.start - req.head_bytes;
        let tls = self.tls.is_some();
        let made = match (req.host, self.stream.local_addr()) {
            (Some((at, len)), _) => config_document(&mut self.doc, tls, &self.buf[head + at..head + at + len]),
            (None, Ok(local)) => config_document_at(&mut self.doc, tls, local),
            (None, Err(_)) => false,
        };
        if !made {
            return (Status::BadRequest, 0, Body::None);
        }
        let left = self.doc.len() as u64;
        (Status::Document, left, Body::Doc { offset: 0, left })
    }

    /// Starts reading an upload to the sink: its body is taken as it arrives
    /// ([`Conn::take_upload`]) and answered at its end; a client that asked for a
    /// `100 Continue` gets one first.
    fn begin_upload(&mut self, req: &Request) {
        self.upload = Some(Upload {
            bytes: 0,
            chunked: req.chunked.then(Chunked::new),
            left: if req.chunked { 0 } else { req.body_bytes },
            close: !req.keep_alive,
            connection: if !req.keep_alive {
                ConnectionHeader::Close
            } else if req.http10 {
                ConnectionHeader::KeepAlive
            } else {
                ConnectionHeader::None
            },
        });
        if req.expect_continue && !req.http10 {
            const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
            self.head[..CONTINUE.len()].copy_from_slice(CONTINUE);
            self.head_len = CONTINUE.len();
            self.head_sent = 0;
            self.body = Body::None;
            self.responding = true;
            self.interim = true;
        }
    }

    /// Takes what the buffer holds of the upload under way: Ok(true) when its body ended and
    /// its answer (the body's length) was started, Ok(false) when more is to come, Err when a
    /// chunked body breaks its framing.
    fn take_upload(&mut self, turn: &mut Turn<'_>) -> Result<bool, ()> {
        let Some(up) = self.upload.as_mut() else {
            return Ok(false);
        };
        let held = &self.buf[self.start..self.end];
        let (used, done) = match up.chunked.as_mut() {
            Some(c) => {
                let fed = c.feed(held)?;
                up.bytes += fed.data;
                (fed.used, fed.done)
            }
            None => {
                let n = up.left.min(held.len() as u64);
                up.left -= n;
                up.bytes += n;
                (n as usize, up.left == 0)
            }
        };
        self.start += used;
        if !done {
            return Ok(false);
        }
        let up = *up;
        self.upload = None;
        self.doc.clear();
        let _ = writeln!(self.doc, "{}", up.bytes);
        let left = self.doc.len() as u64;
        self.start_response(
            Status::Received,
            left,
            up.connection,
            false,
            Body::Doc { offset: 0, left },
            turn,
        );
        self.close_after = up.close;
        Ok(true)
    }

    /// Answers a request that cannot be parsed, then closes: where the next one would start
    /// is unknown.
    pub(super) fn fail(&mut self, status: Status, turn: &mut Turn<'_>) {
        self.start = 0;
        self.end = 0;
        self.discard = 0;
        self.upload = None;
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
        if self.tls.is_some() {
            return self.write_tls(turn);
        }
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
                Body::Doc { offset, left } => {
                    let body = &self.doc[offset..offset + left as usize];
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

    /// [`Conn::write`] over TLS: the head and body handed to rustls (at most its buffer limit at
    /// a time), its records written to the socket; the same Ok(true) and Ok(false).
    fn write_tls(&mut self, turn: &mut Turn<'_>) -> io::Result<bool> {
        let t = self.tls.as_deref_mut().expect("write_tls is called on TLS connections");
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if !t.flush(&mut self.stream)? {
                return Ok(false);
            }
            let head = &self.head[self.head_sent..self.head_len];
            if !head.is_empty() {
                self.head_sent += t.session.writer().write(head)?;
                continue;
            }
            let left = self.body.left();
            let n = match self.body {
                _ if left == 0 => return Ok(true),
                Body::None => return Ok(true),
                Body::Pattern { offset, left } => {
                    let body = pattern_slice(&turn.shared.pattern, offset, left.min(64 * 1024));
                    t.session.writer().write(body)?
                }
                Body::Doc { offset, left } => t.session.writer().write(&self.doc[offset..offset + left as usize])?,
                Body::File { fd, pos, wrap, .. } => {
                    let want = left.min(wrap - pos).min(chunk.len() as u64) as usize;
                    let got = pread(fd, &mut chunk[..want], pos)?;
                    if got == 0 {
                        // The file shrank since bind: the promised length cannot be kept.
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    // What rustls does not take now is read again from the same place next time.
                    t.session.writer().write(&chunk[..got])?
                }
            };
            self.body.advance(n as u64);
            turn.counts.body_bytes += n as u64;
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
