//! The client's half of an HTTP load: the users run here against any HTTP/1.1 or HTTP/2 servers, and a
//! linerate agent on each server's host, when one is reached, samples that host over the same
//! window; a lost agent stops the users and marks the run partial. With `--probe`, the probes'
//! series on the load's time axis: those on the HTTP/2 load connections assembled with the run,
//! those on a connection of their own added by [`add_probe_series`], the load's time zero kept
//! by [`ZeroClock`](super::ZeroClock).

use super::session::{ClientError, ClientOptions, Ended, Run, Target, drive, open_each, start_all};
use crate::engine::Sink;
use crate::engine::http::{HttpReport, HttpTarget, HttpUrl, ProbeLog, SentProbe};
use crate::metrics::host::{HostInfo, ReadHostInfo};
use crate::result::{IntervalRecord, ProbeOn, ProbeSeries, TestResult};
use crate::spec::{HttpSpec, TestSpec};
use crate::summary::latency::{Answer, OneWay, Probe, series, under_load};
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The name of the self-probe series on the HTTP/2 load connections.
pub const LOAD_SERIES: &str = "http2 on a load connection";

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
    if spec.probe.is_some() && spec.http2.is_some() {
        load_probes(spec, users, &mut result);
    }
    result
}

/// The self probes on the HTTP/2 load connections: their series (its only phase the load),
/// the run's latency until a series on a connection of its own joins it.
fn load_probes(spec: &HttpSpec, users: &HttpReport, result: &mut TestResult) {
    let end_s = load_end_s(spec, result);
    let probes = probes_at(&users.load_probes, 0.0);
    let s = series(LOAD_SERIES, ProbeOn::Load, &probes, Some(users.load_probes_sent), end_s);
    if users.load_probes_unsent > 0 {
        result.notes.push(format!(
            "self probes not sent: {} (due when no load connection could take one: none open, or each \
             still waiting for its last probe)",
            users.load_probes_unsent
        ));
    }
    result.latency = Some(under_load(vec![s], end_s, None));
}

/// Probes sent `sent_ns` (ns) after `offset_s` on the load's time axis.
fn probes_at(sent: &[SentProbe], offset_s: f64) -> Vec<Probe> {
    sent.iter()
        .map(|p| Probe {
            t_s: offset_s + p.sent_ns as f64 / 1e9,
            answer: match p.rtt_ns {
                Some(ns) => Answer::Answered {
                    rtt_ms: ns as f64 / 1e6,
                    one_way: OneWay::Unknown,
                },
                None => Answer::Lost,
            },
        })
        .collect()
}

/// The load's end on its time axis, s: the end of the users' last interval (the load stopped
/// there, early or not); without intervals, the test's length.
pub fn load_end_s(spec: &HttpSpec, result: &TestResult) -> f64 {
    result
        .intervals
        .iter()
        .filter_map(|r| match r {
            IntervalRecord::Http(h) => Some(h.end_ns),
            _ => None,
        })
        .max()
        .map_or_else(
            || spec.timing.length_seconds().unwrap_or_default(),
            |ns| ns as f64 / 1e9,
        )
}

/// Adds the series of probes on a connection of their own (`log`, its clock's zero at `origin`)
/// to the run's latency, on the load's time axis (`zero`: the load's time zero), before the
/// series on the load connections; the headline is made again from both.
pub fn add_probe_series(spec: &HttpSpec, result: &mut TestResult, log: &ProbeLog, origin: Instant, zero: Instant) {
    let end_s = load_end_s(spec, result);
    // The probes' zero against the load's: negative when the probes started first (as they do).
    let offset_s = match origin.checked_duration_since(zero) {
        Some(d) => d.as_secs_f64(),
        None => -zero.duration_since(origin).as_secs_f64(),
    };
    let name = match spec.http2 {
        Some(_) => "http2 on a connection of its own",
        None => "http on a connection of its own",
    };
    let probes = probes_at(&log.probes, offset_s);
    let sent = log.probes.len() as u64 + log.in_flight;
    let mut all: Vec<ProbeSeries> = vec![series(name, ProbeOn::Separate, &probes, Some(sent), end_s)];
    all.extend(result.latency.take().into_iter().flat_map(|l| l.series));
    if log.bad_status > 0 {
        result.notes.push(format!(
            "probes answered with a status other than 2xx, counted lost: {} (the probe asks for \
             /bytes/N, which a linerate server answers)",
            log.bad_status
        ));
    }
    if log.failed_connections > 0 {
        result.notes.push(format!(
            "probe connections that could not be opened: {} (their probes counted lost)",
            log.failed_connections
        ));
    }
    if spec.http2.is_none() {
        result.notes.push(
            "no self-probe series: an HTTP/1.1 load connection has no free stream for a probe (--http2 has one)"
                .to_string(),
        );
    }
    result.latency = Some(under_load(all, end_s, None));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_go_on_the_load_s_axis_and_into_their_phases() {
        // The probes' clock started 1 s before the load's zero; the load ran 2 s.
        let sent = [
            SentProbe {
                sent_ns: 500_000_000,
                rtt_ns: Some(2_000_000),
            },
            SentProbe {
                sent_ns: 1_500_000_000,
                rtt_ns: Some(30_000_000),
            },
            SentProbe {
                sent_ns: 1_600_000_000,
                rtt_ns: None,
            },
            SentProbe {
                sent_ns: 3_500_000_000,
                rtt_ns: Some(3_000_000),
            },
        ];
        let probes = probes_at(&sent, -1.0);
        assert_eq!(probes[0].t_s, -0.5);
        assert_eq!(
            probes[1].answer,
            Answer::Answered {
                rtt_ms: 30.0,
                one_way: OneWay::Unknown
            }
        );
        let s = series("x", ProbeOn::Separate, &probes, Some(5), 2.0);
        assert_eq!((s.sent, s.answered, s.lost), (Some(5), 3, Some(1)));
        let phase = |p: &Option<crate::result::PhaseLatency>| p.as_ref().map(|p| (p.answered, p.lost));
        assert_eq!(phase(&s.idle), Some((1, Some(0))));
        assert_eq!(phase(&s.loaded), Some((1, Some(1))));
        assert_eq!(phase(&s.recovery), Some((1, Some(0))));
    }
}
