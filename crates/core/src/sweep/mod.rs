//! Sweeps as data: one document for a series of runs that vary a parameter, each point's whole
//! result, and the figures derived over the points (the rr size fit, the http optimum).
//!
//! In: a base spec, a plan (what varies, over which values) and a closure that runs one test
//! (the client in the binary, a stub in tests). Out: a [`Sweep`], handed to a progress callback
//! after each point so the caller can show it as it grows. Nothing here prints or touches the
//! network itself; the per-kind drivers are in [`udp`], [`rr`], [`http`] and [`tcp`]. The report crate
//! renders a sweep; docs/results.md describes its layout (schema [`crate::result::SCHEMA`]).

pub mod http;
pub mod rr;
pub mod tcp;
pub mod udp;

use crate::result::Fit;
use crate::result::Optimum;
use crate::result::TestResult;
use serde::{Deserialize, Serialize};

/// A sweep document: what `linerate udp --sizes/--gaps`, `rr --sizes`, `tcp --sizes` and
/// `http --users a,b` / `--find-optimum` print with `--json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// Version of linerate that measured it.
    pub linerate: String,
    /// The document layout's version, the same number as a single result's.
    pub schema: u32,
    /// The test kind (`"test": "udp sweep"`) and what that kind adds.
    #[serde(flatten)]
    pub kind: SweepKind,
    /// True when the sweep stopped before its last point or a point was cut short (Ctrl-C, a
    /// lost agent); a partial sweep derives nothing (no fit, no optimum).
    pub partial: bool,
    /// What the sweep varies, outermost first.
    pub parameters: Vec<Parameter>,
    /// The points in the order they ran.
    pub points: Vec<SweepPoint>,
}

/// The test kind of a sweep, with what it adds to the document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test")]
pub enum SweepKind {
    /// UDP streams over sizes x gaps: the points' results are the whole story.
    #[serde(rename = "udp sweep")]
    Udp,
    /// Request-response over sizes, with the latency line fitted through them.
    #[serde(rename = "rr sweep")]
    Rr(RrSweep),
    /// HTTP load over user counts, with the optimum.
    #[serde(rename = "http sweep")]
    Http(HttpSweep),
    /// TCP throughput, CPU and efficiency over transfer sizes (`tcp --sizes`, with or without
    /// `--mix`).
    #[serde(rename = "tcp sweep")]
    Tcp(tcp::TcpSweep),
}

/// One varied parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    /// The field of each point that holds this parameter's value (`payload_bytes`).
    pub name: String,
    /// Its unit: `"bytes"`, `"us"`, `"users"`.
    pub unit: String,
    /// The values asked for, in order (`--find-optimum`: the values reached).
    pub values: Vec<f64>,
}

/// One run of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Where on the sweep this point lies.
    #[serde(flatten)]
    pub at: At,
    /// What the reader should know of this point (rr: over the MTU, interrupted, failed);
    /// empty when nothing.
    #[serde(default)]
    pub note: String,
    /// The run's whole document; absent when the point failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TestResult>,
    /// Why the point failed; absent when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The varied values of one point, per kind.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum At {
    Udp { payload_bytes: u32, gap_us: f64 },
    Rr { request_bytes: u32, response_bytes: u32 },
    Http { users: u32 },
    Tcp { buffer_bytes: u64 },
}

/// What a request-response size sweep adds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RrSweep {
    pub proto: crate::spec::RrProto,
    /// `"request"`: the request grows; `"both"`: the response grows with it.
    pub sweep: RrVaries,
    /// The interface toward the first agent and its MTU; absent when unknown.
    pub interface: Option<String>,
    pub mtu_bytes: Option<u32>,
    pub summary: RrSweepSummary,
}

/// Which message of a transaction a size sweep grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RrVaries {
    Request,
    Both,
}

/// The figures of a size sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RrSweepSummary {
    /// The least-squares line through each point's `fit_of` latency against its size; absent
    /// with fewer than two such points or in a partial sweep.
    pub fit: Option<Fit>,
    /// Which latency figure the line goes through: `"p50"`.
    pub fit_of: String,
    /// The slope the path should give, µs per byte: the sum over its stages of 8 / bits-per-
    /// second, doubled when both messages grow; absent when no stage is known.
    pub expected_slope_us_per_byte: Option<f64>,
    /// Where the stages came from: `"--expect"` or `"link speed of IF"`; absent with the slope.
    pub expected_from: Option<String>,
    pub expected_stages_bits_per_second: Vec<f64>,
}

/// What an HTTP user sweep adds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HttpSweep {
    /// `--baseline`, measured before the first point (each point's result carries its share of
    /// it); null without `--baseline` and in documents from before it was kept here.
    #[serde(default)]
    pub baseline: Option<http::HttpBaseline>,
    pub summary: HttpSweepSummary,
}

