//! The matrix document: one pattern run over a fleet of agents (a mesh, A×B, an
//! incast, an outcast or named pairs), every cell a full third-party run (`linerate tcp --from
//! A B`) with its headline figure, the rounds they ran in, the clock each agent was started by,
//! and the matrix's own figures (the sum, Jain's fairness index of flows that ran together, the
//! failed cells by name). Types only: `crate::client::matrix` fills it, the results side stores,
//! compares and prints it, and the report draws it as a heat map.

use super::TestResult;
use super::lab::LabRecord;
use crate::spec::TestSpec;
use serde::{Deserialize, Serialize};

/// Which pairs a pattern tests and which run together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Every ordered pair of `hosts`, one test per host at a time, in rounds.
    Mesh,
    /// Every `from` against every `to` (A×B), one test per host at a time, in rounds.
    Disjoint,
    /// Every `from` into the one `to`, all at once.
    Incast,
    /// The one `from` to every `to`, all at once.
    Outcast,
    /// The pairs named, one test per host at a time, in rounds.
    Pairs,
}

impl Pattern {
    /// All of a pattern's tests run in one round (incast, outcast).
    pub fn concurrent(self) -> bool {
        matches!(self, Pattern::Incast | Pattern::Outcast)
    }

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Mesh => "mesh",
            Pattern::Disjoint => "disjoint",
            Pattern::Incast => "incast",
            Pattern::Outcast => "outcast",
            Pattern::Pairs => "pairs",
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Pattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Pattern, String> {
        Ok(match s {
            "mesh" => Pattern::Mesh,
            "disjoint" => Pattern::Disjoint,
            "incast" => Pattern::Incast,
            "outcast" => Pattern::Outcast,
            "pairs" => Pattern::Pairs,
            other => {
                return Err(format!(
                    "'{other}' is not a pattern (mesh, disjoint, incast, outcast, pairs)"
                ));
            }
        })
    }
}

/// One agent of the fleet, as the user named it and as it described itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetHost {
    /// The name the matrix's rows and columns use: as given (`h2`, `10.0.0.2:5301`, or one
    /// address a `dns:NAME` expanded to).
    pub name: String,
    /// The address it was reached at (`IP:PORT`).
    pub address: String,
    /// The agent's host name (uname), null when it could not be asked.
    #[serde(default)]
    pub host_name: Option<String>,
    /// The node it says it runs on (`serve --node-name`, or `$LINERATE_NODE`), null when none.
    #[serde(default)]
    pub node: Option<String>,
    /// Its clock against the controller's, estimated before its first round; null when it was
    /// not reached.
    #[serde(default)]
    pub clock: Option<ClockEstimate>,
}

/// An agent's clock offset against the controller's, from timestamped exchanges over the
/// control connection (the fastest kept): offset = far time − (sent + round trip / 2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockEstimate {
    /// Agent's clock minus the controller's, nanoseconds.
    pub offset_ns: i64,
    /// Half the best round trip, nanoseconds: the offset is within ± this.
    pub uncertainty_ns: u64,
    /// Exchanges made.
    pub exchanges: u32,
}

/// When one cell's test started, in the controller's clock.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellStart {
    /// The start the controller asked for, Unix nanoseconds in its own clock.
    pub scheduled_unix_ns: i64,
    /// When the `from` agent sent its `start` (woken at the agreed instant), in the controller's
    /// clock: the agent's own reading minus its estimated offset. The start skew is read from it.
    pub actual_unix_ns: i64,
    /// When the far agent's `started` came back to the `from` agent (its data then flows), in
    /// the controller's clock; null from an agent that did not say.
    #[serde(default)]
    pub answered_unix_ns: Option<i64>,
    /// The `from` agent's clock offset used (its [`ClockEstimate`]'s), nanoseconds.
    pub offset_ns: i64,
    /// ± nanoseconds of that offset.
    pub uncertainty_ns: u64,
}

/// One cell of the matrix: one test from `from` to `to`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub from: String,
    pub to: String,
    /// The round it ran in: its index into [`Matrix::rounds`], from 0 (texts say "round 1"
    /// for index 0; docs/results.md).
    pub round: usize,
    /// The cell's headline figure in the matrix's unit ([`Matrix::figure`]); null when the
    /// cell failed or its run measured no such figure.
    pub value: Option<f64>,
    #[serde(default)]
    pub start: Option<CellStart>,
    /// The cell's whole run, as `linerate tcp --from FROM TO` would have written it; null when
    /// the cell never ran or its `from` agent was lost before sending it.
    #[serde(default)]
    pub result: Option<Box<TestResult>>,
    /// Why the cell failed (an agent unreachable, refused, lost); null when it did not.
    #[serde(default)]
    pub error: Option<String>,
}

