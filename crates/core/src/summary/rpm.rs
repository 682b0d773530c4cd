//! The document of a responsiveness test (`test: "rpm"`): the load's bytes as the summary's
//! sent (uploads) and received (downloads) with an interval record per direction, the probes as
//! `latency`'s series (idle before the load, loaded during it, on the time axis of the
//! intervals), and the draft's figures per stage in `latency.rpm`.

use crate::engine::rpm::{Probes, RpmRun, StageRun, stats};
use crate::metrics::host::HostInfo;
use crate::result::IntervalSample;
use crate::result::{
    Bin, HostRecord, IntervalRecord, LatencyFigures, LatencyUnderLoad, PhaseLatency, ProbeOn, ProbeSample, ProbeSeries,
    RpmFigures, RpmStage, SCHEMA, SideSummary, StreamInterval, Summary, TestResult,
};
use crate::spec::{RpmSpec, TestSpec};
use std::collections::BTreeMap;
use std::time::Instant;

/// Bins of a phase's histogram.
const BINS: usize = 20;

/// The result document of a run against `server` (its address, as the intervals name it).
pub fn assemble(
    spec: &RpmSpec,
    run: &RpmRun,
    server: &str,
    client_host: HostInfo,
    started_unix_ms: u64,
    mut notes: Vec<String>,
) -> TestResult {
    let mut hosts = BTreeMap::new();
    hosts.insert(
        "client".to_string(),
        HostRecord {
            role: "client".into(),
            info: client_host,
            config: None,
            profile: None,
        },
    );
    let secs = |a: Instant| signed_seconds(run.zero, a);
    let mut intervals = Vec::new();
    let (mut down, mut up) = ((0u64, 0.0f64, false), (0u64, 0.0f64, false));
    for s in &run.stages {
        for i in &s.intervals {
            let seconds = i.end.duration_since(i.start).as_secs_f64();
            for (on, bytes, stream, direction, side, total) in [
                (s.down, i.down_bytes, 0u16, "reverse", "received", &mut down),
                (s.up, i.up_bytes, 1u16, "forward", "sent", &mut up),
            ] {
                if !on {
                    continue;
                }
                *total = (total.0 + bytes, total.1 + seconds, true);
                intervals.push(IntervalRecord::Stream(StreamInterval {
                    agent: server.to_string(),
                    counted_by: "client".into(),
                    direction: direction.into(),
                    side: side.into(),
                    sample: IntervalSample {
                        stream,
                        start_ns: (secs(i.start).max(0.0) * 1e9) as u64,
                        end_ns: (secs(i.end).max(0.0) * 1e9) as u64,
                        bytes,
                        ops: 0,
                        tcp: None,
                    },
                    bits_per_second: rate(bytes, seconds),
                }));
            }
        }
    }
    let side = |(bytes, seconds, on): (u64, f64, bool), connections: u32| SideSummary {
        bytes,
        seconds,
        bits_per_second: rate(bytes, seconds),
        streams: if on { connections as usize } else { 0 },
        counted_by: if on { vec!["client".into()] } else { Vec::new() },
        ..SideSummary::default()
    };
    let most = |f: fn(&StageRun) -> u32| run.stages.iter().map(f).max().unwrap_or(0);
    let received = side(down, most(|s| s.intervals.last().map_or(0, |i| i.connections_down)));
    let sent = side(up, most(|s| s.intervals.last().map_or(0, |i| i.connections_up)));
    let partial = run.failure.is_some() || run.interrupted;
    if let Some(why) = &run.failure {
        notes.push(format!(
            "a load-generating connection failed ({}): the test ended there, with what was measured",
            linerate_wire::text::peer_text(why)
        ));
    }
    if run.interrupted {
        notes.push("interrupted: the test ended early, with what was measured".into());
    }
    TestResult {
        linerate: crate::VERSION.to_string(),
        schema: SCHEMA,
        test: "rpm".into(),
        started_unix_ms,
        partial,
        error: None,
        options: TestSpec::Rpm(spec.clone()),
        hosts,
        intervals,
        summary: Summary {
            sent,
            received,
            ..Summary::default()
        },
        notes,
        lab: None,
        from: None,
        iperf3: None,
        latency: Some(latency(spec, run)),
    }
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// `at` on the load's time axis, seconds (negative before the load).
fn signed_seconds(zero: Instant, at: Instant) -> f64 {
    match at.checked_duration_since(zero) {
        Some(d) => d.as_secs_f64(),
        None => -zero.duration_since(at).as_secs_f64(),
    }
}

/// The probe series, their phases, and the draft's figures.
fn latency(spec: &RpmSpec, run: &RpmRun) -> LatencyUnderLoad {
    let loaded = {
        let mut all = Probes::default();
        for s in &run.stages {
            all.foreign.extend_from_slice(&s.probes.foreign);
            all.own.extend_from_slice(&s.probes.own);
            all.foreign_sent += s.probes.foreign_sent;
            all.foreign_lost += s.probes.foreign_lost;
            all.own_sent += s.probes.own_sent;
            all.own_lost += s.probes.own_lost;
        }
        all
    };
    let t = |at: Instant| signed_seconds(run.zero, at);
    let foreign = |name: &str, f: fn(&crate::engine::rpm::ForeignProbe) -> Option<f64>| {
        let pick = |p: &Probes| -> Vec<ProbeSample> {
            p.foreign
                .iter()
                .filter_map(|x| f(x).map(|ms| sample(t(x.at), ms)))
                .collect()
        };
        series(
            name,
            ProbeOn::Separate,
            (&pick(&run.idle), run.idle.foreign_sent, run.idle.foreign_lost),
            (&pick(&loaded), loaded.foreign_sent, loaded.foreign_lost),
        )
    };
    let own = |p: &Probes| -> Vec<ProbeSample> { p.own.iter().map(|x| sample(t(x.at), x.http_ms)).collect() };
    let mut all = vec![
        foreign("tcp handshake", |p| Some(p.tcp_ms)),
        foreign("tls handshake per round trip", |p| p.tls_ms),
        foreign("http GET on a new connection", |p| Some(p.http_ms)),
        series(
            "http2 GET on a load connection",
            ProbeOn::Load,
            (&own(&run.idle), run.idle.own_sent, run.idle.own_lost),
            (&own(&loaded), loaded.own_sent, loaded.own_lost),
        ),
    ];
    if run
        .stages
        .iter()
        .all(|s| s.probes.foreign.iter().all(|p| p.tls_ms.is_none()))
        && run.idle.foreign.iter().all(|p| p.tls_ms.is_none())
    {
        all.remove(1);
    }
    // The headline: the foreign GET's idle and loaded medians.
    let get = all.iter().find(|s| s.name.starts_with("http GET"));
    let idle_ms = get.and_then(|s| s.idle.as_ref()).map(|p| p.rtt_ms.p50);
    let loaded_ms = get.and_then(|s| s.loaded.as_ref()).map(|p| p.rtt_ms.p50);
    LatencyUnderLoad {
        load_end_s: run.stages.last().map_or(0.0, |s| t(s.end)),
        series: all,
        idle_ms,
        loaded_ms,
        added_ms: idle_ms.zip(loaded_ms).map(|(i, l)| l - i),
        rpm: Some(figures(spec, run)),
        ..LatencyUnderLoad::default()
    }
}

fn sample(t_s: f64, ms: f64) -> ProbeSample {
    ProbeSample {
        t_s,
        rtt_ms: ms,
        up_ms: None,
        down_ms: None,
    }
}

/// A series from its idle and loaded samples, each with its sent and lost counts.
fn series(
    name: &str,
    on: ProbeOn,
    idle: (&[ProbeSample], u64, u64),
    loaded: (&[ProbeSample], u64, u64),
) -> ProbeSeries {
    let mut samples = idle.0.to_vec();
    samples.extend_from_slice(loaded.0);
    ProbeSeries {
        name: name.into(),
        on,
        sent: Some(idle.1 + loaded.1),
        answered: samples.len() as u64,
        lost: Some(idle.2 + loaded.2),
        clock_errors: 0,
        idle: phase(idle.0, idle.2),
        loaded: phase(loaded.0, loaded.2),
        recovery: None,
        samples,
    }
}

/// A phase's figures from its samples; None without one answered.
fn phase(samples: &[ProbeSample], lost: u64) -> Option<PhaseLatency> {
    let mut ms: Vec<f64> = samples.iter().map(|s| s.rtt_ms).collect();
    if ms.is_empty() {
        return None;
    }
    ms.sort_by(f64::total_cmp);
    let n = ms.len();
    let at = |q: f64| ms[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let mean = ms.iter().sum::<f64>() / n as f64;
    let stddev = (ms.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    let (lo, hi) = (ms[0], ms[n - 1]);
    let width = ((hi - lo) / BINS as f64).max(1e-3);
    let mut histogram: Vec<Bin> = (0..BINS)
        .map(|i| Bin {
            from_us: (lo + width * i as f64) * 1e3,
            to_us: (lo + width * (i + 1) as f64) * 1e3,
            count: 0,
        })
        .collect();
    for v in &ms {
        histogram[(((v - lo) / width) as usize).min(BINS - 1)].count += 1;
    }
    histogram.retain(|b| b.count > 0);
    Some(PhaseLatency {
        answered: n as u64,
        lost: Some(lost),
        rtt_ms: LatencyFigures {
            min: lo,
            mean,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p999: at(0.999),
            max: hi,
            stddev,
        },
        up_ms: None,
        down_ms: None,
        histogram,
    })
}

/// The draft's figures of each stage, and the headline.
fn figures(spec: &RpmSpec, run: &RpmRun) -> RpmFigures {
    let mad = spec.mad as usize;
    let stages: Vec<RpmStage> = run
        .stages
        .iter()
        .map(|s| {
            let (foreign_rpm, self_rpm, rpm) = stats::responsiveness(&s.means);
            let whole: Vec<_> = s.intervals.iter().filter(|i| i.whole).collect();
            let last = &whole[whole.len().saturating_sub(mad)..];
            let seconds: f64 = last.iter().map(|i| i.end.duration_since(i.start).as_secs_f64()).sum();
            let mbps = |bytes: u64| (seconds > 0.0).then(|| bytes as f64 * 8.0 / seconds / 1e6);
            let end = s.intervals.last();
            RpmStage {
                direction: match (s.down, s.up) {
                    (true, true) => "both",
                    (true, false) => "down",
                    _ => "up",
                }
                .into(),
                rpm,
                foreign_rpm,
                self_rpm,
                confidence: stats::confidence(s.responsiveness.len(), mad, s.stable),
                goodput_confidence: stats::confidence(s.goodput_averages.len(), mad, s.goodput_stable),
                tcp_handshake_ms: s.means.tcp_ms,
                tls_handshake_ms: s.means.tls_ms,
                http_get_ms: s.means.http_ms,
                self_ms: s.means.self_ms,
                foreign_probes: s.foreign_in_means,
                self_probes: s.own_in_means,
                goodput_down_mbps: if s.down {
                    mbps(last.iter().map(|i| i.down_bytes).sum())
                } else {
                    None
                },
                goodput_up_mbps: if s.up {
                    mbps(last.iter().map(|i| i.up_bytes).sum())
                } else {
                    None
                },
                intervals: s.intervals.len() as u32,
                seconds: s.end.duration_since(s.start).as_secs_f64(),
                goodput_stable: s.goodput_stable,
                stable: s.stable,
                connections_down: end.map_or(0, |i| i.connections_down),
                connections_up: end.map_or(0, |i| i.connections_up),
            }
        })
        .collect();
    let measured: Vec<f64> = stages.iter().filter_map(|s| s.rpm).collect();
    RpmFigures {
        rpm: (measured.len() == stages.len() && !measured.is_empty())
            .then(|| measured.iter().sum::<f64>() / measured.len() as f64),
        confidence: stages.iter().map(|s| s.confidence).min().unwrap_or_default(),
        stages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rpm::tests::{server, spec_for, target};
    use crate::metrics::host::ReadHostInfo;
    use crate::spec::RpmDirection;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    #[test]
    fn the_document_holds_the_load_the_probe_series_and_the_rpm() {
        let addr = server(Duration::from_secs(30));
        let spec = spec_for(addr, RpmDirection::Both);
        let run = crate::engine::rpm::run(&spec, &target(addr), None, &AtomicBool::new(false)).expect("runs");
        let r = assemble(&spec, &run, &addr.to_string(), HostInfo::read(), 1, Vec::new());
        assert_eq!((r.test.as_str(), r.partial), ("rpm", false));
        assert!(r.summary.received.bytes > 0 && r.summary.sent.bytes > 0);
        let l = r.latency.as_ref().expect("latency");
        // Cleartext: TCP handshake, GET on a new connection, GET on a load connection.
        let names: Vec<&str> = l.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "tcp handshake",
                "http GET on a new connection",
                "http2 GET on a load connection"
            ]
        );
        for s in &l.series {
            assert_eq!(s.idle.as_ref().map(|p| p.answered), Some(3), "{}", s.name);
            assert!(s.loaded.is_some(), "{}", s.name);
            assert!(s.samples.iter().any(|x| x.t_s < 0.0) && s.samples.iter().any(|x| x.t_s >= 0.0));
            let sent = s.sent.expect("counted");
            assert!(sent >= s.answered + s.lost.expect("counted"), "{}", s.name);
        }
        assert!(l.idle_ms.is_some() && l.loaded_ms.is_some());
        let f = l.rpm.as_ref().expect("rpm figures");
        let stage = &f.stages[0];
        assert_eq!(stage.direction, "both");
        let (foreign, own, rpm) = stats::responsiveness(&stats::Means {
            tcp_ms: stage.tcp_handshake_ms,
            tls_ms: stage.tls_handshake_ms,
            http_ms: stage.http_get_ms,
            self_ms: stage.self_ms,
        });
        assert_eq!((stage.foreign_rpm, stage.self_rpm, stage.rpm), (foreign, own, rpm));
        assert!(rpm.is_some_and(|x| x > 0.0));
        assert_eq!(f.rpm, stage.rpm);
        assert!(stage.goodput_down_mbps.is_some() && stage.goodput_up_mbps.is_some());
        let text = serde_json::to_string(&r).expect("serialises");
        let back: TestResult = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back.latency, r.latency);
    }
}
