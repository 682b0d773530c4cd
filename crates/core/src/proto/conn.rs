//! A control connection over a blocking TCP socket: preamble exchange, then whole messages in
//! and out with a deadline on every read, so a silent peer can never hang either end.
//!
//! Deadlines cover whole messages: once the first byte of a message is in, the rest
//! must follow within [`Conn::set_message_timeout`] (plus a second per [`MESSAGE_RATE_BYTES`]
//! received, so a large message on a slow link still arrives), however the bytes trickle; a byte
//! every few seconds does not restart the clock. The error says what arrived.

use super::frame::{self, FrameError, PREAMBLE_LEN};
use super::{ErrorKind, Message, VERSION};
use crate::units::grouped;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long a message may take from its first byte to its last, by default (the client's end:
/// a result after the run).
pub(crate) const MESSAGE_TIMEOUT: Duration = Duration::from_secs(20);
/// Each this many bytes of a message received adds a second to its deadline (1 MiB/s: a result
/// of the largest size, 128 MiB, may take 128 s more than a small one).
pub(crate) const MESSAGE_RATE_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// Its first bytes shown as text, anything but printable ASCII escaped (`\x16\x03\x01` of a
    /// TLS server, `HTTP/1.1` of a web server).
    #[error("{peer} is not a linerate agent (first bytes \"{}\")", got.escape_ascii())]
    NotAnAgent { peer: SocketAddr, got: Vec<u8> },
    #[error("{peer} speaks protocol {theirs}, this build speaks {ours}")]
    Version { peer: SocketAddr, ours: u16, theirs: u16 },
    #[error("{peer} sent nothing for {seconds} s while {what}")]
    Timeout {
        peer: SocketAddr,
        what: &'static str,
        seconds: f64,
    },
    #[error("{peer}: received {} in {seconds:.0} s", partial_text(*.received, *.announced))]
    Partial {
        peer: SocketAddr,
        /// Bytes of the message in so far, its length prefix included.
        received: u64,
        /// The whole frame's length as its prefix announced (prefix included), once known.
        announced: Option<u64>,
        seconds: f64,
    },
    #[error("{peer} closed the control connection")]
    Closed { peer: SocketAddr },
    /// The frame's error is part of this message, not a cause below it (a `source` here made
    /// the chain print it twice).
    #[error("{peer}: {error}")]
    Frame { peer: SocketAddr, error: FrameError },
    #[error("{peer} refused: {kind}: {message}")]
    Refused {
        peer: SocketAddr,
        kind: ErrorKind,
        message: String,
    },
    #[error("{peer} sent '{got}' where '{expected}' was expected")]
    Unexpected {
        peer: SocketAddr,
        expected: &'static str,
        got: &'static str,
    },
    #[error("control connection to {peer}")]
    Io {
        peer: SocketAddr,
        #[source]
        source: io::Error,
    },
}

/// "15 of 134,217,732 bytes of a message", or of its length prefix while that is incomplete.
fn partial_text(received: u64, announced: Option<u64>) -> String {
    match announced {
        Some(total) => format!(
            "{} of {} bytes of a message",
            grouped(received as f64, 0),
            grouped(total as f64, 0)
        ),
        None => format!("{received} of the 4 bytes of a message's length"),
    }
}

/// One end of a control connection.
pub(crate) struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    buf: Vec<u8>,
    /// The largest message accepted from the peer.
    max_message: u32,
    /// Past the preamble: from here a short read is a closed connection, not a stranger.
    opened: bool,
    /// When the first byte of the message now arriving came in (None: nothing buffered).
    partial_since: Option<Instant>,
    /// How long a message may take from its first byte to its last (before the size allowance).
    message_timeout: Duration,
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

impl Conn {
    pub(crate) fn new(stream: TcpStream, peer: SocketAddr) -> Conn {
        let _ = stream.set_nodelay(true);
        Conn {
            stream,
            peer,
            buf: Vec::with_capacity(4096),
            max_message: frame::MAX_MESSAGE_BYTES,
            opened: false,
            partial_since: None,
            message_timeout: MESSAGE_TIMEOUT,
        }
    }

