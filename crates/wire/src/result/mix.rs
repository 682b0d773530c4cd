//! What a mixed TCP run (`tcp --mix R:W`, the TOE workload) adds to `summary`: bytes, rates and
//! completed transfers per direction, transfers per second, CPU on both ends and efficiency.

use serde::{Deserialize, Serialize};

/// `summary.mix`: the run's figures over the measurement window, every byte and transfer
/// counted by its receiver (read = agent to client, counted by the client; write = client to
/// agent, counted by the agents). 1 Mbit = 10^6 bits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MixSummary {
    /// The share of transfers asked to go agent to client, percent.
    pub read_percent: u8,
    /// The share asked to go client to agent, percent.
    pub write_percent: u8,
    /// Bytes per transfer (`-l`).
    pub transfer_bytes: u64,
    /// Agent to client: the client's reads.
    pub read: MixDirection,
    /// Client to agent: the client's writes.
    pub write: MixDirection,
    /// Transfers completed both ways (read.transfers + write.transfers).
    pub transfers: u64,
    /// The longest of the receiving ends' windows, seconds: the base of every rate here.
    pub seconds: f64,
    /// transfers / seconds.
    pub transfers_per_second: f64,
    /// Both directions' received bits / seconds.
    pub bits_per_second: f64,
    /// Read bytes as a share of all bytes received, percent; null when nothing moved.
    pub read_share_percent: Option<f64>,
    /// Busy share of the client's host CPUs over the window, percent (100 = every CPU busy).
    pub client_cpu_percent: Option<f64>,
    /// The same for the agents' hosts (their mean when several).
    pub agent_cpu_percent: Option<f64>,
    /// Efficiency as the offload reports gave it: throughput (both directions, Mbit/s) per
    /// percent of the client host's CPU busy; null when that CPU is unknown or 0.
    pub client_mbit_per_second_per_cpu_percent: Option<f64>,
    /// The same per percent of the agents' hosts' CPU.
    pub agent_mbit_per_second_per_cpu_percent: Option<f64>,
}

/// One direction of a mixed run, counted by its receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MixDirection {
    /// Bytes received inside the window.
    pub bytes: u64,
    /// bytes x 8 / the mix's seconds.
    pub bits_per_second: f64,
    /// Transfers received in full inside the window.
    pub transfers: u64,
    /// Bytes the senders counted, for comparison (their count holds what was still in flight
    /// when the window closed).
    pub sent_bytes: u64,
}
