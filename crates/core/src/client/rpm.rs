//! The client of a responsiveness test (`linerate rpm`): the server found from its configuration
//! URL (resolved, its TLS set up, its configuration document fetched and checked before the
//! test, so that a server that answers none is refused at once), then the engine's run and the
//! document. It reaches no agent: its far end is any server that follows the draft.

use super::reach::ClientError;
use crate::engine::rpm::{Endpoint, RpmServer, fetch_config};
use crate::metrics::host::{HostInfo, ReadHostInfo};
use crate::result::TestResult;
use crate::spec::RpmSpec;
use crate::tls::TlsSetupError;
use crate::tlsclient::{Refusal, client_config, server_name};
use http::Uri;
use rustls::ClientConfig;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A responsiveness server ready to test: its URLs, where they go, and the client's TLS.
pub struct RpmTarget {
    pub server: RpmServer,
    tls: Option<Arc<ClientConfig>>,
    /// The address the test's connections go to, as the document names it.
    pub name: String,
}

/// Why there is no server to test: none answered the configuration URL with a configuration
/// the draft allows (or not over HTTP/2), or the client's TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RpmSetupError {
    #[error("{0}")]
    Server(String),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
}

/// The address of `uri`'s host (or `host` instead, the configuration's `test_endpoint`).
fn resolve(uri: &Uri, host: Option<&str>) -> Result<SocketAddr, String> {
    let https = uri.scheme_str() == Some("https");
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let host = host
        .or(uri.host())
        .ok_or_else(|| format!("{uri} names no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve '{host}': {e}"))?
        .next()
        .ok_or_else(|| format!("'{host}' has no address"))
}

/// Where `uri`'s connections go: its address (or `host`'s), and its TLS name over https.
fn endpoint(uri: &Uri, host: Option<&str>) -> Result<Endpoint, String> {
    let addr = resolve(uri, host)?;
    let tls = match uri.scheme_str() {
        Some("https") => Some(server_name(
            uri.host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']'),
        )?),
        _ => None,
    };
    Ok(Endpoint { addr, tls })
}

/// The server at `spec`'s configuration URL: its configuration fetched over HTTP/2 and
/// checked, its test endpoint resolved.
pub fn rpm_target(spec: &RpmSpec) -> Result<RpmTarget, RpmSetupError> {
    let url: Uri = spec.config_url.parse().map_err(|_| {
        RpmSetupError::Server(format!(
            "'{}' is not a URL",
            linerate_wire::text::peer_text(&spec.config_url)
        ))
    })?;
    let tls = if url.scheme_str() == Some("https") {
        let base = client_config(&spec.tls, &Refusal::default())?;
        let mut config = ClientConfig::clone(&base);
        config.alpn_protocols = vec![b"h2".to_vec()];
        Some(Arc::new(config))
    } else {
        None
    };
    let at = endpoint(&url, None).map_err(RpmSetupError::Server)?;
    let timeout = Duration::from_millis(u64::from(spec.timeout_ms));
    let urls = fetch_config(&url, &at, tls.as_ref(), timeout).map_err(|why| {
        RpmSetupError::Server(format!(
            "no responsiveness configuration: {}",
            linerate_wire::text::peer_text(&why)
        ))
    })?;
    let test = endpoint(&urls.small, urls.test_endpoint.as_deref())
        .map_err(|why| RpmSetupError::Server(format!("the configuration's test host: {why}")))?;
    if test.tls.is_some() != tls.is_some() {
        return Err(RpmSetupError::Server(
            "the configuration's URLs and its own URL differ in scheme (https and http)".into(),
        ));
    }
    Ok(RpmTarget {
        name: test.addr.to_string(),
        server: RpmServer { urls, endpoint: test },
        tls,
    })
}

/// Runs the test against `target`; Ctrl-C (`interrupt`) or a load connection's failure ends it
/// with what was measured (a partial document).
pub fn run_rpm(spec: &RpmSpec, target: &RpmTarget, interrupt: &AtomicBool) -> Result<TestResult, ClientError> {
    let started_unix_ms = crate::unixtime::now_unix_ms();
    let run = crate::engine::rpm::run(spec, &target.server, target.tls.clone(), interrupt)?;
    Ok(crate::summary::rpm::assemble(
        spec,
        &run,
        &target.name,
        HostInfo::read(),
        started_unix_ms,
        Vec::new(),
    ))
}
