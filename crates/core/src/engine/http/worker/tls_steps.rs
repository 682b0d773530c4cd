//! One worker's TLS steps for https users: the handshake driven as far as the socket
//! lets it (then counted: full or resumed, its time, the thread's CPU in it), the request written
//! through rustls, responses read through it, and a failed handshake's class.

use super::super::tls::{self, Failure};
use super::classify::{classify, failure_of_io, tls_class};
use super::{End, State, Worker};
use mio::net::TcpStream;
use rustls::{ClientConnection, HandshakeKind};
use std::io::{self, Read, Write};

impl Worker<'_> {
    /// Drives user `u`'s TLS handshake as far as the socket lets it; once done, counts it (full
    /// or resumed, its time from TCP connected, this thread's CPU spent on it) and writes the
    /// request.
    pub(super) fn handshake(&mut self, u: usize) {
        let cpu_before = tls::thread_cpu_ns();
        let user = &mut self.users[u];
        let (Some(c), Some(s)) = (user.tls.as_deref_mut(), user.conn.as_mut()) else {
            return;
        };
        let outcome = loop {
            if c.wants_write() {
                match c.write_tls(s) {
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(false),
                    Err(e) => break Err(failure_of_io(&e)),
                }
            }
            if !c.is_handshaking() {
                break Ok(true);
            }
            match c.read_tls(s) {
                // Closed by the peer during the handshake: it refused the protocol.
                Ok(0) => break Err(Failure::Protocol),
                Ok(_) => {
                    if let Err(e) = c.process_new_packets() {
                        // The alert rustls queued tells the server why; best effort.
                        let _ = c.write_tls(s);
                        break Err(tls::failure_of(&e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(false),
                Err(e) => break Err(failure_of_io(&e)),
            }
        };
        let resumed = c.handshake_kind() == Some(HandshakeKind::Resumed);
        user.handshake_cpu_ns += tls::thread_cpu_ns().saturating_sub(cpu_before);
        match outcome {
            Ok(false) => {}
            Ok(true) => {
                let now = self.now();
                let user = &self.users[u];
                if user.connect_counted {
                    let took = now.saturating_sub(user.connected_ns);
                    self.out.report.tls.count(resumed, took, user.handshake_cpu_ns);
                }
                self.established(u);
                self.users[u].state = State::Writing;
                self.write(u);
            }
            Err(f) => self.finish(u, End::Failed(tls_class(f))),
        }
    }

    /// https: hands the request to rustls and writes its records until they are all out (then
    /// reading) or the socket is full (the next writable edge comes back here).
    pub(super) fn write_tls(&mut self, u: usize) {
        let targets = self.targets;
        let req = &targets[self.users[u].target].request;
        loop {
            let user = &mut self.users[u];
            let (Some(c), Some(s)) = (user.tls.as_deref_mut(), user.conn.as_mut()) else {
                return;
            };
            if user.written < req.len() {
                // Buffered in rustls (never blocks): counted as written, as the cleartext
                // request is counted once the kernel has it.
                let n = match c.writer().write(&req[user.written..]) {
                    Ok(n) => n,
                    Err(e) => {
                        self.finish(u, End::Failed(classify(&e)));
                        return;
                    }
                };
                user.written += n;
                self.wrote(n);
                continue;
            }
            if !c.wants_write() {
                user.state = State::Reading;
                return;
            }
            if let Err(e) = c.write_tls(s)
                && !self.again_after(u, &e)
            {
                return;
            }
        }
    }
}

/// Reads what TLS connection `c` has decrypted, reading and decrypting records from `s` when it
/// has nothing: the socket's read, with rustls in between. A close without close_notify ends
/// the stream as a close does in cleartext (many servers never send one); a record that fails
/// is an error carrying the rustls error (classed as TLS protocol).
pub(super) fn read_tls(c: &mut ClientConnection, s: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match c.reader().read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            other => return other,
        }
        c.read_tls(s)?;
        if let Err(e) = c.process_new_packets() {
            let _ = c.write_tls(s);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        // Key updates and alerts rustls answers; best effort, the request's writes follow.
        if c.wants_write() {
            let _ = c.write_tls(s);
        }
    }
}
