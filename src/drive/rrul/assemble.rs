//! rrul's one document from its load runs and probe sessions: every run's intervals moved onto
//! one time axis (zero: the first load phase's time zero; the baseline's probes before it), the
//! download run's streams numbered as the load's bidir spec numbers its reverse streams, each
//! phase's window and its throughput per class and direction (`latency.phases`), and each class's
//! probe series (`latency.series`, `udp round trip EF`) with its figures per phase. No socket or
//! clock read: the instants come in.

use super::super::probe::{Axis, load_end_s, probes_of, signed_seconds};
use crate::cli::rrul::Rrul;
use linerate_core::client::Recorded;
use linerate_core::result::{ClassLoad, ClockOffset, IntervalRecord, LoadPhase, ProbeOn, TestResult};
use linerate_core::spec::{Direction, Dscp, ProbeVia, TcpSpec, TestSpec, class_of};
use linerate_core::summary::latency::{by_phase, series, under_load};
use std::time::Instant;

/// One load phase's tcp run.
pub(super) struct LoadRun {
    pub name: &'static str,
    /// The load's spec as this phase ran it (its direction).
    pub spec: TcpSpec,
    /// Its time zero (the zero of its intervals).
    pub zero: Instant,
    pub result: TestResult,
}

/// One class's probe session, as its record holds it.
pub(super) struct ProbeRun {
    pub class: Dscp,
    /// The session's time zero, and the Unix time at it (ns).
    pub zero: Instant,
    pub unix_zero_ns: i64,
    pub requests: Vec<Recorded>,
}

/// Where the phases without load begin and end.
pub(super) struct Timeline {
    /// The baseline's start (the probes had all begun).
    pub baseline: Instant,
    /// The recovery's end (the probes were stopped).
    pub recovery_end: Instant,
    /// Wall-clock at the baseline's start, ms since the Unix epoch.
    pub started_unix_ms: u64,
}

/// The document: the last load run's hosts and summary (the `both` phase when all ran: every
/// stream both ways), `options` the load's bidir spec, `test` "rrul", the intervals of every
/// phase on one axis and the latency block with its phases. `runs` is not empty.
pub(super) fn document(
    r: &Rrul,
    timeline: &Timeline,
    runs: Vec<LoadRun>,
    probes: &[ProbeRun],
    clock: Option<ClockOffset>,
) -> TestResult {
    let load0 = runs[0].zero;
    let streams = r.load.streams;
    let mut phases = vec![LoadPhase {
        name: "baseline".into(),
        start_s: signed_seconds(timeline.baseline, load0).min(0.0),
        end_s: 0.0,
        load: Vec::new(),
    }];
    let (mut intervals, mut notes) = (Vec::new(), Vec::new());
    let (mut partial, mut load_end) = (false, 0.0);
    let mut last = None;
    for run in runs {
        let start_s = signed_seconds(run.zero, load0);
        let end_s = start_s + load_end_s(&run.result, run.zero);
        let offset_ns = (start_s.max(0.0) * 1e9).round() as u64;
        let renumber = if run.spec.direction == Direction::Reverse {
            streams
        } else {
            0
        };
        for mut record in run.result.intervals.iter().cloned() {
            match &mut record {
                IntervalRecord::Stream(s) => {
                    s.sample.start_ns += offset_ns;
                    s.sample.end_ns += offset_ns;
                    s.sample.stream += renumber;
                }
                IntervalRecord::Host(h) => {
                    h.sample.start_ns += offset_ns;
                    h.sample.end_ns += offset_ns;
                }
                IntervalRecord::Http(_) => continue,
            }
            intervals.push(record);
        }
        phases.push(LoadPhase {
            name: run.name.into(),
            start_s,
            end_s,
            load: class_loads(&run.spec, &run.result),
        });
        notes.extend(run.result.notes.iter().map(|n| format!("{}: {n}", run.name)));
        partial |= run.result.partial;
        load_end = end_s;
        last = Some(run);
    }
    let last = last.expect("at least one load run");
    phases.push(LoadPhase {
        name: "recovery".into(),
        start_s: load_end,
        end_s: signed_seconds(timeline.recovery_end, load0).max(load_end),
        load: Vec::new(),
    });
    let windows: Vec<(f64, f64)> = phases.iter().map(|p| (p.start_s, p.end_s)).collect();
    let carrier = match r.probe.via {
        ProbeVia::Udp => "udp",
        ProbeVia::Rr | ProbeVia::Http => "tcp",
    };
    let all = probes
        .iter()
        .map(|p| {
            let axis = Axis {
                offset_s: signed_seconds(p.zero, load0),
                unix_zero_ns: p.unix_zero_ns,
            };
            let ps = probes_of(&p.requests, axis, clock);
            let name = format!("{carrier} round trip {}", p.class);
            let mut s = series(&name, ProbeOn::Separate, &ps, Some(p.requests.len() as u64), load_end);
            s.by_phase = by_phase(&ps, true, &windows);
            s
        })
        .collect();
    let mut latency = under_load(all, load_end, clock);
    latency.phases = phases;
    notes.push(format!(
        "summary: the {} phase's run (its streams, hosts and CPU); every phase's throughput per class is under latency.phases",
        last.name
    ));
    TestResult {
        test: "rrul".into(),
        started_unix_ms: timeline.started_unix_ms,
        partial: partial || last.result.partial,
        options: TestSpec::Tcp(r.load.clone()),
        intervals,
        notes,
        latency: Some(latency),
        ..last.result
    }
}

/// A run's throughput per class and direction, as its receivers counted it: the load's classes
/// in their order (each once), upload then download, for the directions the run carried.
fn class_loads(spec: &TcpSpec, result: &TestResult) -> Vec<ClassLoad> {
    let per = usize::from(spec.streams);
    let mut out: Vec<ClassLoad> = Vec::new();
    for (direction, word) in [("forward", "upload"), ("reverse", "download")] {
        for s in result.summary.streams.iter().filter(|s| s.direction == direction) {
            let Some(class) = class_of(&spec.dscp, usize::from(s.stream), per) else {
                continue;
            };
            let i = match out.iter().position(|c| c.dscp == class && c.direction == word) {
                Some(i) => i,
                None => {
                    out.push(ClassLoad {
                        dscp: class,
                        class: class.to_string(),
                        direction: word.into(),
                        ..ClassLoad::default()
                    });
                    out.len() - 1
                }
            };
            let c = &mut out[i];
            c.streams += 1;
            if let Some(got) = s.received {
                c.bytes += got.bytes;
                c.seconds = c.seconds.max(got.seconds);
            }
        }
    }
    for c in &mut out {
        c.bits_per_second = (c.seconds > 0.0).then(|| c.bytes as f64 * 8.0 / c.seconds);
    }
    out.sort_by_key(|c| {
        (
            spec.dscp.iter().position(|d| *d == c.dscp).unwrap_or(usize::MAX),
            c.direction == "download",
        )
    });
    out
}
