//! An HTTP load run's document: what the users counted over the steady state (the ramp left
//! out), the client's samplers, and the server host's samplers when an agent ran there.
//!
//! In: the client's two side reports, its host's ([`SideReport`]) and the users' (the engine's
//! [`HttpReport`]), and each server agent's report. Out: the [`TestResult`].

use super::rr::figures;
use super::{host_side_summary, hosts_side_summary};
use crate::engine::http::{HttpReport, ServerCounts};
use crate::engine::run::Deadlines;
use crate::metrics::host::HostInfo;
use crate::result::{
    ConnectionCounts, ConnectionRates, ErrorBudget, ErrorSummary, HostIntervalRecord, HostRecord, HttpIntervalRecord,
    HttpServerSummary, HttpSummary, IntervalRecord, RateFigures, SCHEMA, SideReport, Summary, TestResult,
};
use crate::spec::{HttpSpec, TestSpec};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// A server's host as its agent saw it over the window.
pub(crate) struct ServerSide<'a> {
    pub name: &'a str,
    /// Where the agent was reached: it samples the servers at this address.
    pub ip: IpAddr,
    pub host: &'a HostInfo,
    pub report: Option<&'a SideReport>,
}

/// The agent that sampled `server`'s host: the one at its address; else, when there is one
/// agent and one server address, that agent (an `--agent` reached on another address).
fn agent_of<'s, 'a>(
    server: &ServerCounts,
    agents: &'s [ServerSide<'a>],
    run: &HttpReport,
) -> Option<&'s ServerSide<'a>> {
    let ip = server.addr.ip();
    agents.iter().find(|a| a.ip == ip).or_else(|| match agents {
        [lone] if run.per_server.iter().all(|s| s.addr.ip() == ip) => Some(lone),
        _ => None,
    })
}

