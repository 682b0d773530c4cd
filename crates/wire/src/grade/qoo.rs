//! Quality of Outcome (draft-ietf-ippm-qoo-10, "Calculating QoO"): how close the measured
//! latency distribution and loss are to what an application needs, 0 to 100 %.
//!
//! A requirement names, for each latency percentile, the latency at which the application works
//! perfectly (the draft's Requirements for Optimal Performance, ROP: `perfect_ms`) and the one at
//! which it becomes useless (the Conditions at the Point of Unacceptable Performance, CPUP:
//! `useless_ms`), and likewise a loss percentage. Each measured figure scores
//! `1 - (measured - perfect) / (useless - perfect)`, clamped to [0, 1]; the score is the least of
//! them, times 100. The draft's third component, a minimum throughput, is not graded here.
//!
//! Measured: the loaded phase's answered probes of the headline series (the first on a
//! connection of its own, else the first), their percentiles by nearest rank (the smallest
//! sample with at least that share of the samples at or below it), and its loss, the loaded
//! phase's lost probes over those sent.

use super::ms;
use crate::result::{Grade, LatencyUnderLoad, ProbeOn, ProbeSeries};
use serde::{Deserialize, Serialize};

/// One application's needs (`--qoo NAME` or `--qoo FILE.toml`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QooRequirement {
    /// What it is for, as the grade's scale names it (`qoo video-call`).
    pub name: String,
    /// One entry per latency percentile (at least one).
    pub latency: Vec<QooLatency>,
    /// Loss; none: loss is not scored.
    #[serde(default)]
    pub loss: Option<QooLoss>,
}

/// A percentile's two thresholds, round trip, ms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QooLatency {
    /// Above 0, at most 100: `99` is the 99th percentile.
    pub percentile: f64,
    /// At or under this, the application works perfectly (ROP).
    pub perfect_ms: f64,
    /// At or over this, it is useless (CPUP); above `perfect_ms`.
    pub useless_ms: f64,
}

/// Loss's two thresholds, % of probes sent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QooLoss {
    pub perfect_percent: f64,
    pub useless_percent: f64,
}

/// The built-in requirements' names, as `--qoo` takes them.
pub const BUILTIN: [&str; 3] = ["video-call", "gaming", "streaming"];

/// A built-in requirement. The draft defines none per application; where its examples give one,
/// it is used (docs/results.md, "Grades", says which):
/// - `video-call`: the draft's example requirement specification (section "Describing Network
///   Performance Requirements"): 99 % within 100 ms perfect, 200 ms useless; 99.9 % within 200
///   and 300 ms; loss 0.1 % and 2 %.
/// - `streaming`: the draft's worked example (section "Example"), more tolerant: 99 % within 200
///   and 500 ms, 99.9 % within 300 and 600 ms, loss 1 % and 5 %.
/// - `gaming`: linerate's choice (the draft cites 80 ms round trip for cloud gaming and says
///   games are sensitive to the 99th percentile): median 20 and 80 ms, 99 % within 40 and 150
///   ms, loss 0.1 % and 2 %.
pub fn builtin(name: &str) -> Option<QooRequirement> {
    let lat = |percentile, perfect_ms, useless_ms| QooLatency {
        percentile,
        perfect_ms,
        useless_ms,
    };
    let loss = |perfect_percent, useless_percent| {
        Some(QooLoss {
            perfect_percent,
            useless_percent,
        })
    };
    let (latency, loss) = match name {
        "video-call" => (vec![lat(99.0, 100.0, 200.0), lat(99.9, 200.0, 300.0)], loss(0.1, 2.0)),
        "streaming" => (vec![lat(99.0, 200.0, 500.0), lat(99.9, 300.0, 600.0)], loss(1.0, 5.0)),
        "gaming" => (vec![lat(50.0, 20.0, 80.0), lat(99.0, 40.0, 150.0)], loss(0.1, 2.0)),
        _ => return None,
    };
    Some(QooRequirement {
        name: name.to_string(),
        latency,
        loss,
    })
}

