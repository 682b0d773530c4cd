//! Latency probes beside a tcp or udp test (`--probe rr|udp`): a probe session (an open-loop rr
//! test of one stream, its requests recorded one by one, the agent's answers stamped) runs on a
//! thread of its own against the first agent from before the load to after it: `idle` seconds
//! alone, the test as it runs without probes, `recovery` seconds after the load's end. Each probe
//! is put on the load's time axis (the zero of the result's `intervals`, told by the test's own
//! sampler through [`Sink::zero`]), the series assembled by `summary::latency` with the agent's
//! clock offset read before the run (one-way delay), beside the TCP streams' own smoothed RTT.

use crate::cli::common::Route;
use crate::cli::usage::{Usage, usage};
use linerate_core::client::{
    CLOCK_EXCHANGES, ClientError, ClientOptions, Fate, NullSink, ProbeRecord, Recorded, Sink, Target, ZeroClock,
    read_clock, run_rr_recorded,
};
use linerate_core::result::{ClockOffset, IntervalRecord, ProbeOn, ProbeSeries, TestResult};
use linerate_core::spec::{Limit, ProbeSpec, ProbeVia, RrProto, RrSpec, TestSpec, Timing};
use linerate_core::summary::latency::{Answer, OneWay, Probe, one_way, series, under_load};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long past idle + load + recovery the probe session may run before its own deadline (the
/// test's connection set-up and report): it is normally stopped well before.
pub(super) const MARGIN_SECONDS: f64 = 30.0;
/// How long the probe session may take to start (connect, handshake) before the test goes on
/// without it.
pub(super) const START_WAIT: Duration = Duration::from_secs(10);
/// How often a wait looks at Ctrl-C.
const POLL: Duration = Duration::from_millis(20);

/// What a probe session cannot go beside, in one line: a route other than linerate agents from
/// here, or a test limited by a count (its length is not known before it runs).
pub fn check(probe: &ProbeSpec, route: &Route, spec: &TestSpec) -> Result<(), Usage> {
    match route {
        Route::Agents { from: None, .. } => {}
        Route::Agents { from: Some(_), .. } => {
            return Err(usage!("--probe runs from this host: not with --from"));
        }
        Route::Iperf3(_) => {
            return Err(usage!(
                "--probe needs a linerate agent: an iperf3 server answers no probes"
            ));
        }
        Route::Fleet(_) => return Err(usage!("--probe does not run in a --pattern")),
    }
    if !matches!(spec.timing().limit, Limit::Seconds(_)) {
        return Err(usage!("--probe needs a time limit (-t), not a count (-n)"));
    }
    Ok(rr_spec(probe, 1.0).validate()?)
}

/// The probe session's spec: one open-loop stream of request = response = the probe size, at the
/// probe rate, for `seconds` (the session is stopped before), its answers stamped.
pub(super) fn rr_spec(probe: &ProbeSpec, seconds: f64) -> RrSpec {
    RrSpec {
        proto: if probe.via == ProbeVia::Udp {
            RrProto::Udp
        } else {
            RrProto::Tcp
        },
        request_bytes: probe.size_bytes,
        response_bytes: probe.size_bytes,
        timing: Timing::new(Limit::Seconds(seconds)),
        rate: Some(probe.rate_per_second),
        timeout_ms: probe.timeout_ms,
        stamp: true,
        ..RrSpec::new()
    }
}

/// Sleeps until `until`, or Ctrl-C.
pub(super) fn wait_until(until: Instant, interrupt: &AtomicBool) {
    while !interrupt.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(POLL));
    }
}

