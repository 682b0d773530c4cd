//! An HTTP test, this end's half: the client loads an HTTP server on this host; the agent only
//! samples the host from `started` until the client says the run is over, or until nothing has
//! moved on its interface toward the client for the idle limit. When the URLs name a
//! port of the HTTP server running beside the agent (`serve --http-port`, `--https-port`), the
//! agent also reports that server's counts over the test.

use super::session::{Accepted, Quiet, Refusal, new_cookie};
use crate::engine::http::HttpUrl;
use crate::httpd::{HttpdCounters, HttpdStats};
use crate::result::{HttpServerCounts, SideReport};
use crate::spec::HttpSpec;
use std::time::Duration;

pub(super) fn run(t: &mut Accepted<'_, '_>, spec: &HttpSpec) -> Result<(), Refusal> {
    let cookie = new_cookie();
    t.accepted(&cookie, Vec::new())?;
    t.await_start()?;
    let servers = servers_named(&t.state.config.http_servers, spec);
    // Read before the client is told to start: its first connections count.
    let base = sum(&servers);
    t.started()?;
    let peer = t.conn.peer().ip();
    // The users' traffic crosses it: what moves there keeps the test from the idle rule.
    let towards = crate::metrics::host::interface_towards(peer);
    t.run_and_report(Some(peer), |control| {
        let mut report = crate::engine::http::sample_host(spec, towards.as_deref(), &mut Quiet, control);
        if let Some(base) = base {
            report.http_server = Some(counts(&servers, &base, &report));
        }
        Ok(report)
    })
}

/// The agent's servers on a port the URLs name, with the scheme they speak there.
fn servers_named(servers: &[HttpdCounters], spec: &HttpSpec) -> Vec<HttpdCounters> {
    let urls: Vec<HttpUrl> = spec.urls.iter().filter_map(|u| HttpUrl::parse(u).ok()).collect();
    servers
        .iter()
        .filter(|s| {
            urls.iter()
                .any(|u| u.port == s.local_addr().port() && u.tls == s.is_https())
        })
        .cloned()
        .collect()
}

/// How long the agent waits at most for its servers' workers to publish what they served
/// before a test starts and after it ends (they do every 100 ms).
const SETTLE_LIMIT: Duration = Duration::from_secs(1);

/// The servers' counts summed, everything served before the call in; None when there is no
/// server.
fn sum(servers: &[HttpdCounters]) -> Option<HttpdStats> {
    if servers.is_empty() {
        return None;
    }
    let mut total = HttpdStats::default();
    for s in servers {
        total.add(&s.settled_stats(SETTLE_LIMIT));
    }
    Some(total)
}

/// The servers' counts since `base`, with this process's CPU over the agent's window.
fn counts(servers: &[HttpdCounters], base: &HttpdStats, report: &SideReport) -> HttpServerCounts {
    let d = sum(servers).unwrap_or_default().since(base);
    let cpu_seconds = report.cpu.process_user_seconds + report.cpu.process_system_seconds;
    let per = |n: u64| (n > 0).then(|| cpu_seconds * 1e6 / n as f64);
    HttpServerCounts {
        ports: servers.iter().map(|s| s.local_addr().port()).collect(),
        connections_accepted: d.connections_accepted,
        requests: d.requests,
        tls_full: d.tls_full,
        tls_resumed: d.tls_resumed,
        tls_failed: d.tls_failed,
        h2_connections: d.h2_connections,
        h2_streams: d.h2_streams,
        h2_resets: d.h2_resets,
        h2_goaways: d.h2_goaways,
        cpu_seconds,
        cpu_us_per_handshake: per(d.tls_full + d.tls_resumed),
        cpu_us_per_request: per(d.requests),
    }
}