/// The figures of a user sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HttpSweepSummary {
    /// The knee ([`optimum`]); absent when nothing was answered or in a partial sweep.
    pub optimum: Option<Optimum>,
}

impl Sweep {
    /// An empty sweep of this kind over these parameters.
    pub fn new(kind: SweepKind, parameters: Vec<Parameter>) -> Sweep {
        Sweep {
            linerate: crate::VERSION.to_string(),
            schema: crate::result::SCHEMA,
            kind,
            partial: false,
            parameters,
            points: Vec::new(),
        }
    }
}

impl SweepPoint {
    /// A point that ran.
    pub fn ran(at: At, note: String, result: TestResult) -> SweepPoint {
        SweepPoint {
            at,
            note,
            result: Some(result),
            error: None,
        }
    }
}

/// One point of a size sweep for the fit: a size and the latency measured at it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SizeLatency {
    pub bytes: f64,
    pub latency_us: f64,
}

/// Least squares: the line through latency against size, with R^2. None with fewer than two
/// points or a single size.
pub fn fit(points: &[SizeLatency]) -> Option<Fit> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.bytes).sum::<f64>() / n;
    let my = points.iter().map(|p| p.latency_us).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.bytes - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.bytes - mx) * (p.latency_us - my)).sum();
    let syy: f64 = points.iter().map(|p| (p.latency_us - my).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let r2 = if syy == 0.0 { 1.0 } else { (sxy * sxy) / (sxx * syy) };
    Some(Fit {
        slope_us_per_byte: slope,
        intercept_us: intercept,
        r2,
        points: points.len(),
    })
}

/// The slope the data path should give, µs per byte: the sum over its stages of 1 / bandwidth
/// (bits/s), for bytes crossing once.
pub fn expected_slope(stage_bits_per_second: &[f64]) -> f64 {
    stage_bits_per_second.iter().map(|b| 8.0 * 1e6 / b).sum()
}

/// One point of a user sweep for the optimum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UserLoad {
    pub users: u32,
    pub responses_per_second: f64,
    pub bits_per_second_in: f64,
    pub response_time_mean_us: f64,
}

/// The share of the best throughput that counts as reaching it, for [`optimum`].
pub const KNEE_SHARE: f64 = 0.95;

/// The knee over a user sweep: the fewest users reaching 95 % of the sweep's most responses
/// per second. Past it, more users buy little throughput and a longer response time.
pub fn optimum(points: &[UserLoad]) -> Option<Optimum> {
    let best = points.iter().map(|p| p.responses_per_second).fold(0.0, f64::max);
    if best <= 0.0 {
        return None;
    }
    let mut sorted: Vec<&UserLoad> = points.iter().collect();
    sorted.sort_by_key(|p| p.users);
    sorted
        .into_iter()
        .find(|p| p.responses_per_second >= KNEE_SHARE * best)
        .map(|p| Optimum {
            users: p.users,
            responses_per_second: p.responses_per_second,
            bits_per_second_in: p.bits_per_second_in,
            response_time_mean_us: p.response_time_mean_us,
            rule: format!(
                "the fewest users reaching {:.0} % of the sweep's most responses per second ({best:.1})",
                KNEE_SHARE * 100.0
            ),
        })
}

/// Adds a point, tells the caller, and says whether the sweep must stop (a point cut short:
/// the run was interrupted or lost an agent, and the next would be too).
fn push<E>(
    sweep: &mut Sweep,
    point: SweepPoint,
    progress: &mut impl FnMut(&Sweep) -> Result<(), E>,
) -> Result<bool, E> {
    let cut = point.result.as_ref().is_some_and(|r| r.partial);
    sweep.points.push(point);
    if cut {
        sweep.partial = true;
    }
    progress(sweep)?;
    Ok(cut)
}

/// The sweep read back from its JSON, less the points' results, whose flattened per-kind
/// summaries do not all read back (see the tests of the kinds), for round-trip tests.
#[cfg(test)]
pub(crate) fn read_back_without_results(v: serde_json::Value) -> Sweep {
    let mut s: Sweep = serde_json::from_value(v).expect("reads back");
    for p in &mut s.points {
        p.result = None;
    }
    s
}

/// A stand-in result for unit tests of the drivers: the spec as run, everything else empty.
/// Also for linerate-results' tests (feature `testing`); not an API.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub fn stub_result(spec: crate::spec::TestSpec, summary: crate::result::Summary) -> TestResult {
    TestResult {
        linerate: crate::VERSION.to_string(),
        schema: crate::result::SCHEMA,
        test: spec.kind().to_string(),
        started_unix_ms: 0,
        partial: false,
        error: None,
        options: spec,
        hosts: Default::default(),
        intervals: Vec::new(),
        summary,
        notes: Vec::new(),
        lab: None,
        from: None,
        iperf3: None,
    }
}

