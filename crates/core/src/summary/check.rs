//! Whether an agent's report can be the answer to the test that was asked.
//!
//! In: the spec, the agent's [`SideReport`], the client's own report of the same streams, and
//! how long the run has lasted on the client's clock. Out: the largest result message the
//! client reads for that test ([`result_limit_bytes`]) and, for a report that came, `Ok` or the
//! one reason it cannot be true ([`ReportError`]). A report that fails is dropped whole: the
//! run is partial and nothing (figures, advice) is built from it. [`escape_controls`] makes the
//! text of a report that passed safe for a terminal.
//!
//! What is checked is what the client knows for certain: the streams the test has, which end
//! sends on each (the other one than the client, whose own reports say what it did), that the
//! samples are of those streams, the number of samples a run of that length makes, and, where
//! both ends count the same bytes or datagrams, that the counts agree as far as nothing can be in
//! flight (the client's own counts on the other end: a clean TCP end reported with 0
//! bytes received after 5.4 GB sent was taken as a complete run at 0 Mbit/s).

use crate::engine::run::Deadlines;
use crate::engine::sequence::tracked_datagrams;
use crate::result::{Role, SideReport, StreamEnd, StreamReport, UdpReceiveReport};
use crate::spec::TestSpec;
// Made safe to print by the wire crate, for the results side too.
pub use linerate_wire::text::escape_controls;
use std::cmp::Ordering;
use std::time::Duration;

/// Seconds added to the run's length before counting the intervals a report may hold: the
/// agent's clock starts before the client's and its last samples come after the client's end.
const SLACK_SECONDS: f64 = 30.0;
/// The most notes a report may carry (an agent writes a handful).
pub(crate) const MAX_NOTES: usize = 256;
/// The most CPUs a host's samples are budgeted for (the spec's highest CPU number is 4095).
pub(super) const MAX_CORES: usize = 4096;
/// JSON bytes budgeted: the report's fixed part (window usage, configuration, CPU) ...
const BASE_BYTES: u64 = 2 << 20;
/// ... per CPU of the agent's host in that part and per host timeline entry ...
const PER_CORE_BYTES: u64 = 8 << 10;
const PER_TIMELINE_CORE_BYTES: u64 = 2 << 10;
const PER_TIMELINE_BYTES: u64 = 16 << 10;
/// ... per interval sample (about 450 bytes with TCP_INFO) ...
const PER_SAMPLE_BYTES: u64 = 1 << 10;
/// ... and per stream: TCP is counters, rr adds two latency histograms, a UDP receiver its
/// histograms and up to 100 000 spacing bins.
const PER_TCP_STREAM_BYTES: u64 = 64 << 10;
const PER_RR_STREAM_BYTES: u64 = 1 << 20;
const PER_UDP_STREAM_BYTES: u64 = 4 << 20;

