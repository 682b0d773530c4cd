//! Latency under working load, assembled: a probe series' answered and lost probes split into
//! the idle, loaded and recovery phases by their send time on the load's time axis, each phase's
//! percentiles and histogram, one-way delays from the far end's time stamps and the clock offset,
//! and the run's headline (idle, loaded and added latency). Pure: what sent the probes (a
//! session of their own, TCP_INFO read off the load's streams, a request on an HTTP/2 load
//! connection) hands its probes in; nothing here reads a clock or a socket.

use super::rr::{bins_and_peaks, figures};
use crate::result::{ClockOffset, LatencyFigures, LatencyUnderLoad, PhaseLatency, ProbeOn, ProbeSample, ProbeSeries};
use hdrhistogram::Histogram;

/// One probe as its sender saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// When it was sent, seconds on the load's time axis (negative before the load).
    pub t_s: f64,
    pub answer: Answer,
}

/// What became of a probe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Answer {
    /// Answered: its round trip, and one way when the far end stamped it and a clock offset is
    /// known ([`one_way`]).
    Answered { rtt_ms: f64, one_way: OneWay },
    /// No answer within the probe's timeout.
    Lost,
}

/// A probe's one-way split.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OneWay {
    /// No time stamp from the far end, or no clock offset.
    Unknown,
    /// Up (here to the far end) and down, ms.
    Known { up_ms: f64, down_ms: f64 },
    /// A split the clock offset's bounds make impossible: counted, left out of the figures.
    ClockError,
}

/// Splits a round trip at the far end's time stamp: sent here at `sent_ns`, stamped there at
/// `far_ns` (the far end's clock), back here at `back_ns` (all Unix ns), the far clock reading
/// `clock.offset_ms` more than this one give or take `clock.uncertainty_ms`. A leg shorter than
/// minus the uncertainty cannot be (the clocks are further apart than the estimate allows):
/// [`OneWay::ClockError`], as iperf2 counts clock-sync errors.
pub fn one_way(sent_ns: i64, far_ns: i64, back_ns: i64, clock: ClockOffset) -> OneWay {
    let far_here_ms = far_ns as f64 / 1e6 - clock.offset_ms;
    let up_ms = far_here_ms - sent_ns as f64 / 1e6;
    let down_ms = back_ns as f64 / 1e6 - far_here_ms;
    let bound = -clock.uncertainty_ms;
    if up_ms < bound || down_ms < bound {
        OneWay::ClockError
    } else {
        OneWay::Known { up_ms, down_ms }
    }
}

/// The phase a send time falls in: before the load, during it, after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Loaded,
    Recovery,
}

fn phase_of(t_s: f64, load_end_s: f64) -> Phase {
    if t_s < 0.0 {
        Phase::Idle
    } else if t_s < load_end_s {
        Phase::Loaded
    } else {
        Phase::Recovery
    }
}

/// One probe series assembled from its probes (in any order). `sent`: the probes sent, when the
/// sender counts them (None for figures read, not sent, such as TCP_INFO's RTT: then `lost` is
/// null too); those neither answered nor lost were in flight at the end.
pub fn series(name: &str, on: ProbeOn, probes: &[Probe], sent: Option<u64>, load_end_s: f64) -> ProbeSeries {
    let mut sorted: Vec<Probe> = probes.to_vec();
    sorted.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let counts_sends = sent.is_some();
    let phase = |p: Phase| {
        let mine: Vec<Probe> = sorted
            .iter()
            .copied()
            .filter(|x| phase_of(x.t_s, load_end_s) == p)
            .collect();
        phase_latency(&mine, counts_sends)
    };
    let samples: Vec<ProbeSample> = sorted
        .iter()
        .filter_map(|p| match p.answer {
            Answer::Answered { rtt_ms, one_way } => {
                let (up_ms, down_ms) = match one_way {
                    OneWay::Known { up_ms, down_ms } => (Some(up_ms), Some(down_ms)),
                    OneWay::Unknown | OneWay::ClockError => (None, None),
                };
                Some(ProbeSample {
                    t_s: p.t_s,
                    rtt_ms,
                    up_ms,
                    down_ms,
                })
            }
            Answer::Lost => None,
        })
        .collect();
    let lost = sorted.iter().filter(|p| p.answer == Answer::Lost).count() as u64;
    let clock_errors = sorted
        .iter()
        .filter(|p| {
            matches!(
                p.answer,
                Answer::Answered {
                    one_way: OneWay::ClockError,
                    ..
                }
            )
        })
        .count() as u64;
    ProbeSeries {
        name: name.to_string(),
        on,
        sent,
        answered: samples.len() as u64,
        lost: counts_sends.then_some(lost),
        clock_errors,
        idle: phase(Phase::Idle),
        loaded: phase(Phase::Loaded),
        recovery: phase(Phase::Recovery),
        by_phase: Vec::new(),
        samples,
    }
}

