//! Whether a third-party run's document can be the answer to the test a controller asked
//!: the same bounds and checks a direct client puts on an agent's
//! report (`summary::check`), put on the whole document a `from` agent sends back.
//!
//! In: the spec asked, the far agent's address (`to`), when the request went out and the answer
//! came (this host's clock) and what this host knows of the `from` agent's clock. Out: the
//! largest `relay_result` read for that test (`relayed_limit_bytes`) and, for a document that
//! came, `Ok` or the one reason it cannot be true ([`RelayedError`]). A document that fails is
//! dropped whole: its cell fails with the reason, and no figure of it is shown or summed.
//!
//! What is checked: the document is a run of the spec asked, which started after the request
//! and before the answer; its figures are finite, within what a run of that length can make
//! and agree with the counts they come from; the receiving side is the end that receives in
//! that test (the far agent `to` for a forward test: its count, not the sender's) and has
//! counted no more than the sender sent. A `from` agent holds the fleet's secret, so it could
//! still forge a document that passes all this; what the checks stop is an absurd, replayed or
//! mismatched document (a bug, a stale copy, a careless forgery) becoming a cell.

use super::check::{max_records, possible_figure, result_limit_bytes};
use crate::result::{Counted, SideSummary, TestResult};
use crate::spec::{Direction, TestSpec};
use std::time::Duration;

/// The CPUs budgeted per host for a relayed document's size: the controller does not learn
/// either host's CPUs before the document comes (a direct client reads its agent's from
/// `accepted`). [`result_limit_bytes`] budgets 2 KiB per CPU per host sample, where a host
/// sample's per-CPU figures take about 170 bytes a CPU as JSON: 32 covers hosts of about 380
/// CPUs, and keeps a short test's bound near 10 MiB (the controller parses a document into
/// about eight times its size: a 40 MB one of interval records took it to 312 MiB).
pub(crate) const RELAY_HOST_CORES: usize = 32;
/// The fastest rate a relayed figure may claim, bits/s: 10 Tbit/s, many times the fastest
/// interface or loopback a run can reach (loopback on a large host: about 0.2 Tbit/s).
pub const MAX_BITS_PER_SECOND: f64 = 1e13;
/// How far before the request or after the answer (beyond the `from` clock's uncertainty) the
/// run's recorded start may lie: the start is taken in milliseconds, and a clock estimate ages.
const FRESH_SLACK: Duration = Duration::from_secs(2);
/// Bytes a stream may have in flight between the sender's window and the receiver's: the
/// largest socket buffers a tuned host grants, each way.
const IN_FLIGHT_PER_STREAM: u64 = 64 << 20;
/// The largest `relay_result` message, bytes, a controller reads for `spec` after `elapsed` of
/// the run: what the two ends' reports can fill, each as a direct client bounds its agent's
/// ([`result_limit_bytes`], with [`RELAY_HOST_CORES`]), the document's summary and timeline being
/// made of them. Never more than the protocol's limit.
pub(crate) fn relayed_limit_bytes(spec: &TestSpec, elapsed: Duration) -> u32 {
    let side = u64::from(result_limit_bytes(spec, RELAY_HOST_CORES, elapsed));
    (2 * side).min(u64::from(crate::proto::frame::MAX_MESSAGE_BYTES)) as u32
}

/// What the controller knows about the run it asked for.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    pub spec: &'a TestSpec,
    /// The far agent's address as the `from` agent names it (canonical).
    pub to: std::net::SocketAddr,
    /// When the request went out and the answer came, this host's clock, Unix milliseconds.
    pub sent_unix_ms: i64,
    pub answered_unix_ms: i64,
    /// The `from` agent's clock against this host's: offset and uncertainty, nanoseconds.
    pub offset_ns: i64,
    pub uncertainty_ns: u64,
}