/// Why an agent's report cannot be the answer to the test that was asked.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReportError {
    #[error("it reports {got} streams, the test has {max} per agent")]
    TooManyStreams { got: usize, max: usize },
    #[error("it reports stream {stream}, the test has {max} per agent")]
    NoSuchStream { stream: u16, max: usize },
    #[error("it reports stream {stream} twice")]
    StreamTwice { stream: u16 },
    #[error("it reports stream {stream} as {got}, but the agent {expected} on it")]
    WrongRole {
        stream: u16,
        got: &'static str,
        expected: &'static str,
    },
    #[error("it samples stream {stream}, which it does not report")]
    Unlisted { stream: u16 },
    #[error("it reports {got} {what}, more than the {max} a run of {seconds:.0} s makes")]
    TooMany {
        what: &'static str,
        got: usize,
        max: u64,
        seconds: f64,
    },
    #[error("it reports stream {stream} with {part} figures in a {kind} test")]
    WrongKind {
        stream: u16,
        part: &'static str,
        kind: &'static str,
    },
    #[error("stream {stream} counts {seconds} s, more than the run lasted")]
    BadSeconds { stream: u16, seconds: f64 },
    #[error("its window ends ({end_ns} ns) before it starts ({start_ns} ns)")]
    Window { start_ns: u64, end_ns: u64 },
    #[error("it claims {agent} bytes received on stream {stream}, the client sent {client}")]
    ReceivedMoreThanSent { stream: u16, agent: u64, client: u64 },
    #[error("it claims {agent} bytes sent on stream {stream}, the client received {client}")]
    SentLessThanReceived { stream: u16, agent: u64, client: u64 },
    #[error("it claims {agent} datagrams received on stream {stream}, the client sent {client}")]
    DatagramsMoreThanSent { stream: u16, agent: u64, client: u64 },
    #[error("it claims {agent} bytes received on stream {stream} to a clean end, the client sent {client}")]
    ReceivedLessThanSent { stream: u16, agent: u64, client: u64 },
    #[error("it claims {agent} bytes sent on stream {stream}, the client received {client} to a clean end")]
    SentMoreThanReceived { stream: u16, agent: u64, client: u64 },
    #[error("it claims the end markers on stream {stream} counted {agent} datagrams, the client sent {client}")]
    EndCountNotSent { stream: u16, agent: u64, client: u64 },
    #[error(
        "it claims {received} datagrams received and {lost} lost on stream {stream} after the end markers, the client sent {client}"
    )]
    DatagramsUnaccounted {
        stream: u16,
        received: u64,
        lost: u64,
        client: u64,
    },
    #[error("it claims {agent} datagrams sent on stream {stream}, its end markers counted {client}")]
    SentNotEndCount { stream: u16, agent: u64, client: u64 },
    #[error("it claims {agent} datagrams sent on stream {stream}, the client received {received} and lost {lost}")]
    SentNotAccounted {
        stream: u16,
        agent: u64,
        received: u64,
        lost: u64,
    },
    #[error("it carries {got} notes, over the limit of {max}")]
    TooManyNotes { got: usize, max: usize },
    /// An iperf3 peer's figure out of what any run can give: shown as `1e308`,
    /// never as 300 digits.
    #[error("it reports {what} as {value:e}, {why}")]
    Figure {
        what: String,
        value: f64,
        why: &'static str,
    },
}

/// How long a report may say the run lasted, seconds: the longer of the time asked for and the
/// time the client has seen pass, plus [`SLACK_SECONDS`].
pub(super) fn run_seconds(spec: &TestSpec, elapsed: Duration) -> f64 {
    let asked = Deadlines::new(spec.timing())
        .deadline()
        .map_or(0.0, |d| d.as_secs_f64());
    asked.max(elapsed.as_secs_f64()) + SLACK_SECONDS
}

/// Intervals (per stream, and host timeline entries) a run of `seconds` makes at most.
fn intervals_in(spec: &TestSpec, seconds: f64) -> u64 {
    if let Some(interval) = Deadlines::new(spec.timing()).interval() {
        (seconds / interval.as_secs_f64()).ceil() as u64 + 2
    } else {
        2
    }
}

/// The most records one end's report holds for a run of `seconds`: interval samples (one per
/// stream per interval, within the cap on kept samples) and host timeline entries.
pub(super) fn max_records(spec: &TestSpec, seconds: f64) -> (u64, u64) {
    let intervals = intervals_in(spec, seconds);
    let samples = (spec.streams_per_agent() as u64 * intervals).min(crate::spec::MAX_INTERVAL_SAMPLES as u64);
    (samples, intervals.min(crate::metrics::sample::MAX_TIMELINE as u64))
}

/// A figure a run can have made: a number (not NaN, not infinite), not negative, at most `max`.
/// Every check of a peer's figures (an agent's report, a relayed document, an iperf3 peer's
/// results) asks this first, with its own bound.
pub(crate) fn possible_figure(value: f64, max: f64) -> bool {
    value.is_finite() && (0.0..=max).contains(&value)
}

