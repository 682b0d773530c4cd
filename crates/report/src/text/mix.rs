//! A mixed TCP run's block (`tcp --mix R:W`, the TOE workload): bytes, rates and transfers per
//! direction as their receivers counted them, transfers per second, CPU on both ends and the
//! efficiency the offload reports plotted (Mbit/s per CPU %). In: the `TestResult`; out: text
//! appended to the summary that `super` builds.

use super::row;
use super::{grouped, pct};
use linerate_wire::result::{MixDirection, TestResult};
use std::fmt::Write;

pub(super) fn mix_block(out: &mut String, r: &TestResult) {
    let Some(m) = &r.summary.mix else { return };
    let _ = writeln!(
        out,
        "\nMIXED TRANSFERS ({} % client reads : {} % client writes, {} bytes each, counted by the receiver)",
        m.read_percent,
        m.write_percent,
        grouped(m.transfer_bytes as f64, 0)
    );
    let dir = |d: &MixDirection| {
        format!(
            "{} MBytes  {} Mbit/s  {} transfers",
            grouped(d.bytes as f64 / 1e6, 3),
            grouped(d.bits_per_second / 1e6, 3),
            grouped(d.transfers as f64, 0)
        )
    };
    row(out, "Reads (agent -> client)", dir(&m.read));
    row(out, "Writes (client -> agent)", dir(&m.write));
    row(
        out,
        "Both directions",
        format!(
            "{} MBytes  {} Mbit/s  {} transfers over {:.3} s",
            grouped((m.read.bytes + m.write.bytes) as f64 / 1e6, 3),
            grouped(m.bits_per_second / 1e6, 3),
            grouped(m.transfers as f64, 0),
            m.seconds
        ),
    );
    row(out, "Transfers per second", grouped(m.transfers_per_second, 1));
    row(
        out,
        "Read share of bytes (%)",
        m.read_share_percent.map_or("n/a".into(), |p| format!("{p:.2}")),
    );
    row(
        out,
        "CPU, client host / agent hosts",
        format!("{} / {}", pct(m.client_cpu_percent), pct(m.agent_cpu_percent)),
    );
    let eff = |e: Option<f64>| e.map_or("n/a".into(), |e| grouped(e, 3));
    row(
        out,
        "Efficiency (Mbit/s per CPU %)",
        format!(
            "client {} / agents {}",
            eff(m.client_mbit_per_second_per_cpu_percent),
            eff(m.agent_mbit_per_second_per_cpu_percent)
        ),
    );
}
