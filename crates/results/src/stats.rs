//! Statistics over a handful of runs: the figures of a repeated test ([`describe`]) and the
//! comparison of two sets of runs ([`welch`], [`bootstrap_difference`]), and the interval of one
//! set's median ([`bootstrap_interval`]).
//!
//! In: plain values, one per run (a throughput, a latency percentile). Out: numbers, and the
//! [`Stats`] of the result document. Sample statistics throughout (n - 1 in the variance); the
//! 95 % confidence intervals are Student t intervals of the mean (the runs are few, the spread
//! unknown), from statrs' t quantiles. Nothing here knows what a run is; `crate::repeat` feeds it.

use linerate_wire::result::Stats;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level of every interval here.
pub const CONFIDENCE: f64 = 0.95;

/// The coefficient of variation, percent, above which a set of runs is called noisy.
pub const NOISY_CV_PERCENT: f64 = 5.0;

/// The arithmetic mean; None for no values.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The middle value (the mean of the two middle ones for an even count); None for no values.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The sample variance (n - 1); None for fewer than two values.
pub fn variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    Some(xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// The sample standard deviation (n - 1); None for fewer than two values.
pub fn stddev(xs: &[f64]) -> Option<f64> {
    variance(xs).map(f64::sqrt)
}

/// The `p` quantile of Student's t with `df` degrees of freedom (t(0.975, 4) = 2.776).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::NAN)
}

/// The two-sided critical t of the [`CONFIDENCE`] level at `df` degrees of freedom.
fn t_critical(df: f64) -> f64 {
    t_quantile(0.5 + CONFIDENCE / 2.0, df)
}

/// Half the width of the 95 % confidence interval of the mean: t(0.975, n - 1) x s / sqrt(n);
/// None for fewer than two values.
pub fn ci95_half_width(xs: &[f64]) -> Option<f64> {
    let s = stddev(xs)?;
    let n = xs.len() as f64;
    Some(t_critical(n - 1.0) * s / n.sqrt())
}

/// How many runs would bring the 95 % interval's half-width within `percent` of the mean, at
/// the spread and t of these runs: (t x s / (percent/100 x mean))^2, rounded up, at least 2.
/// None for fewer than two values or a mean of 0.
pub fn runs_for_half_width(xs: &[f64], percent: f64) -> Option<u32> {
    let s = stddev(xs)?;
    let m = mean(xs)?;
    if m == 0.0 || percent <= 0.0 {
        return None;
    }
    let t = t_critical(xs.len() as f64 - 1.0);
    let n = (t * s / (percent / 100.0 * m.abs())).powi(2).ceil();
    Some(if n.is_finite() { (n as u32).max(2) } else { u32::MAX })
}

/// Every figure of the document's [`Stats`] over `xs` (one value per run, in `unit`); None for
/// no values. Figures that need two values (spread, interval) are None with one.
pub fn describe(xs: &[f64], unit: &str) -> Option<Stats> {
    let mean = mean(xs)?;
    let sd = stddev(xs);
    let half = ci95_half_width(xs);
    Some(Stats {
        unit: unit.to_string(),
        n: xs.len(),
        mean,
        median: median(xs)?,
        min: xs.iter().copied().fold(f64::INFINITY, f64::min),
        max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        stddev: sd,
        cv_percent: sd.filter(|_| mean != 0.0).map(|s| s / mean.abs() * 100.0),
        ci95_low: half.map(|h| mean - h),
        ci95_high: half.map(|h| mean + h),
        ci95_half_width_percent: half.filter(|_| mean != 0.0).map(|h| h / mean.abs() * 100.0),
        runs_for_2_percent: runs_for_half_width(xs, 2.0),
    })
}

/// Welch's t-test of `b` against `a` (unequal variances): the difference of the means `b - a`,
/// its 95 % confidence interval, t, the Welch-Satterthwaite degrees of freedom and the
/// two-sided p-value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub difference: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub t: f64,
    pub df: f64,
    pub p_value: f64,
}

/// Welch's t-test; None unless each side has two values or more. Two sides without spread
/// give a zero-width interval and p = 0 (1 when their means are equal).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (va, vb) = (variance(a)?, variance(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let difference = mean(b)? - mean(a)?;
    let (qa, qb) = (va / na, vb / nb);
    let se = (qa + qb).sqrt();
    if se == 0.0 {
        return Some(Welch {
            difference,
            ci95_low: difference,
            ci95_high: difference,
            t: if difference == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(difference)
            },
            df: na + nb - 2.0,
            p_value: if difference == 0.0 { 1.0 } else { 0.0 },
        });
    }
    let df = (qa + qb).powi(2) / (qa.powi(2) / (na - 1.0) + qb.powi(2) / (nb - 1.0));
    let t = difference / se;
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p_value = (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0);
    let half = t_critical(df) * se;
    Some(Welch {
        difference,
        ci95_low: difference - half,
        ci95_high: difference + half,
        t,
        df,
        p_value,
    })
}