/// The largest result message, bytes, the client reads from an agent with `cores` CPUs for
/// `spec` after `elapsed` of the run: what the test's streams, samples and host timeline can
/// fill, never more than the protocol's [`crate::proto::frame::MAX_MESSAGE_BYTES`].
pub(crate) fn result_limit_bytes(spec: &TestSpec, cores: usize, elapsed: Duration) -> u32 {
    let cores = cores.clamp(1, MAX_CORES) as u64;
    let streams = spec.streams_per_agent() as u64;
    let per_stream = match spec {
        TestSpec::Tcp(_) => PER_TCP_STREAM_BYTES,
        TestSpec::Udp(_) => PER_UDP_STREAM_BYTES,
        TestSpec::Rr(_) => PER_RR_STREAM_BYTES,
        TestSpec::Http(_) | TestSpec::Rpm(_) => 0,
    };
    let (samples, timeline) = max_records(spec, run_seconds(spec, elapsed));
    let bytes = BASE_BYTES
        + cores * PER_CORE_BYTES
        + streams * per_stream
        + samples * PER_SAMPLE_BYTES
        + timeline * (PER_TIMELINE_BYTES + cores * PER_TIMELINE_CORE_BYTES);
    bytes.min(u64::from(crate::proto::frame::MAX_MESSAGE_BYTES)) as u32
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Send => "sends",
        Role::Receive => "receives",
    }
}

/// Checks an agent's `report` against the test asked (`spec`) and the client's own report of
/// the same streams (`client`, numbered as the agent numbers them), after `elapsed` of the run.
pub(crate) fn check_report(
    spec: &TestSpec,
    report: &SideReport,
    client: &SideReport,
    elapsed: Duration,
) -> Result<(), ReportError> {
    let per_agent = spec.streams_per_agent();
    let seconds = run_seconds(spec, elapsed);
    if report.window_end_ns < report.window_start_ns {
        return Err(ReportError::Window {
            start_ns: report.window_start_ns,
            end_ns: report.window_end_ns,
        });
    }
    if report.notes.len() > MAX_NOTES {
        return Err(ReportError::TooManyNotes {
            got: report.notes.len(),
            max: MAX_NOTES,
        });
    }
    if report.streams.len() > per_agent {
        return Err(ReportError::TooManyStreams {
            got: report.streams.len(),
            max: per_agent,
        });
    }
    let mut seen = vec![false; per_agent];
    for st in &report.streams {
        let i = usize::from(st.stream);
        if i >= per_agent {
            return Err(ReportError::NoSuchStream {
                stream: st.stream,
                max: per_agent,
            });
        }
        if std::mem::replace(&mut seen[i], true) {
            return Err(ReportError::StreamTwice { stream: st.stream });
        }
        // The agent does the other thing than the client on each stream: the client's own role,
        // as its engine recorded it when it opened the stream, is the truth.
        let mine = client.streams.iter().find(|c| c.stream == st.stream);
        if let Some(expected) = mine.map(|c| c.role.opposite())
            && st.role != expected
        {
            return Err(ReportError::WrongRole {
                stream: st.stream,
                got: role_name(st.role),
                expected: role_name(expected),
            });
        }
        // A stream carries the figures of its test's kind only.
        let foreign = match spec {
            TestSpec::Tcp(_) | TestSpec::Http(_) | TestSpec::Rpm(_) => [
                ("UDP", st.udp_send.is_some() || st.udp_receive.is_some()),
                ("rr", st.rr.is_some()),
            ],
            TestSpec::Udp(_) => [("rr", st.rr.is_some()), ("", false)],
            TestSpec::Rr(_) => [("UDP", st.udp_send.is_some() || st.udp_receive.is_some()), ("", false)],
        };
        if let Some((part, _)) = foreign.into_iter().find(|(_, present)| *present) {
            return Err(ReportError::WrongKind {
                stream: st.stream,
                part,
                kind: spec.kind(),
            });
        }
        if !possible_figure(st.seconds, seconds) {
            return Err(ReportError::BadSeconds {
                stream: st.stream,
                seconds: st.seconds,
            });
        }
        check_counts(spec, st, mine)?;
    }
    let (max_samples, max_timeline) = max_records(spec, seconds);
    let too_many = |what, got: usize, max: u64| {
        (got as u64 > max).then_some(ReportError::TooMany {
            what,
            got,
            max,
            seconds,
        })
    };
    if let Some(e) = too_many("interval samples", report.intervals.len(), max_samples) {
        return Err(e);
    }
    if let Some(s) = report.intervals.iter().find(|s| usize::from(s.stream) >= per_agent) {
        return Err(ReportError::NoSuchStream {
            stream: s.stream,
            max: per_agent,
        });
    }
    // Its samples are of its own streams: each is counted in the role its stream reports.
    if let Some(s) = report.intervals.iter().find(|s| !seen[usize::from(s.stream)]) {
        return Err(ReportError::Unlisted { stream: s.stream });
    }
    if let Some(e) = too_many("host samples", report.timeline.len(), max_timeline) {
        return Err(e);
    }
    Ok(())
}

