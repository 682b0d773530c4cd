//! Latency under load as text: per probe series where it was timed, its counts, and its round
//! trips before the load (idle), under it (loaded) and after it (recovery) as percentiles in ms,
//! the loaded figures less the idle ones, the one-way figures where a clock offset split the
//! round trip; then the run's headline latency, the clock offset with its uncertainty, and the
//! grades with the rule that made each. In: the `TestResult`'s `latency`; out: text appended to
//! the summary that `super` builds. The headline line's latency fields are [`crate::headline`]'s.

use super::grouped;
use linerate_wire::result::{LatencyFigures, LatencyUnderLoad, PhaseLatency, ProbeOn, ProbeSeries, TestResult};
use std::fmt::Write;

/// A grade's rule is a sentence with its figures: kept longer than a peer's usual text.
const RULE_CHARS: usize = 400;

/// Width of a phase table's first column.
const LABEL: usize = 24;

/// The series the headline figures are made from: the first on a connection of its own, else
/// the first (as `LatencyUnderLoad::idle_ms` says).
pub(crate) fn headline_series(l: &LatencyUnderLoad) -> Option<&ProbeSeries> {
    l.series.iter().find(|s| s.on == ProbeOn::Separate).or(l.series.first())
}

/// Where a series was timed, in words.
pub(crate) fn on_text(on: ProbeOn) -> &'static str {
    match on {
        ProbeOn::Separate => "on a connection of its own",
        ProbeOn::Load => "on the load's connections",
    }
}

/// An optional count as text: `n/a` where it was not counted (a series that reads, not sends).
fn count(v: Option<u64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |n| grouped(n as f64, 0))
}

/// A figure in ms with two decimals, grouped.
fn ms(v: f64) -> String {
    grouped(v, 2)
}

/// The percentiles each row shows: p50, p90, p99, max.
fn quantiles(l: &LatencyFigures) -> [f64; 4] {
    [l.p50, l.p90, l.p99, l.max]
}

fn figures_row(out: &mut String, label: &str, answered: String, lost: String, q: Option<[f64; 4]>) {
    let cells = q.map_or_else(|| vec!["n/a".to_string(); 4], |q| q.iter().map(|v| ms(*v)).collect());
    let _ = writeln!(
        out,
        "    {label:<LABEL$}{answered:>9}{lost:>7}{:>11}{:>11}{:>11}{:>11}",
        cells[0], cells[1], cells[2], cells[3]
    );
}

/// One phase's rows: its round trips, then one way up and down where measured.
fn phase_rows(out: &mut String, name: &str, p: Option<&PhaseLatency>) {
    let Some(p) = p else {
        figures_row(out, name, "0".into(), "n/a".into(), None);
        return;
    };
    let q = (p.answered > 0).then(|| quantiles(&p.rtt_ms));
    figures_row(out, name, grouped(p.answered as f64, 0), count(p.lost), q);
    for (way, figures) in [("up", &p.up_ms), ("down", &p.down_ms)] {
        if let Some(f) = figures {
            figures_row(
                out,
                &format!("  one way {way}"),
                String::new(),
                String::new(),
                Some(quantiles(f)),
            );
        }
    }
}

/// The loaded figures less the idle ones, each percentile on its own (null where either phase
/// had no answered probe).
fn added(idle: Option<&PhaseLatency>, loaded: Option<&PhaseLatency>) -> Option<[f64; 4]> {
    let (i, l) = (idle.filter(|p| p.answered > 0)?, loaded.filter(|p| p.answered > 0)?);
    let (i, l) = (quantiles(&i.rtt_ms), quantiles(&l.rtt_ms));
    Some([l[0] - i[0], l[1] - i[1], l[2] - i[2], l[3] - i[3]])
}

/// One series: its counts, then a row per phase and the added latency.
fn series_block(out: &mut String, n: usize, s: &ProbeSeries) {
    let _ = writeln!(
        out,
        "  series {n}: {}, {}: sent {}, answered {}, lost {}, clock errors {}",
        linerate_wire::text::peer_text(&s.name),
        on_text(s.on),
        count(s.sent),
        grouped(s.answered as f64, 0),
        count(s.lost),
        grouped(s.clock_errors as f64, 0)
    );
    let _ = writeln!(
        out,
        "    {:<LABEL$}{:>9}{:>7}{:>11}{:>11}{:>11}{:>11}",
        "round trip (ms)", "answered", "lost", "p50", "p90", "p99", "max"
    );
    phase_rows(out, "idle (before the load)", s.idle.as_ref());
    phase_rows(out, "loaded", s.loaded.as_ref());
    phase_rows(out, "recovery (after it)", s.recovery.as_ref());
    figures_row(
        out,
        "added (loaded - idle)",
        String::new(),
        String::new(),
        added(s.idle.as_ref(), s.loaded.as_ref()),
    );
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{} ms", ms(v)))
}

/// The run's headline latency, the clock offset and the grades.
fn headline_lines(out: &mut String, l: &LatencyUnderLoad) {
    let from = headline_series(l)
        .and_then(|h| l.series.iter().position(|s| std::ptr::eq(s, h)))
        .map_or(String::new(), |i| format!("series {}, ", i + 1));
    let mut line = format!(
        "  headline ({from}median round trip): idle {}, loaded {}, added {}",
        opt_ms(l.idle_ms),
        opt_ms(l.loaded_ms),
        opt_ms(l.added_ms)
    );
    if l.added_up_ms.is_some() || l.added_down_ms.is_some() {
        let _ = write!(
            line,
            "; added one way up {}, down {}",
            opt_ms(l.added_up_ms),
            opt_ms(l.added_down_ms)
        );
    }
    let _ = writeln!(out, "{line}");
    if let Some(c) = &l.clock {
        let _ = writeln!(
            out,
            "  clock: the far end reads {} ms {} this host, +- {} ms (one-way figures rest on it)",
            ms(c.offset_ms.abs()),
            if c.offset_ms >= 0.0 { "ahead of" } else { "behind" },
            ms(c.uncertainty_ms)
        );
    }
    for g in &l.grades {
        let value = g
            .value
            .map_or(String::new(), |v| format!(" ({} {})", grouped(v, 1), g.unit));
        let _ = writeln!(
            out,
            "  grade {}: {}{value}; rule: {}",
            linerate_wire::text::peer_text(&g.scale),
            linerate_wire::text::peer_text(&g.grade),
            linerate_wire::text::peer_text_cut(&g.rule, RULE_CHARS)
        );
    }
}

/// The LATENCY UNDER LOAD block, when the run had probes.
pub(super) fn latency_block(out: &mut String, r: &TestResult) {
    let Some(l) = &r.latency else { return };
    let _ = writeln!(
        out,
        "\nLATENCY UNDER LOAD (probes timed by the client; time 0 = the load's start, the load ran until {} s)",
        grouped(l.load_end_s, 1)
    );
    for (i, s) in l.series.iter().enumerate() {
        series_block(out, i + 1, s);
    }
    headline_lines(out, l);
}
