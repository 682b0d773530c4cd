//! Grades made from the probes' samples (a result's `latency.grades`): the bufferbloat letter
//! grade, the responsiveness draft's RPM categories, and Quality of Outcome scores ([`qoo`]) for
//! named requirements. Pure functions of measured figures; each [`Grade`] carries the rule that
//! made it, in words, with the figures it used.
//!
//! In: a [`LatencyUnderLoad`] and the requirements asked for. Out: its `grades`, filled by
//! [`grade`]. Nothing is graded from a figure that was not measured.

pub mod qoo;

use crate::result::{Grade, LatencyUnderLoad, ProbeOn};
pub use qoo::{QooLatency, QooLoss, QooRequirement, QooScore};

/// The bufferbloat scale's bands, upper edges exclusive, ms of added latency: DSLReports' grades,
/// which Waveform's bufferbloat test uses (A+ under 5 ms, A under 30, B under 60, C under 200, D
/// under 400, F at 400 ms and more; there is no E).
const BUFFERBLOAT: [(f64, &str); 5] = [(5.0, "A+"), (30.0, "A"), (60.0, "B"), (200.0, "C"), (400.0, "D")];

/// The responsiveness draft's categories (draft-ietf-ippm-responsiveness-09, section 1.2,
/// "Round-Trips per Minute"), lower edges inclusive, RPM: Poor under 300 (200 ms), Fair from 300
/// to 1000 (60 ms), Good from 1000 to 6000 (10 ms), Excellent at 6000 and more.
const RPM: [(f64, &str); 3] = [(300.0, "Poor"), (1000.0, "Fair"), (6000.0, "Good")];