/// Whether a TCP stream ended cleanly as its two ends report it: the receiver read its end
/// (`Eof`, so the sender closed and no reset cut the stream) and the sender did not end on an
/// error. Everything the sender wrote was then read: nothing may be in flight.
fn tcp_clean_end(snd: &StreamReport, rcv: &StreamReport) -> bool {
    rcv.end == StreamEnd::Eof && snd.end != StreamEnd::Error
}

/// Where both ends count the same bytes or datagrams, the agent's counts against the client's
/// own for the same stream.
///
/// TCP: nobody receives more than was sent, and after a clean end ([`tcp_clean_end`]) the
/// receiver's bytes are the sender's exactly. UDP (one sender per stream, so not multicast): no
/// more distinct datagrams arrive than were sent; the count the end markers carried, when they
/// came, is the sender's; the datagrams received and lost add up to the sender's count when the
/// markers came (a receiver counts as lost whatever had not arrived when it stopped, so nothing
/// in flight needs an allowance; a receiver tracks at most [`tracked_datagrams`] numbers, so up
/// to that many), and never to more. Other kinds count transactions both ends cannot compare
/// exactly.
fn check_counts(spec: &TestSpec, agent: &StreamReport, client: Option<&StreamReport>) -> Result<(), ReportError> {
    let Some(client) = client else { return Ok(()) };
    let stream = agent.stream;
    let agent_receives = agent.role == Role::Receive;
    let (snd, rcv) = if agent_receives {
        (client, agent)
    } else {
        (agent, client)
    };
    match spec {
        TestSpec::Tcp(_) => {
            let (agent_bytes, client_bytes) = (agent.total_bytes, client.total_bytes);
            let clean = tcp_clean_end(snd, rcv);
            match (agent_receives, agent_bytes.cmp(&client_bytes)) {
                (true, Ordering::Greater) => Err(ReportError::ReceivedMoreThanSent {
                    stream,
                    agent: agent_bytes,
                    client: client_bytes,
                }),
                (false, Ordering::Less) => Err(ReportError::SentLessThanReceived {
                    stream,
                    agent: agent_bytes,
                    client: client_bytes,
                }),
                (true, Ordering::Less) if clean => Err(ReportError::ReceivedLessThanSent {
                    stream,
                    agent: agent_bytes,
                    client: client_bytes,
                }),
                (false, Ordering::Greater) if clean => Err(ReportError::SentMoreThanReceived {
                    stream,
                    agent: agent_bytes,
                    client: client_bytes,
                }),
                _ => Ok(()),
            }
        }
        TestSpec::Udp(u) if u.multicast.is_none() => {
            let (Some(s), Some(r)) = (snd.udp_send.as_ref(), rcv.udp_receive.as_ref()) else {
                return Ok(());
            };
            udp_counts(stream, agent_receives, s.datagrams, r, tracked_datagrams(u))
        }
        _ => Ok(()),
    }
}

/// A UDP stream's sender's count against its receiver's figures (see [`check_counts`]);
/// `tracked`: the sequence numbers a receiver of this test tracks.
fn udp_counts(
    stream: u16,
    agent_receives: bool,
    sent: u64,
    r: &UdpReceiveReport,
    tracked: u64,
) -> Result<(), ReportError> {
    let accounted = r.datagrams.saturating_add(r.lost);
    let markers_came = r.end_count.is_some();
    if r.datagrams > sent && agent_receives {
        return Err(ReportError::DatagramsMoreThanSent {
            stream,
            agent: r.datagrams,
            client: sent,
        });
    }
    let wrong_marker = r.end_count.filter(|e| *e != sent);
    let unaccounted = accounted > sent || (markers_came && accounted < sent.min(tracked));
    if wrong_marker.is_none() && !unaccounted {
        return Ok(());
    }
    Err(if agent_receives {
        match wrong_marker {
            Some(end_count) => ReportError::EndCountNotSent {
                stream,
                agent: end_count,
                client: sent,
            },
            None => ReportError::DatagramsUnaccounted {
                stream,
                received: r.datagrams,
                lost: r.lost,
                client: sent,
            },
        }
    } else {
        match wrong_marker {
            Some(end_count) => ReportError::SentNotEndCount {
                stream,
                agent: sent,
                client: end_count,
            },
            None => ReportError::SentNotAccounted {
                stream,
                agent: sent,
                received: r.datagrams,
                lost: r.lost,
            },
        }
    })
}