impl QooRequirement {
    /// Checks the thresholds; the error names the key at fault, in one line.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("name: must not be empty".into());
        }
        if self.latency.is_empty() {
            return Err("latency: at least one [[latency]] percentile is needed".into());
        }
        for (i, l) in self.latency.iter().enumerate() {
            let at = format!("latency[{i}]");
            if !(l.percentile > 0.0 && l.percentile <= 100.0) {
                return Err(format!(
                    "{at}.percentile: {} is not above 0 and at most 100",
                    l.percentile
                ));
            }
            if self.latency[..i].iter().any(|o| o.percentile == l.percentile) {
                return Err(format!("{at}.percentile: {} is given twice", l.percentile));
            }
            if !(l.perfect_ms.is_finite() && l.perfect_ms >= 0.0) {
                return Err(format!(
                    "{at}.perfect_ms: {} is not a latency of 0 ms or more",
                    l.perfect_ms
                ));
            }
            if !(l.useless_ms.is_finite() && l.useless_ms > l.perfect_ms) {
                return Err(format!(
                    "{at}.useless_ms: {} must be above perfect_ms ({})",
                    l.useless_ms, l.perfect_ms
                ));
            }
        }
        if let Some(l) = &self.loss {
            if !(0.0..100.0).contains(&l.perfect_percent) {
                return Err(format!(
                    "loss.perfect_percent: {} is not 0 % or more and under 100 %",
                    l.perfect_percent
                ));
            }
            if !(l.useless_percent > l.perfect_percent && l.useless_percent <= 100.0) {
                return Err(format!(
                    "loss.useless_percent: {} must be above perfect_percent ({}) and at most 100",
                    l.useless_percent, l.perfect_percent
                ));
            }
        }
        Ok(())
    }
}

/// A score and how it was made.
#[derive(Clone, Debug, PartialEq)]
pub struct QooScore {
    /// The least of the components, 0 to 100.
    pub percent: f64,
    /// Each component in words: `p99 350 ms (perfect 200, useless 500): 50 %`.
    pub parts: Vec<String>,
}

/// `1 - (measured - perfect) / (useless - perfect)`, clamped to [0, 1], times 100.
pub fn interpolate(measured: f64, perfect: f64, useless: f64) -> f64 {
    ((1.0 - (measured - perfect) / (useless - perfect)).clamp(0.0, 1.0)) * 100.0
}

