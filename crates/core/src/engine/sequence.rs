//! What a receiver makes of the sequence numbers it saw: received, lost, out of order,
//! duplicated, and where in the stream the losses fell (UDPmon's loss pattern).
//!
//! One bit per sequence number, in a bitmap allocated before the run for every number the test
//! can send (`tracked_datagrams`) and never grown: recording a datagram is a few instructions
//! and never allocates. A number past the map is not one the sender of this test can send (a
//! stray, a forgery, or a sender faster than the ceiling below): it is counted *out of range*
//! and otherwise left alone, so one datagram cannot make a receiver allocate (a single
//! datagram numbered 2^32 - 64 grew the map to 512 MiB). A datagram is *out of order* when it
//! arrives after one with a higher number; it is *lost* only if it never arrives, so a late
//! datagram is counted as out of order and not as lost.

use crate::result::LossRange;
use crate::spec::{Limit, UdpSpec};
use serde::{Deserialize, Serialize};

/// The most sequence numbers tracked per stream whatever the spec (2^32 datagrams, a 512 MiB
/// bitmap; the largest `-n` the spec allows).
pub(crate) const MAX_TRACKED: u64 = 1 << 32;

/// The most datagrams a stream of a timed test is taken to send per second, paced or not
/// (2^25, 33,554,432: over three times the 10 M/s of 64-byte datagrams linerate sends on
/// loopback, docs/benchmarks.md). A timed test's map holds this many numbers per second of it,
/// 4 MiB per second per receiving stream.
pub(crate) const MAX_DATAGRAMS_PER_SECOND: u64 = 1 << 25;

/// The sequence numbers a receiving stream of `spec` tracks: what its sender can send. A count
/// (`-n`) sends exactly that many; a timed test at most its time at its spacing (one datagram
/// per gap from time zero to the deadline) and never more than [`MAX_DATAGRAMS_PER_SECOND`]
/// for its time; and never more than [`MAX_TRACKED`]. The agent's memory budget counts the
/// same map.
pub(crate) fn tracked_datagrams(spec: &UdpSpec) -> u64 {
    let n = match spec.timing.limit {
        Limit::Buffers(n) => n,
        Limit::Seconds(_) => {
            let seconds = spec.timing.length_seconds().unwrap_or(0.0);
            let ceiling = (seconds * MAX_DATAGRAMS_PER_SECOND as f64).ceil() as u64 + 1;
            if spec.gap_ns > 0 {
                spec.expected_datagrams().min(ceiling)
            } else {
                ceiling
            }
        }
    };
    n.min(MAX_TRACKED)
}

/// The sequence numbers a receiving stream tracks when its sender is iperf3: that
/// sender starts before this end's time zero, stops at TEST_END rather than at its own
/// deadline, and spreads a block count over its streams as it likes; so a second more than
/// the test's time, or the count of all its streams.
pub(crate) fn tracked_from_iperf3(spec: &UdpSpec) -> u64 {
    let limit = match spec.timing.limit {
        Limit::Buffers(n) => Limit::Buffers(n.saturating_mul(u64::from(spec.streams))),
        Limit::Seconds(s) => Limit::Seconds(s + 1.0),
    };
    let mut widened = spec.clone();
    widened.timing.limit = limit;
    tracked_datagrams(&widened)
}

/// The receiver's per-stream sequence state.
#[derive(Clone, Debug, Default)]
pub(crate) struct SequenceTracker {
    seen: Vec<u64>,
    /// Sequence numbers tracked: `0..limit`.
    limit: u64,
    /// One past the highest sequence number seen (within the limit).
    next: u64,
    received: u64,
    out_of_order: u64,
    duplicates: u64,
    /// Datagrams numbered at or past `limit`: counted, not placed.
    out_of_range: u64,
}

/// What the tracker concluded once the sender's count is known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SequenceSummary {
    /// Distinct datagrams received (within the tracked numbers).
    pub received: u64,
    /// Datagrams sent that never arrived (within the tracked numbers).
    pub lost: u64,
    /// Datagrams that arrived after one with a higher number.
    pub out_of_order: u64,
    /// Copies of datagrams already received.
    pub duplicates: u64,
    /// Datagrams numbered past the tracked numbers.
    pub out_of_range: u64,
    /// The first `max_ranges` runs of lost datagrams.
    pub loss_ranges: Vec<LossRange>,
    /// Runs of lost datagrams in all (also those past `max_ranges`).
    pub loss_range_count: u64,
}

impl SequenceTracker {
    /// A tracker of sequence numbers `0..limit` (at most [`MAX_TRACKED`]), its map allocated
    /// now (zeroed pages: the kernel maps them as they are first written).
    pub fn new(limit: u64) -> SequenceTracker {
        let limit = limit.min(MAX_TRACKED);
        SequenceTracker {
            seen: vec![0; limit.div_ceil(64) as usize],
            limit,
            ..Default::default()
        }
    }

    /// Records datagram `seq`; false when it is out of range (counted, not placed).
    #[inline]
    pub fn record(&mut self, seq: u64) -> bool {
        if seq >= self.limit {
            self.out_of_range += 1;
            return false;
        }
        let (word, bit) = ((seq / 64) as usize, 1u64 << (seq % 64));
        let w = &mut self.seen[word];
        if *w & bit != 0 {
            self.duplicates += 1;
            return true;
        }
        *w |= bit;
        self.received += 1;
        if seq < self.next {
            self.out_of_order += 1;
        } else {
            self.next = seq + 1;
        }
        true
    }