    /// How long a message may take from its first byte to its last (plus a second per
    /// [`MESSAGE_RATE_BYTES`] received).
    pub(crate) fn set_message_timeout(&mut self, timeout: Duration) {
        self.message_timeout = timeout;
    }

    /// The largest message taken from the peer from now on (larger: a frame error at once): an
    /// agent before authentication, a client bounding an agent's result by what its test can
    /// fill (`summary::check`).
    pub(crate) fn set_max_message(&mut self, bytes: u32) {
        self.max_message = bytes;
    }

    /// When the message now arriving must be whole, if one is arriving.
    fn message_deadline(&self) -> Option<Instant> {
        let since = self.partial_since?;
        let allowance = Duration::from_secs_f64(self.buf.len() as f64 / MESSAGE_RATE_BYTES as f64);
        Some(since + self.message_timeout + allowance)
    }

    /// The error for a message that did not arrive whole: what came, of how much, over how long.
    fn partial(&self) -> ProtoError {
        let announced = self
            .buf
            .get(..4)
            .map(|p| u64::from(u32::from_be_bytes(p.try_into().expect("four bytes"))) + 4);
        ProtoError::Partial {
            peer: self.peer,
            received: self.buf.len() as u64,
            announced,
            seconds: self.partial_since.map_or(0.0, |t| t.elapsed().as_secs_f64()),
        }
    }

    /// An agent's end: the client's preamble was read by the caller; messages are small.
    pub(crate) fn accepted(stream: TcpStream, peer: SocketAddr) -> Conn {
        let mut c = Conn::new(stream, peer);
        c.max_message = frame::MAX_REQUEST_BYTES;
        c.opened = true;
        c
    }

    /// Bytes received but not yet part of a whole message (for progress on a long one).
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Ends this side after its last message: a FIN, then what the peer still sends is read and
    /// dropped until it closes too or `within` passes. Closing a socket with unread bytes (a
    /// `stop` that crossed the result on the wire) makes the kernel send a reset, and a reset
    /// can discard the result still queued at the peer before the peer has read it.
    pub(crate) fn close_gracefully(&mut self, within: Duration) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let deadline = Instant::now() + within;
        let mut sink = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match self.stream.read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    fn io(&self, source: io::Error) -> ProtoError {
        ProtoError::Io {
            peer: self.peer,
            source,
        }
    }

