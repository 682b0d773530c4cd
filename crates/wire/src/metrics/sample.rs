//! What a host did over an interval, as a document holds it: CPU split per CPU, interrupts and
//! softirqs per second, interface traffic, the stack's counters, memory, this process's own CPU.
//! Core's `metrics::sample` reads the counters and computes these from two readings.

use super::cpu::CpuSplit;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Memory from /proc/meminfo, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryUsage {
    pub total_bytes: u64,
    pub available_bytes: u64,
    /// total - available.
    pub used_bytes: u64,
}

/// A rate on one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuRate {
    pub cpu: u32,
    pub per_second: f64,
}

/// One interrupt source's rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqRate {
    /// IRQ number, or the architecture's name (`LOC` = local timer, `RES`, `CAL`, `TLB`, ...).
    pub irq: String,
    /// What /proc/interrupts says of it (chip, handler name).
    pub desc: String,
    /// The interface whose queue this IRQ serves, when it is a NIC's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    pub per_second: f64,
    /// CPUs that took it (non-zero only).
    pub per_cpu: Vec<CpuRate>,
}

/// Interrupts per second over an interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InterruptRates {
    pub total: f64,
    pub per_cpu: Vec<CpuRate>,
    /// Sources that fired, busiest first (left out of timeline samples).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_irq: Vec<IrqRate>,
    /// Interrupts of each NIC's queues, summed per interface.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_interface: BTreeMap<String, f64>,
}

/// One softirq kind's rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftirqRate {
    pub total: f64,
    pub per_cpu: Vec<CpuRate>,
}

/// One interface's traffic over an interval, as its counters saw it (headers included).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InterfaceUsage {
    pub name: String,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    /// rx_bytes x 8 / seconds.
    pub rx_bits_per_second: f64,
    pub tx_bits_per_second: f64,
    pub rx_packets_per_second: f64,
    pub tx_packets_per_second: f64,
    /// The interface was not there at the interval's start: counted from its creation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub appeared: bool,
}

/// The stack's counters over an interval (this network namespace; softnet for the host).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StackUsage {
    pub tcp_retransmitted_segments: u64,
    pub tcp_out_segments: u64,
    pub tcp_in_segments: u64,
    pub udp_in_datagrams: u64,
    pub udp_out_datagrams: u64,
    pub udp_receive_buffer_errors: u64,
    pub udp_send_buffer_errors: u64,
    pub softnet_processed: u64,
    pub softnet_dropped: u64,
    pub softnet_squeezed: u64,
}

/// This process's own use over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessUsage {
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// (user + system) / (seconds x online CPUs) x 100: a share of the whole host, 100 = every
    /// CPU busy (the base of `cpu.process_percent_of_host`). Null over less than 0.1 s.
    pub percent_of_host: Option<f64>,
    pub voluntary_context_switches: u64,
    pub involuntary_context_switches: u64,
}

/// What a host did between two snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostUsage {
    pub seconds: f64,
    /// All CPUs together.
    pub cpu: Option<CpuSplit>,
    pub per_cpu: Vec<CpuSplit>,
    pub interrupts_per_second: Option<InterruptRates>,
    /// By kind (`NET_RX`, `NET_TX`, `TIMER`, ...).
    pub softirqs_per_second: BTreeMap<String, SoftirqRate>,
    /// Interfaces that counted anything.
    pub interfaces: Vec<InterfaceUsage>,
    pub stack: Option<StackUsage>,
    /// At the end of the interval.
    pub memory: Option<MemoryUsage>,
    /// Mean CPU clock at the end of the interval, MHz (window summaries only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<f64>,
    pub process: Option<ProcessUsage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl HostUsage {
    /// Busy cores over the interval: all-CPU busy share x CPUs online.
    pub fn busy_cores(&self) -> Option<f64> {
        let cpus = self.per_cpu.len().max(1) as f64;
        self.cpu.map(|c| c.busy / 100.0 * cpus)
    }

    /// The interface of that name, if it counted anything.
    pub fn interface(&self, name: &str) -> Option<&InterfaceUsage> {
        self.interfaces.iter().find(|i| i.name == name)
    }
}

/// One timeline sample: the host's usage over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInterval {
    /// Since the test's time zero on this end's clock.
    pub start_ns: u64,
    pub end_ns: u64,
    #[serde(flatten)]
    pub usage: HostUsage,
}