/// A test of several load phases (`linerate rrul`): the probes sent in each window
/// `[start_s, end_s)` of `windows`, in its order, each window's figures (None where none was
/// answered). A probe sent between windows counts in none. `counts_sends` as for [`series`].
pub fn by_phase(probes: &[Probe], counts_sends: bool, windows: &[(f64, f64)]) -> Vec<Option<PhaseLatency>> {
    windows
        .iter()
        .map(|&(start_s, end_s)| {
            let mine: Vec<Probe> = probes
                .iter()
                .copied()
                .filter(|p| p.t_s >= start_s && p.t_s < end_s)
                .collect();
            phase_latency(&mine, counts_sends)
        })
        .collect()
}

/// A phase's figures; None when none of its probes was answered.
fn phase_latency(probes: &[Probe], counts_sends: bool) -> Option<PhaseLatency> {
    let mut rtt = histogram();
    let (mut up, mut down) = (histogram(), histogram());
    let mut lost = 0;
    for p in probes {
        match p.answer {
            Answer::Answered { rtt_ms, one_way } => {
                record(&mut rtt, rtt_ms);
                if let OneWay::Known { up_ms, down_ms } = one_way {
                    record(&mut up, up_ms);
                    record(&mut down, down_ms);
                }
            }
            Answer::Lost => lost += 1,
        }
    }
    if rtt.is_empty() {
        return None;
    }
    let ms = |h: &Histogram<u64>| (!h.is_empty()).then(|| in_ms(figures(h)));
    Some(PhaseLatency {
        answered: rtt.len(),
        lost: counts_sends.then_some(lost),
        rtt_ms: in_ms(figures(&rtt)),
        up_ms: ms(&up),
        down_ms: ms(&down),
        histogram: bins_and_peaks(&rtt).0,
    })
}

/// A histogram of ns from 1 ns to an hour, 3 significant digits (as rr's).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// Records `ms` in ns; a one-way figure within the clock's uncertainty may be a little under
/// zero: recorded as the least the histogram holds, 1 ns.
fn record(h: &mut Histogram<u64>, ms: f64) {
    let ns = (ms * 1e6).round().clamp(1.0, h.high() as f64) as u64;
    h.saturating_record(ns);
}

/// rr's figures are µs; a probe's are ms.
fn in_ms(us: LatencyFigures) -> LatencyFigures {
    let k = 1e-3;
    LatencyFigures {
        min: us.min * k,
        mean: us.mean * k,
        p50: us.p50 * k,
        p90: us.p90 * k,
        p99: us.p99 * k,
        p999: us.p999 * k,
        max: us.max * k,
        stddev: us.stddev * k,
    }
}