    pub(crate) fn send(&mut self, msg: &Message) -> Result<(), ProtoError> {
        let bytes = frame::encode(msg).map_err(|error| ProtoError::Frame { peer: self.peer, error })?;
        self.stream
            .set_write_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| self.io(e))?;
        self.stream.write_all(&bytes).map_err(|e| self.io(e))
    }

    /// Sends an error message and ignores failure: the connection is closing anyway.
    pub(crate) fn send_error(&mut self, kind: ErrorKind, message: impl Into<String>) {
        let _ = self.send(&Message::Error {
            kind,
            message: message.into(),
        });
    }

    /// Sends our preamble and reads the peer's, within `timeout` (tests: a client sends
    /// [`Conn::open_with`] its first flight).
    #[cfg(test)]
    pub(crate) fn exchange_preambles(&mut self, timeout: Duration) -> Result<(), ProtoError> {
        self.open_with(&frame::preamble(VERSION), timeout)
    }

    /// Sends `first_flight` (our preamble, and a client's proof of the secret after it when it
    /// holds one: `auth::first_flight`) in one write, and reads the peer's preamble, within
    /// `timeout`.
    pub(crate) fn open_with(&mut self, first_flight: &[u8], timeout: Duration) -> Result<(), ProtoError> {
        self.stream.set_write_timeout(Some(timeout)).map_err(|e| self.io(e))?;
        self.stream.write_all(first_flight).map_err(|e| self.io(e))?;
        let got = self.read_exact_by(PREAMBLE_LEN, timeout, "opening the control connection")?;
        let bytes: [u8; PREAMBLE_LEN] = got.try_into().expect("read exactly the preamble length");
        match frame::parse_preamble(&bytes) {
            None => Err(ProtoError::NotAnAgent {
                peer: self.peer,
                got: bytes.to_vec(),
            }),
            Some(v) if v != VERSION => Err(ProtoError::Version {
                peer: self.peer,
                ours: VERSION,
                theirs: v,
            }),
            Some(_) => {
                self.opened = true;
                Ok(())
            }
        }
    }

    fn read_exact_by(&mut self, n: usize, timeout: Duration, what: &'static str) -> Result<Vec<u8>, ProtoError> {
        let deadline = Instant::now() + timeout;
        while self.buf.len() < n {
            if !self.fill(deadline)? {
                if self.buf.is_empty() {
                    return Err(ProtoError::Timeout {
                        peer: self.peer,
                        what,
                        seconds: timeout.as_secs_f64(),
                    });
                }
                // Something arrived but not enough: whoever it is, it is not an agent.
                return Err(self.stranger());
            }
        }
        let got = self.buf.drain(..n).collect();
        self.partial_since = (!self.buf.is_empty()).then(Instant::now);
        Ok(got)
    }

    fn stranger(&self) -> ProtoError {
        ProtoError::NotAnAgent {
            peer: self.peer,
            got: self.buf.iter().take(8).copied().collect(),
        }
    }

    /// Reads what is available until `deadline`; false when the deadline passed with nothing new.
    fn fill(&mut self, deadline: Instant) -> Result<bool, ProtoError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        self.stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(|e| self.io(e))?;
        let mut chunk = [0u8; 16 << 10];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    if self.buf.is_empty() || self.opened {
                        return Err(ProtoError::Closed { peer: self.peer });
                    }
                    return Err(self.stranger());
                }
                Ok(n) => {
                    if self.buf.is_empty() {
                        self.partial_since = Some(Instant::now());
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    return Err(ProtoError::Closed { peer: self.peer });
                }
                Err(e) => return Err(self.io(e)),
            }
        }
    }

    /// The next message if one arrives within `timeout`, `Ok(None)` if none did; an error when
    /// a message that began arriving is not whole by its own deadline.
    pub(crate) fn try_recv(&mut self, timeout: Duration) -> Result<Option<Message>, ProtoError> {
        let deadline = Instant::now() + timeout;
        loop {
            match frame::decode(&self.buf, self.max_message) {
                Err(source) => {
                    return Err(ProtoError::Frame {
                        peer: self.peer,
                        error: source,
                    });
                }
                Ok(Some((msg, used))) => {
                    self.buf.drain(..used);
                    // What follows in the buffer is the start of the next message.
                    self.partial_since = (!self.buf.is_empty()).then(Instant::now);
                    return Ok(Some(msg));
                }
                Ok(None) => {
                    let whole_by = self.message_deadline();
                    if whole_by.is_some_and(|t| Instant::now() >= t) {
                        return Err(self.partial());
                    }
                    let until = whole_by.map_or(deadline, |t| t.min(deadline));
                    if !self.fill(until)? && Instant::now() >= deadline {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The next message, which must arrive within `timeout`; an `Error` message becomes
    /// [`ProtoError::Refused`].
    pub(crate) fn recv(&mut self, timeout: Duration, what: &'static str) -> Result<Message, ProtoError> {
        match self.try_recv(timeout)? {
            // Part of a message came: say how much, not "nothing".
            None if !self.buf.is_empty() => Err(self.partial()),
            None => Err(ProtoError::Timeout {
                peer: self.peer,
                what,
                seconds: timeout.as_secs_f64(),
            }),
            Some(Message::Error { kind, message }) => Err(ProtoError::Refused {
                peer: self.peer,
                kind,
                message: super::peer_text(&message),
            }),
            Some(m) => Ok(m),
        }
    }

    pub(crate) fn unexpected(&self, expected: &'static str, got: &Message) -> ProtoError {
        ProtoError::Unexpected {
            peer: self.peer,
            expected,
            got: got.name(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (Conn, Conn) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let a = TcpStream::connect(addr).expect("connect");
        let (b, peer) = l.accept().expect("accept");
        (Conn::new(a, addr), Conn::new(b, peer))
    }

    #[test]
    fn messages_cross_and_silence_times_out() {
        let (mut a, mut b) = pair();
        a.send(&Message::Start).expect("send");
        assert_eq!(b.recv(Duration::from_secs(1), "test").expect("recv"), Message::Start);
        assert_eq!(b.try_recv(Duration::from_millis(20)).expect("no error"), None);
        assert!(matches!(
            b.recv(Duration::from_millis(20), "waiting"),
            Err(ProtoError::Timeout { .. })
        ));
    }

    #[test]
    fn preamble_exchange_spots_strangers() {
        let (mut a, b) = pair();
        let mut raw = b.stream;
        raw.write_all(b"SSH-2.0-").expect("write");
        let err = a.exchange_preambles(Duration::from_secs(1));
        assert!(matches!(err, Err(ProtoError::NotAnAgent { .. })), "{err:?}");
        // Said as text, escaped where it is not printable ASCII.
        let text = err.expect_err("a stranger").to_string();
        assert!(
            text.ends_with("is not a linerate agent (first bytes \"SSH-2.0-\")"),
            "{text}"
        );
        let shown = ProtoError::NotAnAgent {
            peer: "127.0.0.1:1".parse().expect("addr"),
            got: b"\x16\x03\x01\x1b[2J".to_vec(),
        };
        assert_eq!(
            shown.to_string(),
            "127.0.0.1:1 is not a linerate agent (first bytes \"\\x16\\x03\\x01\\x1b[2J\")"
        );
    }

    #[test]
    fn preamble_exchange_spots_other_versions() {
        let (mut a, b) = pair();
        let mut raw = b.stream;
        raw.write_all(&frame::preamble(VERSION + 1)).expect("write");
        assert!(matches!(
            a.exchange_preambles(Duration::from_secs(1)),
            Err(ProtoError::Version { .. })
        ));
    }

    #[test]
    fn issue_14_a_trickled_message_ends_at_its_deadline_however_the_bytes_come() {
        let (mut a, b) = pair();
        a.set_message_timeout(Duration::from_millis(400));
        let mut raw = b.stream;
        let writer = std::thread::spawn(move || {
            // A frame announcing 1000 bytes, then one byte every 100 ms: each byte would restart
            // a per-read timer.
            let _ = raw.write_all(&1000u32.to_be_bytes());
            for _ in 0..40 {
                std::thread::sleep(Duration::from_millis(100));
                if raw.write_all(b"{").is_err() {
                    break;
                }
            }
        });
        let start = Instant::now();
        let err = loop {
            match a.try_recv(Duration::from_millis(50)) {
                Ok(None) => assert!(start.elapsed() < Duration::from_secs(3), "still waiting"),
                Ok(Some(m)) => panic!("no whole message was sent, got {m:?}"),
                Err(e) => break e,
            }
        };
        let ProtoError::Partial {
            received, announced, ..
        } = &err
        else {
            panic!("expected a partial message, got {err:?}");
        };
        assert!((4..1004).contains(received), "{err}");
        assert_eq!(*announced, Some(1004));
        assert!(err.to_string().contains(" of 1,004 bytes of a message in "), "{err}");
        drop(a);
        let _ = writer.join();
    }

    #[test]
    fn issue_14_a_stalled_message_is_reported_with_what_arrived() {
        let (mut a, b) = pair();
        let mut raw = b.stream;
        raw.write_all(&(128u32 << 20).to_be_bytes()).expect("write");
        raw.write_all(b"{\"type\":\"re").expect("write");
        let err = a
            .recv(Duration::from_millis(300), "waiting")
            .expect_err("no whole message");
        assert_eq!(
            err.to_string(),
            format!("{}: received 15 of 134,217,732 bytes of a message in 0 s", a.peer()),
        );
    }

    #[test]
    fn closed_peer_is_reported() {
        let (mut a, b) = pair();
        drop(b);
        assert!(matches!(
            a.recv(Duration::from_secs(1), "waiting"),
            Err(ProtoError::Closed { .. })
        ));
    }
}