/// One run of a test with probes beside it: the agent's clock read, the probe session started
/// against `target`, `idle` seconds, `load` (the test, given its sink), `recovery` seconds past
/// the load's end, the session stopped, and the probes assembled into the result's `latency`.
/// A session that fails or a Ctrl-C leaves what was measured, the run marked partial.
pub fn run_probed(
    probe: &ProbeSpec,
    target: &Target,
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
    load_seconds: f64,
    load: impl FnOnce(&mut dyn Sink) -> Result<TestResult, ClientError>,
) -> anyhow::Result<TestResult> {
    let mut notes = Vec::new();
    let clock = agent_clock(target, opts, &mut notes);
    let seconds = probe.idle_seconds + load_seconds + probe.recovery_seconds + MARGIN_SECONDS;
    let spec = rr_spec(probe, seconds);
    let record = Arc::new(ProbeRecord::new((probe.rate_per_second * seconds) as usize + 64));
    let stop = AtomicBool::new(false);
    let (result, session, main_zero) = std::thread::scope(|scope| {
        let session = std::thread::Builder::new()
            .name("linerate-probe".into())
            .spawn_scoped(scope, || {
                let targets = [target.clone()];
                run_rr_recorded(&spec, &targets, opts, &mut NullSink, &stop, Some(record.clone()))
            });
        let session = match session {
            Ok(s) => s,
            Err(e) => return (load(sink), Err(e.to_string()), None),
        };
        // The idle probes: from the session's first request, `idle` seconds.
        let begun = Instant::now();
        let probe_zero = loop {
            if let Some((at, _)) = record.zero() {
                break Some(at);
            }
            if session.is_finished() || begun.elapsed() >= START_WAIT || interrupt.load(Ordering::Relaxed) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        if let Some(at) = probe_zero {
            wait_until(at + Duration::from_secs_f64(probe.idle_seconds), interrupt);
        }
        let mut zeroed = ZeroClock::new(sink);
        let result = load(&mut zeroed);
        // The recovery probes: `recovery` seconds past the load's end.
        if let (Ok(r), Some(z)) = (&result, zeroed.time_zero()) {
            let end = z + Duration::from_secs_f64(load_end_s(r, z).max(0.0) + probe.recovery_seconds);
            wait_until(end, interrupt);
        }
        stop.store(true, Ordering::Relaxed);
        let session = match session.join() {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the probe session's thread panicked".to_string()),
        };
        (result, session, zeroed.time_zero())
    });
    let mut result = result?;
    if let Err(e) = session {
        result.partial = true;
        notes.push(format!("probes: {e}"));
    }
    match (main_zero, record.zero()) {
        (Some(main), Some((probe_zero, unix_zero))) => {
            let load_end = load_end_s(&result, main);
            let axis = Axis {
                offset_s: signed_seconds(probe_zero, main),
                unix_zero_ns: unix_zero,
            };
            let name = match probe.via {
                ProbeVia::Udp => "udp round trip",
                ProbeVia::Rr | ProbeVia::Http => "tcp round trip",
            };
            let requests = record.requests();
            let mut all = vec![separate_series(name, &requests, axis, clock, load_end)];
            all.extend(tcp_info_series(&result, load_end));
            result.latency = Some(under_load(all, load_end, clock));
        }
        _ => notes.push("probes: the probe session or the test never started: no latency figures".into()),
    }
    result.notes.extend(notes);
    Ok(result)
}

/// The agent's clock against this host's, for the probes' one-way split; None (and a note) where
/// it cannot be read.
pub(super) fn agent_clock(target: &Target, opts: &ClientOptions, notes: &mut Vec<String>) -> Option<ClockOffset> {
    match read_clock(target, opts, CLOCK_EXCHANGES) {
        Ok(c) => Some(ClockOffset {
            offset_ms: c.estimate.offset_ns as f64 / 1e6,
            uncertainty_ms: c.estimate.uncertainty_ns as f64 / 1e6,
        }),
        Err(e) => {
            notes.push(format!(
                "probes: the agent's clock could not be read ({e}): no one-way delay"
            ));
            None
        }
    }
}

/// `a - b`, seconds, either sign.
pub(super) fn signed_seconds(a: Instant, b: Instant) -> f64 {
    match a.checked_duration_since(b) {
        Some(d) => d.as_secs_f64(),
        None => -b.duration_since(a).as_secs_f64(),
    }
}

/// Where the load ended on its own axis, seconds: its last interval's end (the sampler's last
/// look), else the time it returned.
pub(super) fn load_end_s(result: &TestResult, zero: Instant) -> f64 {
    let last = result
        .intervals
        .iter()
        .filter_map(|r| match r {
            IntervalRecord::Stream(s) => Some(s.sample.end_ns),
            _ => None,
        })
        .max();
    last.map_or_else(|| zero.elapsed().as_secs_f64(), |ns| ns as f64 / 1e9)
}

/// The probe session's clock against the load's: where its zero sits on the load's axis and the
/// Unix time at it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Axis {
    pub(super) offset_s: f64,
    pub(super) unix_zero_ns: i64,
}

/// The probe session's requests as probes on the load's axis: answered (the round trip from the
/// send, and one way from the agent's stamp and the clock offset), lost, or (in flight at the
/// end) left out but counted in `sent`.
fn separate_series(
    name: &str,
    requests: &[Recorded],
    axis: Axis,
    clock: Option<ClockOffset>,
    load_end_s: f64,
) -> ProbeSeries {
    let probes = probes_of(requests, axis, clock);
    series(
        name,
        ProbeOn::Separate,
        &probes,
        Some(requests.len() as u64),
        load_end_s,
    )
}