/// Each server's share of the load, with its host's samplers when its agent reported.
fn servers(run: &HttpReport, agents: &[ServerSide<'_>]) -> Vec<HttpServerSummary> {
    let secs = run.window_seconds;
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    run.per_server
        .iter()
        .map(|s| {
            let c = &s.counts;
            let agent = agent_of(s, agents, run);
            HttpServerSummary {
                server: s.server.clone(),
                agent: agent.filter(|a| a.report.is_some()).map(|a| a.name.to_string()),
                requests_started: c.requests_started,
                responses: c.responses,
                responses_per_second: per_s(c.responses),
                successful_responses_per_second: per_s(c.successful_responses),
                errors: c.errors,
                connections: ConnectionCounts {
                    attempted: c.connections_attempted,
                    successful: c.connections_successful,
                    unsuccessful: c.connections_unsuccessful,
                    in_flight_at_end: c.connections_in_flight_at_end,
                    per_second: ConnectionRates {
                        attempted: per_s(c.connections_attempted),
                        successful: per_s(c.connections_successful),
                        unsuccessful: per_s(c.connections_unsuccessful),
                    },
                },
                bytes_in: c.bytes_in,
                bits_per_second_in: per_s(c.bytes_in * 8),
                host: agent.and_then(|a| {
                    let r = a.report?;
                    Some(host_side_summary(a.name, r, c.bytes_in, c.responses, 0, secs))
                }),
                // The agent's server, when it serves this URL's port.
                counted_by_server: agent
                    .and_then(|a| a.report?.http_server.as_ref())
                    .filter(|h| h.ports.contains(&s.addr.port()))
                    .cloned(),
            }
        })
        .collect()
}

/// The servers' CPU per TLS handshake they completed, over every agent that reported its
/// server's counts: their CPU seconds over their handshakes, microseconds.
fn server_cpu_us_per_handshake(agents: &[ServerSide<'_>]) -> Option<f64> {
    let (cpu, handshakes) = agents
        .iter()
        .filter_map(|a| a.report?.http_server.as_ref())
        .fold((0.0, 0u64), |(cpu, n), h| {
            (cpu + h.cpu_seconds, n + h.tls_full + h.tls_resumed)
        });
    (handshakes > 0).then(|| cpu * 1e6 / handshakes as f64)
}

/// The users' figures over the window.
pub(crate) fn summarise(spec: &HttpSpec, run: &HttpReport) -> HttpSummary {
    let secs = run.window_seconds;
    let per_s = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
    let lat = |h: &hdrhistogram::Histogram<u64>| (!h.is_empty()).then(|| figures(h));
    let mut status = BTreeMap::new();
    for (i, n) in run.status.iter().enumerate() {
        if *n > 0 {
            let key = if i == 0 { "other".to_string() } else { format!("{i}xx") };
            status.insert(key, *n);
        }
    }
    HttpSummary {
        users: spec.users,
        steady_seconds: secs,
        responses: run.responses,
        responses_per_second: per_s(run.responses as f64),
        successful_responses_per_second: Some(per_s(run.status[2] as f64)),
        failed_percent: {
            let ended = run.status[2] + run.errors.total();
            (ended > 0).then(|| run.errors.total() as f64 * 100.0 / ended as f64)
        },
        max_errors: None,
        servers: Vec::new(),
        requests_started: run.requests_started,
        bits_per_second_in: per_s(run.bytes_in as f64 * 8.0),
        bits_per_second_out: per_s(run.bytes_out as f64 * 8.0),
        bytes_in: run.bytes_in,
        bytes_out: run.bytes_out,
        body_bytes: run.body_bytes,
        response_time_us: lat(&run.response_time),
        ttfb_us: lat(&run.ttfb),
        connect_us: lat(&run.connect),
        tls: spec.urls.iter().any(|u| u.starts_with("https://")).then(|| {
            let t = &run.tls;
            let cpu_us = |ns: u64, n: u64| (n > 0).then(|| ns as f64 / n as f64 / 1e3);
            crate::result::TlsSummary {
                handshakes: t.full + t.resumed,
                full: t.full,
                resumed: t.resumed,
                handshakes_per_second: per_s((t.full + t.resumed) as f64),
                full_per_second: per_s(t.full as f64),
                resumed_per_second: per_s(t.resumed as f64),
                failed: run.errors.tls_failed(),
                full_time_us: lat(&t.full_time),
                resumed_time_us: lat(&t.resumed_time),
                cpu_us_per_full_handshake: cpu_us(t.full_cpu_ns, t.full),
                cpu_us_per_resumed_handshake: cpu_us(t.resumed_cpu_ns, t.resumed),
                server_cpu_us_per_handshake: None,
            }
        }),
        http2: spec.http2.map(|h2| crate::result::Http2Summary {
            streams: h2.streams,
            peer_max_concurrent_streams: run.h2_peer_max_streams,
            capped: run.h2_peer_max_streams.is_some_and(|m| m < u64::from(h2.streams)),
            max_streams_in_flight: run.h2_max_in_flight,
            protocol_errors: run.h2_protocol_errors.values().sum(),
            protocol_error_causes: run
                .h2_protocol_errors
                .iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect(),
        }),
        connections: ConnectionCounts {
            attempted: run.connections_attempted,
            successful: run.connections_successful,
            unsuccessful: run.connections_unsuccessful,
            in_flight_at_end: run.connections_in_flight_at_end,
            per_second: ConnectionRates {
                attempted: per_s(run.connections_attempted as f64),
                successful: per_s(run.connections_successful as f64),
                unsuccessful: per_s(run.connections_unsuccessful as f64),
            },
        },
        errors: ErrorSummary {
            by_class: run.errors,
            total: run.errors.total(),
        },
        status,
        in_flight_at_end: run.in_flight_at_end,
        rate: spec.rate.map(|r| RateFigures {
            requested_per_second: r,
            achieved_per_second: per_s(run.requests_started as f64),
        }),
        queued_late: run.queued_late,
        optimum: None,
        baseline: None,
    }
}

/// The timeline of the run in intervals, ramp included.
pub(crate) fn timeline(spec: &HttpSpec, run: &HttpReport, end_ns: u64) -> Vec<HttpIntervalRecord> {
    let ramp_ns = Deadlines::new(&spec.timing).measure_window().0.as_nanos() as u64;
    let iv = run.interval_ns.max(1);
    let mut out = Vec::new();
    for (i, b) in run.timeline.iter().enumerate() {
        let start = i as u64 * iv;
        if start >= end_ns {
            break;
        }
        let stop = (start + iv).min(end_ns);
        let secs = (stop - start) as f64 / 1e9;
        if secs <= 0.0 {
            continue;
        }
        let users = if spec.rate.is_some() || ramp_ns == 0 {
            spec.users
        } else {
            // User k starts at ramp x k / users: those with k / users <= t / ramp.
            ((stop as f64 / ramp_ns as f64 * f64::from(spec.users)).floor() as u32 + 1).min(spec.users)
        };
        out.push(HttpIntervalRecord {
            start_ns: start,
            end_ns: stop,
            users,
            ramp: start < ramp_ns,
            responses: b.responses,
            responses_per_second: b.responses as f64 / secs,
            bits_per_second_in: b.bytes_in as f64 * 8.0 / secs,
            bits_per_second_out: b.bytes_out as f64 * 8.0 / secs,
            connections_per_second: b.connections as f64 / secs,
            connections_successful_per_second: Some(b.connections_successful as f64 / secs),
            connections_unsuccessful_per_second: Some(b.connections_unsuccessful as f64 / secs),
            errors: b.errors,
            response_time_mean_us: (b.responses > 0).then(|| b.response_time_sum_ns as f64 / b.responses as f64 / 1e3),
            response_time_max_us: (b.responses > 0).then(|| b.response_time_max_ns as f64 / 1e3),
            response_time_p50_us: run.timeline_percentiles_us.get(i).and_then(|p| p[0]),
            response_time_p99_us: run.timeline_percentiles_us.get(i).and_then(|p| p[1]),
        });
    }
    out
}

/// What the reader must know of the run itself: the client's own limits, and a run in which
/// no request succeeded.
fn run_notes(spec: &HttpSpec, run: &HttpReport) -> Vec<String> {
    let mut notes = Vec::new();
    let e = &run.errors;
    if e.local_limit > 0 {
        let limit = run
            .open_files_limit
            .map_or(String::new(), |n| format!(" (open files limit {n})"));
        notes.push(format!(
            "the load generator ran out of file descriptors or local ports{limit}: {} requests failed on this \
             client (local_limit), not on the server; raise `ulimit -n`, use fewer --users than {}, or widen \
             net.ipv4.ip_local_port_range",
            e.local_limit, spec.users
        ));
    }
    if let Some(why) = &run.tls_refusal {
        notes.push(format!(
            "{why}; {} handshakes failed on a certificate",
            e.tls_certificate
        ));
    }
    if let Some(why) = crate::result::h2_protocol_errors_text(run.h2_protocol_errors.iter().map(|(k, n)| (*k, *n))) {
        notes.push(format!(
            "{why}; what was in flight on them is counted as bad_response (docs/http.md, \"HTTP/2\")"
        ));
    }
    let ok = run.status[2];
    if ok == 0 && (run.requests_started > 0 || e.total() > 0) {
        notes.push(format!(
            "every request failed: no 2xx response in the window, {} errors ({}), {} unanswered at the end",
            e.total(),
            e.breakdown(),
            run.in_flight_at_end
        ));
    }
    notes
}

/// `--max-errors` into an HTTP run's document: the budget kept beside the figures it judges
/// (the outcome reads both), and a note when the failed requests passed it.
pub fn apply_max_errors(result: &mut TestResult, budget: Option<ErrorBudget>) {
    let Some(h) = result.summary.http.as_mut() else { return };
    h.max_errors = budget;
    if h.over_error_budget() && !h.every_request_failed() {
        let why = h.failure().unwrap_or_default();
        result.notes.push(format!("the run failed: {why}"));
    }
}

/// The result document of an HTTP run.
pub(crate) fn assemble(
    spec: &HttpSpec,
    client_host: HostInfo,
    client: &SideReport,
    run: &HttpReport,
    agents: &[ServerSide<'_>],
    started_unix_ms: u64,
    mut notes: Vec<String>,
) -> TestResult {
    let mut hosts = BTreeMap::new();
    hosts.insert(
        "client".to_string(),
        HostRecord {
            role: "client".into(),
            info: client_host,
            config: client.config.clone(),
            profile: None,
        },
    );
    let secs = run.window_seconds;
    let sent = host_side_summary(
        "client",
        client,
        run.bytes_out,
        run.requests_started,
        spec.users as usize,
        secs,
    );
    let received = host_side_summary("client", client, run.bytes_in, run.responses, spec.users as usize, secs);
    let planned_ns = Deadlines::new(&spec.timing).deadline_ns().unwrap_or_default();
    let mut intervals: Vec<IntervalRecord> = timeline(spec, run, client.window_end_ns.min(planned_ns))
        .into_iter()
        .map(IntervalRecord::Http)
        .collect();
    intervals.extend(client.timeline.iter().map(|t| {
        IntervalRecord::Host(HostIntervalRecord {
            host: "client".into(),
            sample: t.clone(),
        })
    }));
    let mut partial = client.partial;
    let mut reported = Vec::new();
    for s in agents {
        hosts.insert(
            s.name.to_string(),
            HostRecord {
                role: "agent".into(),
                info: s.host.clone(),
                config: s.report.and_then(|r| r.config.clone()),
                profile: s.report.and_then(|r| r.profile.clone()),
            },
        );
        match s.report {
            Some(r) => {
                partial |= r.partial;
                reported.push((s.name, Some(s.host), r));
                intervals.extend(r.timeline.iter().map(|t| {
                    IntervalRecord::Host(HostIntervalRecord {
                        host: s.name.to_string(),
                        sample: t.clone(),
                    })
                }));
            }
            None => notes.push(format!(
                "agent {}: no report received; the server side is missing",
                s.name
            )),
        }
    }
    // The servers sent what the client read, and read what it wrote: one agent's host, or all
    // of theirs together, each host counted once.
    let server_summary = match &reported[..] {
        [] => None,
        [(name, _, r)] => Some(host_side_summary(name, r, run.bytes_in, run.responses, 0, secs)),
        several => Some(hosts_side_summary(several, run.bytes_in, run.responses, secs)),
    };
    notes.extend(run_notes(spec, run));
    let mut http = summarise(spec, run);
    http.servers = servers(run, agents);
    if let Some(tls) = &mut http.tls {
        tls.server_cpu_us_per_handshake = server_cpu_us_per_handshake(agents);
    }
    TestResult {
        linerate: crate::VERSION.to_string(),
        schema: SCHEMA,
        test: "http".into(),
        started_unix_ms,
        partial,
        error: None,
        options: TestSpec::Http(spec.clone()),
        hosts,
        intervals,
        summary: Summary {
            sent,
            received,
            directions: None,
            agents: Vec::new(),
            streams: Vec::new(),
            udp: None,
            rr: None,
            http: Some(http),
            server: server_summary,
            mix: None,
        },
        notes,
        lab: None,
        from: None,
        iperf3: None,
        latency: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::http::{ServerCounts, TargetCounts};
    use crate::sweep::http::tests::spec;

    /// Two seconds of users' counts: 10 responses (8 of them 2xx, 2 4xx), 12 requests started,
    /// 2000 bytes in, on one server, in two 1 s intervals.
    fn report() -> HttpReport {
        let mut r = HttpReport::empty(2, 1_000_000_000);
        r.window_seconds = 2.0;
        r.responses = 10;
        r.status[2] = 8;
        r.status[4] = 2;
        r.errors.bad_status = 2;
        r.requests_started = 12;
        r.bytes_in = 2000;
        r.connections_attempted = 3;
        r.connections_successful = 3;
        r.in_flight_at_end = 2;
        r.timeline[0].responses = 4;
        r.timeline[1].responses = 6;
        r.timeline_percentiles_us = vec![[Some(100.0), Some(200.0)]];
        r.per_server = vec![ServerCounts {
            server: "127.0.0.1:1".into(),
            addr: ([127, 0, 0, 1], 1).into(),
            counts: TargetCounts {
                responses: 10,
                successful_responses: 8,
                bytes_in: 2000,
                ..TargetCounts::default()
            },
        }];
        r
    }

    #[test]
    fn the_summary_reads_the_users_side_report() {
        let mut s = spec();
        s.timing = crate::spec::Timing::ramp(0.0, 2.0);
        let h = summarise(&s, &report());
        assert_eq!((h.responses, h.requests_started), (10, 12));
        assert_eq!(h.responses_per_second, 5.0);
        assert_eq!(h.successful_responses_per_second, Some(4.0));
        assert_eq!(h.bits_per_second_in, 8000.0);
        assert_eq!(h.failed_percent, Some(20.0), "2 failed of the 10 that ended");
        assert_eq!(
            h.status.into_iter().collect::<Vec<_>>(),
            [("2xx".to_string(), 8), ("4xx".to_string(), 2)]
        );
        assert_eq!((h.connections.attempted, h.connections.per_second.attempted), (3, 1.5));
        assert!(h.tls.is_none() && h.http2.is_none(), "an http:// URL, HTTP/1.1");
        let servers = servers(&report(), &[]);
        assert_eq!(servers.len(), 1);
        assert_eq!(
            (servers[0].responses_per_second, servers[0].host.is_none()),
            (5.0, true)
        );
    }

    #[test]
    fn the_timeline_takes_each_intervals_percentiles_and_stops_at_the_end() {
        let mut s = spec();
        s.timing = crate::spec::Timing::ramp(0.0, 2.0);
        let t = timeline(&s, &report(), 1_500_000_000);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].responses_per_second, t[0].response_time_p50_us),
            (4.0, Some(100.0))
        );
        assert_eq!(t[0].response_time_p99_us, Some(200.0));
        assert_eq!(t[1].end_ns, 1_500_000_000, "cut at the end");
        assert_eq!((t[1].responses_per_second, t[1].response_time_p50_us), (12.0, None));
    }

    #[test]
    fn a_run_without_a_2xx_says_every_request_failed() {
        let mut r = report();
        r.status[2] = 0;
        let notes = run_notes(&spec(), &r);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("every request failed: no 2xx response in the window, 2 errors"));
    }
}
