//! What an HTTP run adds to the document: the users' figures over the steady state in `summary`
//! (responses, bits/s, response times, connections, errors by class) and the timeline's records.

use super::{LatencyFigures, RateFigures, SideSummary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What `summary` adds for an HTTP run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpSummary {
    pub users: u32,
    /// The steady-state window the figures cover, seconds.
    pub steady_seconds: f64,
    /// Complete responses (any status) in the window.
    pub responses: u64,
    /// All complete responses, failed ones (not 2xx) included, per second of the window.
    pub responses_per_second: f64,
    /// Successful responses (2xx) per second of the window: the run's throughput; null in
    /// documents from before it was kept.
    #[serde(default)]
    pub successful_responses_per_second: Option<f64>,
    /// Failed requests (`errors.total`: bad status and every other class) as a share of the
    /// requests that ended in the window (2xx responses + failed), percent; null when none ended
    /// or in documents from before it was kept.
    #[serde(default)]
    pub failed_percent: Option<f64>,
    /// `--max-errors`: the failed requests a complete run may have; null: the default rule (a
    /// run fails only when no request succeeded).
    #[serde(default)]
    pub max_errors: Option<ErrorBudget>,
    pub requests_started: u64,
    /// Bytes read (response heads and bodies) and written (requests) x 8 / window.
    pub bits_per_second_in: f64,
    pub bits_per_second_out: f64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Body bytes of complete responses (each checked against its Content-Length).
    pub body_bytes: u64,
    /// From each request's intended start to its last byte, microseconds.
    pub response_time_us: Option<LatencyFigures>,
    /// From each request's intended start to the first byte of its response, for the same
    /// responses as `response_time_us` (so never above it).
    pub ttfb_us: Option<LatencyFigures>,
    /// connect() to established, for new connections.
    pub connect_us: Option<LatencyFigures>,
    /// https URLs: the TLS handshakes; absent for cleartext runs and older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSummary>,
    /// `--http2`: its streams; absent for HTTP/1.1 runs and older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Summary>,
    pub connections: ConnectionCounts,
    pub errors: ErrorSummary,
    /// Responses by status class ("2xx", "4xx", ...).
    pub status: BTreeMap<String, u64>,
    /// Requests unanswered when the time was up (neither responses nor errors).
    pub in_flight_at_end: u64,
    /// Open loop: requested and achieved requests per second.
    pub rate: Option<RateFigures>,
    /// Open loop: requests that started over a millisecond late for want of a free connection.
    pub queued_late: u64,
    /// Always absent from a single run: a sweep's optimum is in its sweep document (`crate::sweep`).
    pub optimum: Option<Optimum>,
    /// `--baseline`: this client against linerate's own server on this host.
    pub baseline: Option<Baseline>,
    /// Each server's share of the load (URLs of one `HOST[:PORT]` added up), in the order the
    /// URLs first name it, with its host's samplers when an agent ran there; empty in documents
    /// from before it was kept.
    #[serde(default)]
    pub servers: Vec<HttpServerSummary>,
}

/// The TLS handshakes of an https run, of the connections begun in the window (as
/// `connections` counts them): completed ones, full and resumed apart; failed ones are
/// `connections.unsuccessful` and errors of the classes `tls_certificate`, `tls_protocol`,
/// `tls_timeout` and `tls_other`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsSummary {
    /// Completed handshakes: full (a new session) and resumed (a ticket or a TLS 1.2 session ID).
    pub handshakes: u64,
    pub full: u64,
    pub resumed: u64,
    /// The same per second of the window.
    pub handshakes_per_second: f64,
    pub full_per_second: f64,
    pub resumed_per_second: f64,
    /// Handshakes that failed (every `tls_*` error class).
    pub failed: u64,
    /// From TCP connected to the handshake done, microseconds; null when none completed.
    pub full_time_us: Option<LatencyFigures>,
    pub resumed_time_us: Option<LatencyFigures>,
    /// The client's CPU time per completed handshake, microseconds (its worker thread's, in
    /// rustls and the socket calls of the handshake); null when none completed.
    pub cpu_us_per_full_handshake: Option<f64>,
    pub cpu_us_per_resumed_handshake: Option<f64>,
    /// The server's CPU time per handshake it completed, full and resumed together,
    /// microseconds: `cpu_seconds` / (`tls_full` + `tls_resumed`) of the servers' own counts
    /// (`servers[].counted_by_server`); null when no server counted (not a linerate
    /// server with its agent) or it completed none.
    #[serde(default)]
    pub server_cpu_us_per_handshake: Option<f64>,
}

