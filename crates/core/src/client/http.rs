//! The client's half of an HTTP load: the users run here against any HTTP/1.1 server, and a
//! linerate agent on the server's host, when one is reached, samples that host over the same
//! window; a lost agent stops the users and marks the run partial.

use super::{
    ClientError, ClientOptions, ResultBound, Target, config_towards, forward_interrupt, now_unix_ms, open_session,
    start_all, watch_agent,
};
use crate::engine::Control;
use crate::engine::Sink;
use crate::engine::http::{HttpTarget, HttpUrl};
use crate::metrics::host::HostInfo;
use crate::result::TestResult;
use crate::spec::{HttpSpec, TestSpec};
use crate::summary::check;
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The agent beside an HTTP server: where, and whether its absence is an error.
pub struct HttpAgent {
    pub target: Target,
    /// Named by the user (`--agent`): failing to reach it is an error. Otherwise the client
    /// tried the URL's host and goes on without the server side, with a note.
    pub required: bool,
}

/// Runs an HTTP load against `targets`; an agent on the server's host, when reached, samples it
/// over the same window.
pub fn run_http(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    agent: Option<HttpAgent>,
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> Result<TestResult, ClientError> {
    crate::engine::pin::check_cpus(&spec.cpus)?;
    let test = TestSpec::Http(spec.clone());
    let mut notes = Vec::new();
    let mut session = match agent {
        None => None,
        Some(a) => {
            let try_opts = if a.required {
                opts.clone()
            } else {
                ClientOptions {
                    connect_timeout: opts.connect_timeout.min(Duration::from_secs(1)),
                    ..opts.clone()
                }
            };
            match open_session(&a.target, &test, &try_opts) {
                Ok(s) => Some(s),
                Err(e) if a.required => return Err(e),
                Err(e) => {
                    notes.push(format!(
                        "no linerate agent reached at {} ({e}): the server host is not measured; start `linerate serve` there or give --agent",
                        a.target.name
                    ));
                    None
                }
            }
        }
    };
    if let Some(s) = &mut session {
        start_all(std::slice::from_mut(s))?;
    }
    let started_unix_ms = now_unix_ms();
    let control = Control::default();
    let engine_done = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let test = &test;
    let (local, watched) = std::thread::scope(|scope| {
        let watcher = session.as_mut().map(|s| {
            let (control, engine_done) = (&control, &engine_done);
            let bound = ResultBound {
                spec: test,
                cores: s.host.cores,
                started,
                silent: s.result_timeout,
            };
            // A lost agent stops the users: the server side can no longer be measured, and the
            // run is reported as partial (issue 13).
            scope.spawn(move || {
                watch_agent(
                    &mut s.conn,
                    control,
                    interrupt,
                    engine_done,
                    test.agent_waits_for_stop(),
                    bound,
                )
            })
        });
        scope.spawn(|| forward_interrupt(interrupt, &control, &engine_done));
        let local = crate::engine::http::run(spec, targets, sink, &control);
        engine_done.store(true, Ordering::Relaxed);
        let watched = watcher.map(|w| w.join().expect("watcher thread does not panic"));
        (local, watched)
    });
    let agent_lost = watched.as_ref().is_some_and(|(_, lost)| *lost);
    let agent_result = watched.map(|(r, _)| r);
    let (mut local, run) = local?;
    local.config = Some(config_towards(targets.iter().map(|t| t.addr.ip())));
    notes.extend(local.notes.iter().cloned());
    // A report that cannot be the server side of this test is dropped whole (issue 14).
    let mut refused = false;
    let agent_result = agent_result.map(|r| {
        r.map_err(|e| e.to_string()).and_then(|report| {
            let none = crate::result::SideReport::default();
            check::check_report(test, &report, &none, started.elapsed())
                .map(|()| check::escape_controls(report))
                .map_err(|e| {
                    refused = true;
                    format!("result refused: {e}")
                })
        })
    });
    let agent_report = match agent_result {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            if let Some(s) = &session {
                notes.push(format!("agent {}: {e}", s.target.name));
            }
            None
        }
        None => None,
    };
    if agent_lost && let Some(s) = &session {
        notes.push(format!(
            "agent {}: the control connection was lost during the run; the users stopped at {:.3} s of {:.3} s \
             planned and the figures cover what was measured until then",
            s.target.name,
            local.window_end_ns as f64 / 1e9,
            spec.timing.length_seconds().unwrap_or_default()
        ));
    }
    let server = session.as_ref().map(|s| crate::summary::http::ServerSide {
        name: &s.target.name,
        host: &s.host,
        report: agent_report.as_ref(),
    });
    let mut result =
        crate::summary::http::assemble(spec, HostInfo::read(), &local, &run, server, started_unix_ms, notes);
    result.partial |= agent_lost || refused;
    Ok(result)
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
            Ok(HttpTarget::new(u, addr, keepalive))
        })
        .collect()
}
