//! A TCP connection as tokio I/O, through rustls when it is TLS: what the `h2` crate runs on at
//! both ends of HTTP/2: the server's lanes (`httpd::http2`) and the client's workers
//! (`engine::http::h2`). Generic over rustls's connection (`ServerConnection` or
//! `ClientConnection`, anything that derefs to its `ConnectionCommon`).
//!
//! In: a tokio socket, maybe a rustls session, and cleartext bytes already read from it (the
//! server's worker reads the preface before the hand-over). Out: `AsyncRead`/`AsyncWrite` of the
//! cleartext, and for the client the handshake driven on tokio's readiness ([`Io::poll_handshake`]).
//! Writes over TLS are buffered in rustls and go out at the flush: one `writev` for many frames.

use rustls::{ConnectionCommon, SideData};
use std::io::{self, Read, Write};
use std::ops::DerefMut;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A connection as tokio I/O: the socket, its rustls session over TLS, and the cleartext bytes
/// already read from it.
pub(crate) struct Io<C> {
    pub(crate) stream: TcpStream,
    pub(crate) tls: Option<C>,
    early: Vec<u8>,
    at: usize,
}

impl<C> Io<C> {
    pub(crate) fn new(stream: TcpStream, tls: Option<C>, early: Vec<u8>) -> Io<C> {
        Io {
            stream,
            tls,
            early,
            at: 0,
        }
    }
}

/// Why a handshake failed: the socket, or TLS itself (rustls's error, for its class).
#[derive(Debug)]
pub(crate) enum HandshakeError {
    Io(io::Error),
    Tls(rustls::Error),
    /// Closed by the peer during the handshake.
    Closed,
}

/// The socket as `std::io` for rustls, non-blocking (tokio's readiness is cleared on WouldBlock).
struct Sock<'a>(&'a TcpStream);

impl Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }
    /// rustls's `write_tls` hands over its queued records at once.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes rustls's records out; Pending (with the waker registered) while the socket is full.
fn push_records<D: SideData>(
    stream: &TcpStream,
    session: &mut ConnectionCommon<D>,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    while session.wants_write() {
        match session.write_tls(&mut Sock(stream)) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready!(stream.poll_write_ready(cx))?,
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
    Poll::Ready(Ok(()))
}

impl<C, D> Io<C>
where
    C: DerefMut<Target = ConnectionCommon<D>> + Unpin,
    D: SideData,
{
    /// Drives the TLS handshake as far as the socket lets it: Ready once done (or failed),
    /// Pending with the waker registered. Cleartext: done at once.
    pub(crate) fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), HandshakeError>> {
        let Some(session) = self.tls.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        loop {
            ready!(push_records(&self.stream, session, cx)).map_err(HandshakeError::Io)?;
            if !session.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            match session.read_tls(&mut Sock(&self.stream)) {
                Ok(0) => return Poll::Ready(Err(HandshakeError::Closed)),
                Ok(_) => {
                    if let Err(e) = session.process_new_packets() {
                        // The alert rustls queued tells the peer why; best effort.
                        let _ = session.write_tls(&mut Sock(&self.stream));
                        return Poll::Ready(Err(HandshakeError::Tls(e)));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ready!(self.stream.poll_read_ready(cx)).map_err(HandshakeError::Io)?
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(HandshakeError::Io(e))),
            }
        }
    }
}

impl<C, D> AsyncRead for Io<C>
where
    C: DerefMut<Target = ConnectionCommon<D>> + Unpin,
    D: SideData,
{
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.early.len() {
            let n = buf.remaining().min(this.early.len() - this.at);
            buf.put_slice(&this.early[this.at..this.at + n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        let Some(session) = this.tls.as_mut() else {
            return Pin::new(&mut this.stream).poll_read(cx, buf);
        };
        loop {
            match session.reader().read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // A close without close_notify: the end of the stream all the same.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Poll::Ready(Ok(())),
                Err(e) => return Poll::Ready(Err(e)),
            }
            match session.read_tls(&mut Sock(&this.stream)) {
                Ok(0) => return Poll::Ready(Ok(())),
                Ok(_) => {
                    session
                        .process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    // Alerts and tickets go out with the next write if the socket is full now.
                    if let Poll::Ready(Err(e)) = push_records(&this.stream, session, cx) {
                        return Poll::Ready(Err(e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready!(this.stream.poll_read_ready(cx))?,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl<C, D> AsyncWrite for Io<C>
where
    C: DerefMut<Target = ConnectionCommon<D>> + Unpin,
    D: SideData,
{
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    /// Over TLS, h2's frames (a DATA frame is its 9-byte head and its payload apart) become
    /// records in rustls's buffer, written to the socket at the flush that ends h2's turn: one
    /// `writev` for many frames, not a record and a syscall per piece.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let Some(session) = this.tls.as_mut() else {
            return Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        };
        loop {
            // rustls takes up to its buffer limit; once full, records go out first.
            let n = session.writer().write_vectored(bufs)?;
            if n > 0 || bufs.iter().all(|b| b.is_empty()) {
                return Poll::Ready(Ok(n));
            }
            ready!(push_records(&this.stream, session, cx))?;
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.tls.as_mut() {
            Some(session) => push_records(&this.stream, session, cx),
            None => Pin::new(&mut this.stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(session) = this.tls.as_mut() {
            session.send_close_notify();
            ready!(push_records(&this.stream, session, cx))?;
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}
