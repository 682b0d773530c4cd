//! The columns of the SEND SIDE and RECEIVE SIDE blocks: each row over the columns, n/a for a
//! side nobody counted (a lost agent: unknown is n/a, never 0), a one-column side's name, and the
//! send side's TCP rows, whose "at end" figures come from each column's own streams.
//! In: the document and the columns `super` chose; out: text rows.

use linerate_wire::result::{SideSummary, TestResult};
use std::fmt::Write;

/// The label and value columns' widths of a block of `columns`.
pub(super) fn widths(columns: &[(String, &SideSummary)]) -> (usize, usize) {
    (38, columns.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(14) + 2)
}

/// A side nobody counted (its agent's report never came): every figure of it is unknown, n/a,
/// never 0.
fn uncounted(s: &SideSummary) -> bool {
    s.counted_by.is_empty()
}

/// A one-column side's name: who counted it, or, when nobody did, the agents whose reports
/// never came (`h2: no report`).
pub(super) fn side_name(r: &TestResult, s: &SideSummary) -> String {
    if !uncounted(s) {
        return s.counted_by.join(", ");
    }
    let agents: Vec<&str> = r.summary.agents.iter().map(|a| a.agent.as_str()).collect();
    format!("{}: no report", agents.join(", "))
}

/// One row of a block: the label, then `f` of each column's side (n/a for a side nobody counted).
pub(super) fn table_row(
    out: &mut String,
    label: &str,
    columns: &[(String, &SideSummary)],
    f: &dyn Fn(&SideSummary) -> String,
) {
    let (label_w, col_w) = widths(columns);
    let _ = write!(out, "  {label:<w$}", w = label_w - 2);
    for (_, s) in columns {
        let v = if uncounted(s) { "n/a".to_string() } else { f(s) };
        let _ = write!(out, "{v:>col_w$}");
    }
    out.push('\n');
}

/// Which streams a column of a sending block covers: one agent's, one direction's, or all.
#[derive(Clone, Copy, Default)]
pub(super) struct Streams<'a> {
    pub agent: Option<&'a str>,
    pub direction: Option<&'a str>,
}

/// The senders' TCP_INFO rows of a sending block: retransmits, the RTT averaged over the run
/// and at the end, the congestion window at the end. Each "at end" figure is the streams' last
/// TCP_INFO (`summary.streams[].tcp`), averaged over the column's streams (`covers`, one per
/// column); the run's RTT is the mean of every sample each stream took
/// (`summary.sent.tcp.rtt_us`). Nothing without TCP_INFO.
pub(super) fn tcp_rows(out: &mut String, r: &TestResult, columns: &[(String, &SideSummary)], covers: &[Streams<'_>]) {
    if !columns.iter().any(|(_, s)| s.tcp.is_some()) {
        return;
    }
    fn tcp(s: &SideSummary, f: impl Fn(&linerate_wire::result::TcpTotals) -> String) -> String {
        s.tcp.as_ref().map_or("n/a".into(), f)
    }
    table_row(out, "TCP retransmits (segments)", columns, &|s| {
        tcp(s, |t| t.retransmits.to_string())
    });
    table_row(out, "RTT, mean over the run (us)", columns, &|s| {
        tcp(s, |t| format!("{:.0}", t.rtt_us))
    });
    // The end values are the streams', so each column's come from its own streams.
    let ends: Vec<Option<f64>> = covers.iter().map(|c| end_rtt_us(r, *c)).collect();
    let (label_w, col_w) = widths(columns);
    let _ = write!(out, "  {:<w$}", "RTT at end (us, mean of streams)", w = label_w - 2);
    for ((_, s), end) in columns.iter().zip(&ends) {
        let v = match end {
            Some(v) if !uncounted(s) => format!("{v:.0}"),
            _ => "n/a".into(),
        };
        let _ = write!(out, "{v:>col_w$}");
    }
    out.push('\n');
    table_row(out, "cwnd at end (KiB, mean of streams)", columns, &|s| {
        tcp(s, |t| format!("{:.0}", t.cwnd_bytes / 1024.0))
    });
}

/// The mean over the covered streams of the RTT their senders' TCP_INFO gave at the end, us;
/// None when no covered stream has one.
fn end_rtt_us(r: &TestResult, c: Streams<'_>) -> Option<f64> {
    let rtts: Vec<f64> = r
        .summary
        .streams
        .iter()
        .filter(|s| c.agent.is_none_or(|a| s.agent == a) && c.direction.is_none_or(|d| s.direction == d))
        .filter_map(|s| s.tcp.as_ref())
        .filter(|t| t.rtt_us > 0)
        .map(|t| f64::from(t.rtt_us))
        .collect();
    (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64)
}
