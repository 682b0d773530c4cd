//! One HTTP/2 connection of the responsiveness test, on the `h2` crate over
//! `crate::tlsio::Io`: opened with its TCP and TLS handshakes timed (a foreign probe's first
//! two figures), a 1-byte GET timed on it (a probe), a download (GET of the large object) or an
//! upload (POST to the sink) run on it for as long as the stage lasts, its bytes counted.

use crate::tlsio::{HandshakeError, Io};
use bytes::Bytes;
use h2::client::SendRequest;
use http::{Request, Uri};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, HandshakeKind, ProtocolVersion};
use std::cell::Cell;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Each stream's receive window and the connection's: a download is not held back by
/// WINDOW_UPDATEs on a long fat path.
const STREAM_WINDOW: u32 = 8 << 20;
const CONNECTION_WINDOW: u32 = 32 << 20;
/// An upload's DATA frames are slices of these zeros.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
/// The most bytes a connection's socket holds unsent at first: about 5 ms at 50 Mbit/s. The
/// draft asks the client to keep its own send buffer from adding delay (TCP_NOTSENT_LOWAT at 5 ms
/// of the connection's throughput, its "Client-Side Influence"): a probe's request on an upload
/// connection then waits behind this much, not behind megabytes of autotuned buffer. An upload
/// connection's is set again at each interval from its measured rate ([`Open::unsent_for`]).
pub(super) const UNSENT_BYTES: usize = 32 << 10;
/// The send buffer's worth of time the draft allows the client, seconds.
const UNSENT_SECONDS: f64 = 0.005;
/// The most of a small object's (or the configuration's) body read.
pub(super) const MAX_SMALL_BODY: usize = 64 << 10;

/// Where the test's connections go: the address, the TLS name (None: cleartext h2c).
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub tls: Option<ServerName<'static>>,
}

/// A connection open: its request handle, the task driving it, and its handshakes' times.
pub(super) struct Open {
    pub send: SendRequest<Bytes>,
    pub driver: JoinHandle<()>,
    pub tcp_ms: f64,
    /// The TLS handshake's time divided by its round trips (1 for TLS 1.3 or a resumption, 2
    /// for a full TLS 1.2 handshake), ms; None in cleartext.
    pub tls_ms: Option<f64>,
    /// The socket (a duplicate descriptor), to set its unsent limit as the rate is learnt.
    pub socket: std::os::fd::OwnedFd,
}

