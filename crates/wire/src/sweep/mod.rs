//! Sweeps as data: one document for a series of runs that vary a parameter, each point's whole
//! result, and the figures derived over the points (the rr size fit, the http optimum). The
//! drivers that run a sweep are core's `sweep`; the report crate renders one; docs/results.md
//! describes its layout (schema [`crate::result::SCHEMA`]).

pub mod http;
pub mod tcp;

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
}
