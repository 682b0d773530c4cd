//! The repeated test's document (`--repeat`): every run's whole result, and the statistics of
//! each headline figure over the runs. Types (with the policy's check) only; linerate-results'
//! `repeat` fills them in with its `stats` over the figures its `headline` reads from each run.

use super::{Outcome, TestResult};
use serde::{Deserialize, Serialize};

/// Which way a figure improves: throughput up; CPU, latency and loss down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Up,
    Down,
}

/// How many runs a repeated test makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Runs {
    /// `--repeat N`: N runs.
    Fixed { runs: u32 },
    /// `--repeat auto`: runs until the 95 % confidence interval of the primary figure's mean is
    /// within `ci_percent` of the mean, at least `min_runs` and at most `max_runs` of them.
    Auto {
        ci_percent: f64,
        min_runs: u32,
        max_runs: u32,
    },
}

/// How a test is repeated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepeatPolicy {
    #[serde(flatten)]
    pub runs: Runs,
    /// The pause between the end of one run and the start of the next, seconds.
    pub pause_seconds: f64,
    /// `--best K`: also the mean of the K best runs by the primary figure; None without it.
    pub best: Option<u32>,
}

/// Statistics of one figure over the runs, in its `unit`. Spread and interval need two runs
/// and are null with one; percentages of the mean are null when the mean is 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub unit: String,
    /// The runs that gave a value.
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n - 1).
    pub stddev: Option<f64>,
    /// Coefficient of variation: stddev / mean x 100.
    pub cv_percent: Option<f64>,
    /// The 95 % confidence interval of the mean: mean -+ t(0.975, n - 1) x stddev / sqrt(n).
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    /// Its half-width as a share of the mean, percent.
    pub ci95_half_width_percent: Option<f64>,
    /// The runs a +-2 % interval would take at this spread: (t x stddev / (0.02 x mean))^2.
    pub runs_for_2_percent: Option<u32>,
}

/// One headline figure over the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FigureStats {
    /// The figure's name, its unit in it (`received_mbit_per_second`).
    pub figure: String,
    /// What it is, in words (`receiver throughput`).
    pub label: String,
    pub better: Better,
    /// Its value in each run, in run order; null for a run left out of the aggregate (partial
    /// or failed) or one that did not measure it.
    pub values: Vec<Option<f64>>,
    #[serde(flatten)]
    pub stats: Stats,
}

/// `--best K`: the mean of the K best runs by the primary figure (NTttcp's method).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Best {
    pub k: u32,
    /// The primary figure's name.
    pub figure: String,
    pub unit: String,
    /// The mean of the kept runs' values.
    pub mean: f64,
    /// The kept runs' numbers (1 = the first run), ascending.
    pub runs_kept: Vec<usize>,
}

/// The document of a repeated test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repeated {
    /// Version of linerate that measured it.
    pub linerate: String,
    /// The layout's version, the same number as a single result's.
    pub schema: u32,
    /// `"tcp repeat"`, `"udp repeat"`, `"rr repeat"`, `"http repeat"`.
    pub test: String,
    /// True when it stopped before its policy was met (Ctrl-C, a lost agent, a run that could
    /// not start) or a run was cut short.
    pub partial: bool,
    pub policy: RepeatPolicy,
    /// Auto: whether the interval reached `ci_percent` within `max_runs`; null for a fixed count.
    pub converged: Option<bool>,
    /// The name of the primary figure: the one `--best` ranks runs by and auto converges on
    /// (`received_mbit_per_second`, `transactions_per_second`, `responses_per_second`).
    pub primary: String,
    /// The runs whose figures make the aggregate (complete runs), numbered from 1.
    pub aggregated_runs: Vec<usize>,
    /// The headline figures of the test kind, in the kind's order, the primary figure first.
    /// A figure no aggregated run measured is left out.
    pub aggregate: Vec<FigureStats>,
    /// Present with `--best` once K runs are aggregated.
    pub best: Option<Best>,
    /// The primary figure's runs for a +-2 % interval; null with fewer than two runs.
    pub runs_needed_for_2_percent: Option<u32>,
    /// Every run's whole document, in order (the last may be partial).
    pub runs: Vec<TestResult>,
    pub notes: Vec<String>,
}

