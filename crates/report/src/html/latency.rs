//! The tables of a run with latency probes: each series' phases (idle, loaded, recovery) with
//! their counts and round-trip percentiles (ms) and the loaded figures less the idle ones
//! (`tab-latency`), and the grades with the rule that made each (`tab-latency-grades`); and the
//! summary's line for them. In: the `TestResult`'s `latency`; out: [`Block`]s for the run's
//! section. The figures are `crate::figures::latency`'s.

use super::block::{Block, Table};
use crate::figures::latency::{PHASES, series_name};
use crate::text::grouped;
use linerate_wire::result::{LatencyFigures, LatencyUnderLoad, PhaseLatency, TestResult};

fn ms(v: f64) -> String {
    grouped(v, 2)
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |n| grouped(n as f64, 0))
}

/// The p50, p90, p99 and max of `f`, or n/a four times.
fn quantile_cells(f: Option<&LatencyFigures>) -> Vec<String> {
    f.map_or_else(
        || vec!["n/a".to_string(); 4],
        |f| [f.p50, f.p90, f.p99, f.max].iter().map(|v| ms(*v)).collect(),
    )
}

/// The p50 of one way, or n/a.
fn one_way(f: Option<&LatencyFigures>) -> String {
    f.map_or_else(|| "n/a".to_string(), |f| ms(f.p50))
}

/// `tab-latency`: a row per series and phase, and one of the added latency per series.
fn phase_table(l: &LatencyUnderLoad) -> Table {
    let mut rows = Vec::new();
    for s in &l.series {
        let where_ = series_name(s);
        let phases: [Option<&PhaseLatency>; 3] = [s.idle.as_ref(), s.loaded.as_ref(), s.recovery.as_ref()];
        for (name, p) in PHASES.iter().zip(phases) {
            let answered = p.map_or(0, |p| p.answered);
            let rtt = p.filter(|p| p.answered > 0).map(|p| &p.rtt_ms);
            let mut row = vec![
                where_.clone(),
                name.to_string(),
                grouped(answered as f64, 0),
                opt(p.and_then(|p| p.lost)),
            ];
            row.extend(quantile_cells(rtt));
            row.push(one_way(p.and_then(|p| p.up_ms.as_ref())));
            row.push(one_way(p.and_then(|p| p.down_ms.as_ref())));
            rows.push(row);
        }
        let answered = |p: Option<&PhaseLatency>| p.filter(|p| p.answered > 0).map(|p| p.rtt_ms);
        let added = match (answered(phases[0]), answered(phases[1])) {
            (Some(i), Some(l)) => [l.p50 - i.p50, l.p90 - i.p90, l.p99 - i.p99, l.max - i.max]
                .iter()
                .map(|v| ms(*v))
                .collect(),
            _ => vec!["n/a".to_string(); 4],
        };
        let mut row = vec![where_, "added (loaded - idle)".into(), String::new(), String::new()];
        row.extend(added);
        row.extend([String::new(), String::new()]);
        rows.push(row);
    }
    Table {
        id: "tab-latency".into(),
        caption: format!(
            "Latency under load: probe round trips per phase (ms; the load ran from 0 to {} s)",
            grouped(l.load_end_s, 1)
        ),
        head: [
            "series",
            "phase",
            "answered",
            "lost",
            "p50 (ms)",
            "p90 (ms)",
            "p99 (ms)",
            "max (ms)",
            "one way up p50 (ms)",
            "one way down p50 (ms)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// `tab-latency-grades`: each grade, the figure it was made from and its rule.
fn grades_table(l: &LatencyUnderLoad) -> Option<Table> {
    if l.grades.is_empty() {
        return None;
    }
    let rows = l
        .grades
        .iter()
        .map(|g| {
            vec![
                g.scale.clone(),
                g.grade.clone(),
                g.value
                    .map_or_else(|| "n/a".into(), |v| format!("{} {}", grouped(v, 1), g.unit)),
                g.rule.clone(),
            ]
        })
        .collect();
    Some(Table {
        id: "tab-latency-grades".into(),
        caption: "Grades made from the probes".into(),
        head: ["scale", "grade", "from", "rule"].map(String::from).to_vec(),
        rows,
    })
}

/// The run's latency tables, when it had probes.
pub(super) fn tables(r: &TestResult) -> Vec<Block> {
    let Some(l) = &r.latency else { return Vec::new() };
    let mut out = vec![Block::Table(phase_table(l))];
    out.extend(grades_table(l).map(Block::Table));
    out
}

/// The summary's line: the headline latency and the grades, when the run had probes.
pub(super) fn summary_line(r: &TestResult) -> Option<String> {
    let l = r.latency.as_ref()?;
    let v = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |x| format!("{} ms", ms(x)));
    let mut line = format!(
        "latency under load (median round trip): idle {}, loaded {}, added {}",
        v(l.idle_ms),
        v(l.loaded_ms),
        v(l.added_ms)
    );
    for g in &l.grades {
        line.push_str(&format!("; {} {}", g.scale, g.grade));
    }
    Some(line)
}