/// What a linerate HTTP server (`serve --http-port`, `--https-port`) counted over an HTTP test,
/// as the agent beside it read its counters at the test's start and end: deltas,
/// each worker's counts published at most 100 ms late (the agent waits that long at the end).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpServerCounts {
    /// The ports of the agent's servers that the test's URLs named (their counts are summed).
    pub ports: Vec<u16>,
    /// Connections accepted (HTTP/1.1 and HTTP/2), request heads and HTTP/2 streams answered.
    pub connections_accepted: u64,
    pub requests: u64,
    /// TLS handshakes completed, full and resumed, and failed.
    pub tls_full: u64,
    pub tls_resumed: u64,
    pub tls_failed: u64,
    /// HTTP/2 connections, streams answered, streams reset, connections ended by an error GOAWAY.
    pub h2_connections: u64,
    pub h2_streams: u64,
    pub h2_resets: u64,
    pub h2_goaways: u64,
    /// The agent process's CPU time over its window (user + system, getrusage), seconds: the
    /// server's, which runs in it, and the agent's own sampling (small beside it).
    pub cpu_seconds: f64,
    /// `cpu_seconds` per handshake completed (full and resumed) and per request, microseconds;
    /// null when there were none.
    pub cpu_us_per_handshake: Option<f64>,
    pub cpu_us_per_request: Option<f64>,
}

/// An HTTP/2 run's streams: each user one connection, up to `streams` requests in
/// flight on it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Http2Summary {
    /// Concurrent streams per connection asked for (`--streams`).
    pub streams: u32,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server sent on any connection of the run;
    /// null when none sent one (no limit).
    pub peer_max_concurrent_streams: Option<u64>,
    /// Whether that limit was below `streams` (so fewer were in flight than asked).
    pub capped: bool,
    /// The most streams in flight at once on one connection, over the whole run (ramp
    /// included): at most `streams` and the server's limit.
    pub max_streams_in_flight: u64,
    /// Connections the client ended because the server broke HTTP/2 or went past one of the
    /// client's bounds, over the whole run; what was in flight on them is
    /// `bad_response`. 0 in documents from before it was kept.
    #[serde(default)]
    pub protocol_errors: u64,
    /// The same by cause: `ping_flood`, `settings_flood`, `continuation_flood`, `unread_writes`,
    /// `frame_size`, `push`, `compression`, `malformed_frame` (docs/http.md); causes that did not
    /// happen are absent.
    #[serde(default)]
    pub protocol_error_causes: BTreeMap<String, u64>,
}

impl Http2Summary {
    /// The server's protocol errors in words, as `the server broke HTTP/2: 2 connections ended
    /// (PING flood 2)` (None: there were none).
    pub fn protocol_errors_text(&self) -> Option<String> {
        h2_protocol_errors_text(self.protocol_error_causes.iter().map(|(k, n)| (k.as_str(), *n)))
    }
}

/// [`Http2Summary::protocol_errors_text`] of causes and their counts.
pub fn h2_protocol_errors_text<'a>(causes: impl Iterator<Item = (&'a str, u64)>) -> Option<String> {
    let (mut total, mut words) = (0, Vec::new());
    for (k, n) in causes {
        total += n;
        words.push(format!("{} {n}", cause_words(k)));
    }
    let s = if total == 1 { "" } else { "s" };
    (total > 0).then(|| {
        format!(
            "the server broke HTTP/2: {total} connection{s} ended ({})",
            words.join(", ")
        )
    })
}

