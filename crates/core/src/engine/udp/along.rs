//! What happened along a stream's sequence numbers, in [`STRETCHES`] equal stretches: the
//! one-way delay of each stretch's arrivals (count, sum, least, most), filled by the receive loop
//! in a fixed array, and the datagrams lost in each, counted from the sequence bitmap after the
//! run. UDPmon's loss pattern and one-way delay against sequence number, bounded in size
//! whatever the stream's length.
//!
//! A stretch holds 2^shift sequence numbers, the shift chosen for the datagrams expected; when a
//! number past the last stretch arrives, neighbouring stretches merge and the width doubles (at
//! most 32 times over a run, never allocating).

use crate::engine::sequence::{MAX_TRACKED, SequenceTracker};
use crate::result::SequenceProfile;

/// Stretches of a stream's sequence numbers.
pub(crate) const STRETCHES: usize = 64;

#[derive(Clone, Copy, Debug)]
struct Cell {
    count: u64,
    /// Sum of the delays, ns relative to the stream's base (f64: 2^32 delays of a minute each
    /// pass an i64).
    sum_ns: f64,
    min_ns: i64,
    max_ns: i64,
}

const EMPTY: Cell = Cell {
    count: 0,
    sum_ns: 0.0,
    min_ns: i64::MAX,
    max_ns: i64::MIN,
};

impl Cell {
    fn merge(a: Cell, b: Cell) -> Cell {
        Cell {
            count: a.count + b.count,
            sum_ns: a.sum_ns + b.sum_ns,
            min_ns: a.min_ns.min(b.min_ns),
            max_ns: a.max_ns.max(b.max_ns),
        }
    }
}

/// The receive loop's per-stream accumulator.
#[derive(Clone, Debug)]
pub(crate) struct AlongSequence {
    shift: u32,
    cells: [Cell; STRETCHES],
}

impl AlongSequence {
    /// Sized so that `expected` datagrams fill the stretches without a merge.
    pub fn new(expected: u64) -> AlongSequence {
        let per = expected.div_ceil(STRETCHES as u64).max(1);
        AlongSequence {
            shift: per.next_power_of_two().trailing_zeros(),
            cells: [EMPTY; STRETCHES],
        }
    }

    /// Datagram `seq` arrived `delay_ns` after its send time (relative to any fixed base).
    #[inline]
    pub fn record(&mut self, seq: u64, delay_ns: i64) {
        if seq >= MAX_TRACKED {
            return;
        }
        while (seq >> self.shift) as usize >= STRETCHES {
            self.widen();
        }
        let c = &mut self.cells[(seq >> self.shift) as usize];
        c.count += 1;
        c.sum_ns += delay_ns as f64;
        c.min_ns = c.min_ns.min(delay_ns);
        c.max_ns = c.max_ns.max(delay_ns);
    }

    /// Merges neighbouring stretches: the width doubles.
    #[cold]
    fn widen(&mut self) {
        for i in 0..STRETCHES / 2 {
            self.cells[i] = Cell::merge(self.cells[2 * i], self.cells[2 * i + 1]);
        }
        self.cells[STRETCHES / 2..].fill(EMPTY);
        self.shift += 1;
    }

    /// The profile of a stream of `end` sequence numbers (the sender's count, or the highest
    /// seen), delays given above `min_ns` (on the same base as the recorded ones), in µs.
    pub fn profile(&self, tracker: &SequenceTracker, end: u64, min_ns: i64) -> SequenceProfile {
        let end = end.min(MAX_TRACKED);
        let width = 1u64 << self.shift;
        let used = (end.div_ceil(width) as usize).min(STRETCHES);
        let mut p = SequenceProfile {
            width_datagrams: width,
            ..Default::default()
        };
        for (i, c) in self.cells.iter().enumerate().take(used) {
            let (from, to) = (i as u64 * width, ((i as u64 + 1) * width).min(end));
            p.lost.push(tracker.missing(from, to));
            let us = |ns: i64| (ns - min_ns) as f64 / 1e3;
            let seen = c.count > 0;
            p.delay_mean_us
                .push(seen.then(|| (c.sum_ns / c.count as f64 - min_ns as f64) / 1e3));
            p.delay_min_us.push(seen.then(|| us(c.min_ns)));
            p.delay_max_us.push(seen.then(|| us(c.max_ns)));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_hold_their_delays_and_losses() {
        let mut a = AlongSequence::new(128);
        let mut t = SequenceTracker::new(128);
        for seq in 0..128u64 {
            // Datagrams 10 and 11 lost; the delay grows with the sequence number.
            if seq == 10 || seq == 11 {
                continue;
            }
            t.record(seq);
            a.record(seq, 1000 + seq as i64 * 100);
        }
        let p = a.profile(&t, 128, 1000);
        assert_eq!(p.width_datagrams, 2);
        assert_eq!(p.lost.len(), 64);
        assert_eq!(p.lost[5], 2);
        assert_eq!(p.lost.iter().sum::<u64>(), 2);
        assert_eq!(p.delay_mean_us[5], None);
        assert_eq!(p.delay_min_us[0], Some(0.0));
        assert_eq!(p.delay_max_us[63], Some(12.7));
        assert_eq!(p.delay_mean_us[1], Some(0.25));
    }

    #[test]
    fn a_longer_stream_than_expected_widens_the_stretches() {
        let mut a = AlongSequence::new(64);
        let mut t = SequenceTracker::new(1000);
        for seq in 0..1000u64 {
            t.record(seq);
            a.record(seq, 5);
        }
        let p = a.profile(&t, 1000, 0);
        assert_eq!(p.width_datagrams, 16);
        assert_eq!(p.lost.len(), 63, "1000 numbers in stretches of 16");
        assert!(p.lost.iter().all(|l| *l == 0));
        assert!(p.delay_mean_us.iter().all(|d| *d == Some(0.005)));
    }
}
