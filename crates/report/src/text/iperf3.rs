//! The block of a run whose far end was iperf3: where it was, its version (or, when
//! it did not say, what its messages hint), its CPU as iperf3 counts it (percent of one CPU
//! over its own test time), and per direction its own counts: bytes, TCP retransmits, UDP
//! jitter and loss. In: the `TestResult`'s `iperf3` record; out: text appended to the summary.

use super::grouped;
use super::row;
use linerate_wire::result::{Iperf3Stream, Role, TestResult};
use std::fmt::Write;

pub(super) fn iperf3_block(out: &mut String, r: &TestResult) {
    let Some(p) = &r.iperf3 else { return };
    let version = match (&p.version, &p.version_hint) {
        (Some(v), _) => v.clone(),
        (None, Some(hint)) => format!("version not told; {hint}"),
        (None, None) => "version not told".into(),
    };
    let _ = writeln!(out, "\nIPERF3 {} at {} ({version})", p.role.to_uppercase(), p.address);
    let percent = |v: Option<f64>| v.map_or("n/a".to_string(), |x| format!("{x:.2}"));
    row(
        out,
        "CPU (iperf3's count, % of one CPU)",
        format!(
            "{} (user {}, system {})",
            percent(p.cpu_util_total_percent),
            percent(p.cpu_util_user_percent),
            percent(p.cpu_util_system_percent)
        ),
    );
    if let Some(c) = &p.congestion_used {
        row(out, "Congestion control it used", c.clone());
    }
    // What the iperf3 end sent runs from it: toward the client when it is the server.
    let away = if p.role == "server" { "reverse" } else { "forward" };
    let toward = if p.role == "server" { "forward" } else { "reverse" };
    for (role, verb, dir) in [(Role::Receive, "received", toward), (Role::Send, "sent", away)] {
        let streams: Vec<&Iperf3Stream> = p.streams.iter().filter(|s| s.role == role).collect();
        if streams.is_empty() {
            continue;
        }
        let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
        let mut line = format!(
            "{} MBytes over {} stream{}",
            grouped(bytes as f64 / 1e6, 3),
            streams.len(),
            if streams.len() == 1 { "" } else { "s" }
        );
        let retransmits: Vec<u64> = streams.iter().filter_map(|s| s.retransmits).collect();
        if !retransmits.is_empty() {
            let _ = write!(line, ", {} TCP retransmits", retransmits.iter().sum::<u64>());
        }
        let jitter: Vec<f64> = streams.iter().filter_map(|s| s.jitter_ms).collect();
        if !jitter.is_empty() {
            let mean = jitter.iter().sum::<f64>() / jitter.len() as f64;
            let _ = write!(line, ", jitter {mean:.3} ms (mean of streams)");
        }
        let lost: Vec<u64> = streams.iter().filter_map(|s| s.lost).collect();
        let packets: u64 = streams.iter().filter_map(|s| s.packets).sum();
        if !lost.is_empty() {
            let _ = write!(
                line,
                ", lost {} of {} datagrams",
                grouped(lost.iter().sum::<u64>() as f64, 0),
                grouped(packets as f64, 0)
            );
        } else if role == Role::Send && streams.iter().any(|s| s.packets.is_some()) {
            let _ = write!(line, ", {} datagrams", grouped(packets as f64, 0));
        }
        row(out, &format!("{} ({dir}), its count", capitalised(verb)), line);
    }
}

fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
