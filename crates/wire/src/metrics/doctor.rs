//! What `linerate doctor` found, as it prints and writes it (core's `metrics::doctor` checks a
//! host's configuration and makes these).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Likely to hold results back.
    Warn,
    /// Worth knowing; may or may not matter for the test at hand.
    Info,
    /// Checked and fine.
    Ok,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    /// Short id of the check: `mtu`, `offloads`, `irq_affinity`, `rmem_max`, `wmem_max`,
    /// `tcp_rmem`, `tcp_wmem`, `buffers`, `governor`, `irqbalance`, `busy_poll`.
    pub check: String,
    pub message: String,
    /// A shell command that applies the advice (root needed); absent when there is none.
    pub fix: Option<String>,
}