/// Resamples drawn by [`bootstrap_difference`] unless told otherwise.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// The percentile bootstrap 95 % interval of `statistic(b) - statistic(a)`: each of `resamples`
/// rounds draws both sides again with replacement, and the interval is the 2.5th and 97.5th
/// percentiles of the differences. For figures whose mean means little (a percentile of a
/// latency); deterministic for a given `seed`. None when either side is empty.
pub fn bootstrap_difference(
    a: &[f64],
    b: &[f64],
    statistic: impl Fn(&[f64]) -> f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (mut ra, mut rb) = (Vec::with_capacity(a.len()), Vec::with_capacity(b.len()));
    bootstrap(resamples, seed, |rng| {
        rng.draw(a, &mut ra);
        rng.draw(b, &mut rb);
        statistic(&rb) - statistic(&ra)
    })
}

/// The percentile bootstrap 95 % interval of `statistic(xs)` for one set of runs (a side's
/// median, beside [`bootstrap_difference`] of two sides); deterministic for a given `seed`.
/// None for no values.
pub fn bootstrap_interval(
    xs: &[f64],
    statistic: impl Fn(&[f64]) -> f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if xs.is_empty() {
        return None;
    }
    let mut r = Vec::with_capacity(xs.len());
    bootstrap(resamples, seed, |rng| {
        rng.draw(xs, &mut r);
        statistic(&r)
    })
}