impl Repeated {
    /// An empty repeated test of `kind` ("tcp") under `policy`.
    pub fn new(kind: &str, policy: RepeatPolicy) -> Repeated {
        Repeated {
            linerate: crate::VERSION.to_string(),
            schema: super::SCHEMA,
            test: format!("{kind} repeat"),
            partial: false,
            converged: matches!(policy.runs, Runs::Auto { .. }).then_some(false),
            policy,
            primary: String::new(),
            aggregated_runs: Vec::new(),
            aggregate: Vec::new(),
            best: None,
            runs_needed_for_2_percent: None,
            runs: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// How the repeated test ended: failed when no run measured anything, else partial or
    /// complete as for a single run.
    pub fn outcome(&self) -> Outcome {
        if self.runs.iter().all(|r| r.outcome() == Outcome::Failed) {
            Outcome::Failed
        } else if self.partial {
            Outcome::Partial
        } else {
            Outcome::Complete
        }
    }

    /// The aggregate of the primary figure; None when no aggregated run measured it.
    pub fn primary(&self) -> Option<&FigureStats> {
        self.figure(&self.primary)
    }

    /// The aggregate of the figure named `figure`.
    pub fn figure(&self, figure: &str) -> Option<&FigureStats> {
        self.aggregate.iter().find(|f| f.figure == figure)
    }
}

/// The most runs one repeated test may make.
pub const MAX_RUNS: u32 = 1000;

/// A policy that cannot be followed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RepeatError {
    #[error("--repeat must be between 1 and {MAX_RUNS} runs, not {0}")]
    Runs(u32),
    #[error("--min-runs {min} is more than --max-runs {max}")]
    MinOverMax { min: u32, max: u32 },
    #[error("--min-runs must be 2 or more for --repeat auto (an interval needs two runs), not {0}")]
    MinRuns(u32),
    #[error("--max-runs must be at most {MAX_RUNS}, not {0}")]
    MaxRuns(u32),
    #[error("--ci must be above 0 % and below 100 %, not {0} %")]
    Ci(f64),
    #[error("--best must be 1 or more")]
    BestZero,
    #[error("--best {best} is more than the {runs} runs that are sure to be made ({what})")]
    BestOverRuns { best: u32, runs: u32, what: &'static str },
    #[error("--pause must be finite and not negative")]
    Pause,
}

impl RepeatPolicy {
    /// Checks the policy once, before any run.
    pub fn validate(&self) -> Result<(), RepeatError> {
        let (sure, what) = match self.runs {
            Runs::Fixed { runs } => {
                if !(1..=MAX_RUNS).contains(&runs) {
                    return Err(RepeatError::Runs(runs));
                }
                (runs, "--repeat")
            }
            Runs::Auto {
                ci_percent,
                min_runs,
                max_runs,
            } => {
                if !(ci_percent > 0.0 && ci_percent < 100.0) {
                    return Err(RepeatError::Ci(ci_percent));
                }
                if min_runs < 2 {
                    return Err(RepeatError::MinRuns(min_runs));
                }
                if max_runs > MAX_RUNS {
                    return Err(RepeatError::MaxRuns(max_runs));
                }
                if min_runs > max_runs {
                    return Err(RepeatError::MinOverMax {
                        min: min_runs,
                        max: max_runs,
                    });
                }
                (min_runs, "--min-runs")
            }
        };
        match self.best {
            Some(0) => return Err(RepeatError::BestZero),
            Some(best) if best > sure => {
                return Err(RepeatError::BestOverRuns { best, runs: sure, what });
            }
            _ => {}
        }
        if !(self.pause_seconds.is_finite() && self.pause_seconds >= 0.0) {
            return Err(RepeatError::Pause);
        }
        Ok(())
    }
}