/// One round: tests that ran together, no host in two.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Indexes into [`Matrix::cells`].
    pub cells: Vec<usize>,
    /// Latest minus earliest actual start of its cells, in the controller's clock,
    /// nanoseconds; null with fewer than two started cells.
    pub start_skew_ns: Option<u64>,
    /// Jain's fairness index of its cells' values, (Σx)² / (n·Σx²), over cells that measured;
    /// null with fewer than two.
    pub jain: Option<f64>,
}

/// The matrix's headline figure: what every cell's `value` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellFigure {
    /// Receiver-counted throughput, Mbit/s (tcp, udp).
    ThroughputMbps,
    /// Median round trip, microseconds (rr).
    RoundTripP50Us,
    /// Datagrams lost, % of those sent (udp, beside throughput in each cell's result).
    LossPercent,
    /// The probes' loaded median round trip, ms (`latency.loaded_ms`: a test with `--probe`,
    /// whose throughput stays in each cell's result).
    LoadedLatencyP50Ms,
}

impl CellFigure {
    /// The figure's name with its unit, for a table's title.
    pub fn label(self) -> &'static str {
        match self {
            CellFigure::ThroughputMbps => "throughput (Mbit/s)",
            CellFigure::RoundTripP50Us => "round trip p50 (µs)",
            CellFigure::LossPercent => "loss (%)",
            CellFigure::LoadedLatencyP50Ms => "loaded latency p50 (ms)",
        }
    }

    /// The figure's unit alone, as the results store's figures write it (`Mbit/s`, `us`, `%`).
    pub fn unit(self) -> &'static str {
        match self {
            CellFigure::ThroughputMbps => "Mbit/s",
            CellFigure::RoundTripP50Us => "us",
            CellFigure::LossPercent => "%",
            CellFigure::LoadedLatencyP50Ms => "ms",
        }
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, CellFigure::ThroughputMbps)
    }
}

/// The whole matrix document. `test` is the kind with " matrix" after it ("tcp matrix").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub linerate: String,
    pub schema: u32,
    /// "tcp matrix", "udp matrix" or "rr matrix".
    pub test: String,
    pub pattern: Pattern,
    /// Wall-clock start of the first round, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// True when some cell was not measured (Ctrl-C, a lost agent, a refusal).
    pub partial: bool,
    /// The spec every cell ran, as sent.
    pub options: TestSpec,
    /// Every agent named, in the order rows and columns take.
    pub hosts: Vec<FleetHost>,
    pub figure: CellFigure,
    pub cells: Vec<Cell>,
    pub rounds: Vec<Round>,
    /// Throughput only (null otherwise). A concurrent pattern's (incast, outcast): every byte
    /// its flows' receivers counted, over the group's common window ([`Self::sum_window_seconds`]),
    /// so it never exceeds what the shared link carried (adding rates each over its own
    /// window read 48.49 Mbit/s into a 50 Mbit/s host, above TCP's 47.82). A one-at-a-time
    /// pattern's: the cells' values added (they ran at different times).
    pub sum: Option<f64>,
    /// The window a concurrent pattern's sum is over: from the earliest flow's start to the
    /// latest one's end (its start plus its receive window), seconds, in the controller's clock;
    /// the longest receive window where a start is unknown. Null for a one-at-a-time pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_window_seconds: Option<f64>,
    /// Jain's index over every cell (concurrent patterns: the flows that shared the run, of the
    /// bytes each received over the common window); for one-at-a-time patterns the rounds
    /// carry theirs. Null when fewer than two measured.
    pub jain: Option<f64>,
    /// Cells that failed, "FROM -> TO".
    pub failed: Vec<String>,
    /// The largest start skew a concurrent group may have before a note says so, nanoseconds.
    pub skew_bound_ns: u64,
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<LabRecord>,
}

/// Jain's fairness index of `values`: (Σx)² / (n·Σx²), 1 when all are equal, 1/n when one takes
/// everything; None with fewer than two values or all zero.
pub fn jain_index(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|v| v * v).sum();
    if squares <= 0.0 {
        return None;
    }
    Some(sum * sum / (values.len() as f64 * squares))
}