/// A cause of `http2.protocol_error_causes` as the notes name it.
fn cause_words(key: &str) -> &str {
    match key {
        "ping_flood" => "PING flood",
        "settings_flood" => "SETTINGS flood",
        "continuation_flood" => "CONTINUATION flood",
        "unread_writes" => "not reading what it was sent",
        "frame_size" => "frame over 16 KiB",
        "push" => "PUSH_PROMISE",
        "compression" => "header block that does not decode",
        "malformed_frame" => "malformed frame",
        other => other,
    }
}

/// One server's share of an HTTP load, counted by the client over the window as the totals are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpServerSummary {
    /// `HOST[:PORT]` as the URLs name it.
    pub server: String,
    /// The agent that sampled the server's host, as it was reached; null when none did.
    pub agent: Option<String>,
    pub requests_started: u64,
    /// Complete responses (any status) and 2xx responses, per second of the window.
    pub responses: u64,
    pub responses_per_second: f64,
    pub successful_responses_per_second: f64,
    /// Failed requests of every class (a status other than 2xx included).
    pub errors: u64,
    /// Connections to it begun in the window, by outcome, as `summary.connections` counts them.
    pub connections: ConnectionCounts,
    /// Response bytes read from it x 8 / window.
    pub bytes_in: u64,
    pub bits_per_second_in: f64,
    /// Its host's samplers over the window (CPU, interrupts, interfaces), with this server's
    /// bytes and responses; null without an agent there.
    pub host: Option<SideSummary>,
    /// The server's own counts over the test (a linerate server whose agent reported them);
    /// null for another server, or an agent that runs none on the URL's port.
    #[serde(default)]
    pub counted_by_server: Option<HttpServerCounts>,
}

/// Connections the client began in the window, by outcome: an identity,
/// `attempted = successful + unsuccessful + in_flight_at_end`. Each attempt is counted by when it
/// began; its outcome is counted with it, whenever it came.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionCounts {
    pub attempted: u64,
    /// Established.
    pub successful: u64,
    /// Failed before they were established; each one is also an error of its class.
    pub unsuccessful: u64,
    /// Still connecting when the run ended.
    #[serde(default)]
    pub in_flight_at_end: u64,
    pub per_second: ConnectionRates,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionRates {
    pub attempted: f64,
    pub successful: f64,
    pub unsuccessful: f64,
}

/// Failed requests by class, and their sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    #[serde(flatten)]
    pub by_class: HttpErrors,
    pub total: u64,
}

/// Failed requests by what went wrong.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpErrors {
    /// The connection was refused (nothing listening, or the backlog full).
    pub refused: u64,
    /// Reset, or closed before the response's head came.
    pub reset: u64,
    /// Not answered in full within the timeout (connect included).
    pub timeout: u64,
    /// A response with a status other than 2xx.
    pub bad_status: u64,
    /// Closed before Content-Length bytes of body came.
    pub short_body: u64,
    /// A head that did not parse, too large, or a body form not supported (chunked).
    pub bad_response: u64,
    /// The client's own limits, not the server's: out of file descriptors (EMFILE, ENFILE),
    /// local ports (EADDRNOTAVAIL) or buffers (ENOBUFS).
    #[serde(default)]
    pub local_limit: u64,
    /// Any other socket error.
    pub other: u64,
    /// https: TLS handshakes that failed on the server's certificate (untrusted
    /// issuer, a name it is not valid for, expired), on the protocol (an alert, a peer that
    /// speaks no TLS or closed during the handshake, no common version; also a record that
    /// failed after the handshake), by the timeout, or otherwise. Each is also an unsuccessful
    /// connection.
    #[serde(default)]
    pub tls_certificate: u64,
    #[serde(default)]
    pub tls_protocol: u64,
    #[serde(default)]
    pub tls_timeout: u64,
    #[serde(default)]
    pub tls_other: u64,
    /// HTTP/2: streams the server reset (RST_STREAM) before their response was
    /// whole, and requests ended by the server's GOAWAY (refused above its last stream, or cut
    /// by a GOAWAY with an error); not retried.
    #[serde(default)]
    pub rst_stream: u64,
    #[serde(default)]
    pub goaway: u64,
}