/// `resamples` rounds of `round` (one bootstrap statistic each), and the 2.5th and 97.5th
/// percentiles of what they gave; None for no rounds.
fn bootstrap(resamples: usize, seed: u64, mut round: impl FnMut(&mut SplitMix64) -> f64) -> Option<(f64, f64)> {
    if resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64(seed);
    let mut got: Vec<f64> = (0..resamples).map(|_| round(&mut rng)).collect();
    got.sort_by(f64::total_cmp);
    let at = |q: f64| got[((q * (got.len() - 1) as f64).round() as usize).min(got.len() - 1)];
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Some((at(tail), at(1.0 - tail)))
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator, so that a bootstrap gives
/// the same interval for the same runs every time it is asked.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (Lemire's multiply-shift; its bias is below 2^-40 for the n used here).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }

    /// `xs.len()` values drawn from `xs` with replacement, into `into` (cleared first).
    fn draw(&mut self, xs: &[f64], into: &mut Vec<f64>) {
        into.clear();
        into.extend((0..xs.len()).map(|_| xs[self.below(xs.len())]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95 % critical values (any statistics textbook's t table).
        for (df, t) in [(1.0, 12.706), (2.0, 4.303), (4.0, 2.776), (9.0, 2.262), (30.0, 2.042)] {
            let got = t_quantile(0.975, df);
            assert!(close(got, t, 5e-4), "t(0.975, {df}) = {got}, table {t}");
        }
        assert!(close(t_quantile(0.95, 10.0), 1.812, 5e-4));
    }

    #[test]
    fn location_and_spread_of_known_data() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), Some(5.0));
        assert_eq!(median(&xs), Some(4.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        // Sum of squares 32 over n - 1 = 7.
        assert!(close(variance(&xs).expect("n > 1"), 32.0 / 7.0, 1e-12));
        assert_eq!(stddev(&[1.0]), None);
        assert_eq!(mean(&[]), None);
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn the_interval_is_t_times_the_standard_error() {
        // n = 5, mean 100, s = sqrt(2.5) = 1.5811: half-width 2.776 x 1.5811 / sqrt(5) = 1.963.
        let xs = [98.0, 99.0, 100.0, 101.0, 102.0];
        let s = describe(&xs, "Mbit/s").expect("values");
        assert_eq!((s.n, s.mean, s.median, s.min, s.max), (5, 100.0, 100.0, 98.0, 102.0));
        assert!(close(s.stddev.expect("n > 1"), 2.5f64.sqrt(), 1e-12));
        assert!(close(s.cv_percent.expect("mean > 0"), 1.5811, 1e-4));
        assert!(close(s.ci95_low.expect("n > 1"), 100.0 - 1.9632, 1e-3), "{s:?}");
        assert!(close(s.ci95_high.expect("n > 1"), 100.0 + 1.9632, 1e-3));
        assert!(close(s.ci95_half_width_percent.expect("mean > 0"), 1.9632, 1e-3));
        // (2.776 x 1.5811 / 2)^2 = 4.82: 5 runs for +-2 %.
        assert_eq!(s.runs_for_2_percent, Some(5));
        assert_eq!(s.unit, "Mbit/s");
    }

    #[test]
    fn one_value_has_no_spread_and_no_interval() {
        let s = describe(&[42.0], "us").expect("a value");
        assert_eq!((s.n, s.mean, s.median, s.min, s.max), (1, 42.0, 42.0, 42.0, 42.0));
        assert_eq!(
            (s.stddev, s.cv_percent, s.ci95_low, s.ci95_half_width_percent),
            (None, None, None, None)
        );
        assert_eq!(s.runs_for_2_percent, None);
        assert_eq!(describe(&[], "us"), None);
    }

    #[test]
    fn noisy_runs_ask_for_more() {
        // CV 10 %: (2.776 x 10 / 2)^2 = 192.7 runs at n = 5's t.
        let xs = [90.0, 95.0, 100.0, 105.0, 110.0];
        let s = describe(&xs, "x").expect("values");
        assert!(s.cv_percent.expect("cv") > NOISY_CV_PERCENT);
        let want = (2.776 * s.stddev.expect("sd") / 2.0).powi(2).ceil() as u32;
        let got = s.runs_for_2_percent.expect("estimate");
        assert!(got.abs_diff(want) <= 1, "{got} vs {want}");
        assert!(got > 100);
    }

    /// The first example of Welch's t-test on Wikipedia ("Welch's t-test", Examples): t = -2.46,
    /// df = 24.9, p = 0.021 (A1 against A2, so here a = A2, b = A1); the tighter figures are the
    /// same computation by hand (Python, the t density integrated numerically).
    #[test]
    fn welch_matches_the_textbook_example() {
        let a1 = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4,
        ];
        let a2 = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4,
        ];
        let w = welch(&a2, &a1).expect("two values a side");
        assert!(close(w.t, -2.46, 0.01), "{w:?}");
        assert!(close(w.df, 24.99, 0.01), "{w:?}");
        assert!(close(w.p_value, 0.0214, 0.0002), "{w:?}");
        assert!(close(w.difference, -2.1667, 1e-4), "{w:?}");
        // The interval excludes 0 exactly when p < 0.05, and is centred on the difference.
        assert!(w.ci95_high < 0.0);
        assert!(close((w.ci95_low + w.ci95_high) / 2.0, w.difference, 1e-9));
        // Swapping the sides swaps the sign, not the p-value.
        let r = welch(&a1, &a2).expect("two values a side");
        assert!(close(r.t, 2.46, 0.01) && close(r.p_value, w.p_value, 1e-12));
    }

    #[test]
    fn welch_without_spread_or_runs() {
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None, "one run has no variance");
        let w = welch(&[5.0, 5.0], &[7.0, 7.0]).expect("values");
        assert_eq!((w.difference, w.p_value, w.ci95_low, w.ci95_high), (2.0, 0.0, 2.0, 2.0));
        let same = welch(&[5.0, 5.0], &[5.0, 5.0]).expect("values");
        assert_eq!((same.difference, same.p_value), (0.0, 1.0));
        // Identical spread and means: nothing to see.
        let eq = welch(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).expect("values");
        assert!(close(eq.p_value, 1.0, 1e-12) && eq.ci95_low < 0.0 && eq.ci95_high > 0.0);
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_difference() {
        let a = [10.0, 11.0, 9.5, 10.5, 10.2];
        let b = [20.0, 21.0, 19.0, 20.5, 20.3];
        let median_of = |xs: &[f64]| median(xs).expect("resamples are never empty");
        let one = bootstrap_difference(&a, &b, median_of, 2000, 7).expect("values");
        let two = bootstrap_difference(&a, &b, median_of, 2000, 7).expect("values");
        assert_eq!(one, two, "same seed, same interval");
        // Every resampled median of b lies in 19..21 and of a in 9.5..11: the difference in 8..11.5.
        assert!(one.0 >= 8.0 && one.1 <= 11.5 && one.0 <= one.1, "{one:?}");
        assert!(one.0 < 10.0 && one.1 > 9.0, "brackets the observed 10.1: {one:?}");
        // A constant sample gives a point.
        let c = bootstrap_difference(&[1.0, 1.0], &[3.0, 3.0], |x| mean(x).expect("n"), 100, 1);
        assert_eq!(c, Some((2.0, 2.0)));
        assert_eq!(bootstrap_difference(&[], &b, median_of, 10, 1), None);
        // Another seed, a close but not necessarily equal interval.
        let other = bootstrap_difference(&a, &b, median_of, 2000, 8).expect("values");
        assert!((other.0 - one.0).abs() < 1.0 && (other.1 - one.1).abs() < 1.0);
    }

    #[test]
    fn one_sides_bootstrap_brackets_its_median_within_its_range() {
        let xs = [10.0, 11.0, 9.5, 10.5, 10.2, 30.0];
        let median_of = |xs: &[f64]| median(xs).expect("resamples are never empty");
        let (lo, hi) = bootstrap_interval(&xs, median_of, 2000, 7).expect("values");
        assert_eq!(bootstrap_interval(&xs, median_of, 2000, 7), Some((lo, hi)), "same seed");
        // Every resampled median lies within the values, and the interval holds the median.
        assert!((9.5..=10.35).contains(&lo) && (10.35..=30.0).contains(&hi), "{lo} {hi}");
        assert_eq!(bootstrap_interval(&[4.0, 4.0], median_of, 100, 1), Some((4.0, 4.0)));
        assert_eq!(bootstrap_interval(&[], median_of, 100, 1), None);
    }

    #[test]
    fn draws_cover_the_range_evenly() {
        let mut rng = SplitMix64(1);
        let mut counts = [0u32; 5];
        for _ in 0..50_000 {
            counts[rng.below(5)] += 1;
        }
        assert!(counts.iter().all(|c| (9_000..11_000).contains(c)), "{counts:?}");
    }
}