impl Open {
    /// Sets the socket's unsent limit to 5 ms at `bits_per_second` (never under the first).
    pub fn unsent_for(socket: &std::os::fd::OwnedFd, bits_per_second: f64) {
        let bytes = (bits_per_second / 8.0 * UNSENT_SECONDS) as usize;
        crate::engine::sockopt::limit_unsent(socket, bytes.max(UNSENT_BYTES));
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Why a connection or a request failed, in words.
pub(super) type Failed = String;

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Opens a connection to `ep`: TCP, then TLS with ALPN `h2` (a server that does not choose h2
/// fails it), then HTTP/2's handshake.
pub(super) async fn open(ep: &Endpoint, config: Option<&Arc<ClientConfig>>) -> Result<Open, Failed> {
    let began = Instant::now();
    let stream = TcpStream::connect(ep.addr)
        .await
        .map_err(|e| format!("connecting to {}: {e}", ep.addr))?;
    crate::engine::sockopt::per_connection(&stream, None, false);
    crate::engine::sockopt::limit_unsent(&stream, UNSENT_BYTES);
    let tcp_ms = ms(began);
    let socket = std::os::fd::AsFd::as_fd(&stream)
        .try_clone_to_owned()
        .map_err(|e| format!("connecting to {}: {e}", ep.addr))?;
    let (io, tls_ms) = match (&ep.tls, config) {
        (Some(name), Some(config)) => {
            let session = ClientConnection::new(Arc::clone(config), name.clone())
                .map_err(|e| format!("TLS with {}: {e}", ep.addr))?;
            let mut io = Io::new(stream, Some(session), Vec::new());
            let shaking = Instant::now();
            poll_fn(|cx| io.poll_handshake(cx)).await.map_err(|e| match e {
                HandshakeError::Io(e) => format!("TLS handshake with {}: {e}", ep.addr),
                HandshakeError::Tls(e) => format!("TLS handshake with {}: {e}", ep.addr),
                HandshakeError::Closed => format!("{} closed the connection during the TLS handshake", ep.addr),
            })?;
            let took = ms(shaking);
            let session = io.tls.as_ref().expect("a TLS connection");
            if session.alpn_protocol() != Some(b"h2") {
                return Err(format!("{} does not speak HTTP/2 (ALPN h2 not chosen)", ep.addr));
            }
            let full_tls12 = session.protocol_version() == Some(ProtocolVersion::TLSv1_2)
                && session.handshake_kind() != Some(HandshakeKind::Resumed);
            (io, Some(took / if full_tls12 { 2.0 } else { 1.0 }))
        }
        _ => (Io::new(stream, None, Vec::new()), None),
    };
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| format!("HTTP/2 with {}: {e}", ep.addr))?;
    let driver = tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    Ok(Open {
        send,
        driver,
        tcp_ms,
        tls_ms,
        socket,
    })
}

/// A GET of `uri` read to its end, at most `max` bytes kept (None: counted into `count` and
/// dropped, as a download's are): its body, or why it failed.
pub(super) async fn get(
    send: &SendRequest<Bytes>,
    uri: &Uri,
    max: usize,
    count: Option<&Rc<Cell<u64>>>,
) -> Result<Vec<u8>, Failed> {
    let request = Request::get(uri.clone())
        .header("accept-encoding", "identity")
        .body(())
        .map_err(|e| e.to_string())?;
    let mut ready = send.clone().ready().await.map_err(|e| format!("GET {uri}: {e}"))?;
    let (response, _) = ready
        .send_request(request, true)
        .map_err(|e| format!("GET {uri}: {e}"))?;
    let response = response.await.map_err(|e| format!("GET {uri}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET {uri}: status {}", response.status()));
    }
    let mut body = response.into_body();
    let mut kept = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| format!("GET {uri}: {e}"))?;
        let n = chunk.len();
        let _ = body.flow_control().release_capacity(n);
        match count {
            Some(c) => c.set(c.get() + n as u64),
            None if kept.len() + n <= max => kept.extend_from_slice(&chunk),
            None => return Err(format!("GET {uri}: a body over {max} bytes")),
        }
    }
    Ok(kept)
}

/// A POST to `uri` that never ends: zeros sent as fast as the server's windows let them, each
/// byte counted into `count` as h2 takes it. Returns only when it failed.
pub(super) async fn upload(send: &SendRequest<Bytes>, uri: &Uri, count: &Rc<Cell<u64>>) -> Failed {
    let request = match Request::post(uri.clone())
        .header("content-type", "application/octet-stream")
        .body(())
    {
        Ok(r) => r,
        Err(e) => return e.to_string(),
    };
    let mut ready = match send.clone().ready().await {
        Ok(r) => r,
        Err(e) => return format!("POST {uri}: {e}"),
    };
    let (_response, mut stream) = match ready.send_request(request, false) {
        Ok(s) => s,
        Err(e) => return format!("POST {uri}: {e}"),
    };
    let zeros = Bytes::from_static(&ZEROS);
    loop {
        stream.reserve_capacity(ZEROS.len());
        let n = match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(n)) => n,
            Some(Err(e)) => return format!("POST {uri}: {e}"),
            None => return format!("POST {uri}: the stream was closed"),
        };
        if n == 0 {
            continue;
        }
        if let Err(e) = stream.send_data(zeros.slice(..n), false) {
            return format!("POST {uri}: {e}");
        }
        count.set(count.get() + n as u64);
    }
}