/// The probe session's requests as probes on the load's axis (in-flight ones left out).
pub(super) fn probes_of(requests: &[Recorded], axis: Axis, clock: Option<ClockOffset>) -> Vec<Probe> {
    // Times in ns since the session's zero, the far stamp moved onto the same base: one_way
    // takes differences only, and Unix ns as f64 ms would keep only a quarter-µs.
    let since = |ns: u64| i64::try_from(ns).unwrap_or(i64::MAX);
    requests
        .iter()
        .filter_map(|r| {
            let t_s = axis.offset_s + r.sent_ns as f64 / 1e9;
            let answer = match r.fate {
                Fate::Answered { back_ns, far_unix_ns } => Answer::Answered {
                    rtt_ms: back_ns.saturating_sub(r.sent_ns) as f64 / 1e6,
                    one_way: match (far_unix_ns, clock) {
                        (Some(far), Some(c)) => one_way(
                            since(r.sent_ns),
                            far.saturating_sub(axis.unix_zero_ns),
                            since(back_ns),
                            c,
                        ),
                        _ => OneWay::Unknown,
                    },
                },
                Fate::Lost => Answer::Lost,
                Fate::InFlight => return None,
            };
            Some(Probe { t_s, answer })
        })
        .collect()
}

/// The load's own TCP streams probed: each sending stream's smoothed RTT (TCP_INFO) per
/// interval, at the interval's middle (the RTT read at its end is smoothed over it); None
/// without TCP_INFO samples (udp, an end that has none).
fn tcp_info_series(result: &TestResult, load_end_s: f64) -> Option<ProbeSeries> {
    let probes: Vec<Probe> = result
        .intervals
        .iter()
        .filter_map(|r| match r {
            IntervalRecord::Stream(s) if s.side == "sent" => {
                let tcp = s.sample.tcp?;
                (tcp.rtt_us > 0).then(|| Probe {
                    t_s: (s.sample.start_ns + s.sample.end_ns) as f64 / 2e9,
                    answer: Answer::Answered {
                        rtt_ms: f64::from(tcp.rtt_us) / 1e3,
                        one_way: OneWay::Unknown,
                    },
                })
            }
            _ => None,
        })
        .collect();
    (!probes.is_empty()).then(|| series("tcp_info rtt", ProbeOn::Load, &probes, None, load_end_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The session's requests land on the load's axis (its zero 1.5 s before the load's), the
    /// one-way split uses the stamp and the offset, and in-flight requests count only as sent.
    #[test]
    fn requests_become_probes_on_the_loads_axis() {
        let ms = 1_000_000;
        let unix_zero_ns = 1_700_000_000_000_000_000;
        let axis = Axis {
            offset_s: -1.5,
            unix_zero_ns,
        };
        let requests = [
            // Sent 100 ms into the session, stamped 4 ms later by a clock 10 ms ahead, back at 110 ms.
            Recorded {
                sent_ns: 100 * ms,
                fate: Fate::Answered {
                    back_ns: 110 * ms,
                    far_unix_ns: Some(unix_zero_ns + 114 * ms as i64),
                },
            },
            Recorded {
                sent_ns: 2_000 * ms,
                fate: Fate::Lost,
            },
            Recorded {
                sent_ns: 2_100 * ms,
                fate: Fate::InFlight,
            },
        ];
        let clock = ClockOffset {
            offset_ms: 10.0,
            uncertainty_ms: 0.5,
        };
        let s = separate_series("rr", &requests, axis, Some(clock), 1.0);
        assert_eq!((s.sent, s.answered, s.lost), (Some(3), 1, Some(1)));
        let p = &s.samples[0];
        assert!((p.t_s + 1.4).abs() < 1e-9, "{}", p.t_s);
        assert!((p.rtt_ms - 10.0).abs() < 1e-9);
        assert!((p.up_ms.expect("split") - 4.0).abs() < 1e-6);
        assert!((p.down_ms.expect("split") - 6.0).abs() < 1e-6);
        // The lost probe, sent at 0.5 s, is the loaded phase's only one: no figures there.
        assert!(s.idle.is_some() && s.loaded.is_none() && s.recovery.is_none());
        let unknown = separate_series("rr", &requests, axis, None, 1.0);
        assert_eq!(unknown.samples[0].up_ms, None, "no clock: no split");
    }

    #[test]
    fn signed_seconds_go_both_ways() {
        let a = Instant::now();
        let b = a + Duration::from_millis(250);
        assert!((signed_seconds(b, a) - 0.25).abs() < 1e-9);
        assert!((signed_seconds(a, b) + 0.25).abs() < 1e-9);
    }
}
