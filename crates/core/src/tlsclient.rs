//! The client's TLS for `https://` URLs, below the engines that speak it (`engine::http`'s
//! workers, `engine::rpm`): the rustls configuration made once from the spec's [`TlsSpec`]
//! before the clock starts (roots, versions, resumption), one user's connection state, and how a
//! failed handshake is classed (certificate, protocol, timeout, other). The HTTP engine drives
//! rustls from its own mio loop through `read_tls`, `process_new_packets` and `write_tls`; the
//! HTTP/2 ends through `crate::tlsio`.
//!
//! Resumption is a browser's: each user keeps its own session cache (tickets and TLS 1.2 session
//! IDs), so a user's second connection to a server resumes and another user's first does not.

use crate::spec::{TlsSpec, TlsVersion};
use crate::tls::{SYSTEM_ROOTS, TlsSetupError, provider};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, Resumption, WebPkiServerVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Sessions a user keeps (per server name: its TLS 1.3 tickets and one TLS 1.2 session).
const USER_SESSIONS: usize = 8;

/// Why the first certificate of a run was refused, in words with the fix, kept by the
/// verifier for the run's note (each refusal is also counted as `tls_certificate`).
#[derive(Clone, Debug, Default)]
pub struct Refusal(Arc<OnceLock<String>>);

impl Refusal {
    /// The first refusal's reason, if a certificate was refused.
    pub fn first(&self) -> Option<String> {
        self.0.get().cloned()
    }
}

/// The client's configuration for a test: trusted roots (`--cacert`, else the system's; none
/// checked with `--insecure`), the versions asked for, ALPN `http/1.1`, and resumption as
/// asked (each user gets its own cache, `for_user`). The first certificate refused is told to
/// `refusal`.
pub fn client_config(spec: &TlsSpec, refusal: &Refusal) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = provider();
    let versions: &[&rustls::SupportedProtocolVersion] = match spec.version {
        None => rustls::ALL_VERSIONS,
        Some(TlsVersion::V1_2) => &[&rustls::version::TLS12],
        Some(TlsVersion::V1_3) => &[&rustls::version::TLS13],
    };
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .map_err(|source| TlsSetupError::Config { source })?;
    let signatures = provider.signature_verification_algorithms;
    let verifier: Arc<dyn ServerCertVerifier> = if spec.insecure {
        Arc::new(Checked {
            check: AnyCertificate,
            signatures,
        })
    } else {
        let (roots, pinned) = roots(spec.cacert.as_deref())?;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .map_err(|e| TlsSetupError::Config {
                source: rustls::Error::General(e.to_string()),
            })?;
        Arc::new(Checked {
            check: Verifier {
                webpki,
                pinned,
                refused: Arc::clone(&refusal.0),
            },
            signatures,
        })
    };
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.resumption = if spec.resume {
        Resumption::in_memory_sessions(USER_SESSIONS)
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(config))
}

/// One user's configuration: the test's, with a session cache of its own when resumption is on
/// (as a browser keeps its sessions); the test's own, shared, when it is off.
pub(super) fn for_user(base: &Arc<ClientConfig>, resume: bool) -> Arc<ClientConfig> {
    if !resume {
        return Arc::clone(base);
    }
    let mut config = ClientConfig::clone(base);
    config.resumption = Resumption::store(Arc::new(ClientSessionMemoryCache::new(USER_SESSIONS)));
    Arc::new(config)
}

/// The trusted roots: every certificate in `cacert`, else the system's bundle; and the
/// certificates of `--cacert` themselves, each accepted as the server's when it is exactly one
/// of them ([`Verifier`]).
fn roots(cacert: Option<&Path>) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), TlsSetupError> {
    let path = match cacert {
        Some(p) => p.to_path_buf(),
        None if Path::new(SYSTEM_ROOTS).exists() => PathBuf::from(SYSTEM_ROOTS),
        None => return Err(TlsSetupError::NoRoots),
    };
    let read = |source| TlsSetupError::Read {
        path: path.clone(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(&path)
        .map_err(read)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read)?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs.iter().cloned());
    if added == 0 {
        return Err(TlsSetupError::NoCertificate { path });
    }
    Ok((store, if cacert.is_some() { certs } else { Vec::new() }))
}

/// The verifier of a test without `--insecure`: webpki's over the roots, and the certificates
/// given with `--cacert` pinned. A server certificate that is exactly one of those is accepted
/// when webpki refuses it only as a chain (the usual `openssl req -x509` one-liner marks its
/// certificate CA:TRUE, which webpki will not take as a server's, and a version 1 certificate
/// is refused the same way), once its dates hold and its name is the URL's: in its
/// subjectAltName, or in its CN when it has none (as curl and OpenSSL check it). The user gave
/// that very certificate; trusting it is what `--cacert` asks. Handshake signatures are
/// checked as ever ([`Checked`]). The first refusal's reason goes to [`Refusal`].
#[derive(Debug)]
struct Verifier {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
    refused: Arc<OnceLock<String>>,
}