/// Why a relayed document cannot be the answer to the test asked.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RelayedError {
    #[error("it is a run of another test than the one asked ({got})")]
    OtherSpec { got: String },
    #[error("it started {seconds:.1} s before the request was sent: not this run")]
    Stale { seconds: f64 },
    #[error("it started {seconds:.1} s after its answer came: not this run")]
    Future { seconds: f64 },
    #[error("{value:e} {unit} in its {what} is not a possible figure")]
    Absurd {
        what: &'static str,
        unit: &'static str,
        value: f64,
    },
    #[error("its {what} say {bits:e} bit/s, but {bytes} bytes over {seconds:e} s is {expected:e}")]
    Inconsistent {
        what: &'static str,
        bits: f64,
        bytes: u64,
        seconds: f64,
        expected: f64,
    },
    #[error("its {what} counted for {seconds:e} s, more than the run lasted")]
    TooLong { what: &'static str, seconds: f64 },
    #[error("its {what} are counted by {got:?}, not by the {expected} end")]
    WrongCounter {
        what: &'static str,
        got: Vec<String>,
        expected: &'static str,
    },
    #[error("it claims {received} {unit} received, more than the {sent} sent")]
    ReceivedMoreThanSent {
        received: u64,
        sent: u64,
        unit: &'static str,
    },
    #[error("it carries {got} interval records, more than the {max} a run of {seconds:.0} s makes")]
    TooManyRecords { got: usize, max: u64, seconds: f64 },
    #[error("it reports {got} streams, the test has {max}")]
    TooManyStreams { got: usize, max: usize },
}

/// How long the document may say the run counted, seconds: as long as an agent's report may
/// ([`super::check::run_seconds`]), the time the controller waited taken as the time elapsed (a
/// count-limited run has no asked time).
fn run_seconds(asked: &Asked<'_>) -> f64 {
    let waited_ms = (asked.answered_unix_ms - asked.sent_unix_ms).max(0) as u64;
    super::check::run_seconds(asked.spec, Duration::from_millis(waited_ms))
}

/// Checks a relayed document against the test asked (see the module's text).
pub fn check_relayed(result: &TestResult, asked: &Asked<'_>) -> Result<(), RelayedError> {
    let spec = asked.spec;
    if result.options != *spec || result.test != spec.kind() {
        return Err(RelayedError::OtherSpec {
            got: crate::proto::peer_text_cut(&result.test, 32),
        });
    }
    // Its start, brought to this host's clock.
    let slack = FRESH_SLACK.as_millis() as i64 + (asked.uncertainty_ns / 1_000_000) as i64;
    let started = i64::try_from(result.started_unix_ms)
        .unwrap_or(i64::MAX)
        .saturating_sub(asked.offset_ns / 1_000_000);
    if started < asked.sent_unix_ms - slack {
        return Err(RelayedError::Stale {
            seconds: (asked.sent_unix_ms - started) as f64 / 1e3,
        });
    }
    if started > asked.answered_unix_ms + slack {
        return Err(RelayedError::Future {
            seconds: (started - asked.answered_unix_ms) as f64 / 1e3,
        });
    }
    let max_streams = spec.streams_per_agent();
    if result.summary.streams.len() > max_streams {
        return Err(RelayedError::TooManyStreams {
            got: result.summary.streams.len(),
            max: max_streams,
        });
    }
    let seconds = run_seconds(asked);
    records(result, spec, seconds)?;
    let s = &result.summary;
    side(&s.sent, "sent figures", seconds)?;
    side(&s.received, "received figures", seconds)?;
    for d in s.directions.iter().flat_map(|d| d.values()) {
        side(&d.sent, "sent figures", seconds)?;
        side(&d.received, "received figures", seconds)?;
    }
    for a in &s.agents {
        side(&a.sent, "sent figures", seconds)?;
        side(&a.received, "received figures", seconds)?;
    }
    for st in &s.streams {
        for c in [st.sent, st.received].iter().flatten() {
            counted(c, "stream figures", seconds)?;
        }
    }
    receiver(spec, asked, s)?;
    kind_figures(result, seconds)
}