/// A tcp throughput matrix for the tests of the crates above (feature `testing`), not an API:
/// `pattern` over `hosts`, a cell per `(from, to, value)`, `Ok(Mbit/s)` measured and `Err(why)`
/// failed. Every cell runs at once for a concurrent pattern, else in the first round where
/// neither of its hosts is busy; rounds start 10 s apart, each cell of a round 0.4 ms after the
/// one before it; every host's clock is 2 ms ahead, within ± 0.15 ms. The sum, Jain's indexes
/// and the failed cells follow from the cells.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub fn stub_matrix(
    pattern: crate::result::Pattern,
    hosts: &[&str],
    cells: &[(&str, &str, Result<f64, &str>)],
) -> crate::result::Matrix {
    use crate::result::{Cell, CellFigure, CellStart, ClockEstimate, FleetHost, Matrix, Round, jain_index};
    const STARTED_MS: u64 = 1_700_000_000_000;
    let clock = ClockEstimate {
        offset_ns: 2_000_000,
        uncertainty_ns: 150_000,
        exchanges: 100,
    };
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (i, (from, to, _)) in cells.iter().enumerate() {
        let busy = |r: &Vec<usize>| {
            r.iter()
                .any(|&j| [cells[j].0, cells[j].1].iter().any(|h| h == from || h == to))
        };
        match rounds.iter_mut().find(|r| pattern.concurrent() || !busy(r)) {
            Some(r) => r.push(i),
            None => rounds.push(vec![i]),
        }
    }
    let mut out: Vec<Cell> = cells
        .iter()
        .map(|(from, to, value)| Cell {
            from: from.to_string(),
            to: to.to_string(),
            round: 0,
            value: value.ok(),
            start: None,
            result: value.ok().map(|mbps| {
                let mut summary = crate::result::Summary::default();
                for side in [&mut summary.sent, &mut summary.received] {
                    side.seconds = 10.0;
                    side.bits_per_second = mbps * 1e6;
                    side.bytes = (mbps * 1e6 * 10.0 / 8.0) as u64;
                    side.ops = side.bytes / 131_072 + 1;
                }
                let spec = crate::spec::TestSpec::Tcp(crate::spec::TcpSpec::new());
                let mut r = stub_result(spec, summary);
                r.started_unix_ms = STARTED_MS;
                r.from = Some(from.to_string());
                Box::new(r)
            }),
            error: value.err().map(str::to_string),
        })
        .collect();
    let rounds: Vec<Round> = rounds
        .into_iter()
        .enumerate()
        .map(|(k, members)| {
            let mut starts = Vec::new();
            for (n, &i) in members.iter().enumerate() {
                let cell = &mut out[i];
                cell.round = k;
                let scheduled = (STARTED_MS as i64 + k as i64 * 10_000) * 1_000_000;
                if cell.result.is_some() {
                    let actual = scheduled + n as i64 * 400_000;
                    starts.push(actual);
                    cell.start = Some(CellStart {
                        scheduled_unix_ns: scheduled,
                        actual_unix_ns: actual,
                        answered_unix_ns: Some(actual + 300_000),
                        offset_ns: clock.offset_ns,
                        uncertainty_ns: clock.uncertainty_ns,
                    });
                }
            }
            let values: Vec<f64> = members.iter().filter_map(|&i| out[i].value).collect();
            Round {
                start_skew_ns: (starts.len() > 1)
                    .then(|| (starts.iter().max().unwrap_or(&0) - starts.iter().min().unwrap_or(&0)) as u64),
                jain: jain_index(&values),
                cells: members,
            }
        })
        .collect();
    let values: Vec<f64> = out.iter().filter_map(|c| c.value).collect();
    let group = if pattern.concurrent() {
        crate::result::group_sum(&out)
    } else {
        None
    };
    let failed: Vec<String> = out
        .iter()
        .filter(|c| c.error.is_some())
        .map(|c| format!("{} -> {}", c.from, c.to))
        .collect();
    Matrix {
        linerate: crate::VERSION.to_string(),
        schema: crate::result::SCHEMA,
        test: "tcp matrix".into(),
        pattern,
        started_unix_ms: STARTED_MS,
        partial: !failed.is_empty(),
        options: crate::spec::TestSpec::Tcp(crate::spec::TcpSpec::new()),
        hosts: hosts
            .iter()
            .enumerate()
            .map(|(i, h)| FleetHost {
                name: h.to_string(),
                address: format!("10.0.0.{}:5301", i + 1),
                host_name: Some(h.to_string()),
                node: None,
                clock: Some(clock),
            })
            .collect(),
        figure: CellFigure::ThroughputMbps,
        sum: match group {
            Some(g) => Some(g.mbps),
            None => (!values.is_empty()).then(|| values.iter().sum()),
        },
        sum_window_seconds: group.map(|g| g.window_seconds),
        jain: match group {
            Some(g) => g.jain,
            None => jain_index(&values),
        },
        cells: out,
        rounds,
        failed,
        skew_bound_ns: 10_000_000,
        notes: Vec::new(),
        lab: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_is_exact_on_a_line() {
        let pts: Vec<SizeLatency> = (0..10)
            .map(|i| {
                let bytes = 64.0 + 256.0 * f64::from(i);
                SizeLatency {
                    bytes,
                    latency_us: 12.5 + 0.00268 * bytes,
                }
            })
            .collect();
        let f = fit(&pts).expect("fits");
        assert!((f.slope_us_per_byte - 0.00268).abs() < 1e-12, "{f:?}");
        assert!((f.intercept_us - 12.5).abs() < 1e-9, "{f:?}");
        assert!((f.r2 - 1.0).abs() < 1e-12);
        assert_eq!(f.points, 10);
        let at = |bytes, latency_us| SizeLatency { bytes, latency_us };
        assert_eq!(fit(&[at(1.0, 2.0)]), None);
        assert_eq!(fit(&[at(1.0, 2.0), at(1.0, 3.0)]), None, "one size: no line");
    }

    #[test]
    fn r2_falls_with_scatter() {
        let pts = [(0.0, 0.0), (1.0, 3.0), (2.0, 1.0), (3.0, 4.0)]
            .map(|(bytes, latency_us)| SizeLatency { bytes, latency_us });
        let f = fit(&pts).expect("fits");
        assert!(f.r2 > 0.0 && f.r2 < 1.0, "{f:?}");
    }

    #[test]
    fn expected_slope_sums_the_stages() {
        // 8 bits per byte over 10 Gbit/s is 0.0008 us/byte; two stages add up.
        assert!((expected_slope(&[10e9]) - 0.0008).abs() < 1e-12);
        assert!((expected_slope(&[10e9, 8.5e9]) - (0.0008 + 8.0 / 8.5e3)).abs() < 1e-12);
    }

    fn load(users: u32, responses_per_second: f64, response_time_mean_us: f64) -> UserLoad {
        UserLoad {
            users,
            responses_per_second,
            bits_per_second_in: 0.0,
            response_time_mean_us,
        }
    }

    #[test]
    fn the_knee_is_where_throughput_stops_growing() {
        // Throughput flattens at 240 users while the response time keeps growing.
        let pts = [
            load(16, 1000.0, 16_000.0),
            load(64, 3900.0, 16_400.0),
            load(240, 9000.0, 26_000.0),
            load(480, 9100.0, 52_000.0),
        ];
        let o = optimum(&pts).expect("an optimum");
        assert_eq!(o.users, 240);
        assert_eq!(o.response_time_mean_us, 26_000.0);
        assert_eq!(optimum(&[load(8, 0.0, 0.0)]), None);
        // Flat from the start: the fewest users, whatever the order given.
        let flat = [load(16, 101.0, 20.0), load(8, 100.0, 10.0)];
        assert_eq!(optimum(&flat).map(|o| o.users), Some(8));
    }

    /// Issue 13: the one rule the exit status follows (here for `stub_result`).
    #[test]
    fn issue_13_outcome_failed_wins_over_partial_over_complete() {
        use crate::result::{Outcome, RrSummary, SideSummary, Summary};
        use crate::spec::{RrSpec, TestSpec, UdpSpec};
        let moved = Summary {
            sent: SideSummary {
                bytes: 100,
                ops: 1,
                ..SideSummary::default()
            },
            ..Summary::default()
        };
        let udp = || TestSpec::Udp(UdpSpec::new());
        let mut r = stub_result(udp(), moved.clone());
        assert_eq!(r.outcome(), Outcome::Complete);
        r.partial = true;
        assert_eq!(r.outcome(), Outcome::Partial);
        r.error = Some("agent gone".into());
        assert_eq!(r.outcome(), Outcome::Failed);
        assert_eq!(
            stub_result(udp(), Summary::default()).outcome(),
            Outcome::Failed,
            "nothing moved"
        );
        let no_transactions = Summary {
            rr: Some(RrSummary::default()),
            ..moved
        };
        assert_eq!(
            stub_result(TestSpec::Rr(RrSpec::new()), no_transactions).outcome(),
            Outcome::Failed
        );
    }
}