impl HttpErrors {
    pub fn total(&self) -> u64 {
        self.refused
            + self.reset
            + self.timeout
            + self.bad_status
            + self.short_body
            + self.bad_response
            + self.local_limit
            + self.other
            + self.tls_certificate
            + self.tls_protocol
            + self.tls_timeout
            + self.tls_other
            + self.rst_stream
            + self.goaway
    }

    /// Every class of failure in the one order the text report and the notes list them:
    /// `refused N, reset N, timeout N, bad status N, short body N, bad response N, local limit
    /// N, other N`, then the TLS and HTTP/2 classes when any of those failed.
    pub fn breakdown(&self) -> String {
        format!(
            "refused {}, reset {}, timeout {}, bad status {}, short body {}, bad response {}, local limit {}, other {}{}{}",
            self.refused,
            self.reset,
            self.timeout,
            self.bad_status,
            self.short_body,
            self.bad_response,
            self.local_limit,
            self.other,
            self.tls_failures(),
            self.h2_failures()
        )
    }

    /// The failed TLS handshakes by class, as `, TLS certificate N, ...` for the lines that
    /// list the classes; empty when none failed (a cleartext run's lines read as before).
    pub fn tls_failures(&self) -> String {
        if self.tls_failed() == 0 {
            return String::new();
        }
        format!(
            ", TLS certificate {}, TLS protocol {}, TLS timeout {}, TLS other {}",
            self.tls_certificate, self.tls_protocol, self.tls_timeout, self.tls_other
        )
    }

    /// HTTP/2's own failures, as `, RST_STREAM N, GOAWAY N`; empty when there were none.
    pub fn h2_failures(&self) -> String {
        if self.rst_stream + self.goaway == 0 {
            return String::new();
        }
        format!(", RST_STREAM {}, GOAWAY {}", self.rst_stream, self.goaway)
    }

    /// Failed TLS handshakes, every class.
    pub fn tls_failed(&self) -> u64 {
        self.tls_certificate + self.tls_protocol + self.tls_timeout + self.tls_other
    }

    pub fn add(&mut self, o: &HttpErrors) {
        self.refused += o.refused;
        self.reset += o.reset;
        self.timeout += o.timeout;
        self.bad_status += o.bad_status;
        self.short_body += o.short_body;
        self.bad_response += o.bad_response;
        self.local_limit += o.local_limit;
        self.other += o.other;
        self.tls_certificate += o.tls_certificate;
        self.tls_protocol += o.tls_protocol;
        self.tls_timeout += o.tls_timeout;
        self.tls_other += o.tls_other;
        self.rst_stream += o.rst_stream;
        self.goaway += o.goaway;
    }
}

impl HttpSummary {
    /// Responses with a 2xx status.
    pub fn successful_responses(&self) -> u64 {
        self.status.get("2xx").copied().unwrap_or(0)
    }

    /// Requests were made and not one was answered with a 2xx: every request failed (refused,
    /// reset, timed out, a bad status, or never answered). The binary's exit status reads this.
    pub fn every_request_failed(&self) -> bool {
        self.successful_responses() == 0 && (self.requests_started > 0 || self.errors.total > 0)
    }