/// The nearest-rank percentile of `sorted` (ascending, not empty): the smallest sample with at
/// least `percentile` % of the samples at or below it.
pub fn nearest_rank(sorted: &[f64], percentile: f64) -> f64 {
    let rank = ((percentile / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The score of `samples_ms` (round trips, any order) and `loss_percent` against `req`; None
/// when nothing could be scored (no sample, and loss unknown or not required).
pub fn score(req: &QooRequirement, samples_ms: &[f64], loss_percent: Option<f64>) -> Option<QooScore> {
    let mut sorted: Vec<f64> = samples_ms.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let mut parts = Vec::new();
    let mut least: Option<f64> = None;
    if !sorted.is_empty() {
        for l in &req.latency {
            let measured = nearest_rank(&sorted, l.percentile);
            let s = interpolate(measured, l.perfect_ms, l.useless_ms);
            parts.push(format!(
                "p{} {} ms (perfect {}, useless {}): {} %",
                l.percentile,
                ms(measured),
                l.perfect_ms,
                l.useless_ms,
                ms(s)
            ));
            least = Some(least.map_or(s, |m: f64| m.min(s)));
        }
    }
    if let (Some(l), Some(measured)) = (&req.loss, loss_percent) {
        let s = interpolate(measured, l.perfect_percent, l.useless_percent);
        parts.push(format!(
            "loss {} % (perfect {}, useless {}): {} %",
            ms(measured),
            l.perfect_percent,
            l.useless_percent,
            ms(s)
        ));
        least = Some(least.map_or(s, |m: f64| m.min(s)));
    }
    least.map(|percent| QooScore { percent, parts })
}

/// The series the headline figures come from: the first on a connection of its own, else the
/// first.
pub fn headline_series(latency: &LatencyUnderLoad) -> Option<&ProbeSeries> {
    latency
        .series
        .iter()
        .find(|s| s.on == ProbeOn::Separate)
        .or(latency.series.first())
}

/// The QoO grade of `latency`'s loaded phase for `req`: its value null, and the rule saying why,
/// when the loaded phase measured nothing to score.
pub fn grade(req: &QooRequirement, latency: &LatencyUnderLoad) -> Grade {
    let series = headline_series(latency);
    let loaded: Vec<f64> = series
        .map(|s| {
            s.samples
                .iter()
                .filter(|p| p.t_s >= 0.0 && p.t_s <= latency.load_end_s)
                .map(|p| p.rtt_ms)
                .collect()
        })
        .unwrap_or_default();
    // Lost over sent in the loaded phase; unknown where the series counts no sends.
    let loss = series.and_then(|s| s.loaded.as_ref()).and_then(|p| {
        let lost = p.lost?;
        let sent = p.answered + lost;
        (sent > 0).then(|| lost as f64 * 100.0 / sent as f64)
    });
    let what = series.map_or("no probe series".to_string(), |s| {
        format!("{} loaded round trips of `{}`", loaded.len(), s.name)
    });
    let scale = format!("qoo {}", req.name);
    let source = "Quality of Outcome, draft-ietf-ippm-qoo-10: each figure scores \
                  1 - (measured - perfect) / (useless - perfect), clamped to 0..1; the least counts";
    match score(req, &loaded, loss) {
        Some(s) => Grade {
            scale,
            grade: format!("{} %", s.percent.round()),
            value: Some(s.percent),
            unit: "%".into(),
            rule: format!(
                "{what}{}: {}; the least is {} % ({source})",
                if loss.is_none() && req.loss.is_some() {
                    ", loss unknown (not scored)"
                } else {
                    ""
                },
                s.parts.join("; "),
                ms(s.percent)
            ),
        },
        None => Grade {
            scale,
            grade: "unknown".into(),
            value: None,
            unit: "%".into(),
            rule: format!("{what} and no loss figure: nothing to score ({source})"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{PhaseLatency, ProbeSample};

    fn req(latency: &[(f64, f64, f64)], loss: Option<(f64, f64)>) -> QooRequirement {
        QooRequirement {
            name: "test".into(),
            latency: latency
                .iter()
                .map(|&(percentile, perfect_ms, useless_ms)| QooLatency {
                    percentile,
                    perfect_ms,
                    useless_ms,
                })
                .collect(),
            loss: loss.map(|(perfect_percent, useless_percent)| QooLoss {
                perfect_percent,
                useless_percent,
            }),
        }
    }

    #[test]
    fn the_drafts_worked_example_scores_50_percent() {
        // ROP {99 %, 200 ms} {99.9 %, 300 ms} 1 %; CPUP {99 %, 500 ms} {99.9 %, 600 ms} 5 %;
        // measured p99 350 ms, p99.9 375 ms, loss 2 %: min(50, 75, 75) = 50.
        assert_eq!(interpolate(350.0, 200.0, 500.0), 50.0);
        assert_eq!(interpolate(375.0, 300.0, 600.0), 75.0);
        assert_eq!(interpolate(2.0, 1.0, 5.0), 75.0);
        // At and past each threshold.
        assert_eq!(interpolate(200.0, 200.0, 500.0), 100.0);
        assert_eq!(interpolate(100.0, 200.0, 500.0), 100.0);
        assert_eq!(interpolate(500.0, 200.0, 500.0), 0.0);
        assert_eq!(interpolate(900.0, 200.0, 500.0), 0.0);
    }

    #[test]
    fn a_hand_made_distribution_scores_by_its_worst_figure() {
        // 1, 2, ..., 100 ms. Nearest rank: p90 = the 90th sample = 90 ms, p99 = 99 ms.
        // p90 (perfect 50, useless 150): 1 - (90 - 50) / 100 = 0.60 -> 60 %.
        // p99 (perfect 80, useless 180): 1 - (99 - 80) / 100 = 0.81 -> 81 %.
        // loss 2 % (perfect 1, useless 5): 1 - (2 - 1) / 4 = 0.75 -> 75 %.
        // QoO = min(60, 81, 75) = 60 %.
        let samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let r = req(&[(90.0, 50.0, 150.0), (99.0, 80.0, 180.0)], Some((1.0, 5.0)));
        let s = score(&r, &samples, Some(2.0)).expect("scored");
        assert!((s.percent - 60.0).abs() < 1e-9, "{s:?}");
        assert_eq!(
            s.parts,
            [
                "p90 90 ms (perfect 50, useless 150): 60 %",
                "p99 99 ms (perfect 80, useless 180): 81 %",
                "loss 2 % (perfect 1, useless 5): 75 %"
            ]
        );
        // Loss unknown: latency alone, 60 %; loss at 4.5 %: 12.5 % is the least.
        assert!((score(&r, &samples, None).expect("scored").percent - 60.0).abs() < 1e-9);
        assert!((score(&r, &samples, Some(4.5)).expect("scored").percent - 12.5).abs() < 1e-9);
        assert_eq!(score(&r, &[], None), None, "nothing to score");
        // All lost: no sample, but the loss scores 0 %.
        assert_eq!(score(&r, &[], Some(100.0)).map(|s| s.percent), Some(0.0));
    }

    #[test]
    fn nearest_rank_takes_the_smallest_sample_covering_the_share() {
        let s = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(
            [25.0, 26.0, 50.0, 99.9, 100.0].map(|p| nearest_rank(&s, p)),
            [10.0, 20.0, 20.0, 40.0, 40.0]
        );
        assert_eq!(nearest_rank(&s, 0.01), 10.0);
    }

    #[test]
    fn the_grade_reads_the_loaded_window_of_the_separate_series() {
        let sample = |t_s, rtt_ms| ProbeSample {
            t_s,
            rtt_ms,
            ..ProbeSample::default()
        };
        let on_load = ProbeSeries {
            name: "tcp_info rtt".into(),
            on: ProbeOn::Load,
            samples: vec![sample(1.0, 999.0)],
            ..ProbeSeries::default()
        };
        // Idle (t < 0) and recovery (t > 10) probes are left out: 150 and 250 ms are loaded.
        let separate = ProbeSeries {
            name: "tcp round trip".into(),
            samples: vec![
                sample(-1.0, 20.0),
                sample(2.0, 150.0),
                sample(9.0, 250.0),
                sample(11.0, 20.0),
            ],
            loaded: Some(PhaseLatency {
                answered: 2,
                lost: Some(0),
                ..PhaseLatency::default()
            }),
            ..ProbeSeries::default()
        };
        let latency = LatencyUnderLoad {
            load_end_s: 10.0,
            series: vec![on_load, separate],
            ..LatencyUnderLoad::default()
        };
        // video-call: p99 = p99.9 = 250 ms: 1 - (250 - 100) / 100 < 0 -> 0 %, and 1 - (250 -
        // 200) / 100 = 50 %; loss 0 % -> 100 %. The least: 0 %.
        let g = grade(&builtin("video-call").expect("built in"), &latency);
        assert_eq!(
            (g.scale.as_str(), g.grade.as_str(), g.value),
            ("qoo video-call", "0 %", Some(0.0))
        );
        assert!(
            g.rule
                .starts_with("2 loaded round trips of `tcp round trip`: p99 250 ms"),
            "{}",
            g.rule
        );
        // streaming: p99 250 (200, 500): 83.3 %; p99.9 250 (300, 600): 100 %; loss 100 %.
        let g = grade(&builtin("streaming").expect("built in"), &latency);
        assert_eq!(g.grade, "83 %");
        assert!((g.value.expect("scored") - 250.0 / 3.0).abs() < 1e-9);
        let nothing = grade(&builtin("gaming").expect("built in"), &LatencyUnderLoad::default());
        assert_eq!((nothing.grade.as_str(), nothing.value), ("unknown", None));
    }

    #[test]
    fn builtins_are_valid_and_bad_thresholds_name_their_key() {
        for name in BUILTIN {
            let r = builtin(name).expect("built in");
            assert_eq!(r.validate(), Ok(()), "{name}");
        }
        assert_eq!(builtin("voip"), None);
        let bad = |r: QooRequirement| r.validate().expect_err("refused");
        assert_eq!(
            bad(req(&[(99.0, 200.0, 150.0)], None)),
            "latency[0].useless_ms: 150 must be above perfect_ms (200)"
        );
        assert_eq!(
            bad(req(&[(99.0, 1.0, 2.0), (101.0, 1.0, 2.0)], None)),
            "latency[1].percentile: 101 is not above 0 and at most 100"
        );
        assert_eq!(
            bad(req(&[(99.0, 1.0, 2.0), (99.0, 1.0, 3.0)], None)),
            "latency[1].percentile: 99 is given twice"
        );
        assert_eq!(
            bad(req(&[(99.0, 1.0, 2.0)], Some((2.0, 1.0)))),
            "loss.useless_percent: 1 must be above perfect_percent (2) and at most 100"
        );
        assert!(bad(req(&[], None)).starts_with("latency:"));
    }
}
