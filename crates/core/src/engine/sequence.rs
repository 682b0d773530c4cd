//! What a receiver makes of the sequence numbers it saw: received, lost, out of order,
//! duplicated, and where in the stream the losses fell (UDPmon's loss pattern).
//!
//! One bit per sequence number, in a bitmap sized before the run for the datagrams expected
//! (it grows, a word at a time, only if more come); recording a datagram is a few instructions
//! and never allocates in the steady state. A datagram is *out of order* when it arrives after
//! one with a higher number; it is *lost* only if it never arrives, so a late datagram is
//! counted as out of order and not as lost.

use crate::result::LossRange;
use serde::{Deserialize, Serialize};

/// The most sequence numbers tracked (2^32 datagrams, a 512 MiB bitmap): past it, datagrams are
/// counted but not placed.
pub(crate) const MAX_TRACKED: u64 = 1 << 32;

/// The receiver's per-stream sequence state.
#[derive(Clone, Debug, Default)]
pub(crate) struct SequenceTracker {
    seen: Vec<u64>,
    /// One past the highest sequence number seen.
    next: u64,
    received: u64,
    out_of_order: u64,
    duplicates: u64,
    /// Datagrams with a number past [`MAX_TRACKED`].
    untracked: u64,
}

/// What the tracker concluded once the sender's count is known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SequenceSummary {
    /// Distinct datagrams received.
    pub received: u64,
    /// Datagrams sent that never arrived.
    pub lost: u64,
    /// Datagrams that arrived after one with a higher number.
    pub out_of_order: u64,
    /// Copies of datagrams already received.
    pub duplicates: u64,
    /// The first `max_ranges` runs of lost datagrams.
    pub loss_ranges: Vec<LossRange>,
    /// Runs of lost datagrams in all (also those past `max_ranges`).
    pub loss_range_count: u64,
}

impl SequenceTracker {
    /// A tracker sized for `expected` datagrams (it grows past that if more come).
    pub fn with_capacity(expected: u64) -> SequenceTracker {
        let words = expected.min(MAX_TRACKED).div_ceil(64) as usize;
        SequenceTracker {
            seen: vec![0; words],
            ..Default::default()
        }
    }

    /// Records datagram `seq`.
    #[inline]
    pub fn record(&mut self, seq: u64) {
        if seq >= MAX_TRACKED {
            self.untracked += 1;
            self.received += 1;
            return;
        }
        let (word, bit) = ((seq / 64) as usize, 1u64 << (seq % 64));
        if word >= self.seen.len() {
            // Past the expected count: grow by doubling, rare and amortised.
            let want = (word + 1).max(self.seen.len() * 2);
            self.seen.resize(want, 0);
        }
        let w = &mut self.seen[word];
        if *w & bit != 0 {
            self.duplicates += 1;
            return;
        }
        *w |= bit;
        self.received += 1;
        if seq < self.next {
            self.out_of_order += 1;
        } else {
            self.next = seq + 1;
        }
    }

    /// Distinct datagrams received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// One past the highest sequence number seen.
    pub fn highest_plus_one(&self) -> u64 {
        self.next
    }

    /// Whether `seq` arrived.
    pub fn has(&self, seq: u64) -> bool {
        self.seen
            .get((seq / 64) as usize)
            .is_some_and(|w| w & (1u64 << (seq % 64)) != 0)
    }

    /// The summary for a stream of which the sender sent `sent` datagrams (numbered from 0); when
    /// the sender's count is unknown, the highest number seen stands for it.
    pub fn summary(&self, sent: Option<u64>, max_ranges: usize) -> SequenceSummary {
        let end = sent.unwrap_or(self.next).max(self.next).min(MAX_TRACKED);
        let mut ranges = Vec::new();
        let mut count = 0u64;
        let mut lost = 0u64;
        let mut seq = 0u64;
        while seq < end {
            let word = self.seen.get((seq / 64) as usize).copied().unwrap_or(0);
            // Whole words of received datagrams are skipped at once.
            if seq.is_multiple_of(64) && word == u64::MAX && seq + 64 <= end {
                seq += 64;
                continue;
            }
            if word & (1u64 << (seq % 64)) == 0 {
                let first = seq;
                while seq < end && !self.has(seq) {
                    seq += 1;
                }
                lost += seq - first;
                count += 1;
                if ranges.len() < max_ranges {
                    ranges.push(LossRange { first, last: seq - 1 });
                }
            } else {
                seq += 1;
            }
        }
        SequenceSummary {
            received: self.received,
            lost,
            out_of_order: self.out_of_order,
            duplicates: self.duplicates,
            loss_ranges: ranges,
            loss_range_count: count,
        }
    }

