//! The agent's counters for Prometheus (`serve --metrics ADDR`): what it accepted,
//! refused and moved, kept by the official client library (`prometheus-client`) and served on
//! `GET /metrics` by one small thread of its own.
//!
//! Nothing here runs per packet: a test's bytes and datagrams are added once, from this end's
//! report when the test ends ([`Exporter::test_report`]); everything else counts events
//! (accepted, refused, ended, a profile run). docs/metrics.md lists every metric.
//!
//! The endpoint serves its connections at once from one `poll(2)` loop, each within
//! [`REQUEST_TIMEOUT`] of its accept in all, at most [`MAX_CONNECTIONS`] of them (a new one past
//! that closes the oldest still waiting for its request), and reads at most
//! [`MAX_REQUEST_BYTES`] of a request: a slow or hostile peer holds its own connections only,
//! never delays another's scrape. It
//! speaks OpenMetrics 1.0.0 unless the scraper asks for the Prometheus text format (0.0.4) only
//! (`Accept: text/plain`, as `promtool check metrics` wants it): the same samples either way.

use super::config::AgentEvent;
use crate::proto::ErrorKind;
use crate::result::{Role, SideReport};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry, Unit};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long one scrape may take in all, from accept to the last byte written.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// A scrape's request head, at most.
const MAX_REQUEST_BYTES: usize = 8 * 1024;
/// Connections the endpoint holds at once (a Prometheus server scrapes over one at a time).
pub const MAX_CONNECTIONS: usize = 64;
/// How often the loop looks at the stop flag when nothing happens.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// The content type of the OpenMetrics exposition.
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of the Prometheus text format.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

type Kind = [(&'static str, &'static str); 1];
type KindDirection = [(&'static str, &'static str); 2];
type Reason = [(&'static str, &'static str); 1];

/// Test durations' buckets, seconds: 0.1 s to about 30 min.
fn duration_buckets() -> Histogram {
    Histogram::new([0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0])
}

/// One metric of the registration table: its name, unit, help and the metric.
type Row = (&'static str, Option<Unit>, &'static str, Box<dyn Metric>);

/// A metric of any type as the registry takes one (`impl Metric`), so that one table can list
/// them all; it forwards every call, `is_empty` too (an empty family prints no descriptor).
#[derive(Debug)]
struct Registered(Box<dyn Metric>);

