//! What a TCP size sweep adds to its document: one [`TcpSizeFigures`] per point that ran.

use crate::result::{SideSummary, TestResult};
use crate::spec::Mix;
use serde::{Deserialize, Serialize};

/// What a TCP size sweep adds to the document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpSweep {
    /// The mix every point ran (`--mix`); null for one-way streams.
    pub mix: Option<Mix>,
    /// One per point, in the order of `points`.
    pub figures: Vec<TcpSizeFigures>,
}

/// One size's figures, over its run's measurement window (1 Mbit = 10^6 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpSizeFigures {
    /// Bytes per write and read, or per transfer under a mix (`-l`).
    pub buffer_bytes: u64,
    /// Bits per second counted by the receivers, every direction together.
    pub bits_per_second: f64,
    /// Busy share of the client's host CPUs, percent (100 = every CPU busy); null if unknown.
    pub client_cpu_percent: Option<f64>,
    /// The same for the agents' hosts (their mean when several).
    pub agent_cpu_percent: Option<f64>,
    /// bits_per_second / 10^6 / client_cpu_percent; null when that CPU is unknown or 0.
    pub client_mbit_per_second_per_cpu_percent: Option<f64>,
    /// bits_per_second / 10^6 / agent_cpu_percent.
    pub agent_mbit_per_second_per_cpu_percent: Option<f64>,
    /// Under a mix: transfers completed per second, both ways; null for one-way streams.
    pub transfers_per_second: Option<f64>,
}

impl TcpSizeFigures {
    /// A run's figures: the receivers' throughput, and each end's host CPU from the side it
    /// counted (with several directions, the forward one: the client sends it, agents receive).
    pub fn of(r: &TestResult, buffer_bytes: u64) -> TcpSizeFigures {
        let s = &r.summary;
        let (client, agent): (&SideSummary, &SideSummary) = match s.directions.as_ref().and_then(|d| d.get("forward")) {
            Some(f) => (&f.sent, &f.received),
            None if s.sent.counted_by.iter().any(|c| c == "client") => (&s.sent, &s.received),
            None => (&s.received, &s.sent),
        };
        let bits_per_second = s.mix.as_ref().map_or(s.received.bits_per_second, |m| m.bits_per_second);
        let per_cpu = |cpu: Option<f64>| cpu.filter(|c| *c > 0.0).map(|c| bits_per_second / 1e6 / c);
        let (client_cpu, agent_cpu) = (client.cpu.host_percent, agent.cpu.host_percent);
        TcpSizeFigures {
            buffer_bytes,
            bits_per_second,
            client_cpu_percent: client_cpu,
            agent_cpu_percent: agent_cpu,
            client_mbit_per_second_per_cpu_percent: per_cpu(client_cpu),
            agent_mbit_per_second_per_cpu_percent: per_cpu(agent_cpu),
            transfers_per_second: s.mix.as_ref().map(|m| m.transfers_per_second),
        }
    }
}