impl Verifier {
    fn pinned(
        &self,
        end_entity: &CertificateDer<'_>,
        name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), rustls::Error> {
        use rustls::CertificateError as C;
        let (_, cert) = x509_parser::parse_x509_certificate(end_entity)
            .map_err(|_| rustls::Error::InvalidCertificate(C::BadEncoding))?;
        let now_s = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        let validity = cert.validity();
        if now_s < validity.not_before.timestamp() {
            return Err(rustls::Error::InvalidCertificate(C::NotValidYet));
        }
        if now_s > validity.not_after.timestamp() {
            return Err(rustls::Error::InvalidCertificate(C::Expired));
        }
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        match rustls::client::verify_server_name(&parsed, name) {
            Ok(()) => Ok(()),
            Err(e) => {
                let has_san = cert.subject_alternative_name().ok().flatten().is_some();
                let wanted = name.to_str();
                let in_cn = cert
                    .subject()
                    .iter_common_name()
                    .filter_map(|cn| cn.as_str().ok())
                    .any(|cn| cn.eq_ignore_ascii_case(&wanted));
                if !has_san && in_cn { Ok(()) } else { Err(e) }
            }
        }
    }
}

impl CertificateCheck for Verifier {
    fn check(&self, presented: &Presented<'_>) -> Result<ServerCertVerified, rustls::Error> {
        let Presented {
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        } = *presented;
        let checked = match self
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Ok(v) => Ok(v),
            Err(e) if is_chain_refusal(&e) && self.pinned.iter().any(|p| p.as_ref() == end_entity.as_ref()) => self
                .pinned(end_entity, server_name, now)
                .map(|()| ServerCertVerified::assertion()),
            Err(e) => Err(e),
        };
        if let Err(e) = &checked {
            let _ = self.refused.set(refusal_words(e, server_name));
        }
        checked
    }
}

/// A refusal of the certificate as a chain (its issuer, its being a CA, its version), which a
/// pinned certificate overrides; a refusal of its dates, name or signature it does not.
fn is_chain_refusal(e: &rustls::Error) -> bool {
    use rustls::CertificateError as C;
    matches!(
        e,
        rustls::Error::InvalidCertificate(
            C::UnknownIssuer | C::Other(_) | C::InvalidPurpose | C::InvalidPurposeContext { .. }
        )
    )
}

/// Why a certificate was refused, in words, with what to do about it.
fn refusal_words(e: &rustls::Error, name: &ServerName<'_>) -> String {
    use rustls::CertificateError as C;
    let host = name.to_str();
    let why = match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::Expired | C::ExpiredContext { .. } => {
                "it has expired (see its dates: openssl x509 -noout -dates -in CERT)".to_string()
            }
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "it is not valid yet (its start date is ahead of this host's clock)".to_string()
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => format!(
                "it is not for '{host}', the URL's host (its names: openssl x509 -noout -ext subjectAltName -in CERT; \
                 use a URL with one of them, or make the certificate with -addext subjectAltName=DNS:{host})"
            ),
            C::UnknownIssuer => "it is signed by no CA this client trusts (give its CA, or the certificate \
                                 itself, with --cacert FILE; or --insecure to check nothing)"
                .to_string(),
            C::Other(other) if other.to_string().contains("CaUsedAsEndEntity") => {
                "it is a CA certificate (CA:TRUE) used as a server's (give exactly this certificate with --cacert \
                 FILE, or make a server certificate)"
                    .to_string()
            }
            _ => format!("{e} (--cacert FILE gives the CA or the certificate to trust)"),
        },
        other => other.to_string(),
    };
    format!("the server's certificate was refused: {why}")
}

/// The name a URL's host is checked against and sent as SNI (an IP address is checked against
/// the certificate's IP names and sends no SNI, as RFC 6066 §3 says).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|_| format!("'{host}' is not a valid TLS server name"))
}

/// Why a handshake failed, as the result counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Failure {
    /// The server's certificate was refused: untrusted issuer, wrong name, expired, or none.
    Certificate,
    /// The peer broke or refused the protocol: an alert, a message that is not TLS, no common
    /// version or cipher suite, or the connection closed during the handshake.
    Protocol,
    Other,
}