impl EncodeMetric for Registered {
    fn encode(&self, encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> MetricType {
        self.0.metric_type()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The agent's counters and the registry that names them.
pub(super) struct Exporter {
    registry: Registry,
    accepted: Family<Kind, Counter>,
    refused: Family<Reason, Counter>,
    failed: Family<Kind, Counter>,
    running: Gauge,
    bytes: Family<KindDirection, Counter>,
    datagrams: Family<KindDirection, Counter>,
    duration: Family<Kind, Histogram>,
    handshake_failures: Family<Reason, Counter>,
    profile_runs: Counter,
    profile_failures: Counter,
}

/// An error kind as a label value: its name in the protocol.
fn reason(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Version => "version",
        ErrorKind::Auth => "auth",
        ErrorKind::Busy => "busy",
        ErrorKind::BadSpec => "bad_spec",
        ErrorKind::Protocol => "protocol",
        ErrorKind::Failed => "failed",
    }
}

impl Default for Exporter {
    fn default() -> Exporter {
        let mut m = Exporter {
            registry: Registry::with_prefix("linerate"),
            accepted: Family::default(),
            refused: Family::default(),
            failed: Family::default(),
            running: Gauge::default(),
            bytes: Family::default(),
            datagrams: Family::default(),
            duration: Family::new_with_constructor(duration_buckets),
            handshake_failures: Family::default(),
            profile_runs: Counter::default(),
            profile_failures: Counter::default(),
        };
        // One row a metric: name, unit, help, the metric (on one line each, so that the table
        // reads as one).
        #[rustfmt::skip]
        let table: [Row; 10] = [
            ("tests_accepted", None, "Tests this agent accepted, by kind (a third-party test counts as its kind)", Box::new(m.accepted.clone())),
            ("tests_refused", None, "Test requests refused before they began, by reason (the protocol's error kind)", Box::new(m.refused.clone())),
            ("tests_failed", None, "Accepted tests that ended without this end's report, by kind", Box::new(m.failed.clone())),
            ("tests_running", None, "Tests running now", Box::new(m.running.clone())),
            ("test", Some(Unit::Bytes), "Bytes this agent's end of tests moved, by kind and direction (sent, received), added when each test ends", Box::new(m.bytes.clone())),
            ("test_datagrams", None, "UDP datagrams this agent's end of tests sent or received, by kind and direction, added when each test ends", Box::new(m.datagrams.clone())),
            ("test_duration", Some(Unit::Seconds), "How long accepted tests ran, from acceptance to their end, by kind", Box::new(m.duration.clone())),
            ("handshake_failures", None, "Connections refused before a test request was read (version, auth, busy, protocol), by reason", Box::new(m.handshake_failures.clone())),
            ("profile_runs", None, "Profile commands run before a test (--profile)", Box::new(m.profile_runs.clone())),
            ("profile_failures", None, "Profile commands that failed, refusing their test", Box::new(m.profile_failures.clone())),
        ];
        for (name, unit, help, metric) in table {
            match unit {
                Some(unit) => m.registry.register_with_unit(name, help, unit, Registered(metric)),
                None => m.registry.register(name, help, Registered(metric)),
            }
        }
        m
    }
}

impl Exporter {
    /// Counts what an event tells: a test accepted, a test ended (and its duration), and
    /// refusals that are not the handshake's or a request's (those are counted where they happen).
    pub(super) fn event(&self, event: &AgentEvent) {
        match event {
            AgentEvent::TestStarted { test, .. } => {
                self.accepted.get_or_create(&[("kind", test)]).inc();
                self.running.inc();
            }
            AgentEvent::TestEnded { test, completed, .. } => {
                self.running.dec();
                if !completed {
                    self.failed.get_or_create(&[("kind", test)]).inc();
                }
            }
            AgentEvent::Refused { .. } | AgentEvent::UndoFailed { .. } | AgentEvent::Iperf3Result { .. } => {}
        }
    }

    /// A connection refused before its request was read.
    pub(super) fn handshake_failed(&self, kind: ErrorKind) {
        self.handshake_failures.get_or_create(&[("reason", reason(kind))]).inc();
    }

    /// A test request refused before its test began.
    pub(super) fn refused(&self, kind: ErrorKind) {
        self.refused.get_or_create(&[("reason", reason(kind))]).inc();
    }

    /// A test of `kind` that ran `elapsed` from its acceptance.
    pub(super) fn duration(&self, kind: &'static str, elapsed: Duration) {
        self.duration
            .get_or_create(&[("kind", kind)])
            .observe(elapsed.as_secs_f64());
    }

    /// A profile's command ran; `ok`: it succeeded.
    pub(super) fn profile_run(&self, ok: bool) {
        self.profile_runs.inc();
        if !ok {
            self.profile_failures.inc();
        }
    }

    /// Adds what this end of a test of `kind` moved, from its report: every stream's bytes over
    /// the whole run (warm-up included) by its role, and a UDP stream's datagrams.
    pub(super) fn test_report(&self, kind: &'static str, report: &SideReport) {
        let (mut sent, mut received, mut dg_sent, mut dg_received) = (0u64, 0u64, 0u64, 0u64);
        for s in &report.streams {
            match s.role {
                Role::Send => sent += s.total_bytes,
                Role::Receive => received += s.total_bytes,
            }
            dg_sent += s.udp_send.as_ref().map_or(0, |u| u.datagrams);
            dg_received += s.udp_receive.as_ref().map_or(0, |u| u.datagrams);
        }
        self.moved(kind, sent, received);
        if kind == "udp" {
            self.datagrams
                .get_or_create(&[("kind", kind), ("direction", "sent")])
                .inc_by(dg_sent);
            self.datagrams
                .get_or_create(&[("kind", kind), ("direction", "received")])
                .inc_by(dg_received);
        }
    }

    /// Adds bytes moved by a test of `kind`, each direction as this agent saw it.
    pub(super) fn moved(&self, kind: &'static str, sent: u64, received: u64) {
        self.bytes
            .get_or_create(&[("kind", kind), ("direction", "sent")])
            .inc_by(sent);
        self.bytes
            .get_or_create(&[("kind", kind), ("direction", "received")])
            .inc_by(received);
    }

    /// The exposition in OpenMetrics text, `# EOF` last.
    pub(super) fn openmetrics(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String does not fail");
        out
    }
}

/// The same samples in the Prometheus text format (0.0.4): a counter's `# HELP` and `# TYPE`
/// name its samples (with `_total`), and the OpenMetrics-only lines (`# UNIT`, `# EOF`) go.
pub fn openmetrics_to_text(openmetrics: &str) -> String {
    let mut counters = std::collections::HashSet::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some(name) = rest.strip_suffix(" counter")
        {
            counters.insert(name.to_string());
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "].into_iter().find(|p| line.starts_with(p));
        match meta {
            Some(p) => {
                let rest = &line[p.len()..];
                let name = rest.split(' ').next().unwrap_or_default();
                if counters.contains(name) {
                    out += &format!("{p}{name}_total{}", &rest[name.len()..]);
                } else {
                    out += line;
                }
            }
            None => out += line,
        }
        out.push('\n');
    }
    out
}

/// Whether a request's `Accept` header asks for the Prometheus text format rather than
/// OpenMetrics: it names `text/plain` and not `application/openmetrics-text`.
fn wants_text(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.contains("text/plain") && !a.contains("application/openmetrics-text"))
}

/// Serves `GET /metrics` on `listener` until `stopping` is set: every connection at once on
/// non-blocking sockets, one `poll(2)` loop on this thread. A connection is read
/// until its head is whole, then its answer written as the client takes it, all within
/// [`REQUEST_TIMEOUT`] of its accept; past [`MAX_CONNECTIONS`] a new connection closes the
/// oldest one still waiting for its request (else the oldest). No client waits for another.
pub(super) fn serve(listener: &TcpListener, metrics: &Exporter, stopping: &AtomicBool) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    let mut clients: Vec<Client> = Vec::with_capacity(MAX_CONNECTIONS);
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(MAX_CONNECTIONS + 1);
    let mut accepted = 0u64;
    while !stopping.load(Ordering::SeqCst) {
        let now = Instant::now();
        let soonest = clients.iter().map(|c| c.deadline).min();
        let wait = soonest.map_or(POLL_EVERY, |d| d.saturating_duration_since(now).min(POLL_EVERY));
        fds.clear();
        fds.push(libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        fds.extend(clients.iter().map(|c| libc::pollfd {
            fd: c.stream.as_raw_fd(),
            events: if c.answer.is_empty() {
                libc::POLLIN
            } else {
                libc::POLLOUT
            },
            revents: 0,
        }));
        // A millisecond at least: a deadline due now is handled on the next turn, not spun on.
        let ms = wait.as_millis().clamp(1, POLL_EVERY.as_millis()) as libc::c_int;
        // SAFETY: poll(2) on `fds`, which lives across the call and holds `fds.len()` entries.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        let now = Instant::now();
        // Connections first, so a request already sent is read before an accept could evict it.
        for i in (0..clients.len()).rev() {
            let ready = fds[i + 1].revents != 0;
            let done = (ready && clients[i].step(metrics)) || clients[i].deadline <= now;
            if done {
                let c = clients.swap_remove(i);
                let _ = c.stream.shutdown(std::net::Shutdown::Write);
            }
        }
        if fds[0].revents == 0 {
            continue;
        }
        // Every connection waiting, taken in this turn.
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if clients.len() >= MAX_CONNECTIONS {
                        let oldest = clients
                            .iter()
                            .enumerate()
                            .min_by_key(|(_, c)| (!c.answer.is_empty(), c.seq))
                            .map(|(i, _)| i);
                        if let Some(i) = oldest {
                            clients.swap_remove(i);
                        }
                    }
                    accepted += 1;
                    clients.push(Client {
                        seq: accepted,
                        stream,
                        deadline: Instant::now() + REQUEST_TIMEOUT,
                        request: Vec::new(),
                        answer: Vec::new(),
                        written: 0,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // EMFILE and the like: the listener stays readable; try again after a pause.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    break;
                }
            }
        }
    }
}

