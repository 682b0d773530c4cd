//! The comparison document (`linerate compare A B`): for every point the two sides share, each
//! headline figure on both sides, the change, the 95 % confidence interval of the difference and
//! a verdict; below, what differs between the configurations that measured them. Types only;
//! linerate-results' `compare` fills them in.

use super::Better;
use serde::{Deserialize, Serialize};

/// What a comparison concluded of one figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better, and the 95 % interval of the difference leaves out zero.
    Better,
    /// B is worse, likewise.
    Worse,
    /// The interval holds zero: no change the runs can tell from noise.
    NoSignificantChange,
    /// A side has one run: significance needs repeats (`--repeat`).
    NeedsRepeats,
    /// A side did not measure the figure.
    NotMeasured,
}

impl Verdict {
    /// In words, as the text shows it.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::NeedsRepeats => "needs repeats",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// How the interval of the difference was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// Welch's t on the runs' values (means).
    Welch,
    /// A seeded percentile bootstrap of the medians, for figures that are percentiles.
    Bootstrap,
}

/// One side's values of a figure at a point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SideFigure {
    /// Runs that measured it.
    pub n: usize,
    /// Their mean (Welch) or median (bootstrap), in the figure's unit.
    pub value: f64,
    /// Each run's value, in run order.
    pub values: Vec<f64>,
}

/// One headline figure compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FigureComparison {
    /// Its name, its unit in it: `received_mbit_per_second`.
    pub figure: String,
    /// In words: `receiver throughput`.
    pub label: String,
    pub unit: String,
    pub better: Better,
    pub a: Option<SideFigure>,
    pub b: Option<SideFigure>,
    /// (B - A) / A x 100; null when A is 0 or a side lacks the figure.
    pub change_percent: Option<f64>,
    /// B - A in the figure's unit.
    pub difference: Option<f64>,
    /// The 95 % confidence interval of B - A; null with one run a side.
    pub difference_ci95_low: Option<f64>,
    pub difference_ci95_high: Option<f64>,
    pub method: Option<IntervalMethod>,
    /// Welch's two-sided p-value; null for the bootstrap.
    pub p_value: Option<f64>,
    pub verdict: Verdict,
}

/// A varied option's value at a point (`length` = `64K`, `payload_bytes` = `1472`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Coordinate {
    pub name: String,
    pub value: String,
}

/// A point both sides measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointComparison {
    /// The test kind (`tcp`) or a campaign's test name.
    pub test: String,
    pub coordinates: Vec<Coordinate>,
    pub runs_a: usize,
    pub runs_b: usize,
    pub figures: Vec<FigureComparison>,
}

/// One setting that differs between the sides' configurations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigChange {
    /// "options" (the test as asked), "client", the agent's name (`A-name / B-name` where the
    /// sides named it apart), or "lab".
    pub host: String,
    /// Dotted path: `interfaces.eth0.mtu_bytes`, `sysctls.net.core.rmem_max`, `h1.link`.
    pub key: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

/// A side as it was asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparedSide {
    /// As given: a result id, a campaign, `label:K=V`, a file.
    pub source: String,
    /// The documents it took, by id or path.
    pub documents: Vec<String>,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub linerate: String,
    pub schema: u32,
    /// `"compare"`.
    pub test: String,
    pub a: ComparedSide,
    pub b: ComparedSide,
    pub points: Vec<PointComparison>,
    /// Points only one side measured, as `test length=64K`.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// What differs between the configurations (the first run of each side).
    pub config: Vec<ConfigChange>,
    pub notes: Vec<String>,
    /// The smallest change, percent of A's value, that a verdict calls better or worse (issue
    /// 38, `compare --threshold`): a change whose interval leaves out zero but is smaller than
    /// this is "no significant change". Absent in documents made before it, whose verdicts had
    /// no such floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_percent: Option<f64>,
}

impl Comparison {
    /// The figures significantly worse by more than `percent` (`--fail-if-worse`).
    pub fn worse_by_more_than(&self, percent: f64) -> Vec<(&PointComparison, &FigureComparison)> {
        self.points
            .iter()
            .flat_map(|p| p.figures.iter().map(move |f| (p, f)))
            .filter(|(_, f)| f.verdict == Verdict::Worse && f.change_percent.is_some_and(|c| c.abs() > percent))
            .collect()
    }
}