/// A sample of one byte in the first nanosecond of `stream`: what the checks' tests plant.
#[cfg(test)]
pub(crate) fn one_byte_sample(stream: u16) -> crate::result::IntervalSample {
    crate::result::IntervalSample {
        stream,
        start_ns: 0,
        end_ns: 1,
        bytes: 1,
        ops: 1,
        tcp: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{ErrorCounts, SocketGrant, StreamEnd, StreamReport};
    use crate::spec::TcpSpec;

    #[test]
    fn a_possible_figure_is_a_number_from_zero_to_its_bound() {
        assert!(possible_figure(0.0, 1.0) && possible_figure(1.0, 1.0));
        assert!(!possible_figure(1.0 + 1e-9, 1.0), "past the bound");
        assert!(!possible_figure(-1e-9, 1.0), "negative");
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(!possible_figure(v, f64::MAX), "{v}");
        }
        assert!(possible_figure(f64::MAX, f64::MAX), "the largest number when unbounded");
    }

    #[test]
    fn the_records_bound_counts_each_stream_per_interval_and_the_host_once() {
        let mut t = TcpSpec::new();
        t.streams = 4;
        t.timing.interval_seconds = 1.0;
        // 10 s at 1 s intervals: 10 intervals, and 2 for the ends' offsets.
        assert_eq!(max_records(&TestSpec::Tcp(t.clone()), 10.0), (4 * 12, 12));
        t.timing.interval_seconds = 0.0;
        assert_eq!(
            max_records(&TestSpec::Tcp(t), 10.0),
            (8, 2),
            "no intervals: two samples a stream"
        );
    }

    fn stream(stream: u16, role: Role, total_bytes: u64) -> StreamReport {
        StreamReport {
            stream,
            role,
            bytes: total_bytes,
            ops: 1,
            seconds: 1.0,
            total_bytes,
            socket: SocketGrant::default(),
            tcp: None,
            errors: ErrorCounts::default(),
            end: StreamEnd::Eof,
            udp_send: None,
            udp_receive: None,
            rr: None,
        }
    }

    fn report(streams: Vec<StreamReport>) -> SideReport {
        SideReport {
            streams,
            ..SideReport::default()
        }
    }

    const RUN: Duration = Duration::from_secs(10);

    #[test]
    fn a_true_report_passes_and_forgeries_are_named() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let client = report(vec![stream(0, Role::Send, 1000)]);
        assert_eq!(
            check_report(&spec, &report(vec![stream(0, Role::Receive, 1000)]), &client, RUN),
            Ok(())
        );
        let more = check_report(&spec, &report(vec![stream(0, Role::Receive, 1001)]), &client, RUN);
        assert_eq!(
            more.map_err(|e| e.to_string()),
            Err("it claims 1001 bytes received on stream 0, the client sent 1000".into())
        );
        let extra = report(vec![stream(0, Role::Receive, 10), stream(1, Role::Receive, 10)]);
        assert!(matches!(
            check_report(&spec, &extra, &client, RUN),
            Err(ReportError::TooManyStreams { got: 2, max: 1 })
        ));
        let role = report(vec![stream(0, Role::Send, 10)]);
        assert!(matches!(
            check_report(&spec, &role, &client, RUN),
            Err(ReportError::WrongRole { .. })
        ));
        let mut alien = report(vec![stream(0, Role::Receive, 10)]);
        alien.streams[0].rr = Some(crate::result::RrStreamReport::default());
        assert_eq!(
            check_report(&spec, &alien, &client, RUN).map_err(|e| e.to_string()),
            Err("it reports stream 0 with rr figures in a tcp test".into())
        );
        let mut long = report(vec![stream(0, Role::Receive, 10)]);
        long.streams[0].seconds = 1e9;
        assert!(matches!(
            check_report(&spec, &long, &client, RUN),
            Err(ReportError::BadSeconds { .. })
        ));
        let mut unlisted = report(vec![]);
        unlisted.intervals.push(super::one_byte_sample(0));
        assert_eq!(
            check_report(&spec, &unlisted, &client, RUN),
            Err(ReportError::Unlisted { stream: 0 })
        );
        let mut chatty = report(vec![]);
        chatty.notes = vec![String::new(); MAX_NOTES + 1];
        assert!(matches!(
            check_report(&spec, &chatty, &client, RUN),
            Err(ReportError::TooManyNotes { .. })
        ));
        let mut samples = report(vec![]);
        let sample = crate::result::IntervalSample {
            stream: 0,
            start_ns: 0,
            end_ns: 1,
            bytes: 0,
            ops: 0,
            tcp: None,
        };
        samples.intervals = vec![sample; 1000];
        assert!(matches!(
            check_report(&spec, &samples, &client, RUN),
            Err(ReportError::TooMany {
                what: "interval samples",
                ..
            })
        ));
    }

    #[test]
    fn the_result_limit_follows_the_test_and_stays_under_the_protocol_cap() {
        let small = TestSpec::Tcp(TcpSpec::new());
        let limit = result_limit_bytes(&small, 2, RUN);
        assert!(limit > 2 << 20 && limit < 8 << 20, "{limit}");
        let mut big = TcpSpec::new();
        big.streams = 1024;
        big.timing.interval_seconds = 0.01;
        let limit = result_limit_bytes(&TestSpec::Tcp(big), 4096, Duration::from_secs(3600));
        assert_eq!(limit, crate::proto::frame::MAX_MESSAGE_BYTES);
        // Time that passed raises the bound of a count-limited test.
        let mut counted = TcpSpec::new();
        counted.timing.limit = crate::spec::Limit::Buffers(10);
        let counted = TestSpec::Tcp(counted);
        assert!(result_limit_bytes(&counted, 2, Duration::from_secs(600)) > result_limit_bytes(&counted, 2, RUN));
    }

    #[test]
    fn issue_22_a_clean_tcp_end_with_fewer_bytes_than_sent_is_refused() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let sent = 5_400_000_000;
        let mut client = report(vec![stream(0, Role::Send, sent)]);
        client.streams[0].end = StreamEnd::Deadline;
        let zero = report(vec![stream(0, Role::Receive, 0)]);
        assert_eq!(
            check_report(&spec, &zero, &client, RUN).map_err(|e| e.to_string()),
            Err("it claims 0 bytes received on stream 0 to a clean end, the client sent 5400000000".into())
        );
        // Not a clean end: the receiver was stopped, or the sender failed; fewer bytes can be.
        let mut stopped = zero.clone();
        stopped.streams[0].end = StreamEnd::Stopped;
        assert_eq!(check_report(&spec, &stopped, &client, RUN), Ok(()));
        let mut failed = client.clone();
        failed.streams[0].end = StreamEnd::Error;
        assert_eq!(check_report(&spec, &zero, &failed, RUN), Ok(()));
        // The agent sending: it claims more than the client read to its clean end.
        let mut reverse = TcpSpec::new();
        reverse.direction = crate::spec::Direction::Reverse;
        let reverse = TestSpec::Tcp(reverse);
        let client = report(vec![stream(0, Role::Receive, 1000)]);
        let mut agent = report(vec![stream(0, Role::Send, 1001)]);
        agent.streams[0].end = StreamEnd::Count;
        assert_eq!(
            check_report(&reverse, &agent, &client, RUN).map_err(|e| e.to_string()),
            Err("it claims 1001 bytes sent on stream 0, the client received 1000 to a clean end".into())
        );
        agent.streams[0].total_bytes = 1000;
        assert_eq!(check_report(&reverse, &agent, &client, RUN), Ok(()));
    }

    fn udp_stream(
        stream_: u16,
        role: Role,
        sent: Option<u64>,
        received: Option<(u64, u64, Option<u64>)>,
    ) -> StreamReport {
        let mut s = stream(stream_, role, 0);
        s.udp_send = sent.map(|datagrams| crate::result::UdpSendReport {
            datagrams,
            ..Default::default()
        });
        s.udp_receive = received.map(|(datagrams, lost, end_count)| UdpReceiveReport {
            datagrams,
            lost,
            end_count,
            ..Default::default()
        });
        s
    }

    #[test]
    fn issue_22_udp_datagrams_received_and_lost_add_up_to_those_sent() {
        let mut u = crate::spec::UdpSpec::new();
        u.timing.limit = crate::spec::Limit::Buffers(1000);
        let spec = TestSpec::Udp(u.clone());
        let client = report(vec![udp_stream(0, Role::Send, Some(1000), None)]);
        let agent = |got, lost, end| report(vec![udp_stream(0, Role::Receive, None, Some((got, lost, end)))]);
        let check = |a: &SideReport| check_report(&spec, a, &client, RUN).map_err(|e| e.to_string());
        // True: all in; some lost with the markers; the markers lost too (counted to the highest
        // number seen).
        assert_eq!(check(&agent(1000, 0, Some(1000))), Ok(()));
        assert_eq!(check(&agent(990, 10, Some(1000))), Ok(()));
        assert_eq!(check(&agent(1000, 0, None)), Ok(()));
        assert_eq!(check(&agent(500, 20, None)), Ok(()));
        assert_eq!(check(&agent(0, 0, None)), Ok(()), "nothing came through");
        // Not true.
        assert_eq!(
            check(&agent(0, 0, Some(1000))),
            Err(
                "it claims 0 datagrams received and 0 lost on stream 0 after the end markers, the client sent 1000"
                    .into()
            )
        );
        assert_eq!(
            check(&agent(990, 20, None)),
            Err(
                "it claims 990 datagrams received and 20 lost on stream 0 after the end markers, the client sent 1000"
                    .into()
            )
        );
        assert_eq!(
            check(&agent(10, 0, Some(10))),
            Err("it claims the end markers on stream 0 counted 10 datagrams, the client sent 1000".into())
        );
        assert_eq!(
            check(&agent(1001, 0, Some(1000))),
            Err("it claims 1001 datagrams received on stream 0, the client sent 1000".into())
        );
        // The client receiving: the agent's count against the client's own figures.
        u.direction = crate::spec::Direction::Reverse;
        let spec = TestSpec::Udp(u);
        let mine = |got, lost, end| report(vec![udp_stream(0, Role::Receive, None, Some((got, lost, end)))]);
        let agent = report(vec![udp_stream(0, Role::Send, Some(1000), None)]);
        let check = |c: &SideReport| check_report(&spec, &agent, c, RUN).map_err(|e| e.to_string());
        assert_eq!(check(&mine(990, 10, Some(1000))), Ok(()));
        assert_eq!(
            check(&mine(990, 10, Some(2000))),
            Err("it claims 1000 datagrams sent on stream 0, its end markers counted 2000".into())
        );
        assert_eq!(
            check(&mine(1500, 0, None)),
            Err("it claims 1000 datagrams sent on stream 0, the client received 1500 and lost 0".into())
        );
    }

    #[test]
    fn control_characters_in_a_peers_strings_are_escaped() {
        let mut r = report(vec![]);
        r.io = "sys\u{1b}[2Jcall".into();
        r.notes = vec!["fine".into(), "forged\nline".into()];
        let safe = escape_controls(r);
        assert_eq!(safe.io, "sys\\u{1b}[2Jcall");
        assert_eq!(safe.notes, ["fine", "forged\\u{a}line"]);
        let mut c1 = report(vec![]);
        c1.io = "a\u{9b}2Jb\u{7f}".into();
        assert_eq!(escape_controls(c1).io, "a\\u{9b}2Jb\\u{7f}");
        let plain = report(vec![stream(0, Role::Send, 5)]);
        assert_eq!(escape_controls(plain.clone()), plain);
    }
}