    /// The failed requests are over `--max-errors`: by count, or by share of the requests that
    /// ended (`failed_percent`).
    pub fn over_error_budget(&self) -> bool {
        match self.max_errors {
            None => false,
            Some(ErrorBudget::Count(n)) => self.errors.total > n,
            Some(ErrorBudget::Percent(p)) => self.failed_percent.is_some_and(|f| f > p),
        }
    }

    /// Why the run failed as a whole, by its failed requests: every one failed, or more than
    /// `--max-errors` did; None when they pass.
    pub fn failure(&self) -> Option<String> {
        let share = self.failed_percent.map_or(String::new(), |p| format!(" ({p:.2} %)"));
        if self.every_request_failed() {
            let why = self.http2.as_ref().and_then(Http2Summary::protocol_errors_text);
            Some(match why {
                Some(why) => format!("not one request got a 2xx response; {why}"),
                None => "not one request got a 2xx response".into(),
            })
        } else if self.over_error_budget() {
            let budget = self.max_errors.map_or(String::new(), |b| b.to_string());
            Some(format!(
                "{} requests failed{share}, over --max-errors {budget}",
                self.errors.total
            ))
        } else {
            None
        }
    }
}

/// `--max-errors`: how many failed requests a complete run may have, as a count (`{"count":
/// 10}`) or a share of the requests that ended (`{"percent": 1.5}`); over it the run failed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorBudget {
    Count(u64),
    Percent(f64),
}

impl std::str::FromStr for ErrorBudget {
    type Err = String;

    /// `N` (a count) or `P%` (a percentage from 0 to 100).
    fn from_str(s: &str) -> Result<ErrorBudget, String> {
        let t = s.trim();
        match t.strip_suffix('%') {
            Some(p) => match p.trim().parse::<f64>() {
                Ok(p) if (0.0..=100.0).contains(&p) => Ok(ErrorBudget::Percent(p)),
                _ => Err(format!("'{s}' is not a percentage from 0% to 100%")),
            },
            None => t
                .parse::<u64>()
                .map(ErrorBudget::Count)
                .map_err(|_| format!("'{s}' is not a count of failed requests (N) or a share (P%)")),
        }
    }
}

impl std::fmt::Display for ErrorBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorBudget::Count(n) => write!(f, "{n}"),
            ErrorBudget::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// A user-count sweep's choice: the fewest users that reach 95 % of the best throughput (the
/// knee: past it, more users add waiting, not work).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Optimum {
    pub users: u32,
    pub responses_per_second: f64,
    pub bits_per_second_in: f64,
    pub response_time_mean_us: f64,
    /// How it was chosen.
    pub rule: String,
}

/// What the client drives against linerate's own server on its own host, same users and size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub responses_per_second: f64,
    pub bits_per_second_in: f64,
    /// This run's responses/s as a share of the baseline's.
    pub share_percent: f64,
    /// The object size the baseline served (the mean body length of the URLs under test) and
    /// the users it ran with; null in documents from before they were kept.
    #[serde(default)]
    pub object_bytes: Option<u64>,
    #[serde(default)]
    pub users: Option<u32>,
}

