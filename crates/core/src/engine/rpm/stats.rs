//! The responsiveness test's arithmetic, as draft-ietf-ippm-responsiveness-09 defines it, with
//! no I/O: the single-sided trimmed mean (TMP), the moving average over MAD intervals, the
//! stability rule (SDT), the RPM formula and the confidence of a stage.

use crate::result::Confidence;

/// The single-sided trimmed mean keeping `keep_percent` of the samples: the slowest rest is
/// trimmed (the draft's TM at TMP = 95 %: the mean of the fastest 95 %). At least one sample is
/// kept; None for no samples.
pub fn trimmed_mean(samples: &[f64], keep_percent: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let keep = ((sorted.len() as f64 * keep_percent / 100.0).floor() as usize).clamp(1, sorted.len());
    Some(sorted[..keep].iter().sum::<f64>() / keep as f64)
}

/// The population standard deviation.
fn stddev(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt()
}

/// The moving average at the last of `per_interval`: the mean of its last `mad` values (fewer
/// when fewer have run).
pub fn moving_average(per_interval: &[f64], mad: usize) -> Option<f64> {
    let from = per_interval.len().saturating_sub(mad);
    let window = &per_interval[from..];
    (!window.is_empty()).then(|| window.iter().sum::<f64>() / window.len() as f64)
}

/// The draft's stability rule: the standard deviation of the last `mad` values (moving
/// averages of goodput, or responsiveness figures) is within `sdt_percent` of the most recent
/// one. False until `mad` values exist.
pub fn stable(history: &[f64], mad: usize, sdt_percent: f64) -> bool {
    if mad == 0 || history.len() < mad {
        return false;
    }
    let last = &history[history.len() - mad..];
    let current = last[mad - 1];
    current > 0.0 && stddev(last) < sdt_percent / 100.0 * current
}

/// The draft's confidence of a stage: low before `mad` evaluations ran, medium after them but
/// unstable, high once stable.
pub fn confidence(evaluations: usize, mad: usize, stable: bool) -> Confidence {
    if stable {
        Confidence::High
    } else if evaluations >= mad {
        Confidence::Medium
    } else {
        Confidence::Low
    }
}

/// The trimmed means a responsiveness figure is made of, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Means {
    pub tcp_ms: Option<f64>,
    /// None without TLS: the draft's TCP-only formula then.
    pub tls_ms: Option<f64>,
    pub http_ms: Option<f64>,
    pub self_ms: Option<f64>,
}

/// The responsiveness: (foreign, self, overall) RPM. Foreign: 60000 over the mean of the
/// foreign trimmed means (TCP, TLS and HTTP; TCP and HTTP without TLS); self: 60000 over the self
/// trimmed mean; overall: their mean. Each None without its samples.
pub fn responsiveness(m: &Means) -> (Option<f64>, Option<f64>, Option<f64>) {
    let foreign = match (m.tcp_ms, m.tls_ms, m.http_ms) {
        (Some(tcp), Some(tls), Some(http)) => Some(60_000.0 / ((tcp + tls + http) / 3.0)),
        (Some(tcp), None, Some(http)) => Some(60_000.0 / ((tcp + http) / 2.0)),
        _ => None,
    };
    let own = m.self_ms.map(|s| 60_000.0 / s);
    let overall = match (foreign, own) {
        (Some(f), Some(s)) => Some((f + s) / 2.0),
        _ => None,
    };
    (foreign, own, overall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trimmed_mean_drops_the_slowest_share() {
        // 20 samples: 1..=19 ms and one outlier of 1000 ms; 95 % keeps 19, the outlier goes.
        let mut s: Vec<f64> = (1..=19).map(f64::from).collect();
        s.push(1000.0);
        assert_eq!(trimmed_mean(&s, 95.0), Some(10.0));
        // 100 % keeps all: (190 + 1000) / 20.
        assert_eq!(trimmed_mean(&s, 100.0), Some(59.5));
        // Order does not matter; one sample is always kept.
        assert_eq!(trimmed_mean(&[30.0, 10.0, 20.0], 50.0), Some(10.0));
        assert_eq!(trimmed_mean(&[7.0], 1.0), Some(7.0));
        assert_eq!(trimmed_mean(&[], 95.0), None);
    }

    #[test]
    fn the_moving_average_takes_the_last_mad_intervals() {
        let g = [10.0, 20.0, 30.0, 40.0, 50.0];
        assert_eq!(moving_average(&g, 4), Some(35.0));
        assert_eq!(moving_average(&g[..2], 4), Some(15.0));
        assert_eq!(moving_average(&[], 4), None);
    }

    #[test]
    fn stability_is_the_standard_deviation_within_the_tolerance() {
        // 100, 101, 99, 100: σ = 0.707 < 5 % of 100.
        assert!(stable(&[50.0, 100.0, 101.0, 99.0, 100.0], 4, 5.0));
        // 90, 100, 110, 100: σ = 7.07 > 5.
        assert!(!stable(&[90.0, 100.0, 110.0, 100.0], 4, 5.0));
        // ... but within 10 %.
        assert!(stable(&[90.0, 100.0, 110.0, 100.0], 4, 10.0));
        // Fewer than MAD values: never stable.
        assert!(!stable(&[100.0, 100.0, 100.0], 4, 5.0));
    }

    #[test]
    fn the_rpm_is_the_mean_of_foreign_and_self_responsiveness() {
        // TLS: foreign = 60000 / ((10 + 20 + 30) / 3) = 3000; self = 60000 / 100 = 600;
        // RPM = (3000 + 600) / 2 = 1800.
        let m = Means {
            tcp_ms: Some(10.0),
            tls_ms: Some(20.0),
            http_ms: Some(30.0),
            self_ms: Some(100.0),
        };
        assert_eq!(responsiveness(&m), (Some(3000.0), Some(600.0), Some(1800.0)));
        // TCP only: foreign = 60000 / ((10 + 30) / 2) = 3000 as well, no zero for TLS.
        let tcp = Means { tls_ms: None, ..m };
        assert_eq!(responsiveness(&tcp).0, Some(3000.0));
        let none = Means { self_ms: None, ..m };
        assert_eq!(responsiveness(&none), (Some(3000.0), None, None));
    }

    #[test]
    fn confidence_is_low_medium_or_high_as_the_draft_defines_it() {
        assert_eq!(confidence(3, 4, false), Confidence::Low);
        assert_eq!(confidence(4, 4, false), Confidence::Medium);
        assert_eq!(confidence(9, 4, false), Confidence::Medium);
        assert_eq!(confidence(4, 4, true), Confidence::High);
    }
}
