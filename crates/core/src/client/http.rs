//! The client's half of an HTTP load: the users run here against any HTTP/1.1 or HTTP/2 servers, and a
//! linerate agent on each server's host, when one is reached, samples that host over the same
//! window; a lost agent stops the users and marks the run partial.

use super::session::{ClientError, ClientOptions, Ended, Run, Target, drive, open_each, start_all};
use crate::engine::Sink;
use crate::engine::http::{HttpReport, HttpTarget, HttpUrl};
use crate::metrics::host::{HostInfo, ReadHostInfo};
use crate::result::TestResult;
use crate::spec::{HttpSpec, TestSpec};
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The agent beside an HTTP server: where, and whether its absence is an error.
pub struct HttpAgent {
    pub target: Target,
    /// Named by the user (`--agent`): failing to reach it is an error. Otherwise the client
    /// tried the URL's host and goes on without the server side, with a note.
    pub required: bool,
}

/// Runs an HTTP load against `targets`; an agent on each server's host, when reached, samples it
/// over the same window.
pub fn run_http(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    agents: &[HttpAgent],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    crate::engine::pin::check_cpus(&spec.cpus)?;
    let test = TestSpec::Http(spec.clone());
    let mut notes = Vec::new();
    // Agents only tried (none named) are given a second to answer.
    let try_opts = if agents.iter().any(|a| a.required) {
        opts.clone()
    } else {
        ClientOptions {
            connect_timeout: opts.connect_timeout.min(Duration::from_secs(1)),
            ..opts.clone()
        }
    };
    let wanted: Vec<Target> = agents.iter().map(|a| a.target.clone()).collect();
    let mut sessions = Vec::new();
    for (a, opened) in agents.iter().zip(open_each(&test, &wanted, &try_opts)) {
        match opened {
            Ok(s) => sessions.push(s),
            Err(e) if a.required => return Err(e),
            Err(e) => notes.push(format!(
                "no linerate agent reached at {} ({e}): that server's host is not measured; start `linerate serve` there or give --agent",
                a.target.name
            )),
        }
    }
    // Where each agent was reached: it samples the servers at that address.
    let ips: Vec<IpAddr> = sessions.iter().map(|s| s.target.addr.ip()).collect();
    start_all(&mut sessions, opts)?;
    let run = Run {
        spec: &test,
        sessions: &mut sessions,
        opts,
        interrupt,
        towards: targets.iter().map(|t| t.addr.ip()).collect(),
        notes,
        peer_ends: false,
    };
    // A lost agent stops the users (the watcher aborts the run): the server side can no longer
    // be measured, and the run is reported as partial.
    let local = |control: &_| crate::engine::http::run(spec, targets, sink, control);
    drive(run, local, |ended, users| assemble(spec, ended, &users, &ips))
}

/// The document of an HTTP load: the users' counts, and each server host's side when its agent's
/// report came.
fn assemble(spec: &HttpSpec, ended: Ended<'_>, users: &HttpReport, ips: &[IpAddr]) -> TestResult {
    let Ended {
        local,
        agents,
        lost,
        refused,
        mut notes,
        started_unix_ms,
        ..
    } = ended;
    let agent_lost = lost.iter().any(|l| *l);
    for (a, _) in agents.iter().zip(&lost).filter(|(_, l)| **l) {
        notes.push(format!(
            "agent {}: the control connection was lost during the run; the users stopped at {:.3} s of {:.3} s \
             planned and the figures cover what was measured until then",
            a.name,
            local.window_end_ns as f64 / 1e9,
            spec.timing.length_seconds().unwrap_or_default()
        ));
    }
    let servers: Vec<crate::summary::http::ServerSide<'_>> = agents
        .iter()
        .zip(ips)
        .filter_map(|(a, ip)| {
            Some(crate::summary::http::ServerSide {
                name: a.name,
                ip: *ip,
                host: a.host?,
                report: a.report,
            })
        })
        .collect();
    let mut result =
        crate::summary::http::assemble(spec, HostInfo::read(), local, users, &servers, started_unix_ms, notes);
    result.partial |= agent_lost || refused;
    result
}

/// Resolves each URL's host and builds its request (`keepalive`: HTTP/1.1 keep-alive, else
/// `Connection: close` on every request).
pub fn http_targets(urls: &[HttpUrl], keepalive: bool) -> Result<Vec<HttpTarget>, ClientError> {
    urls.iter()
        .map(|u| {
            let resolve = |source| ClientError::Resolve {
                host: u.host.clone(),
                source,
            };
            let addr = (u.host.as_str(), u.port)
                .to_socket_addrs()
                .map_err(resolve)?
                .next()
                .ok_or_else(|| resolve(std::io::Error::new(std::io::ErrorKind::NotFound, "no address")))?;
            HttpTarget::new(u, addr, keepalive)
                .map_err(|e| resolve(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))
        })
        .collect()
}