    /// Where losses fell: the stream cut into `columns` equal parts, each drawn as `.` (nothing
    /// lost), `-` (under 1 % lost), `x` (under 10 %) or `X` (10 % or more).
    pub fn loss_picture(&self, sent: Option<u64>, columns: usize) -> String {
        let end = sent.unwrap_or(self.next).max(self.next).min(MAX_TRACKED);
        if end == 0 || columns == 0 {
            return String::new();
        }
        (0..columns as u64)
            .map(|c| {
                let (a, b) = (end * c / columns as u64, end * (c + 1) / columns as u64);
                let lost = (a..b).filter(|s| !self.has(*s)).count() as f64;
                let share = if b > a { lost / (b - a) as f64 } else { 0.0 };
                if lost == 0.0 {
                    '.'
                } else if share < 0.01 {
                    '-'
                } else if share < 0.10 {
                    'x'
                } else {
                    'X'
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(seqs: &[u64]) -> SequenceTracker {
        let mut t = SequenceTracker::with_capacity(16);
        for &s in seqs {
            t.record(s);
        }
        t
    }

    #[test]
    fn in_order_stream_has_nothing_to_report() {
        let t = track(&(0..1000).collect::<Vec<_>>());
        let s = t.summary(Some(1000), 10);
        assert_eq!((s.received, s.lost, s.out_of_order, s.duplicates), (1000, 0, 0, 0));
        assert!(s.loss_ranges.is_empty());
    }

    #[test]
    fn a_late_datagram_is_out_of_order_not_lost() {
        let t = track(&[0, 1, 3, 4, 2, 5]);
        let s = t.summary(Some(6), 10);
        assert_eq!((s.received, s.lost, s.out_of_order), (6, 0, 1));
    }

    #[test]
    fn losses_make_ranges_including_at_the_tail() {
        let t = track(&[0, 1, 4, 5, 6, 9]);
        let s = t.summary(Some(12), 10);
        assert_eq!(s.lost, 2 + 2 + 2);
        assert_eq!(
            s.loss_ranges,
            [
                LossRange { first: 2, last: 3 },
                LossRange { first: 7, last: 8 },
                LossRange { first: 10, last: 11 }
            ]
        );
        assert_eq!(t.summary(Some(12), 1).loss_ranges.len(), 1);
        assert_eq!(t.summary(Some(12), 1).loss_range_count, 3);
        assert_eq!(
            t.summary(None, 10).lost,
            4,
            "without the sender's count, up to the highest seen"
        );
    }

    #[test]
    fn duplicates_are_counted_once_received() {
        let t = track(&[0, 1, 1, 2, 0]);
        let s = t.summary(Some(3), 10);
        assert_eq!((s.received, s.duplicates, s.out_of_order), (3, 2, 0));
    }

    #[test]
    fn grows_past_the_expected_count() {
        let t = track(&[0, 5000, 70_000]);
        let s = t.summary(Some(70_001), 0);
        assert_eq!(s.received, 3);
        assert_eq!(s.lost, 70_001 - 3);
        assert_eq!(s.loss_range_count, 2);
    }

    #[test]
    fn picture_shows_where_losses_fell() {
        let seqs: Vec<u64> = (0..1000).filter(|s| !(500..600).contains(s)).collect();
        let t = track(&seqs);
        assert_eq!(t.loss_picture(Some(1000), 10), ".....X....");
        let t = track(&(0..999).collect::<Vec<_>>());
        assert_eq!(
            t.loss_picture(Some(1000), 10),
            ".........x",
            "1 of 100 lost at the tail"
        );
    }
}