/// The run's latency under load from its series: the headline from the first series on a
/// connection of its own (else the first): idle and loaded medians of the round trip, their
/// difference, and the difference one way where both phases have one-way figures. Grades are
/// left empty for the grading step.
pub fn under_load(series: Vec<ProbeSeries>, load_end_s: f64, clock: Option<ClockOffset>) -> LatencyUnderLoad {
    let head = series
        .iter()
        .find(|s| s.on == ProbeOn::Separate)
        .or_else(|| series.first());
    let p50 = |p: &Option<PhaseLatency>| p.as_ref().map(|p| p.rtt_ms.p50);
    let (idle_ms, loaded_ms) = head.map_or((None, None), |s| (p50(&s.idle), p50(&s.loaded)));
    let added = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(l, i)| l - i);
    let leg = |s: &ProbeSeries, up: bool| {
        let of = |p: &Option<PhaseLatency>| {
            p.as_ref()
                .and_then(|p| if up { p.up_ms } else { p.down_ms })
                .map(|f| f.p50)
        };
        added(of(&s.loaded), of(&s.idle))
    };
    LatencyUnderLoad {
        load_end_s,
        idle_ms,
        loaded_ms,
        added_ms: added(loaded_ms, idle_ms),
        added_up_ms: head.and_then(|s| leg(s, true)),
        added_down_ms: head.and_then(|s| leg(s, false)),
        clock,
        grades: Vec::new(),
        rpm: None,
        phases: Vec::new(),
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(t_s: f64, rtt_ms: f64) -> Probe {
        Probe {
            t_s,
            answer: Answer::Answered {
                rtt_ms,
                one_way: OneWay::Unknown,
            },
        }
    }

    #[test]
    fn probes_fall_into_phases_by_send_time_and_the_headline_is_the_medians_difference() {
        // Idle: 20 ms (t < 0); loaded: 220 ms in [0, 10); recovery: 21 ms from 10 s on.
        let mut probes: Vec<Probe> = (0..20).map(|i| answered(-2.0 + 0.1 * f64::from(i), 20.0)).collect();
        probes.extend((0..100).map(|i| answered(0.1 * f64::from(i), 220.0)));
        probes.extend((0..20).map(|i| answered(10.0 + 0.1 * f64::from(i), 21.0)));
        probes.push(Probe {
            t_s: 5.0,
            answer: Answer::Lost,
        });
        let s = series("tcp round trip", ProbeOn::Separate, &probes, Some(142), 10.0);
        assert_eq!((s.answered, s.lost, s.sent), (140, Some(1), Some(142)));
        let (idle, loaded, rec) = (
            s.idle.clone().unwrap(),
            s.loaded.clone().unwrap(),
            s.recovery.clone().unwrap(),
        );
        assert_eq!((idle.answered, loaded.answered, rec.answered), (20, 100, 20));
        assert_eq!((idle.lost, loaded.lost, rec.lost), (Some(0), Some(1), Some(0)));
        assert!((idle.rtt_ms.p50 - 20.0).abs() < 0.05, "{:?}", idle.rtt_ms);
        assert!((loaded.rtt_ms.p99 - 220.0).abs() < 0.2, "{:?}", loaded.rtt_ms);
        assert!(!loaded.histogram.is_empty());
        assert!(s.samples.windows(2).all(|w| w[0].t_s <= w[1].t_s));
        let l = under_load(vec![s], 10.0, None);
        assert!((l.added_ms.unwrap() - 200.0).abs() < 0.3, "{:?}", l.added_ms);
        assert_eq!((l.added_up_ms, l.added_down_ms), (None, None));
    }

    #[test]
    fn a_series_that_counts_no_sends_has_no_loss_and_the_separate_one_heads() {
        let read = series("tcp_info rtt", ProbeOn::Load, &[answered(1.0, 50.0)], None, 10.0);
        assert_eq!(
            (read.lost, read.idle.clone(), read.loaded.as_ref().unwrap().lost),
            (None, None, None)
        );
        let own = series(
            "udp round trip",
            ProbeOn::Separate,
            &[answered(-1.0, 10.0)],
            Some(1),
            10.0,
        );
        let l = under_load(vec![read, own], 10.0, None);
        assert_eq!(l.idle_ms.map(f64::round), Some(10.0));
        assert_eq!(l.loaded_ms, None, "the separate series has no loaded probe");
        assert_eq!(l.added_ms, None);
    }

    #[test]
    fn probes_fall_into_the_windows_they_were_sent_in_and_none_between() {
        let mut probes: Vec<Probe> = (0..10).map(|i| answered(-1.0 + 0.1 * f64::from(i), 10.0)).collect();
        probes.extend((0..10).map(|i| answered(0.1 * f64::from(i), 50.0)));
        probes.push(answered(1.05, 999.0));
        probes.push(Probe {
            t_s: 0.5,
            answer: Answer::Lost,
        });
        let got = by_phase(&probes, true, &[(-1.0, 0.0), (0.0, 1.0), (1.1, 2.0)]);
        assert_eq!(got.len(), 3);
        let (a, b) = (got[0].clone().unwrap(), got[1].clone().unwrap());
        assert_eq!((a.answered, a.lost, b.answered, b.lost), (10, Some(0), 10, Some(1)));
        assert!((b.rtt_ms.p50 - 50.0).abs() < 0.1, "{:?}", b.rtt_ms);
        assert_eq!(got[2], None, "the probe at 1.05 s fell between windows");
    }

    #[test]
    fn one_way_splits_at_the_far_stamp_and_counts_impossible_splits() {
        // The far clock is 1000 ms ahead, known to ±1 ms. Sent at 0, stamped at 1030 (= 30 here),
        // back at 50: 30 up, 20 down.
        let clock = ClockOffset {
            offset_ms: 1000.0,
            uncertainty_ms: 1.0,
        };
        let ms = 1_000_000i64;
        assert_eq!(
            one_way(0, 1030 * ms, 50 * ms, clock),
            OneWay::Known {
                up_ms: 30.0,
                down_ms: 20.0
            }
        );
        // Stamped at 998 (= -2 here): before it was sent, beyond the 1 ms bound.
        assert_eq!(one_way(0, 998 * ms, 50 * ms, clock), OneWay::ClockError);
        // Within the bound (-0.5 ms): kept.
        assert!(matches!(one_way(0, 999_500_000, 50 * ms, clock), OneWay::Known { .. }));
        let p = |t_s, up_ms, down_ms| Probe {
            t_s,
            answer: Answer::Answered {
                rtt_ms: up_ms + down_ms,
                one_way: OneWay::Known { up_ms, down_ms },
            },
        };
        let bad = Probe {
            t_s: 1.0,
            answer: Answer::Answered {
                rtt_ms: 40.0,
                one_way: OneWay::ClockError,
            },
        };
        let s = series(
            "udp round trip",
            ProbeOn::Separate,
            &[p(-1.0, 10.0, 10.0), p(1.0, 110.0, 12.0), bad],
            Some(3),
            5.0,
        );
        assert_eq!((s.clock_errors, s.answered), (1, 3));
        assert_eq!(s.samples[2].up_ms, None, "a clock error has no one-way figures");
        let l = under_load(vec![s], 5.0, Some(clock));
        assert!((l.added_up_ms.unwrap() - 100.0).abs() < 0.2, "{:?}", l.added_up_ms);
        assert!((l.added_down_ms.unwrap() - 2.0).abs() < 0.05, "{:?}", l.added_down_ms);
    }
}
