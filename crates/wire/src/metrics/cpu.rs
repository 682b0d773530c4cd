//! Where a CPU's time went over an interval, as a document holds it (core's `metrics::cpu` reads
//! /proc/stat and computes it).

use serde::{Deserialize, Serialize};

/// Where a CPU's time went over an interval, percent of that CPU's time (all add up to 100).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSplit {
    /// The CPU's number; absent for the all-CPU figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// user + system + irq + softirq + steal.
    pub busy: f64,
    /// user and nice.
    pub user: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}