/// One interval of the HTTP timeline (ramp included).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpIntervalRecord {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Users started by the interval's end (closed loop).
    pub users: u32,
    /// Whether the interval lies in the ramp (left out of the summary).
    pub ramp: bool,
    pub responses: u64,
    pub responses_per_second: f64,
    pub bits_per_second_in: f64,
    pub bits_per_second_out: f64,
    /// Connections begun in the interval (attempted), per second.
    pub connections_per_second: f64,
    /// Of those, established, and failed before they were established, per second (by when
    /// each attempt began, as `summary.connections`); absent from older documents.
    #[serde(default)]
    pub connections_successful_per_second: Option<f64>,
    #[serde(default)]
    pub connections_unsuccessful_per_second: Option<f64>,
    pub errors: u64,
    pub response_time_mean_us: Option<f64>,
    pub response_time_max_us: Option<f64>,
    /// Median and 99th percentile of the interval's response times, µs, within 12.5 % (log-linear
    /// bins); absent with no response, and from older documents.
    #[serde(default)]
    pub response_time_p50_us: Option<f64>,
    #[serde(default)]
    pub response_time_p99_us: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 404s are failed requests; `--max-errors` fails a run past its count or share.
    #[test]
    fn issue_23_failure_reads_the_failed_requests_and_the_budget() {
        let run = |ok: u64, failed: u64, budget: Option<ErrorBudget>| HttpSummary {
            responses: ok + failed,
            requests_started: ok + failed,
            status: [("2xx".to_string(), ok), ("4xx".to_string(), failed)]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .collect(),
            errors: ErrorSummary {
                by_class: HttpErrors {
                    bad_status: failed,
                    ..HttpErrors::default()
                },
                total: failed,
            },
            failed_percent: Some(failed as f64 * 100.0 / (ok + failed) as f64),
            max_errors: budget,
            ..HttpSummary::default()
        };
        assert_eq!(
            run(0, 458, None).failure().as_deref(),
            Some("not one request got a 2xx response")
        );
        assert_eq!(
            run(0, 458, Some(ErrorBudget::Percent(100.0))).failure().as_deref(),
            Some("not one request got a 2xx response"),
            "no budget makes a run of failures complete"
        );
        assert_eq!(run(90, 10, None).failure(), None, "the default: some succeeded");
        assert_eq!(run(90, 10, Some(ErrorBudget::Count(10))).failure(), None);
        assert_eq!(run(90, 10, Some(ErrorBudget::Percent(10.0))).failure(), None);
        assert_eq!(
            run(90, 10, Some(ErrorBudget::Count(9))).failure().as_deref(),
            Some("10 requests failed (10.00 %), over --max-errors 9")
        );
        assert_eq!(
            run(90, 10, Some(ErrorBudget::Percent(5.0))).failure().as_deref(),
            Some("10 requests failed (10.00 %), over --max-errors 5%")
        );
        assert_eq!(run(100, 0, Some(ErrorBudget::Count(0))).failure(), None);
    }

    #[test]
    fn the_error_breakdown_lists_every_class_and_tls_and_h2_only_when_they_failed() {
        let plain = HttpErrors {
            refused: 1,
            reset: 2,
            timeout: 3,
            bad_status: 4,
            short_body: 5,
            bad_response: 6,
            local_limit: 7,
            other: 8,
            ..HttpErrors::default()
        };
        assert_eq!(
            plain.breakdown(),
            "refused 1, reset 2, timeout 3, bad status 4, short body 5, bad response 6, local limit 7, other 8"
        );
        let both = HttpErrors {
            tls_protocol: 9,
            goaway: 10,
            ..HttpErrors::default()
        };
        assert_eq!(
            both.breakdown(),
            "refused 0, reset 0, timeout 0, bad status 0, short body 0, bad response 0, local limit 0, other 0, \
             TLS certificate 0, TLS protocol 9, TLS timeout 0, TLS other 0, RST_STREAM 0, GOAWAY 10"
        );
    }

    #[test]
    fn issue_23_a_budget_is_a_count_or_a_percentage_in_the_document() {
        let json = |b: ErrorBudget| serde_json::to_string(&b).expect("serializes");
        assert_eq!(json(ErrorBudget::Count(3)), r#"{"count":3}"#);
        assert_eq!(json(ErrorBudget::Percent(1.5)), r#"{"percent":1.5}"#);
        assert_eq!("3".parse(), Ok(ErrorBudget::Count(3)));
        assert_eq!(" 1.5% ".parse(), Ok(ErrorBudget::Percent(1.5)));
        for bad in ["", "-1", "x", "101%", "-1%", "1.5"] {
            assert!(bad.parse::<ErrorBudget>().is_err(), "{bad:?}");
        }
    }
}