    /// Sequence numbers tracked: `0..limit`.
    pub fn limit(&self) -> u64 {
        self.limit
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

    /// Sequence numbers in `from..to` that never arrived, a word at a time.
    pub fn missing(&self, from: u64, to: u64) -> u64 {
        let (mut seq, mut lost) = (from, 0u64);
        while seq < to {
            let word = self.seen.get((seq / 64) as usize).copied().unwrap_or(0);
            let bit = seq % 64;
            let take = (64 - bit).min(to - seq);
            let mask = if take == 64 {
                u64::MAX
            } else {
                ((1u64 << take) - 1) << bit
            };
            lost += u64::from((!word & mask).count_ones());
            seq += take;
        }
        lost
    }

    /// One past the last sequence number a summary looks at: the sender's count (or, unknown,
    /// the highest number seen), within the tracked numbers.
    pub fn end(&self, sent: Option<u64>) -> u64 {
        sent.unwrap_or(self.next).max(self.next).min(self.limit)
    }

    /// The summary for a stream of which the sender sent `sent` datagrams (numbered from 0); when
    /// the sender's count is unknown, the highest number seen stands for it. Losses are counted
    /// within the tracked numbers only.
    pub fn summary(&self, sent: Option<u64>, max_ranges: usize) -> SequenceSummary {
        let end = self.end(sent);
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
                    // Whole words of lost datagrams too.
                    let empty = self.seen.get((seq / 64) as usize).is_none_or(|w| *w == 0);
                    seq += if seq.is_multiple_of(64) && empty && seq + 64 <= end {
                        64
                    } else {
                        1
                    };
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
            out_of_range: self.out_of_range,
            loss_ranges: ranges,
            loss_range_count: count,
        }
    }

    /// Where losses fell: the stream cut into `columns` equal parts, each drawn as `.` (nothing
    /// lost), `-` (under 1 % lost), `x` (under 10 %) or `X` (10 % or more).
    pub fn loss_picture(&self, sent: Option<u64>, columns: usize) -> String {
        let end = self.end(sent);
        if end == 0 || columns == 0 {
            return String::new();
        }
        (0..columns as u64)
            .map(|c| {
                let (a, b) = (end * c / columns as u64, end * (c + 1) / columns as u64);
                let lost = self.missing(a, b) as f64;
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
        let mut t = SequenceTracker::new(100_000);
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
    fn missing_counts_a_word_at_a_time() {
        let t = track(&[0, 1, 5, 63, 64, 65, 130]);
        assert_eq!(t.missing(0, 200), 200 - 7);
        assert_eq!(t.missing(1, 6), 3);
        assert_eq!(t.missing(63, 66), 0);
        assert_eq!(t.missing(66, 130), 64);
        let s = t.summary(Some(200), 10);
        assert_eq!(s.lost, 193);
        assert_eq!(s.loss_range_count, 4);
        assert_eq!(s.loss_ranges[2], LossRange { first: 66, last: 129 });
    }

    #[test]
    fn issue_22_a_number_past_the_limit_is_out_of_range_and_allocates_nothing() {
        let mut t = SequenceTracker::new(1000);
        let words = t.seen.len();
        for seq in 0..1000 {
            assert!(t.record(seq));
        }
        // The datagram that grew the map to 2^32 bits (512 MiB), and one past the limit.
        assert!(!t.record((1 << 32) - 64));
        assert!(!t.record(1000));
        assert!(!t.record(u64::MAX));
        assert_eq!(t.seen.len(), words, "the map never grows");
        assert_eq!(t.seen.capacity(), words);
        let s = t.summary(Some(1000), 10);
        assert_eq!((s.received, s.lost, s.out_of_range, s.duplicates), (1000, 0, 3, 0));
        assert_eq!(t.highest_plus_one(), 1000);
        // A sender's count past the limit (a forged end marker) is looked at up to the limit.
        let s = t.summary(Some(u64::MAX), 10);
        assert_eq!((s.received, s.lost), (1000, 0));
        assert_eq!(t.loss_picture(Some(u64::MAX), 4), "....");
        // The absolute ceiling: no limit makes a map past 2^32 numbers.
        assert_eq!(SequenceTracker::new(u64::MAX).limit(), MAX_TRACKED);
    }

    #[test]
    fn issue_22_the_map_holds_what_the_spec_can_send() {
        let mut u = UdpSpec::new();
        u.timing.limit = Limit::Buffers(5000);
        assert_eq!(tracked_datagrams(&u), 5000);
        u.timing.limit = Limit::Buffers(u64::MAX);
        assert_eq!(tracked_datagrams(&u), MAX_TRACKED);
        // 10 s as fast as possible: the ceiling's rate.
        u.timing.limit = Limit::Seconds(10.0);
        assert_eq!(tracked_datagrams(&u), 10 * MAX_DATAGRAMS_PER_SECOND + 1);
        // Paced at 10 us: 100,000 a second, one more for the datagram at time zero.
        u.gap_ns = 10_000;
        assert_eq!(tracked_datagrams(&u), 1_000_001);
        // Paced faster than the ceiling: the ceiling.
        u.gap_ns = 1;
        assert_eq!(tracked_datagrams(&u), 10 * MAX_DATAGRAMS_PER_SECOND + 1);
        // A day as fast as possible: the absolute ceiling.
        u.timing.limit = Limit::Seconds(86_400.0);
        u.gap_ns = 0;
        assert_eq!(tracked_datagrams(&u), MAX_TRACKED);
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
