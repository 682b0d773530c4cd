//! The open loop's record of every request (a latency probe session, `--probe`): when each left,
//! when its answer came and the far end's time stamp in it, or that it was lost. Allocated whole
//! before the run (a slot per request the schedule can send, bounded), written by the one asking
//! worker with relaxed stores (no allocation or lock per request), read by whoever holds it
//! after (or, cut short, during) the run.

use std::sync::OnceLock;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::time::Instant;

/// The most requests a record holds (32 bytes each: 64 MiB); requests past it leave unrecorded.
pub const MAX_RECORDED: usize = 1 << 21;

/// One request's slot.
#[derive(Default)]
struct Entry {
    /// When it left, ns since the run's time zero; 0: not sent (yet).
    sent_ns: AtomicU64,
    /// When its answer came, ns since time zero; 0: none (yet).
    back_ns: AtomicU64,
    /// The far end's receive time, Unix ns, when the answer carried one; 0: none.
    far_unix_ns: AtomicI64,
    /// Given up: unanswered within the timeout.
    lost: AtomicBool,
}

/// What became of one recorded request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Answered at `back_ns` since time zero; `far_unix_ns` the far end's stamp, if any.
    Answered { back_ns: u64, far_unix_ns: Option<i64> },
    /// Unanswered within its timeout.
    Lost,
    /// Neither yet when the run ended (cut short).
    InFlight,
}

/// One recorded request, as read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// When it left, ns since the run's time zero.
    pub sent_ns: u64,
    pub fate: Fate,
}

/// The record of one asking stream's requests, numbered from 0.
pub struct ProbeRecord {
    entries: Vec<Entry>,
    /// The run's time zero and the Unix time at it, ns.
    zero: OnceLock<(Instant, i64)>,
}

impl ProbeRecord {
    /// A record for up to `requests` requests (at most `MAX_RECORDED`, 2^21).
    pub fn new(requests: usize) -> ProbeRecord {
        let n = requests.clamp(1, MAX_RECORDED);
        ProbeRecord {
            entries: (0..n).map(|_| Entry::default()).collect(),
            zero: OnceLock::new(),
        }
    }

    /// The sending run's time zero and the Unix time at it (ns); None before it started.
    pub fn zero(&self) -> Option<(Instant, i64)> {
        self.zero.get().copied()
    }

    pub(super) fn set_zero(&self, at: Instant) {
        let unix_now = crate::unixtime::unix_ns(std::time::SystemTime::now());
        let since = i64::try_from(at.elapsed().as_nanos()).unwrap_or(i64::MAX);
        let _ = self.zero.set((at, unix_now.saturating_sub(since)));
    }

    pub(super) fn sent(&self, seq: u64, sent_ns: u64) {
        if let Some(e) = self.entries.get(seq as usize) {
            e.sent_ns.store(sent_ns.max(1), Relaxed);
        }
    }

    pub(super) fn answered(&self, seq: u64, back_ns: u64, far_unix_ns: Option<i64>) {
        if let Some(e) = self.entries.get(seq as usize) {
            e.far_unix_ns.store(far_unix_ns.unwrap_or(0), Relaxed);
            e.back_ns.store(back_ns.max(1), Relaxed);
        }
    }

    pub(super) fn lost(&self, seq: u64) {
        if let Some(e) = self.entries.get(seq as usize) {
            e.lost.store(true, Relaxed);
        }
    }

    /// Every request recorded as sent, in order of its number.
    pub fn requests(&self) -> Vec<Recorded> {
        self.entries
            .iter()
            .map(|e| (e.sent_ns.load(Relaxed), e))
            .take_while(|(sent, _)| *sent > 0)
            .map(|(sent_ns, e)| {
                let back_ns = e.back_ns.load(Relaxed);
                let fate = if e.lost.load(Relaxed) {
                    Fate::Lost
                } else if back_ns > 0 {
                    let far = e.far_unix_ns.load(Relaxed);
                    Fate::Answered {
                        back_ns,
                        far_unix_ns: (far != 0).then_some(far),
                    }
                } else {
                    Fate::InFlight
                };
                Recorded { sent_ns, fate }
            })
            .collect()
    }
}

/// The far end's stamp in an answer: bytes 8 to 16, Unix ns; None in a shorter answer.
pub(super) fn stamp_of(answer: &[u8]) -> Option<i64> {
    let b: [u8; 8] = answer.get(8..16)?.try_into().ok()?;
    Some(i64::from_le_bytes(b))
}

/// The answering end's stamp: now, Unix ns, into bytes 8 to 16 of a response of 16 or more.
pub(super) fn stamp(response: &mut [u8]) {
    if let Some(b) = response.get_mut(8..16) {
        let now = crate::unixtime::unix_ns(std::time::SystemTime::now());
        b.copy_from_slice(&now.to_le_bytes());
    }
}

/// Copies what of a response's bytes `pos..pos + chunk.len()` falls on its stamp (bytes 8 to
/// 16) into `far`: a TCP answer may arrive in pieces.
pub(super) fn gather_stamp(far: &mut [u8; 8], pos: usize, chunk: &[u8]) {
    let (lo, hi) = (pos.max(8), (pos + chunk.len()).min(16));
    if lo < hi {
        far[lo - 8..hi - 8].copy_from_slice(&chunk[lo - pos..hi - pos]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_back_with_their_fates_and_stamps_cross_pieces() {
        let r = ProbeRecord::new(8);
        assert!(r.zero().is_none());
        r.set_zero(Instant::now());
        r.sent(0, 10);
        r.sent(1, 20);
        r.sent(2, 30);
        r.answered(0, 15, Some(1_700_000_000_000_000_000));
        r.lost(1);
        r.sent(99, 40); // past the record: left out
        let got = r.requests();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0].fate,
            Fate::Answered {
                back_ns: 15,
                far_unix_ns: Some(1_700_000_000_000_000_000)
            }
        );
        assert_eq!((got[1].fate, got[2].fate), (Fate::Lost, Fate::InFlight));
        assert!(r.zero().expect("set").1 > 0);
        let mut answer = [0u8; 20];
        stamp(&mut answer);
        let t = stamp_of(&answer).expect("20 bytes hold a stamp");
        assert!(t > 1_600_000_000_000_000_000);
        assert_eq!(stamp_of(&answer[..12]), None);
        // The same answer in pieces of 3, 7 and 10 bytes.
        let mut far = [0u8; 8];
        let mut pos = 0;
        for piece in [&answer[..3], &answer[3..10], &answer[10..]] {
            gather_stamp(&mut far, pos, piece);
            pos += piece.len();
        }
        assert_eq!(i64::from_le_bytes(far), t);
    }
}
