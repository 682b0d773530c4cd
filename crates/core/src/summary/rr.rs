//! A request-response run's figures: transactions per second, round-trip percentiles from the
//! merged histograms of every asking stream, the histogram itself with its peaks (UDPmon's
//! "double peak, 3-4 µs apart"), connect times for TCP_CRR, and the least-squares fit of latency
//! against size for sweeps.

use super::{AgentOutcome, decode};
use crate::result::{
    Bin, ConnectFigures, CpuPerTransaction, LatencyFigures, OpenLoopFigures, Peak, RateFigures, Role, RrSummary,
    SideSummary,
};
use crate::spec::RrSpec;
use hdrhistogram::Histogram;

/// Percentiles of a histogram of ns, in µs.
pub(crate) fn figures(h: &Histogram<u64>) -> LatencyFigures {
    let us = |v: u64| v as f64 / 1e3;
    LatencyFigures {
        min: us(h.min()),
        mean: h.mean() / 1e3,
        p50: us(h.value_at_quantile(0.5)),
        p90: us(h.value_at_quantile(0.9)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
        stddev: h.stdev() / 1e3,
    }
}

/// Where the equal bins may end, tried in turn: the 99.9th percentile first, lower ones while the
/// fullest bin holds more than [`MODE_SHARE`] of the round trips (a long tail widens equal bins
/// until the mode fits in one: a run saw 97 % in the first of 100 bins). At most a quarter
/// of the round trips go to the tail.
const UPPER_QUANTILES: [f64; 9] = [0.999, 0.995, 0.99, 0.98, 0.95, 0.9, 0.85, 0.8, 0.75];
/// A bin holding more than this share of the round trips leaves the mode unresolved (the text
/// prints four bins a row).
const MODE_SHARE: f64 = 0.1;

/// Equal bins and the count past them.
struct Layout {
    width_ns: u64,
    counts: Vec<u64>,
    overflow: u64,
}

/// Up to 100 equal bins from `lo` to `hi` (none finer than the histogram resolves at `hi`) and
/// the count past them. Values under `lo` are left out.
fn equal_bins(h: &Histogram<u64>, lo: u64, hi: u64) -> Layout {
    // No bin narrower than the histogram's own resolution there, or the bins alias into combs.
    let width = (hi - lo).div_ceil(100).max(h.equivalent_range(hi)).max(1);
    let n = ((hi - lo) / width + 1) as usize;
    let mut counts = vec![0u64; n];
    let mut overflow = 0;
    for v in h.iter_recorded() {
        let x = v.value_iterated_to();
        if x < lo {
            continue;
        }
        match counts.get_mut(((x - lo) / width) as usize) {
            Some(c) => *c += v.count_at_value(),
            None => overflow += v.count_at_value(),
        }
    }
    Layout {
        width_ns: width,
        counts,
        overflow,
    }
}

/// Up to 100 equal bins from the 0.1th percentile to the first of [`UPPER_QUANTILES`] whose
/// bins resolve the mode (no bin over [`MODE_SHARE`] of the round trips; when none does, the one
/// whose fullest bin is least full), then one open bin (`to_us` infinite) with every round trip
/// past them; and the peaks among the equal bins: a
/// bin (3-bin moving average) higher than its neighbours, at least a tenth of the highest, and
/// parted from the next peak by a valley under 70 % of the lower of the two.
pub(crate) fn bins_and_peaks(h: &Histogram<u64>) -> (Vec<Bin>, Vec<Peak>) {
    if h.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let lo = h.value_at_quantile(0.001);
    let total = h.len() as f64;
    let mut best: Option<(f64, Layout)> = None;
    for q in UPPER_QUANTILES {
        let hi = h.value_at_quantile(q).max(lo + 1);
        let layout = equal_bins(h, lo, hi);
        let share = layout.counts.iter().copied().max().unwrap_or(0) as f64 / total;
        if best.as_ref().is_none_or(|(b, _)| share < *b) {
            best = Some((share, layout));
        }
        if share <= MODE_SHARE {
            break;
        }
    }
    let Some((
        _,
        Layout {
            width_ns: width,
            counts,
            overflow,
        },
    )) = best
    else {
        return (Vec::new(), Vec::new());
    };
    let n = counts.len();
    let us = |v: u64| v as f64 / 1e3;
    let mut bins: Vec<Bin> = counts
        .iter()
        .enumerate()
        .map(|(i, c)| Bin {
            from_us: us(lo + i as u64 * width),
            to_us: us(lo + (i as u64 + 1) * width),
            count: *c,
        })
        .collect();
    // Three bins' mean, the bins past either edge counted as empty: an edge bin averaged over
    // two would stand above a fuller neighbour.
    let smooth: Vec<f64> = (0..n)
        .map(|i| {
            let a = i.saturating_sub(1);
            let b = (i + 1).min(n - 1);
            counts[a..=b].iter().sum::<u64>() as f64 / 3.0
        })
        .collect();
    let top = smooth.iter().cloned().fold(0.0, f64::max);
    let mut candidates: Vec<usize> = (0..n)
        .filter(|&i| {
            let left = if i > 0 { smooth[i - 1] } else { -1.0 };
            let right = if i + 1 < n { smooth[i + 1] } else { -1.0 };
            smooth[i] >= left && smooth[i] > right && smooth[i] >= 0.1 * top
        })
        .collect();
    // Neighbouring candidates without a real valley between them are one peak (the higher).
    let mut i = 0;
    while i + 1 < candidates.len() {
        let (a, b) = (candidates[i], candidates[i + 1]);
        let valley = smooth[a..=b].iter().cloned().fold(f64::MAX, f64::min);
        if valley >= 0.7 * smooth[a].min(smooth[b]) {
            let drop = if smooth[a] >= smooth[b] { i + 1 } else { i };
            candidates.remove(drop);
        } else {
            i += 1;
        }
    }
    // The peak is the fullest raw bin where the smoothed curve peaks (that bin or a neighbour).
    let peaks = candidates
        .into_iter()
        .map(|c| {
            (c.saturating_sub(1)..=(c + 1).min(n - 1))
                .max_by_key(|&j| (counts[j], std::cmp::Reverse(j.abs_diff(c))))
                .unwrap_or(c)
        })
        .map(|i| Peak {
            at_us: (bins[i].from_us + bins[i].to_us) / 2.0,
            count: counts[i],
        })
        .collect();
    if overflow > 0 {
        bins.push(Bin {
            from_us: us(lo + n as u64 * width),
            to_us: f64::INFINITY,
            count: overflow,
        });
    }
    (bins, peaks)
}

/// Joins every asking stream's histograms.
pub(crate) fn summarise(
    spec: &RrSpec,
    agents: &[AgentOutcome<'_>],
    sent: &SideSummary,
    received: &SideSummary,
) -> RrSummary {
    let mut s = RrSummary::default();
    let mut rtt: Option<Histogram<u64>> = None;
    let mut connect: Option<Histogram<u64>> = None;
    let merge = |all: &mut Option<Histogram<u64>>, h: Histogram<u64>| match all {
        Some(a) => {
            let _ = a.add(&h);
        }
        None => *all = Some(h),
    };
    let mut achieved = 0.0;
    let mut open: Option<OpenLoopFigures> = None;
    let mut from_send: Option<Histogram<u64>> = None;
    for a in agents {
        for st in a.client.streams.iter().filter(|st| st.role == Role::Send) {
            let Some(r) = &st.rr else { continue };
            s.lost += r.lost;
            s.stale += r.stale;
            s.errors += r.errors;
            if let Some(h) = decode(&r.latency_histogram) {
                merge(&mut rtt, h);
            }
            if let Some(h) = r.connect_histogram.as_deref().and_then(decode) {
                merge(&mut connect, h);
            }
            if let Some(o) = &r.open_loop {
                let f = open.get_or_insert(OpenLoopFigures {
                    max_outstanding: o.max_outstanding,
                    ..OpenLoopFigures::default()
                });
                f.requests_sent += o.requests_sent;
                f.requests_not_sent += o.requests_not_sent;
                f.max_outstanding = f.max_outstanding.min(o.max_outstanding);
                if let Some(h) = decode(&o.latency_from_send_histogram) {
                    merge(&mut from_send, h);
                }
            }
            if let Some(gap) = r.achieved_spacing_us.filter(|g| *g > 0.0) {
                achieved += 1e6 / gap;
            }
        }
    }
    let streams = (spec.streams as usize * agents.len()) as f64;
    if let Some(h) = rtt.filter(|h| !h.is_empty()) {
        s.transactions = h.len();
        if sent.seconds > 0.0 {
            s.transactions_per_second = h.len() as f64 / sent.seconds;
        }
        s.latency_us = Some(figures(&h));
        let (bins, peaks) = bins_and_peaks(&h);
        s.histogram = bins;
        s.peak_separations_us = peaks.windows(2).map(|w| w[1].at_us - w[0].at_us).collect();
        s.peaks = peaks;
    }
    if s.transactions > 0 {
        let per = |side: &SideSummary| {
            side.efficiency
                .map(|e| e.busy_cores * side.seconds * 1e6 / s.transactions as f64)
        };
        s.cpu_us_per_transaction = Some(CpuPerTransaction {
            client: per(sent),
            agents: per(received),
        });
    }
    if let Some(h) = connect.filter(|h| !h.is_empty()) {
        s.connect = Some(ConnectFigures {
            connections_per_second: s.transactions_per_second,
            connect_us: figures(&h),
        });
    }
    if let Some(mut f) = open {
        if sent.seconds > 0.0 {
            f.requests_sent_per_second = f.requests_sent as f64 / sent.seconds;
        }
        f.latency_from_send_us = from_send.filter(|h| !h.is_empty()).map(|h| figures(&h));
        s.open_loop = Some(f);
    }
    if let Some(r) = spec.rate {
        s.rate = Some(RateFigures {
            requested_per_second: r * streams,
            achieved_per_second: if sent.seconds > 0.0 {
                sent.ops as f64 / sent.seconds
            } else {
                achieved
            },
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_double_peak_and_its_separation() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds");
        // Two humps, around 20 µs and 24 µs.
        for (centre, n) in [(20_000u64, 5000u64), (24_000, 3000)] {
            for d in 0..600u64 {
                let w = 600 - d;
                let _ = h.record_n(centre + d, n * w / 600 / 10 + 1);
                let _ = h.record_n(centre - d, n * w / 600 / 10 + 1);
            }
        }
        let (bins, peaks) = bins_and_peaks(&h);
        assert!(
            !bins.is_empty() && bins.len() <= 102,
            "101 equal bins at most and the tail"
        );
        assert_eq!(peaks.len(), 2, "{peaks:?}");
        let sep = peaks[1].at_us - peaks[0].at_us;
        assert!((sep - 4.0).abs() < 0.3, "separation {sep}");
    }

    #[test]
    fn one_hump_is_one_peak() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds");
        for d in 0..2000u64 {
            let _ = h.record_n(50_000 + d, 2000 - d.abs_diff(1000));
        }
        assert_eq!(bins_and_peaks(&h).1.len(), 1);
    }

    /// 97 % of the round trips near 100 µs and a tail to 10 ms. Equal bins to the
    /// 99.9th percentile put the whole mode in the first of them (14 empty text rows after it);
    /// the bins now end where they resolve the mode, the tail in one open bin.
    #[test]
    fn issue_23_a_skewed_distribution_resolves_its_mode() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds");
        // 97,000 round trips between 90 and 110 µs, peaked at 100; 3,000 spread to 10 ms.
        for d in 0..100u64 {
            let n = 2 * (100 - d) - 1;
            let _ = h.record_n(100_000 + d * 100, n * 97_000 / 10_000);
            let _ = h.record_n(100_000 - d * 100, n * 97_000 / 10_000);
        }
        for i in 0..3000u64 {
            let _ = h.record(200_000 + i * 3_300);
        }
        let total = h.len();
        let (bins, peaks) = bins_and_peaks(&h);
        let (tail, equal) = bins.split_last().expect("bins");
        assert!(tail.to_us.is_infinite(), "the tail in one open bin: {tail:?}");
        assert!(tail.count >= 3000, "{tail:?}");
        let fullest = equal.iter().map(|b| b.count).max().expect("bins");
        assert!(
            (fullest as f64) < 0.25 * total as f64,
            "the fullest bin holds {fullest} of {total}"
        );
        let around_mode = equal
            .iter()
            .filter(|b| b.count > 0 && b.from_us >= 90.0 && b.to_us <= 110.5)
            .count();
        assert!(
            around_mode >= 10,
            "{around_mode} non-empty bins around the mode: {equal:?}"
        );
        let binned: u64 = bins.iter().map(|b| b.count).sum();
        assert!(binned * 1000 >= total * 998, "{binned} of {total} in a bin");
        assert_eq!(peaks.len(), 1, "{peaks:?}");
        assert!((peaks[0].at_us - 100.0).abs() < 2.0, "{peaks:?}");
    }

    /// A fast loopback run: the fullest bin is the second, the first nearly as full (seen on a
    /// real run, where the edge bin's mean over two stood above its fuller neighbour).
    #[test]
    fn a_peak_at_the_edge_is_the_fullest_bin() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds");
        // 560 ns stretches (about one bin each) holding 24,490, 42,816, 9,000 and 2,000.
        for (start, per_10_ns) in [(10_000u64, 437u64), (10_560, 765), (11_120, 160), (11_680, 36)] {
            for v in (start..start + 560).step_by(10) {
                let _ = h.record_n(v, per_10_ns);
            }
        }
        for v in (12_240..22_000).step_by(100) {
            let _ = h.record_n(v, 10);
        }
        let (bins, peaks) = bins_and_peaks(&h);
        let fullest = bins.iter().max_by_key(|b| b.count).expect("bins");
        assert_eq!(peaks.len(), 1, "{peaks:?}");
        assert_eq!(peaks[0].count, fullest.count, "{peaks:?} {bins:?}");
    }
}