/// A concurrent group's figures over its common window: the sum (Mbit/s), the window
/// (seconds) and Jain's index of what each flow received in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupSum {
    pub mbps: f64,
    pub window_seconds: f64,
    pub jain: Option<f64>,
}

/// The flows of `cells` that measured (a value and a run), taken together: every byte their
/// receivers counted over the group's common window, from the earliest start to the latest
/// end (a flow's start plus its receive window, in the controller's clock); where any start is
/// unknown, the longest receive window. None when no flow measured or the window is empty.
pub fn group_sum(cells: &[Cell]) -> Option<GroupSum> {
    let flows: Vec<(&Cell, &TestResult)> = cells
        .iter()
        .filter(|c| c.value.is_some())
        .filter_map(|c| Some((c, c.result.as_deref()?)))
        .collect();
    if flows.is_empty() {
        return None;
    }
    let bytes: Vec<f64> = flows.iter().map(|(_, r)| r.summary.received.bytes as f64).collect();
    let longest = flows
        .iter()
        .map(|(_, r)| r.summary.received.seconds)
        .fold(0.0, f64::max);
    let starts: Option<Vec<i64>> = flows.iter().map(|(c, _)| Some(c.start?.actual_unix_ns)).collect();
    let window_seconds = match starts {
        Some(starts) => {
            // Seconds from the earliest start, in integer nanoseconds first: Unix nanoseconds
            // as f64 keep only a quarter of a microsecond.
            let first = starts.iter().copied().min().unwrap_or(0);
            let last = flows
                .iter()
                .zip(&starts)
                .map(|((_, r), s)| (s - first) as f64 / 1e9 + r.summary.received.seconds)
                .fold(0.0, f64::max);
            last.max(longest)
        }
        None => longest,
    };
    (window_seconds > 0.0).then(|| GroupSum {
        mbps: bytes.iter().sum::<f64>() * 8.0 / window_seconds / 1e6,
        window_seconds,
        jain: jain_index(&bytes),
    })
}

impl Matrix {
    /// How the pattern run ended: failed when no cell measured, partial when some cell failed,
    /// was cut short or never ran (exit 3), complete when every cell is.
    pub fn outcome(&self) -> super::Outcome {
        use super::Outcome;
        let outcomes: Vec<Outcome> = self
            .cells
            .iter()
            .map(|c| match (&c.result, &c.error) {
                (Some(r), None) => r.outcome(),
                (Some(r), Some(_)) if r.outcome() != Outcome::Failed => Outcome::Partial,
                _ => Outcome::Failed,
            })
            .collect();
        if outcomes.iter().all(|o| *o == Outcome::Failed) {
            Outcome::Failed
        } else if self.partial || outcomes.iter().any(|o| *o != Outcome::Complete) {
            Outcome::Partial
        } else {
            Outcome::Complete
        }
    }

    /// The values of the cells that measured, in cell order.
    pub fn values(&self) -> Vec<f64> {
        self.cells.iter().filter_map(|c| c.value).collect()
    }

    /// The cell from `from` to `to`, if the pattern has it.
    pub fn cell(&self, from: &str, to: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.from == from && c.to == to)
    }

    /// Names that appear as a row (`from`), in host order.
    pub fn rows(&self) -> Vec<&str> {
        self.hosts
            .iter()
            .map(|h| h.name.as_str())
            .filter(|n| self.cells.iter().any(|c| c.from == *n))
            .collect()
    }

    /// Names that appear as a column (`to`), in host order.
    pub fn columns(&self) -> Vec<&str> {
        self.hosts
            .iter()
            .map(|h| h.name.as_str())
            .filter(|n| self.cells.iter().any(|c| c.to == *n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_one_hog() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        let hog = jain_index(&[10.0, 0.0, 0.0, 0.0]).expect("some");
        assert!((hog - 0.25).abs() < 1e-12, "{hog}");
        assert_eq!(jain_index(&[3.0]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn patterns_read_back_by_name() {
        for p in [
            Pattern::Mesh,
            Pattern::Disjoint,
            Pattern::Incast,
            Pattern::Outcast,
            Pattern::Pairs,
        ] {
            assert_eq!(p.name().parse::<Pattern>(), Ok(p));
        }
        assert!("star".parse::<Pattern>().unwrap_err().contains("mesh"));
    }
}