/// One connection to the endpoint: its request head as it arrives, then its answer as the
/// client takes it.
struct Client {
    /// Its place in the order of accepts: the lowest is the oldest.
    seq: u64,
    stream: TcpStream,
    /// Accept plus [`REQUEST_TIMEOUT`]: closed then, answered or not.
    deadline: Instant,
    /// The request head so far (at most [`MAX_REQUEST_BYTES`]).
    request: Vec<u8>,
    /// The whole answer, head and body, once the head is in; empty while reading.
    answer: Vec<u8>,
    written: usize,
}

impl Client {
    /// Reads or writes what the socket allows now; true when the connection is done with
    /// (answered, closed by the client, a head too large, an error).
    fn step(&mut self, metrics: &Exporter) -> bool {
        if self.answer.is_empty() {
            let mut buf = [0u8; 2048];
            loop {
                match self.stream.read(&mut buf) {
                    Ok(0) => return true,
                    Ok(n) => {
                        let searched = self.request.len().saturating_sub(3);
                        self.request.extend_from_slice(&buf[..n]);
                        if let Some(i) = self.request[searched..].windows(4).position(|w| w == b"\r\n\r\n") {
                            self.answer = answer(&self.request[..searched + i + 4], metrics);
                            break;
                        }
                        if self.request.len() >= MAX_REQUEST_BYTES {
                            return true;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                    Err(_) => return true,
                }
            }
        }
        while self.written < self.answer.len() {
            match self.stream.write(&self.answer[self.written..]) {
                Ok(0) => return true,
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(_) => return true,
            }
        }
        true
    }
}

/// The answer to one request head (its blank line included): status, headers and body.
fn answer(head: &[u8], metrics: &Exporter) -> Vec<u8> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    let (status, content_type, body) = match req.parse(head) {
        Ok(httparse::Status::Complete(_)) if req.method == Some("GET") || req.method == Some("HEAD") => {
            let path = req.path.unwrap_or_default();
            if path == "/metrics" || path.starts_with("/metrics?") {
                let accept = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("accept"))
                    .and_then(|h| std::str::from_utf8(h.value).ok());
                let text = metrics.openmetrics();
                if wants_text(accept) {
                    ("200 OK", TEXT_CONTENT_TYPE, openmetrics_to_text(&text))
                } else {
                    ("200 OK", OPENMETRICS_CONTENT_TYPE, text)
                }
            } else {
                (
                    "404 Not Found",
                    "text/plain; charset=utf-8",
                    "only /metrics here\n".into(),
                )
            }
        }
        Ok(httparse::Status::Complete(_)) => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "GET /metrics\n".into(),
        ),
        _ => ("400 Bad Request", "text/plain; charset=utf-8", "bad request\n".into()),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if req.method != Some("HEAD") {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives every family a sample, so that every name shows.
    fn sample_every_family(m: &Exporter) {
        m.event(&AgentEvent::TestStarted {
            peer: "127.0.0.1:1".parse().expect("addr"),
            test: "udp",
        });
        m.refused(ErrorKind::Busy);
        m.handshake_failed(ErrorKind::Auth);
        m.duration("udp", Duration::from_millis(1500));
        m.moved("udp", 1, 2);
        m.test_report("udp", &SideReport::default());
        m.profile_run(false);
        m.event(&AgentEvent::TestEnded {
            peer: "127.0.0.1:1".parse().expect("addr"),
            test: "udp",
            completed: false,
        });
    }

    /// Prometheus' rules for names: the data model's characters, base units, counters ending
    /// in `_total` (from the encoder), no `_bps` or other scaled units.
    #[test]
    fn issue_25_every_metric_name_follows_prometheus_rules() {
        let m = Exporter::default();
        sample_every_family(&m);
        let text = m.openmetrics();
        assert!(text.ends_with("# EOF\n"), "{text}");
        let mut types = std::collections::BTreeMap::new();
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let mut parts = line[7..].split(' ');
            types.insert(
                parts.next().expect("name").to_string(),
                parts.next().expect("type").to_string(),
            );
        }
        let valid = |n: &str| {
            n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        for name in types.keys() {
            assert!(valid(name) && name.starts_with("linerate_"), "{name}");
            for bad in [
                "_bps", "bits_per", "milli", "micro", "_ms", "_us", "kilo", "mega", "percent",
            ] {
                assert!(!name.contains(bad), "{name}: not a base unit");
            }
            assert!(!name.ends_with("_total"), "{name}: the encoder adds _total");
        }
        let mut samples = std::collections::BTreeSet::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().expect("a sample's name");
            assert!(valid(name), "{line}");
            samples.insert(name.to_string());
            let family = types
                .keys()
                .filter(|f| name.starts_with(f.as_str()))
                .max_by_key(|f| f.len())
                .unwrap_or_else(|| panic!("{name} has no # TYPE"));
            if types[family] == "counter" {
                assert_eq!(name, format!("{family}_total"), "a counter's samples end in _total");
            }
        }
        for want in [
            "linerate_tests_accepted_total",
            "linerate_tests_refused_total",
            "linerate_tests_failed_total",
            "linerate_tests_running",
            "linerate_test_bytes_total",
            "linerate_test_datagrams_total",
            "linerate_test_duration_seconds_bucket",
            "linerate_test_duration_seconds_count",
            "linerate_handshake_failures_total",
            "linerate_profile_runs_total",
            "linerate_profile_failures_total",
        ] {
            assert!(samples.contains(want), "{want} missing from:\n{text}");
        }
        assert!(
            text.contains(r#"linerate_test_bytes_total{kind="udp",direction="received"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"linerate_tests_running 0"#), "{text}");
        // The text format: counters' HELP and TYPE name the _total samples; no OpenMetrics lines.
        let plain = openmetrics_to_text(&text);
        assert!(
            plain.contains("# TYPE linerate_tests_accepted_total counter\n"),
            "{plain}"
        );
        assert!(!plain.contains("# EOF") && !plain.contains("# UNIT"), "{plain}");
        assert!(wants_text(Some("text/plain; version=0.0.4")));
        assert!(!wants_text(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
        )));
        assert!(!wants_text(None) && !wants_text(Some("*/*")));
    }

    /// The descriptor lines (`# HELP`, `# TYPE`, `# UNIT`) of an exposition, in order.
    fn descriptors(text: &str) -> Vec<&str> {
        text.lines().filter(|l| l.starts_with("# ") && *l != "# EOF").collect()
    }

    /// Every metric registered once, in the documented order, with its help and unit; a family
    /// without a sample prints no descriptor until it has one.
    #[test]
    fn every_metric_is_registered_in_order_with_its_help_and_unit() {
        let m = Exporter::default();
        assert_eq!(
            descriptors(&m.openmetrics()),
            [
                "# HELP linerate_tests_running Tests running now.",
                "# TYPE linerate_tests_running gauge",
                "# HELP linerate_profile_runs Profile commands run before a test (--profile).",
                "# TYPE linerate_profile_runs counter",
                "# HELP linerate_profile_failures Profile commands that failed, refusing their test.",
                "# TYPE linerate_profile_failures counter",
            ]
        );
        sample_every_family(&m);
        assert_eq!(
            descriptors(&m.openmetrics()),
            [
                "# HELP linerate_tests_accepted Tests this agent accepted, by kind (a third-party test counts as its kind).",
                "# TYPE linerate_tests_accepted counter",
                "# HELP linerate_tests_refused Test requests refused before they began, by reason (the protocol's error kind).",
                "# TYPE linerate_tests_refused counter",
                "# HELP linerate_tests_failed Accepted tests that ended without this end's report, by kind.",
                "# TYPE linerate_tests_failed counter",
                "# HELP linerate_tests_running Tests running now.",
                "# TYPE linerate_tests_running gauge",
                "# HELP linerate_test_bytes Bytes this agent's end of tests moved, by kind and direction (sent, received), added when each test ends.",
                "# TYPE linerate_test_bytes counter",
                "# UNIT linerate_test_bytes bytes",
                "# HELP linerate_test_datagrams UDP datagrams this agent's end of tests sent or received, by kind and direction, added when each test ends.",
                "# TYPE linerate_test_datagrams counter",
                "# HELP linerate_test_duration_seconds How long accepted tests ran, from acceptance to their end, by kind.",
                "# TYPE linerate_test_duration_seconds histogram",
                "# UNIT linerate_test_duration_seconds seconds",
                "# HELP linerate_handshake_failures Connections refused before a test request was read (version, auth, busy, protocol), by reason.",
                "# TYPE linerate_handshake_failures counter",
                "# HELP linerate_profile_runs Profile commands run before a test (--profile).",
                "# TYPE linerate_profile_runs counter",
                "# HELP linerate_profile_failures Profile commands that failed, refusing their test.",
                "# TYPE linerate_profile_failures counter",
            ]
        );
    }
}