/// The class of a rustls error.
pub(super) fn failure_of(e: &rustls::Error) -> Failure {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(_) | E::NoCertificatesPresented | E::UnsupportedNameType => Failure::Certificate,
        // A server refusing our certificate check's outcome is also about certificates.
        E::AlertReceived(
            rustls::AlertDescription::BadCertificate
            | rustls::AlertDescription::CertificateExpired
            | rustls::AlertDescription::UnknownCA
            | rustls::AlertDescription::CertificateUnknown,
        ) => Failure::Certificate,
        E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. }
        | E::InvalidMessage(_)
        | E::AlertReceived(_)
        | E::PeerIncompatible(_)
        | E::PeerMisbehaved(_)
        | E::DecryptError
        | E::PeerSentOversizedRecord
        | E::NoApplicationProtocol
        | E::HandshakeNotComplete => Failure::Protocol,
        _ => Failure::Other,
    }
}

/// `--insecure`: every certificate is accepted; signatures are still checked ([`Checked`]), so
/// the handshake costs what a verified one does but for the chain's validation.
#[derive(Debug)]
struct AnyCertificate;

impl CertificateCheck for AnyCertificate {
    fn check(&self, _: &Presented<'_>) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
}

/// What the server presented, and when it is checked: `verify_server_cert`'s arguments.
#[derive(Clone, Copy)]
struct Presented<'a> {
    end_entity: &'a CertificateDer<'a>,
    intermediates: &'a [CertificateDer<'a>],
    server_name: &'a ServerName<'a>,
    ocsp_response: &'a [u8],
    now: UnixTime,
}

/// What a verifier decides of the server's certificate itself (its chain, dates and name; or
/// nothing, with `--insecure`). The handshake's signatures are not its business: [`Checked`]
/// verifies those the one way for every check.
trait CertificateCheck: std::fmt::Debug + Send + Sync {
    fn check(&self, presented: &Presented<'_>) -> Result<ServerCertVerified, rustls::Error>;
}

/// A certificate check made a verifier: the handshake's signatures verified with the provider's
/// algorithms, as webpki's own verifier verifies them (so a pinned certificate and `--insecure`
/// cost the same signature checks as a chain that verifies).
#[derive(Debug)]
struct Checked<C> {
    check: C,
    signatures: WebPkiSupportedAlgorithms,
}

impl<C: CertificateCheck> ServerCertVerifier for Checked<C> {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.check.check(&Presented {
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.signatures)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.signatures)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.signatures.supported_schemes()
    }
}

/// This thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID): read around a handshake's steps only,
/// never on a cleartext connection.
pub(super) fn thread_cpu_ns() -> u64 {
    crate::engine::pacing::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_certificate_errors_are_told_from_protocol_errors() {
        use rustls::CertificateError as C;
        for c in [C::Expired, C::UnknownIssuer, C::NotValidForName, C::BadSignature] {
            assert_eq!(failure_of(&rustls::Error::InvalidCertificate(c)), Failure::Certificate);
        }
        assert_eq!(
            failure_of(&rustls::Error::InvalidMessage(
                rustls::InvalidMessage::InvalidContentType
            )),
            Failure::Protocol
        );
        assert_eq!(
            failure_of(&rustls::Error::AlertReceived(
                rustls::AlertDescription::HandshakeFailure
            )),
            Failure::Protocol
        );
        assert_eq!(failure_of(&rustls::Error::General("x".into())), Failure::Other);
    }

    #[test]
    fn issue_27_a_missing_or_empty_ca_file_is_a_setup_error() {
        let spec = |p: &str| TlsSpec {
            cacert: Some(p.into()),
            ..TlsSpec::default()
        };
        assert!(matches!(
            client_config(&spec("/nonexistent/ca.pem"), &Refusal::default()),
            Err(TlsSetupError::Read { .. })
        ));
        let empty = std::env::temp_dir().join(format!("linerate-empty-ca-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let got = client_config(&spec(empty.to_str().expect("utf-8")), &Refusal::default());
        let _ = std::fs::remove_file(&empty);
        assert!(matches!(got, Err(TlsSetupError::NoCertificate { .. })), "{got:?}");
    }

    #[test]
    fn every_check_verifies_signatures_as_webpki_does() {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("made");
        let mut roots = RootCertStore::empty();
        roots.add(made.cert.der().clone()).expect("a root");
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .expect("webpki");
        let insecure = Checked {
            check: AnyCertificate,
            signatures: provider().signature_verification_algorithms,
        };
        assert!(!insecure.supported_verify_schemes().is_empty());
        assert_eq!(insecure.supported_verify_schemes(), webpki.supported_verify_schemes());
        let name = server_name("anywhere.invalid").expect("a name");
        assert!(
            insecure
                .verify_server_cert(made.cert.der(), &[], &name, &[], UnixTime::now())
                .is_ok(),
            "--insecure takes any certificate"
        );
    }
}
