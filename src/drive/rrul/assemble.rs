//! rrul's one document from its load runs and probe sessions: every run's intervals moved onto
//! one time axis (zero: the first load phase's time zero; the baseline's probes before it), the
//! download run's streams numbered as the load's bidir spec numbers its reverse streams, each
//! phase's window and its throughput per class and direction (`latency.phases`), and each class's
//! probe series (`latency.series`, `udp round trip EF`) with its figures per phase. No socket or
//! clock read: the instants come in.

use super::super::probe::{Axis, load_end_s, probes_of, signed_seconds};
use crate::cli::rrul::Rrul;
use linerate_core::client::Recorded;
use linerate_core::result::{ClassLoad, ClockOffset, IntervalRecord, LoadPhase, ProbeOn, StreamSummary, TestResult};
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
        intervals.extend(onto_axis(&run.result.intervals, offset_ns, renumber));
        phases.push(LoadPhase {
            name: run.name.into(),
            start_s,
            end_s,
            load: class_loads(&run.spec, &run.result.summary.streams),
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

/// A run's intervals moved `offset_ns` along the axis, its streams' numbers raised by
/// `renumber` (the download run's reverse streams, numbered as the bidir spec numbers them).
fn onto_axis(records: &[IntervalRecord], offset_ns: u64, renumber: u16) -> Vec<IntervalRecord> {
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        let mut record = record.clone();
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
        out.push(record);
    }
    out
}

/// A run's throughput per class and direction, as its receivers counted it: the load's classes
/// in their order (each once), upload then download, for the directions the run carried.
fn class_loads(spec: &TcpSpec, streams: &[StreamSummary]) -> Vec<ClassLoad> {
    let per = usize::from(spec.streams);
    let mut out: Vec<ClassLoad> = Vec::new();
    for (direction, word) in [("forward", "upload"), ("reverse", "download")] {
        for s in streams.iter().filter(|s| s.direction == direction) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_core::result::{Counted, ErrorCounts, IntervalSample, StreamInterval};

    fn stream(id: u16, direction: &str, bytes: Option<u64>) -> StreamSummary {
        StreamSummary {
            agent: "a".into(),
            stream: id,
            direction: direction.into(),
            sent: None,
            received: bytes.map(|b| Counted::new(b, 0.5 + f64::from(id) * 0.1)),
            tcp: None,
            sender_socket: None,
            receiver_socket: None,
            errors: ErrorCounts::default(),
        }
    }

    /// Four streams each way in two classes (BE, EF taken in turn): each class sums its two
    /// streams each way over the longer window; a stream whose receiver's report was lost adds
    /// to the count of streams but no bytes.
    #[test]
    fn classes_sum_their_streams_each_way_in_the_loads_order() {
        let spec = TcpSpec {
            streams: 4,
            direction: Direction::Bidir,
            dscp: vec![Dscp::BE, Dscp::EF],
            ..TcpSpec::new()
        };
        let mut streams: Vec<StreamSummary> = (0..4).map(|i| stream(i, "forward", Some(1000))).collect();
        streams.extend((4..8).map(|i| stream(i, "reverse", Some(2000))));
        streams[7].received = None;
        let got = class_loads(&spec, &streams);
        let rows: Vec<(&str, &str, u16, u64, f64)> = got
            .iter()
            .map(|c| (c.class.as_str(), c.direction.as_str(), c.streams, c.bytes, c.seconds))
            .collect();
        assert_eq!(
            rows,
            [
                ("BE", "upload", 2, 2000, 0.7),
                ("BE", "download", 2, 4000, 1.1),
                ("EF", "upload", 2, 2000, 0.8),
                ("EF", "download", 2, 2000, 1.0),
            ]
        );
        let bps = got[0].bits_per_second.expect("a window");
        assert!((bps - 2000.0 * 8.0 / 0.7).abs() < 1e-6, "{bps}");
        assert_eq!(class_loads(&spec, &[]), Vec::new(), "no streams, no rows");
    }

    #[test]
    fn intervals_move_along_the_axis_and_download_streams_take_the_bidir_numbers() {
        let record = IntervalRecord::Stream(StreamInterval {
            agent: "a".into(),
            counted_by: "client".into(),
            direction: "reverse".into(),
            side: "received".into(),
            sample: IntervalSample {
                stream: 1,
                start_ns: 0,
                end_ns: 250_000_000,
                bytes: 10,
                ops: 1,
                tcp: None,
            },
            bits_per_second: 320.0,
        });
        let moved = onto_axis(&[record], 1_500_000_000, 4);
        let IntervalRecord::Stream(s) = &moved[0] else {
            panic!("a stream record")
        };
        assert_eq!(
            (s.sample.stream, s.sample.start_ns, s.sample.end_ns, s.sample.bytes),
            (5, 1_500_000_000, 1_750_000_000, 10)
        );
    }
}
