//! The document of a responsiveness test (`test: "rpm"`): the load's bytes as the summary's
//! sent (uploads) and received (downloads) with an interval record per direction, the probes as
//! `latency`'s series (idle before the load, loaded during it, on the time axis of the
//! intervals), and the draft's figures per stage in `latency.rpm`.

use crate::engine::rpm::{Probes, RpmRun, StageRun, stats};
use crate::metrics::host::HostInfo;
use crate::result::IntervalSample;
use crate::result::{
    HostRecord, IntervalRecord, LatencyUnderLoad, ProbeOn, ProbeSeries, RpmFigures, RpmStage, SCHEMA, SideReport,
    SideSummary, StreamInterval, Summary, TestResult,
};
use crate::spec::{RpmSpec, TestSpec};
use crate::summary::host_side_summary;
use crate::summary::latency::{Answer, OneWay, Probe, series, under_load};
use std::collections::BTreeMap;
use std::time::Instant;

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
    // This host's CPU and samplers over the whole load, on each way it loaded (one process
    // drove both).
    let report = SideReport {
        cpu: run.cpu.clone(),
        host: run.host.clone(),
        ..SideReport::default()
    };
    let side = |(bytes, seconds, on): (u64, f64, bool), connections: u32| {
        if on {
            SideSummary {
                bits_per_second: rate(bytes, seconds),
                ..host_side_summary("client", &report, bytes, 0, connections as usize, seconds)
            }
        } else {
            SideSummary::default()
        }
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
    let answered = |t_s: f64, rtt_ms: f64| Probe {
        t_s,
        answer: Answer::Answered {
            rtt_ms,
            one_way: OneWay::Unknown,
        },
    };
    let foreign = |name: &str, f: fn(&crate::engine::rpm::ForeignProbe) -> Option<f64>| {
        let pick = |p: &Probes| -> Vec<Probe> {
            p.foreign
                .iter()
                .filter_map(|x| f(x).map(|ms| answered(t(x.at), ms)))
                .collect()
        };
        phased(
            name,
            ProbeOn::Separate,
            (pick(&run.idle), run.idle.foreign_sent, run.idle.foreign_lost),
            (pick(&loaded), loaded.foreign_sent, loaded.foreign_lost),
        )
    };
    let own = |p: &Probes| -> Vec<Probe> { p.own.iter().map(|x| answered(t(x.at), x.http_ms)).collect() };
    // The foreign GET first: the headline series (`under_load` takes the first of its own
    // connection's).
    let mut all = vec![
        foreign("http GET on a new connection", |p| Some(p.http_ms)),
        foreign("tcp handshake", |p| Some(p.tcp_ms)),
        foreign("tls handshake per round trip", |p| p.tls_ms),
        phased(
            "http2 GET on a load connection",
            ProbeOn::Load,
            (own(&run.idle), run.idle.own_sent, run.idle.own_lost),
            (own(&loaded), loaded.own_sent, loaded.own_lost),
        ),
    ];
    if run
        .stages
        .iter()
        .all(|s| s.probes.foreign.iter().all(|p| p.tls_ms.is_none()))
        && run.idle.foreign.iter().all(|p| p.tls_ms.is_none())
    {
        all.remove(2);
    }
    let load_end_s = run.stages.last().map_or(0.0, |s| t(s.end));
    let mut latency = under_load(all, load_end_s, None);
    latency.rpm = Some(figures(spec, run));
    latency
}

/// A series from its idle and loaded probes, each phase with its sent and lost counts. The
/// engine keeps no send time for a lost probe: each counts in its own phase (placed at the
/// phase's start, where no answered sample shows it).
fn phased(name: &str, on: ProbeOn, idle: (Vec<Probe>, u64, u64), loaded: (Vec<Probe>, u64, u64)) -> ProbeSeries {
    let lost = |t_s: f64, n: u64| {
        std::iter::repeat_n(
            Probe {
                t_s,
                answer: Answer::Lost,
            },
            n as usize,
        )
    };
    let mut probes = idle.0;
    probes.extend(lost(-f64::MIN_POSITIVE, idle.2));
    probes.extend(loaded.0);
    probes.extend(lost(0.0, loaded.2));
    // No recovery phase: the test ends with its load.
    series(name, on, &probes, Some(idle.1 + loaded.1), f64::INFINITY)
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
        // The client's CPU over the load, measured (not zeros).
        let cpu = &r.summary.received.cpu;
        assert!(cpu.process_user_seconds + cpu.process_system_seconds > 0.0, "{cpu:?}");
        assert!(cpu.host_percent.is_some(), "{cpu:?}");
        let l = r.latency.as_ref().expect("latency");
        // Cleartext: the GET on a new connection (the headline's), the TCP handshake, the GET
        // on a load connection.
        let names: Vec<&str> = l.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "http GET on a new connection",
                "tcp handshake",
                "http2 GET on a load connection"
            ]
        );
        let get = &l.series[0];
        assert_eq!(l.idle_ms, get.idle.as_ref().map(|p| p.rtt_ms.p50));
        assert_eq!(l.loaded_ms, get.loaded.as_ref().map(|p| p.rtt_ms.p50));
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