/// No more interval records than the two ends of a run of `seconds` make: a sample per stream
/// per interval from each end, a host sample per interval from each (as a direct client bounds
/// one agent's).
fn records(result: &TestResult, spec: &TestSpec, seconds: f64) -> Result<(), RelayedError> {
    let (samples, timeline) = max_records(spec, seconds);
    let max = 2 * (samples + timeline);
    let got = result.intervals.len();
    if got as u64 > max {
        return Err(RelayedError::TooManyRecords { got, max, seconds });
    }
    Ok(())
}

/// A side's rate: finite, possible, the rate of its own bytes over its own time.
fn side(s: &SideSummary, what: &'static str, seconds: f64) -> Result<(), RelayedError> {
    counted(
        &Counted {
            bytes: s.bytes,
            seconds: s.seconds,
            bits_per_second: s.bits_per_second,
        },
        what,
        seconds,
    )
}

fn counted(c: &Counted, what: &'static str, run_seconds: f64) -> Result<(), RelayedError> {
    if !possible_figure(c.seconds, f64::MAX) {
        return Err(RelayedError::Absurd {
            what,
            unit: "s",
            value: c.seconds,
        });
    }
    if c.seconds > run_seconds {
        return Err(RelayedError::TooLong {
            what,
            seconds: c.seconds,
        });
    }
    if !possible_figure(c.bits_per_second, MAX_BITS_PER_SECOND) {
        return Err(RelayedError::Absurd {
            what,
            unit: "bit/s",
            value: c.bits_per_second,
        });
    }
    let expected = Counted::new(c.bytes, c.seconds).bits_per_second;
    if (c.bits_per_second - expected).abs() > expected.abs() * 1e-6 + 1e-3 {
        return Err(RelayedError::Inconsistent {
            what,
            bits: c.bits_per_second,
            bytes: c.bytes,
            seconds: c.seconds,
            expected,
        });
    }
    Ok(())
}

