//! What a request-response run adds to the document: each stream's transactions and round-trip
//! histograms, and the run's latency figures, peaks and rates in `summary`.

use super::Bin;
use serde::{Deserialize, Serialize};

/// One request-response stream, as its end saw it. Histograms are hex of HdrHistogram's V2
/// encoding, in ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RrStreamReport {
    /// Transactions completed (asking end: timed round trips; answering end: answered).
    pub transactions: u64,
    /// UDP requests that got no answer within the timeout.
    pub lost: u64,
    /// Answers that came after their request had timed out.
    pub stale: u64,
    /// Failed transactions (a refused connect, a reset).
    pub errors: u64,
    /// Round-trip times (asking end).
    pub latency_histogram: String,
    /// TCP_CRR: connect times.
    pub connect_histogram: Option<String>,
    /// Open loop: the rate asked for, transactions/s per stream.
    pub requested_rate: Option<f64>,
    /// Open loop: the mean spacing achieved between requests, microseconds.
    pub achieved_spacing_us: Option<f64>,
    /// Open loop (`--tps` without `--connect`): the requests and what became of them; absent in
    /// the closed loop and from older documents.
    #[serde(default)]
    pub open_loop: Option<OpenLoopReport>,
}

/// One asking stream's open loop, over the measuring window (requests due after the warm-up).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopReport {
    /// Requests sent.
    pub requests_sent: u64,
    /// Requests due that were not sent: `max_outstanding` were in flight, TCP was still writing
    /// the one before (the socket's buffer full), or the far end refused the datagram.
    pub requests_not_sent: u64,
    /// The most requests this stream kept in flight (`--max-outstanding`, for UDP requests or
    /// responses under 8 bytes at most half the range of the bytes that carry the number).
    pub max_outstanding: u32,
    /// Round trips timed from the actual send (the main histogram times them from the
    /// scheduled moment), ns, hex as `latency_histogram`.
    pub latency_from_send_histogram: String,
}

/// What `summary` adds for a request-response run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RrSummary {
    /// Timed round trips, all asking streams.
    pub transactions: u64,
    pub transactions_per_second: f64,
    /// UDP requests unanswered within the timeout.
    pub lost: u64,
    /// Answers that came after their request timed out.
    pub stale: u64,
    pub errors: u64,
    pub latency_us: Option<LatencyFigures>,
    /// The round-trip histogram in up to 100 equal bins from its 0.1th to its 99.9th
    /// percentile (microseconds); the rest lie outside.
    pub histogram: Vec<Bin>,
    pub peaks: Vec<Peak>,
    /// Distances between neighbouring peaks, microseconds.
    pub peak_separations_us: Vec<f64>,
    pub rate: Option<RateFigures>,
    /// Open loop (`--tps` without `--connect`): requests sent and not sent, and the round trips
    /// from the actual send; absent in the closed loop and from older documents.
    #[serde(default)]
    pub open_loop: Option<OpenLoopFigures>,
    pub connect: Option<ConnectFigures>,
    /// Busy CPU time per transaction, microseconds of one core (netperf's service demand): the
    /// client's host and the agents' hosts, over the window. On one host both count the same CPU.
    pub cpu_us_per_transaction: Option<CpuPerTransaction>,
    /// Always absent from a single run: a size sweep's fit is in its sweep document (`crate::sweep`).
    pub fit: Option<Fit>,
}

/// Round-trip (or connect) times, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyFigures {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub stddev: f64,
}

/// A peak of the latency histogram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    /// Where it is: the centre of its bin, microseconds.
    pub at_us: f64,
    pub count: u64,
}

/// The least-squares line through (size in bytes, latency in µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub slope_us_per_byte: f64,
    pub intercept_us: f64,
    /// Coefficient of determination (1 = every point on the line).
    pub r2: f64,
    pub points: usize,
}

/// Open loop: what was asked and what was done, transactions per second over all streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateFigures {
    pub requested_per_second: f64,
    pub achieved_per_second: f64,
}

/// Open loop: the requests of every asking stream, over the measuring window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopFigures {
    /// Requests sent, all streams.
    pub requests_sent: u64,
    /// Requests due but not sent (`max_outstanding` in flight, TCP's send buffer full, a
    /// refused datagram), all streams.
    pub requests_not_sent: u64,
    /// `requests_sent` / the client's window seconds.
    pub requests_sent_per_second: f64,
    /// The most requests in flight per stream (the least over the streams).
    pub max_outstanding: u32,
    /// Round trips from the actual send, microseconds (`latency_us` times them from the
    /// scheduled moment); None when none was timed.
    pub latency_from_send_us: Option<LatencyFigures>,
}

/// TCP_CRR: new connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectFigures {
    pub connections_per_second: f64,
    pub connect_us: LatencyFigures,
}

/// Busy CPU per transaction, microseconds of one core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPerTransaction {
    pub client: Option<f64>,
    pub agents: Option<f64>,
}
