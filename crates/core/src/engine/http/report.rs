//! The HTTP client's side report: what the users counted, as figures the summary reads
//! (`summary::http`), the way a TCP, UDP or rr run's figures travel in its streams' reports.
//!
//! In: the workers' merged counts ([`super::HttpRun`]) and the URLs they fetched. Out: an
//! [`HttpReport`], whose per-server counts and per-interval percentiles are made here once the
//! workers are done, so nothing outside the engine reads the workers' own state.

use super::{HttpErrors, HttpRun, HttpTarget, SentProbe, histogram};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counts over one interval of the run (by the time each event happened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpBucket {
    pub responses: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Connections begun in the interval (attempted), and of those, by outcome whenever it came.
    pub connections: u64,
    #[serde(default)]
    pub connections_successful: u64,
    #[serde(default)]
    pub connections_unsuccessful: u64,
    pub response_time_sum_ns: u64,
    pub response_time_max_ns: u64,
}

impl HttpBucket {
    pub(super) fn add(&mut self, o: &HttpBucket) {
        self.responses += o.responses;
        self.errors += o.errors;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.connections += o.connections;
        self.connections_successful += o.connections_successful;
        self.connections_unsuccessful += o.connections_unsuccessful;
        self.response_time_sum_ns += o.response_time_sum_ns;
        self.response_time_max_ns = self.response_time_max_ns.max(o.response_time_max_ns);
    }
}

/// What the client counted of one URL (one server's share of the totals), in the window: each
/// count as its total in [`HttpReport`] counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TargetCounts {
    pub requests_started: u64,
    /// Complete responses, any status; of those, 2xx.
    pub responses: u64,
    pub successful_responses: u64,
    /// Failed requests of every class (a status other than 2xx included).
    pub errors: u64,
    pub bytes_in: u64,
    pub connections_attempted: u64,
    pub connections_successful: u64,
    pub connections_unsuccessful: u64,
    pub connections_in_flight_at_end: u64,
}

impl TargetCounts {
    pub fn add(&mut self, o: &TargetCounts) {
        self.requests_started += o.requests_started;
        self.responses += o.responses;
        self.successful_responses += o.successful_responses;
        self.errors += o.errors;
        self.bytes_in += o.bytes_in;
        self.connections_attempted += o.connections_attempted;
        self.connections_successful += o.connections_successful;
        self.connections_unsuccessful += o.connections_unsuccessful;
        self.connections_in_flight_at_end += o.connections_in_flight_at_end;
    }
}

/// One server's share of the load: its URLs' counts added up.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerCounts {
    /// `HOST[:PORT]` as the URLs name it.
    pub server: String,
    pub addr: std::net::SocketAddr,
    pub counts: TargetCounts,
}

/// The per-URL counts added up per server, in the order first named.
pub(super) fn per_server(targets: &[HttpTarget], per_target: &[TargetCounts]) -> Vec<ServerCounts> {
    let mut out: Vec<ServerCounts> = Vec::new();
    for (t, c) in targets.iter().zip(per_target) {
        match out.iter_mut().find(|s| s.server == t.server) {
            Some(s) => s.counts.add(c),
            None => out.push(ServerCounts {
                server: t.server.clone(),
                addr: t.addr,
                counts: *c,
            }),
        }
    }
    out
}

/// The TLS handshakes an https run completed, of connections begun in the window (as the
/// connection counts count them); failed ones are errors of their class (`tls_*`).
#[derive(Clone, Debug)]
pub struct TlsRun {
    pub full: u64,
    pub resumed: u64,
    /// From TCP connected to the handshake done, ns.
    pub full_time: Histogram<u64>,
    pub resumed_time: Histogram<u64>,
    /// The client thread's CPU time spent in the handshakes (rustls's work and the socket
    /// calls it made), ns (CLOCK_THREAD_CPUTIME_ID around each step).
    pub full_cpu_ns: u64,
    pub resumed_cpu_ns: u64,
}

impl TlsRun {
    pub(super) fn new() -> TlsRun {
        TlsRun {
            full: 0,
            resumed: 0,
            full_time: histogram(),
            resumed_time: histogram(),
            full_cpu_ns: 0,
            resumed_cpu_ns: 0,
        }
    }

    /// A completed handshake: resumed or full, `took` ns from TCP connected, `cpu_ns` of this
    /// thread's CPU in it.
    pub(super) fn count(&mut self, resumed: bool, took: u64, cpu_ns: u64) {
        let (count, time, cpu) = if resumed {
            (&mut self.resumed, &mut self.resumed_time, &mut self.resumed_cpu_ns)
        } else {
            (&mut self.full, &mut self.full_time, &mut self.full_cpu_ns)
        };
        *count += 1;
        *cpu += cpu_ns;
        let _ = time.record(took.clamp(1, super::HIST_MAX_NS));
    }

