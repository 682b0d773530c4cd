//! What both ends of TLS share, below the client's engine (`engine::http::tls`) and the server
//! (`httpd::tls`) alike: the crypto provider, the session tickets' encrypter, and the errors of
//! setting either end up (the client's trust, the server's identity). Neither end imports the
//! other; each builds its rustls configuration from these. The connection as tokio I/O, which
//! both HTTP/2 ends run on, is `crate::tlsio`'s.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// Where Debian and its kin keep the system's trusted roots, one PEM bundle.
pub const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The crypto provider every TLS end of linerate uses: aws-lc-rs, chosen by measurement against
/// ring (docs/benchmarks.md, "HTTPS": more full handshakes per second, bulk even); the feature
/// `tls-ring` builds the other for the comparison.
pub fn provider() -> Arc<CryptoProvider> {
    #[cfg(feature = "tls-ring")]
    return Arc::new(rustls::crypto::ring::default_provider());
    #[cfg(not(feature = "tls-ring"))]
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Session tickets' encryption (the server's), from the same provider.
pub fn ticketer() -> Result<Arc<dyn rustls::server::ProducesTickets>, rustls::Error> {
    #[cfg(feature = "tls-ring")]
    return rustls::crypto::ring::Ticketer::new();
    #[cfg(not(feature = "tls-ring"))]
    rustls::crypto::aws_lc_rs::Ticketer::new()
}

/// Why the client's TLS could not be set up before a run: its trusted roots, or rustls's
/// configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("cannot read the CA certificates in {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("{} holds no usable CA certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("no trusted roots: {SYSTEM_ROOTS} is missing; give --cacert FILE or --insecure")]
    NoRoots,
    #[error("TLS configuration")]
    Config {
        #[source]
        source: rustls::Error,
    },
}

/// Why the server's TLS identity could not be made: its certificate and key files, the
/// self-signed certificate, or rustls's configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("{} holds no certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("generating the self-signed certificate")]
    Generate(#[source] rcgen::Error),
    #[error("the certificate and key do not make a TLS configuration")]
    Config(#[source] rustls::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_take_one_provider_and_its_ticketer() {
        let p = provider();
        assert!(!p.cipher_suites.is_empty());
        assert!(!p.kx_groups.is_empty());
        let t = ticketer().expect("a ticketer from the provider");
        assert!(t.enabled());
        let ticket = t.encrypt(b"session state").expect("encrypted");
        assert_ne!(ticket.as_slice(), b"session state");
        assert_eq!(t.decrypt(&ticket).as_deref(), Some(&b"session state"[..]));
    }

    #[test]
    fn setup_errors_read_as_before() {
        assert_eq!(
            TlsSetupError::NoRoots.to_string(),
            "no trusted roots: /etc/ssl/certs/ca-certificates.crt is missing; give --cacert FILE or --insecure"
        );
        assert_eq!(
            TlsSetupError::NoCertificate {
                path: "/x/ca.pem".into()
            }
            .to_string(),
            "/x/ca.pem holds no usable CA certificate"
        );
        assert_eq!(
            TlsError::NoCertificate {
                path: "/x/c.pem".into()
            }
            .to_string(),
            "/x/c.pem holds no certificate"
        );
    }
}