/// The receiving side is counted by the end that receives in this test (TCP and UDP: the far
/// agent when the `from` agent sends, the `from` agent itself, "client", when it receives) and
/// counted no more than was sent.
fn receiver(spec: &TestSpec, asked: &Asked<'_>, s: &crate::result::Summary) -> Result<(), RelayedError> {
    let far = asked.to.to_string();
    let ends_ok = |names: &[String], allowed: &[&str]| names.iter().all(|n| allowed.contains(&n.as_str()));
    if !matches!(spec, TestSpec::Tcp(_) | TestSpec::Udp(_)) {
        return Ok(());
    }
    let (receives, sends, expected): (&[&str], &[&str], &'static str) = match spec.direction() {
        Direction::Send => (&[far.as_str()], &["client"], "far agent's"),
        Direction::Reverse => (&["client"], &[far.as_str()], "relaying agent's"),
        Direction::Bidir => (&["client", far.as_str()], &["client", far.as_str()], "run's two"),
    };
    if !ends_ok(&s.received.counted_by, receives) {
        return Err(RelayedError::WrongCounter {
            what: "received figures",
            got: s
                .received
                .counted_by
                .iter()
                .map(|n| crate::proto::peer_text_cut(n, 64))
                .collect(),
            expected,
        });
    }
    if !ends_ok(&s.sent.counted_by, sends) {
        return Err(RelayedError::WrongCounter {
            what: "sent figures",
            got: s
                .sent
                .counted_by
                .iter()
                .map(|n| crate::proto::peer_text_cut(n, 64))
                .collect(),
            expected,
        });
    }
    match spec {
        // Each end counts within its own window, so the receiver's window can hold bytes sent
        // before the sender's began: what may be in flight is allowed (the whole runs' totals,
        // which a direct client compares exactly, are not in the document).
        TestSpec::Tcp(_)
            if !s.sent.counted_by.is_empty()
                && s.received.bytes > s.sent.bytes.saturating_add(in_flight(s.sent.bytes, s.sent.streams)) =>
        {
            Err(RelayedError::ReceivedMoreThanSent {
                received: s.received.bytes,
                sent: s.sent.bytes,
                unit: "bytes",
            })
        }
        TestSpec::Udp(u) if u.multicast.is_none() => match &s.udp {
            Some(udp) if udp.datagrams_sent > 0 && udp.datagrams_received > udp.datagrams_sent => {
                Err(RelayedError::ReceivedMoreThanSent {
                    received: udp.datagrams_received,
                    sent: udp.datagrams_sent,
                    unit: "datagrams",
                })
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Bytes a TCP receiver's window may count beyond the sender's: a quarter of what was sent and
/// [`IN_FLIGHT_PER_STREAM`] a stream (socket buffers and queues between the two windows; a run
/// across a lab's slow link counted 9 % more received than sent in its windows).
fn in_flight(sent: u64, streams: usize) -> u64 {
    (sent / 4).saturating_add(IN_FLIGHT_PER_STREAM.saturating_mul(streams.max(1) as u64))
}

/// The figures a matrix's cell shows besides throughput: a round trip within the run, a loss
/// share within 0-100 %.
fn kind_figures(result: &TestResult, seconds: f64) -> Result<(), RelayedError> {
    if let Some(l) = result.summary.rr.as_ref().and_then(|rr| rr.latency_us.as_ref()) {
        for (what, v) in [
            ("round-trip p50", l.p50),
            ("round-trip mean", l.mean),
            ("round-trip max", l.max),
        ] {
            if !possible_figure(v, seconds * 1e6) {
                return Err(RelayedError::Absurd {
                    what,
                    unit: "µs",
                    value: v,
                });
            }
        }
    }
    if let Some(rr) = &result.summary.rr
        && !possible_figure(rr.transactions_per_second, f64::MAX)
    {
        return Err(RelayedError::Absurd {
            what: "transaction rate",
            unit: "transactions/s",
            value: rr.transactions_per_second,
        });
    }
    if let Some(u) = &result.summary.udp
        && !possible_figure(u.loss_percent, 100.0)
    {
        return Err(RelayedError::Absurd {
            what: "loss",
            unit: "%",
            value: u.loss_percent,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Summary;
    use crate::spec::TcpSpec;

    const NOW_MS: i64 = 1_800_000_000_000;

    fn side(bytes: u64, seconds: f64, by: &str) -> SideSummary {
        SideSummary {
            bytes,
            seconds,
            bits_per_second: Counted::new(bytes, seconds).bits_per_second,
            streams: 1,
            counted_by: vec![by.to_string()],
            ..Default::default()
        }
    }

    /// An honest forward run of 1 s from the `from` agent ("client") to 10.0.0.2:5301.
    fn honest(spec: &TestSpec) -> TestResult {
        let summary = Summary {
            sent: side(1_000_000, 1.0, "client"),
            received: side(990_000, 1.0, "10.0.0.2:5301"),
            ..Default::default()
        };
        let mut r = crate::sweep::stub_result(spec.clone(), summary);
        r.started_unix_ms = (NOW_MS + 100) as u64;
        r
    }

    fn asked(spec: &TestSpec) -> Asked<'_> {
        Asked {
            spec,
            to: "10.0.0.2:5301".parse().expect("an address"),
            sent_unix_ms: NOW_MS,
            answered_unix_ms: NOW_MS + 3_000,
            offset_ns: 0,
            uncertainty_ns: 1_000_000,
        }
    }

    fn why(r: &TestResult, spec: &TestSpec) -> Result<(), String> {
        check_relayed(r, &asked(spec)).map_err(|e| e.to_string())
    }

    #[test]
    fn issue_39_an_honest_relayed_run_passes_and_each_lie_is_named() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        assert_eq!(why(&honest(&spec), &spec), Ok(()));

        let mut huge = honest(&spec);
        huge.summary.received.bits_per_second = 1.7e308;
        assert!(why(&huge, &spec).is_err_and(|e| e.contains("not a possible figure")));
        // A rate made to agree with its bytes over a vanishing time is still impossible.
        let mut tiny = honest(&spec);
        tiny.summary.received = side(u64::MAX, 1e-300, "10.0.0.2:5301");
        assert!(why(&tiny, &spec).is_err_and(|e| e.contains("not a possible figure")));
        let mut forged_rate = honest(&spec);
        forged_rate.summary.received.bits_per_second = 9e9;
        assert!(why(&forged_rate, &spec).is_err_and(|e| e.contains("bytes over")));
        let mut long = honest(&spec);
        long.summary.received = side(1000, 1e6, "10.0.0.2:5301");
        assert!(why(&long, &spec).is_err_and(|e| e.contains("more than the run lasted")));

        let mut old = honest(&spec);
        old.started_unix_ms -= 3_600_000;
        assert!(why(&old, &spec).is_err_and(|e| e.contains("before the request")));
        let mut ahead = honest(&spec);
        ahead.started_unix_ms += 3_600_000;
        assert!(why(&ahead, &spec).is_err_and(|e| e.contains("after its answer")));
        // Judged in this host's clock: a `from` clock 1 h ahead makes the same start fresh.
        let mut a = asked(&spec);
        a.offset_ns = 3_600_000_000_000;
        assert!(check_relayed(&ahead, &a).is_ok());

        let mut crowded = honest(&spec);
        let record = crate::result::IntervalRecord::Stream(crate::result::StreamInterval {
            agent: "10.0.0.2:5301".into(),
            counted_by: "client".into(),
            direction: "forward".into(),
            side: "sent".into(),
            sample: crate::summary::check::one_byte_sample(0),
            bits_per_second: 8e9,
        });
        crowded.intervals = vec![record; 10_000];
        assert!(why(&crowded, &spec).is_err_and(|e| e.contains("interval records")));

        let mut other = TcpSpec::new();
        other.streams = 7;
        let mut mismatched = honest(&spec);
        mismatched.options = TestSpec::Tcp(other);
        assert!(why(&mismatched, &spec).is_err_and(|e| e.contains("another test")));

        let mut inflated = honest(&spec);
        inflated.summary.received = side(80 << 20, 1.0, "10.0.0.2:5301");
        assert!(why(&inflated, &spec).is_err_and(|e| e.contains("more than the 1000000 sent")));
        // What was in flight between the two windows is no lie.
        let mut windows = honest(&spec);
        windows.summary.received = side(1_100_000, 1.0, "10.0.0.2:5301");
        assert_eq!(why(&windows, &spec), Ok(()));
        // The receiving count is the far end's, not the sender's own.
        let mut self_counted = honest(&spec);
        self_counted.summary.received.counted_by = vec!["client".into()];
        assert!(why(&self_counted, &spec).is_err_and(|e| e.contains("not by the far agent's end")));
    }

    #[test]
    fn issue_39_the_relayed_bound_follows_the_test() {
        let short = TestSpec::Tcp(TcpSpec::new());
        let limit = relayed_limit_bytes(&short, Duration::from_secs(1));
        // Twice one side's bound with 32 CPUs: about 10 MiB for a 10 s test, not 128 MiB.
        assert!(limit > 4 << 20 && limit < 16 << 20, "{limit}");
        assert!(limit < 126_000_000);
        let mut long = TcpSpec::new();
        long.timing.limit = crate::spec::Limit::Seconds(3600.0);
        assert!(relayed_limit_bytes(&TestSpec::Tcp(long), Duration::from_secs(1)) > limit);
    }
}