    fn add(&mut self, o: &TlsRun) {
        self.full += o.full;
        self.resumed += o.resumed;
        let _ = self.full_time.add(&o.full_time);
        let _ = self.resumed_time.add(&o.resumed_time);
        self.full_cpu_ns += o.full_cpu_ns;
        self.resumed_cpu_ns += o.resumed_cpu_ns;
    }
}

/// What the client counted, inside the steady-state window unless said otherwise.
#[derive(Clone, Debug)]
pub struct HttpReport {
    /// Complete responses (any status).
    pub responses: u64,
    /// By status class: index = status / 100 (1xx to 5xx; 0 = other).
    pub status: [u64; 6],
    pub requests_started: u64,
    /// Bytes read (heads and bodies) and written (requests).
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Body bytes of complete responses.
    pub body_bytes: u64,
    pub connections_attempted: u64,
    pub connections_successful: u64,
    pub connections_unsuccessful: u64,
    /// Connections begun in the window and still connecting at the end.
    pub connections_in_flight_at_end: u64,
    pub errors: HttpErrors,
    /// Round trip of each complete response: from the request's intended start to its last byte.
    pub response_time: Histogram<u64>,
    /// From the request's intended start to the response's first byte, for the same responses
    /// as `response_time`.
    pub ttfb: Histogram<u64>,
    /// connect() to established, new connections.
    pub connect: Histogram<u64>,
    /// https: the handshakes of connections begun in the window.
    pub tls: TlsRun,
    /// Requests still unanswered when the time was up (not errors).
    pub in_flight_at_end: u64,
    /// Open loop: requests that waited for a free connection past their scheduled start.
    pub queued_late: u64,
    /// This process's soft limit on open files when the run began (RLIMIT_NOFILE); absent
    /// when it could not be read. Named in the note when connections failed for want of one.
    pub open_files_limit: Option<u64>,
    /// The window: from the end of the ramp to the end, seconds.
    pub window_seconds: f64,
    /// Every interval of the run, ramp included, `interval_ns` long.
    pub timeline: Vec<HttpBucket>,
    /// Each interval's response time median and 99th percentile, µs (the first
    /// `bins::MAX_INTERVALS` of `timeline`'s; None for an interval without responses).
    pub timeline_percentiles_us: Vec<[Option<f64>; 2]>,
    pub interval_ns: u64,
    /// The counts per server (URLs of one authority added up), in the order first named.
    pub per_server: Vec<ServerCounts>,
    /// HTTP/2: the lowest SETTINGS_MAX_CONCURRENT_STREAMS a server sent (None: none sent one),
    /// and the most streams in flight at once on one connection, over the whole run.
    pub h2_peer_max_streams: Option<u64>,
    pub h2_max_in_flight: u64,
    /// HTTP/2: connections ended because the server broke the protocol or went past one of the
    /// client's bounds, by cause (`h2read::Violation::key`), over the whole run.
    pub h2_protocol_errors: BTreeMap<&'static str, u64>,
    /// Why the first server certificate of the run was refused, in words with the fix (every
    /// refusal is counted in `errors.tls_certificate`).
    pub tls_refusal: Option<String>,
    /// HTTP/2 with `--probe`: the probes sent on the load's own connections (a small GET on a
    /// stream of its own, not counted in the load's figures), each by its send time (ns since
    /// time zero) and round trip (None: lost); those neither were in flight at the end.
    pub load_probes: Vec<SentProbe>,
    pub load_probes_sent: u64,
    /// Probes due when no load connection of the worker could take one (none open, or each
    /// still waiting for its last probe): not sent.
    pub load_probes_unsent: u64,
}

impl HttpReport {
    /// A report of nothing counted yet: `buckets` intervals of `interval_ns`.
    pub(crate) fn empty(buckets: usize, interval_ns: u64) -> HttpReport {
        HttpReport {
            responses: 0,
            status: [0; 6],
            requests_started: 0,
            bytes_in: 0,
            bytes_out: 0,
            body_bytes: 0,
            connections_attempted: 0,
            connections_successful: 0,
            connections_unsuccessful: 0,
            connections_in_flight_at_end: 0,
            errors: HttpErrors::default(),
            response_time: histogram(),
            ttfb: histogram(),
            connect: histogram(),
            tls: TlsRun::new(),
            in_flight_at_end: 0,
            queued_late: 0,
            open_files_limit: None,
            window_seconds: 0.0,
            timeline: vec![HttpBucket::default(); buckets],
            timeline_percentiles_us: Vec::new(),
            interval_ns,
            per_server: Vec::new(),
            h2_peer_max_streams: None,
            h2_max_in_flight: 0,
            h2_protocol_errors: Default::default(),
            tls_refusal: None,
            load_probes: Vec::new(),
            load_probes_sent: 0,
            load_probes_unsent: 0,
        }
    }

