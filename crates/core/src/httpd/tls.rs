//! The server's TLS for `serve --https-port`: its certificate (generated at start with
//! rcgen, or read from `--cert`/`--key`), the rustls configuration (TLS 1.2 and 1.3, ALPN
//! `h2` and `http/1.1`, resumption by session ID and by tickets), and one connection's reads through
//! rustls. A connection's writes are in `conn`, beside the cleartext ones they stand in for.

use super::Counts;
use crate::tls::{TlsError, provider, ticketer};
use mio::net::TcpStream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ServerSessionMemoryCache;
use rustls::{HandshakeKind, ServerConfig, ServerConnection};
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

/// TLS 1.2 sessions the server keeps for resumption by session ID (TLS 1.3 and TLS 1.2 ticket
/// resumption keep nothing here: the ticket carries the session).
const SESSIONS: usize = 65_536;

/// What an https server presents: its rustls configuration and its certificate's SHA-256
/// fingerprint (`AB:CD:...`, as `openssl x509 -fingerprint -sha256` prints it).
#[derive(Clone)]
pub struct HttpsIdentity {
    pub config: Arc<ServerConfig>,
    pub fingerprint: String,
}

impl HttpsIdentity {
    /// A self-signed certificate for `names` (DNS names, or IP addresses as text), made now.
    pub fn self_signed(names: &[String]) -> Result<HttpsIdentity, TlsError> {
        let made = rcgen::generate_simple_self_signed(names.to_vec()).map_err(TlsError::Generate)?;
        let key = PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
        HttpsIdentity::new(vec![made.cert.der().clone()], key)
    }

    /// The certificate chain in `cert` (PEM, the server's first) and its key in `key` (PEM).
    pub fn from_files(cert: &Path, key: &Path) -> Result<HttpsIdentity, TlsError> {
        let read = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TlsError::Read { path, source }
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .map_err(read(cert))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(read(cert))?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate {
                path: cert.to_path_buf(),
            });
        }
        let key = PrivateKeyDer::from_pem_file(key).map_err(read(key))?;
        HttpsIdentity::new(chain, key)
    }

    fn new(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> Result<HttpsIdentity, TlsError> {
        let fingerprint = Sha256::digest(&chain[0])
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(":");
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(TlsError::Config)?;
        // h2 first: a client that offers both gets HTTP/2 (the server's order decides in rustls).
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.session_storage = ServerSessionMemoryCache::new(SESSIONS);
        config.ticketer = ticketer().map_err(TlsError::Config)?;
        Ok(HttpsIdentity {
            config: Arc::new(config),
            fingerprint,
        })
    }
}

/// One TLS connection's state beside its socket.
pub(super) struct TlsConn {
    pub(super) session: ServerConnection,
    /// The handshake has been counted (done or failed).
    pub(super) counted: bool,
}

impl TlsConn {
    pub(super) fn new(config: &Arc<ServerConfig>) -> io::Result<TlsConn> {
        Ok(TlsConn {
            session: ServerConnection::new(Arc::clone(config)).map_err(io::Error::other)?,
            counted: false,
        })
    }

    /// The socket's read, through rustls: decrypted request bytes into `buf`; records read and
    /// handshake messages answered on the way. Ok(0) at the end of the stream (close_notify or
    /// a plain close); WouldBlock once the socket is empty and nothing is decrypted. `write_ready`
    /// goes false when an answer to the handshake found the socket full (the next writable
    /// edge flushes it).
    pub(super) fn read(
        &mut self,
        stream: &mut TcpStream,
        buf: &mut [u8],
        write_ready: &mut bool,
        counts: &mut Counts,
    ) -> io::Result<usize> {
        let mut closed = false;
        loop {
            match self.session.reader().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && closed => return Ok(0),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                other => return other,
            }
            closed = self.session.read_tls(stream)? == 0;
            let processed = self.session.process_new_packets();
            // The handshake's answers, or the alert that says why it failed.
            *write_ready = self.flush(stream)? && *write_ready;
            if let Err(e) = processed {
                if !self.counted {
                    self.counted = true;
                    counts.tls_failed += 1;
                }
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            if !self.counted && !self.session.is_handshaking() {
                self.counted = true;
                match self.session.handshake_kind() {
                    Some(HandshakeKind::Resumed) => counts.tls_resumed += 1,
                    _ => counts.tls_full += 1,
                }
            }
        }
    }

    /// Writes rustls's records to the socket: Ok(true) when all are out, Ok(false) when the
    /// socket is full.
    pub(super) fn flush(&mut self, stream: &mut TcpStream) -> io::Result<bool> {
        while self.session.wants_write() {
            match self.session.write_tls(stream) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_a_generated_certificate_has_a_fingerprint_and_files_are_read() {
        let id = HttpsIdentity::self_signed(&["localhost".into(), "127.0.0.1".into()]).expect("generated");
        assert_eq!(id.fingerprint.len(), 32 * 3 - 1, "{}", id.fingerprint);
        assert!(id.fingerprint.bytes().all(|b| b == b':' || b.is_ascii_hexdigit()));
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("made");
        let dir = std::env::temp_dir().join(format!("linerate-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (cert, key) = (dir.join("c.pem"), dir.join("k.pem"));
        std::fs::write(&cert, made.cert.pem()).expect("cert");
        std::fs::write(&key, made.signing_key.serialize_pem()).expect("key");
        let read = HttpsIdentity::from_files(&cert, &key);
        let wrong = HttpsIdentity::from_files(&key, &cert);
        let _ = std::fs::remove_dir_all(&dir);
        let read = read.expect("read");
        let want: String = Sha256::digest(made.cert.der())
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(":");
        assert_eq!(read.fingerprint, want);
        assert!(matches!(
            wrong,
            Err(TlsError::NoCertificate { .. }) | Err(TlsError::Read { .. })
        ));
    }
}