/// The band `value` falls in: `bands` are (upper edge, exclusive, name) in rising order, `top`
/// the name at and above the last edge; with the band's rule in words (`200 ms or more and
/// under 400 ms is D`).
fn band(value: f64, bands: &[(f64, &'static str)], top: &'static str, unit: &str) -> (&'static str, String) {
    let mut low = None;
    for &(edge, name) in bands {
        if value < edge {
            let rule = match low {
                None => format!("under {edge} {unit} is {name}"),
                Some(low) => format!("{low} {unit} or more and under {edge} {unit} is {name}"),
            };
            return (name, rule);
        }
        low = Some(edge);
    }
    let last = bands.last().map_or(0.0, |b| b.0);
    (top, format!("{last} {unit} or more is {top}"))
}

/// The letter for `added_ms` of added latency on the bufferbloat scale, and the band's rule.
fn bufferbloat_band(added_ms: f64) -> (&'static str, String) {
    band(added_ms, &BUFFERBLOAT, "F", "ms")
}

/// The round trip's increase over the idle median while the load ran each way, as Waveform's
/// test measures it (a download phase and an upload phase, each graded by its round trips): the
/// headline series' median in the `download` and the `upload` phase less `idle_ms`. None unless
/// the run had both phases (`linerate rrul`).
fn download_and_upload_increase(latency: &LatencyUnderLoad) -> Option<(f64, f64)> {
    let idle = latency.idle_ms?;
    let head = latency
        .series
        .iter()
        .find(|s| s.on == ProbeOn::Separate)
        .or_else(|| latency.series.first())?;
    let during = |name: &str| {
        let i = latency.phases.iter().position(|p| p.name == name)?;
        head.by_phase.get(i)?.as_ref().map(|p| p.rtt_ms.p50 - idle)
    };
    Some((during("download")?, during("upload")?))
}

/// The bufferbloat grade of `latency`: the mean of the round trip's increase under download and
/// under upload where the run loaded each way in a phase of its own (as Waveform's test does),
/// else the round trip's increase under the run's one load (`added_ms`); None without either.
/// Not the one-way legs (`added_up_ms`, `added_down_ms`): those say where the queue is, while
/// the grade is of what a user's round trip suffers.
pub fn bufferbloat(latency: &LatencyUnderLoad) -> Option<Grade> {
    let (added, from) = match download_and_upload_increase(latency) {
        Some((down, up)) => (
            (down + up) / 2.0,
            format!(
                "mean of the round trip's increase under download {} ms and under upload {} ms",
                ms(down),
                ms(up)
            ),
        ),
        None => (
            latency.added_ms?,
            "the round trip's increase, loaded median less idle median".to_string(),
        ),
    };
    let (letter, band) = bufferbloat_band(added);
    Some(Grade {
        scale: "bufferbloat".into(),
        grade: letter.into(),
        value: Some(added),
        unit: "ms".into(),
        rule: format!(
            "added latency {} ms ({from}): {band} (DSLReports' and Waveform's bufferbloat grades)",
            ms(added)
        ),
    })
}

/// The draft's category of `rpm` round trips per minute, and the band's rule.
fn rpm_category(rpm: f64) -> (&'static str, String) {
    band(rpm, &RPM, "Excellent", "RPM")
}

/// The responsiveness draft's category of an RPM figure (`linerate rpm`'s responsiveness).
pub fn rpm_band(rpm: f64) -> Grade {
    let (name, band) = rpm_category(rpm);
    Grade {
        scale: "rpm".into(),
        grade: name.into(),
        value: Some(rpm),
        unit: "RPM".into(),
        rule: format!(
            "responsiveness {} RPM: {band} (draft-ietf-ippm-responsiveness-09, section 1.2)",
            rpm.round()
        ),
    }
}

/// The same category for round trips per minute computed from a probe series' loaded median
/// round trip (60000 / loaded ms): not the draft's test (no new connections, no trimmed mean),
/// so its scale says where it came from. None for a round trip that is not above 0.
pub fn rpm_from_loaded(loaded_ms: f64) -> Option<Grade> {
    if loaded_ms.is_nan() || loaded_ms <= 0.0 {
        return None;
    }
    let rpm = 60_000.0 / loaded_ms;
    let (name, band) = rpm_category(rpm);
    Some(Grade {
        scale: "rpm from loaded round trip".into(),
        grade: name.into(),
        value: Some(rpm),
        unit: "RPM".into(),
        rule: format!(
            "60000 / loaded round trip {} ms = {} RPM: {band} (draft-ietf-ippm-responsiveness-09's \
             categories, applied to the probes' loaded median, not the draft's test)",
            ms(loaded_ms),
            rpm.round()
        ),
    })
}

/// Fills `latency.grades` (replacing what was there): the bufferbloat grade where an added
/// figure exists, the RPM category of the loaded round trip where one exists, and one Quality of
/// Outcome score per requirement (each says when the loaded phase had nothing to score).
pub fn grade(latency: &mut LatencyUnderLoad, requirements: &[QooRequirement]) {
    let mut grades = Vec::new();
    grades.extend(bufferbloat(latency));
    // The draft's own figure where the run measured one; else the probes' loaded round trip
    // in the draft's categories, labelled as such.
    match latency.rpm.as_ref().and_then(|r| r.rpm.map(|v| (v, r.confidence))) {
        Some((rpm, confidence)) => {
            let mut g = rpm_band(rpm);
            g.rule = format!("{} (confidence {})", g.rule, confidence.name());
            grades.push(g);
        }
        None => grades.extend(latency.loaded_ms.and_then(rpm_from_loaded)),
    }
    grades.extend(requirements.iter().map(|r| qoo::grade(r, latency)));
    latency.grades = grades;
}

/// A figure in ms as a rule shows it: three significant digits at most, no trailing zeros.
pub(crate) fn ms(v: f64) -> String {
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letter(added: f64) -> &'static str {
        bufferbloat_band(added).0
    }

    #[test]
    fn every_bufferbloat_edge_belongs_to_the_band_above_it() {
        let cases = [
            (-3.0, "A+"),
            (0.0, "A+"),
            (4.99, "A+"),
            (5.0, "A"),
            (29.99, "A"),
            (30.0, "B"),
            (59.99, "B"),
            (60.0, "C"),
            (199.99, "C"),
            (200.0, "D"),
            (399.99, "D"),
            (400.0, "F"),
            (5000.0, "F"),
        ];
        for (added, want) in cases {
            assert_eq!(letter(added), want, "{added} ms");
        }
    }

    #[test]
    fn bufferbloat_uses_the_mean_of_download_and_upload_where_both_ran() {
        use crate::result::{LatencyFigures, LoadPhase, PhaseLatency, ProbeSeries};
        let phase = |p50: f64| {
            Some(PhaseLatency {
                answered: 10,
                rtt_ms: LatencyFigures {
                    p50,
                    ..LatencyFigures::default()
                },
                ..PhaseLatency::default()
            })
        };
        let named = |name: &str| LoadPhase {
            name: name.into(),
            ..LoadPhase::default()
        };
        let mut l = LatencyUnderLoad {
            idle_ms: Some(20.0),
            added_ms: Some(500.0),
            // One-way legs say where the queue is; the grade does not take them.
            added_up_ms: Some(480.0),
            added_down_ms: Some(20.0),
            phases: vec![named("baseline"), named("download"), named("upload"), named("both")],
            series: vec![ProbeSeries {
                by_phase: vec![phase(20.0), phase(230.0), phase(214.0), phase(600.0)],
                ..ProbeSeries::default()
            }],
            ..LatencyUnderLoad::default()
        };
        let g = bufferbloat(&l).expect("graded");
        assert_eq!((g.grade.as_str(), g.value), ("D", Some(202.0)));
        assert_eq!(
            g.rule,
            "added latency 202 ms (mean of the round trip's increase under download 210 ms and under upload \
             194 ms): 200 ms or more and under 400 ms is D (DSLReports' and Waveform's bufferbloat grades)"
        );
        // One load only: the round trip's increase under it.
        l.phases.clear();
        let g = bufferbloat(&l).expect("graded");
        assert_eq!((g.grade.as_str(), g.value), ("F", Some(500.0)));
        assert!(g.rule.contains("the round trip's increase"), "{}", g.rule);
        assert!(g.rule.contains("400 ms or more is F"), "{}", g.rule);
        l.added_ms = None;
        assert_eq!(bufferbloat(&l), None, "nothing measured, no grade");
    }

    #[test]
    fn every_rpm_edge_belongs_to_the_category_above_it() {
        let cases = [
            (0.0, "Poor"),
            (299.9, "Poor"),
            (300.0, "Fair"),
            (999.9, "Fair"),
            (1000.0, "Good"),
            (5999.9, "Good"),
            (6000.0, "Excellent"),
            (60000.0, "Excellent"),
        ];
        for (rpm, want) in cases {
            let g = rpm_band(rpm);
            assert_eq!(g.grade, want, "{rpm} RPM");
            assert_eq!((g.scale.as_str(), g.unit.as_str(), g.value), ("rpm", "RPM", Some(rpm)));
        }
        assert_eq!(
            rpm_band(1500.0).rule,
            "responsiveness 1500 RPM: 1000 RPM or more and under 6000 RPM is Good \
             (draft-ietf-ippm-responsiveness-09, section 1.2)"
        );
    }

    #[test]
    fn rpm_from_a_loaded_round_trip_says_so() {
        // 200 ms loaded: 60000 / 200 = 300 RPM, the Fair edge; 220 ms: 272.7 RPM, Poor.
        let g = rpm_from_loaded(200.0).expect("graded");
        assert_eq!((g.grade.as_str(), g.value), ("Fair", Some(300.0)));
        assert_eq!(g.scale, "rpm from loaded round trip");
        assert!(
            g.rule.starts_with("60000 / loaded round trip 200 ms = 300 RPM"),
            "{}",
            g.rule
        );
        assert_eq!(rpm_from_loaded(220.0).map(|g| g.grade), Some("Poor".into()));
        // 10 ms: 6000 RPM, Excellent.
        assert_eq!(rpm_from_loaded(10.0).map(|g| g.grade), Some("Excellent".into()));
        assert_eq!(rpm_from_loaded(0.0), None);
    }

    #[test]
    fn grade_fills_what_the_figures_allow() {
        let mut l = LatencyUnderLoad {
            idle_ms: Some(20.0),
            loaded_ms: Some(25.0),
            added_ms: Some(5.0),
            ..LatencyUnderLoad::default()
        };
        grade(&mut l, &[]);
        let scales: Vec<(&str, &str)> = l.grades.iter().map(|g| (g.scale.as_str(), g.grade.as_str())).collect();
        assert_eq!(scales, [("bufferbloat", "A"), ("rpm from loaded round trip", "Good")]);
        let mut empty = LatencyUnderLoad::default();
        grade(&mut empty, &[]);
        assert!(empty.grades.is_empty(), "no figure, no grade: {:?}", empty.grades);
        // An rpm run's own figure takes the place of the one from the loaded round trip.
        l.rpm = Some(crate::result::RpmFigures {
            rpm: Some(452.0),
            confidence: crate::result::Confidence::High,
            stages: Vec::new(),
        });
        grade(&mut l, &[]);
        let rpm: Vec<&Grade> = l.grades.iter().filter(|g| g.unit == "RPM").collect();
        assert_eq!(rpm.len(), 1, "{:?}", l.grades);
        assert_eq!(
            (rpm[0].scale.as_str(), rpm[0].grade.as_str(), rpm[0].value),
            ("rpm", "Fair", Some(452.0))
        );
        assert!(rpm[0].rule.ends_with("(confidence high)"), "{}", rpm[0].rule);
    }

    #[test]
    fn figures_in_rules_keep_three_digits() {
        assert_eq!(
            [ms(212.0), ms(4.5), ms(29.96), ms(0.123), ms(1234.6)],
            ["212", "4.5", "30", "0.12", "1235"]
        );
    }
}