    /// Another worker's counts added in (the run-wide figures: lowest peer limit, highest in
    /// flight).
    pub(super) fn add(&mut self, o: &HttpReport) {
        self.responses += o.responses;
        for (a, b) in self.status.iter_mut().zip(o.status) {
            *a += b;
        }
        self.requests_started += o.requests_started;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.body_bytes += o.body_bytes;
        self.connections_attempted += o.connections_attempted;
        self.connections_successful += o.connections_successful;
        self.connections_unsuccessful += o.connections_unsuccessful;
        self.connections_in_flight_at_end += o.connections_in_flight_at_end;
        self.errors.add(&o.errors);
        let _ = self.response_time.add(&o.response_time);
        let _ = self.ttfb.add(&o.ttfb);
        let _ = self.connect.add(&o.connect);
        self.tls.add(&o.tls);
        self.in_flight_at_end += o.in_flight_at_end;
        self.queued_late += o.queued_late;
        for (a, b) in self.timeline.iter_mut().zip(&o.timeline) {
            a.add(b);
        }
        self.h2_peer_max_streams = match (self.h2_peer_max_streams, o.h2_peer_max_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.h2_max_in_flight = self.h2_max_in_flight.max(o.h2_max_in_flight);
        for (k, n) in &o.h2_protocol_errors {
            *self.h2_protocol_errors.entry(k).or_default() += n;
        }
        self.load_probes.extend_from_slice(&o.load_probes);
        self.load_probes_sent += o.load_probes_sent;
        self.load_probes_unsent += o.load_probes_unsent;
    }
}

impl HttpRun {
    /// The side report of the workers' merged counts: per-URL counts added up per server of
    /// `targets`, each interval's response times as its median and 99th percentile.
    pub(super) fn into_report(self, targets: &[HttpTarget]) -> HttpReport {
        let mut report = self.report;
        report.per_server = per_server(targets, &self.per_target);
        report.timeline_percentiles_us = self
            .timeline_response_time
            .iter()
            .map(|t| [t.quantile(0.5), t.quantile(0.99)])
            .collect();
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::http::HttpUrl;

    fn target(url: &str, port: u16) -> HttpTarget {
        let u = HttpUrl::parse(url).expect("a URL");
        HttpTarget::new(&u, ([127, 0, 0, 1], port).into(), true).expect("an http URL")
    }

    fn counts(responses: u64) -> TargetCounts {
        TargetCounts {
            responses,
            successful_responses: responses,
            bytes_in: 100 * responses,
            ..TargetCounts::default()
        }
    }

    #[test]
    fn the_report_adds_urls_up_per_server_in_the_order_first_named() {
        let targets = [
            target("http://127.0.0.1:81/a", 81),
            target("http://127.0.0.1:82/", 82),
            target("http://127.0.0.1:81/b", 81),
        ];
        let mut run = HttpRun::empty(2, 1_000_000_000, targets.len());
        run.per_target = vec![counts(3), counts(5), counts(7)];
        run.timeline_response_time[1].record(2_000_000);
        let report = run.into_report(&targets);
        let servers: Vec<(&str, u64, u64)> = report
            .per_server
            .iter()
            .map(|s| (s.server.as_str(), s.counts.responses, s.counts.bytes_in))
            .collect();
        assert_eq!(servers, [("127.0.0.1:81", 10, 1000), ("127.0.0.1:82", 5, 500)]);
        assert_eq!(report.timeline_percentiles_us.len(), 2);
        assert_eq!(
            report.timeline_percentiles_us[0],
            [None, None],
            "no response: no percentile"
        );
        let [p50, p99] = report.timeline_percentiles_us[1].map(|p| p.expect("one response"));
        assert!((p50 - 2000.0).abs() <= 2000.0 / 8.0 && p50 == p99, "{p50} {p99}");
    }

    #[test]
    fn adding_reports_keeps_the_lowest_peer_limit_and_the_most_in_flight() {
        let mut a = HttpReport::empty(1, 1);
        let mut b = HttpReport::empty(1, 1);
        a.responses = 2;
        a.status[2] = 2;
        a.h2_peer_max_streams = Some(100);
        a.h2_max_in_flight = 7;
        a.h2_protocol_errors.insert("flow_control", 1);
        b.responses = 3;
        b.status[5] = 3;
        b.timeline[0].responses = 3;
        b.h2_peer_max_streams = Some(10);
        b.h2_max_in_flight = 4;
        b.h2_protocol_errors.insert("flow_control", 2);
        a.add(&b);
        assert_eq!((a.responses, a.status), (5, [0, 0, 2, 0, 0, 3]));
        assert_eq!(a.timeline[0].responses, 3);
        assert_eq!((a.h2_peer_max_streams, a.h2_max_in_flight), (Some(10), 7));
        assert_eq!(a.h2_protocol_errors["flow_control"], 3);
        let mut none = HttpReport::empty(1, 1);
        none.add(&HttpReport::empty(1, 1));
        assert_eq!(none.h2_peer_max_streams, None, "no server sent a limit");
    }
}
