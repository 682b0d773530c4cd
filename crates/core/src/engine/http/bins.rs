//! One interval's response times in a fixed array of log-linear bins, for the timeline's
//! per-interval percentiles: eight bins per power of two of microseconds (each 12.5 % of its
//! value wide), from 1 µs to 2^32 µs (71 minutes). Recording is a few instructions and never
//! allocates; 1 KiB per interval.

/// Intervals whose response times are kept in bins (1 KiB each, per worker): an hour at 1 s.
/// Later intervals have no percentiles.
pub const MAX_INTERVALS: usize = 3600;

/// Bins per power of two.
const SUB: u32 = 8;
const SUB_BITS: u32 = 3;
const BINS: usize = 32 * SUB as usize;

/// Response times of one interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeBins([u32; BINS]);

impl Default for TimeBins {
    fn default() -> TimeBins {
        TimeBins([0; BINS])
    }
}

/// The bin of `us` (at least 1).
fn index(us: u64) -> usize {
    let us = us.max(1);
    let e = 63 - us.leading_zeros();
    let sub = if e >= SUB_BITS {
        (us >> (e - SUB_BITS)) as u32 & (SUB - 1)
    } else {
        ((us << (SUB_BITS - e)) as u32) & (SUB - 1)
    };
    ((e * SUB + sub) as usize).min(BINS - 1)
}

/// The lowest value of bin `i`, µs, and its width.
fn bounds(i: usize) -> (f64, f64) {
    let (e, sub) = (i as u32 / SUB, i as u32 % SUB);
    let base = 2f64.powi(e as i32);
    let width = base / f64::from(SUB);
    (base + f64::from(sub) * width, width)
}

impl TimeBins {
    /// One response time, ns.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let b = &mut self.0[index(ns / 1000)];
        *b = b.saturating_add(1);
    }

    pub fn add(&mut self, o: &TimeBins) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a = a.saturating_add(*b);
        }
    }

    /// The `q`-quantile (0.5: the median), µs: the middle of the bin it falls in; None when
    /// empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.0.iter().map(|c| u64::from(*c)).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        for (i, c) in self.0.iter().enumerate() {
            seen += u64::from(*c);
            if seen >= rank {
                let (lo, width) = bounds(i);
                return Some(lo + width / 2.0);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_an_eighth_of_their_power_of_two_wide() {
        assert_eq!(index(1), 0);
        assert_eq!(bounds(index(1000)), (960.0, 64.0));
        assert_eq!(bounds(index(1023)), (960.0, 64.0));
        assert_eq!(bounds(index(1024)), (1024.0, 128.0));
        assert_eq!(index(u64::MAX), BINS - 1);
    }

    #[test]
    fn quantiles_land_within_their_bin() {
        let mut b = TimeBins::default();
        assert_eq!(b.quantile(0.5), None);
        for us in 1..=1000u64 {
            b.record(us * 1000);
        }
        let p50 = b.quantile(0.5).expect("data");
        assert!((p50 - 500.0).abs() <= 500.0 / 8.0, "{p50}");
        let p99 = b.quantile(0.99).expect("data");
        assert!((p99 - 990.0).abs() <= 990.0 / 8.0, "{p99}");
        let mut c = TimeBins::default();
        c.add(&b);
        c.add(&b);
        assert_eq!(c.quantile(0.5), b.quantile(0.5));
    }
}
