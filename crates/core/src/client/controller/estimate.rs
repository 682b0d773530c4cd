//! An agent's clock against this host's, from timed exchanges (`super::read_clock` makes them):
//! which exchange to trust, the offset and its uncertainty, and whether to begin another one
//! before the reading's deadline. Pure: no clock is read here.
//!
//! Each exchange is taken to have met the far clock at its midpoint: offset = far reading −
//! (sent + round trip / 2), within ± half the round trip. A path slower one way than the other
//! shifts the estimate by up to that uncertainty, never more; so the fastest exchange, whose
//! bound is tightest, is the one kept (a queue met on the way only ever adds to a round trip).

use crate::result::ClockEstimate;
use std::time::Duration;

/// One timed exchange: this host's wall clock when the query left, the agent's clock in its
/// reply, and the round trip (timed on the monotonic clock, so a wall-clock step mid-exchange
/// cannot make it negative; the reply came in at `sent + round_trip`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Exchange {
    pub sent_unix_ns: i64,
    pub far_unix_ns: i64,
    pub round_trip: Duration,
}

impl Exchange {
    /// The far clock minus this one, had the far clock been read at the exchange's midpoint.
    fn offset_ns(&self) -> i64 {
        let midpoint = self
            .sent_unix_ns
            .saturating_add((self.round_trip.as_nanos() / 2) as i64);
        self.far_unix_ns.saturating_sub(midpoint)
    }
}

/// The fastest of `exchanges` (the first of equals).
fn fastest(exchanges: &[Exchange]) -> Option<&Exchange> {
    exchanges
        .iter()
        .reduce(|best, e| if e.round_trip < best.round_trip { e } else { best })
}

/// The estimate from `exchanges`: the fastest one's offset, within ± half its round trip, with
/// how many were made. None without any (the reading has nothing to go by).
pub(super) fn estimate(exchanges: &[Exchange]) -> Option<ClockEstimate> {
    let best = fastest(exchanges)?;
    Some(ClockEstimate {
        offset_ns: best.offset_ns(),
        uncertainty_ns: (best.round_trip.as_nanos() / 2) as u64,
        exchanges: exchanges.len() as u32,
    })
}

/// What a reading does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Begin another exchange.
    Exchange,
    /// Stop and estimate from the exchanges made.
    Enough,
    /// Stop: the deadline passed before a single exchange came back.
    TooFar,
}

/// Whether to begin another exchange with `left` before the reading's deadline, `made` so far
/// of the `wanted` (at least one): enough once `wanted` were made, or once one as fast as the
/// fastest so far no longer fits before the deadline; too far when the deadline passed (with
/// nothing made, or only exchanges that took no time at all).
pub(super) fn next(made: &[Exchange], wanted: u32, left: Duration) -> Next {
    if made.len() >= wanted.max(1) as usize {
        return Next::Enough;
    }
    match fastest(made) {
        Some(best) if left < best.round_trip => Next::Enough,
        _ if left.is_zero() => Next::TooFar,
        _ => Next::Exchange,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000_000_000;
    const MS: i64 = 1_000_000;

    /// An exchange sent at `sent_ms` (after T0) to an agent `offset_ms` ahead, its query on the
    /// way `out_ms` and its reply `back_ms`.
    fn exchange(sent_ms: i64, offset_ms: i64, out_ms: i64, back_ms: i64) -> Exchange {
        let sent_unix_ns = T0 + sent_ms * MS;
        Exchange {
            sent_unix_ns,
            far_unix_ns: sent_unix_ns + (out_ms + offset_ms) * MS,
            round_trip: Duration::from_nanos(((out_ms + back_ms) * MS) as u64),
        }
    }

    #[test]
    fn a_symmetric_path_gives_the_exact_offset() {
        let e = estimate(&[exchange(0, 250, 3, 3)]).expect("an estimate");
        assert_eq!(e.offset_ns, 250 * MS);
        assert_eq!(e.uncertainty_ns, 3 * MS as u64);
        assert_eq!(e.exchanges, 1);
        // Behind as well as ahead.
        assert_eq!(estimate(&[exchange(0, -7, 2, 2)]).map(|e| e.offset_ns), Some(-7 * MS));
    }

    #[test]
    fn the_fastest_exchange_wins() {
        let made = [
            exchange(0, 40, 9, 1),
            exchange(10, 40, 1, 1),
            exchange(20, 40, 1, 30),
            exchange(60, 40, 1, 1),
        ];
        let e = estimate(&made).expect("an estimate");
        assert_eq!((e.offset_ns, e.uncertainty_ns, e.exchanges), (40 * MS, MS as u64, 4));
        // Of equals, the first: the one later (sent at 60 ms) reads the same here, so make it
        // differ and see it is not the one taken.
        let mut tied = made;
        tied[3].far_unix_ns += 5 * MS;
        assert_eq!(estimate(&tied).map(|e| e.offset_ns), Some(40 * MS));
    }

    #[test]
    fn an_asymmetric_path_errs_by_less_than_the_uncertainty() {
        // 1 ms out, 5 ms back: the far clock was read 2 ms before the midpoint.
        let e = estimate(&[exchange(0, 100, 1, 5)]).expect("an estimate");
        assert_eq!(e.offset_ns, 98 * MS);
        assert_eq!(e.uncertainty_ns, 3 * MS as u64);
        assert!(e.offset_ns.abs_diff(100 * MS) <= e.uncertainty_ns);
        // Jittered exchanges: each one's error stays within its own bound, the kept one's too.
        let made = [exchange(0, 100, 7, 2), exchange(10, 100, 2, 4), exchange(20, 100, 4, 9)];
        let e = estimate(&made).expect("an estimate");
        assert_eq!((e.offset_ns, e.uncertainty_ns), (99 * MS, 3 * MS as u64));
    }

    #[test]
    fn no_exchange_is_no_estimate() {
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn a_reading_goes_on_while_an_exchange_as_fast_as_the_best_fits() {
        let ms = |n| Duration::from_millis(n);
        assert_eq!(next(&[], 32, ms(5000)), Next::Exchange);
        let one = [exchange(0, 0, 400, 400)];
        assert_eq!(next(&one, 32, ms(800)), Next::Exchange);
        assert_eq!(next(&one, 32, ms(799)), Next::Enough);
        // As many as asked, and at least one.
        assert_eq!(next(&one, 1, ms(5000)), Next::Enough);
        assert_eq!(next(&one, 0, ms(5000)), Next::Enough);
        assert_eq!(next(&[], 0, ms(5000)), Next::Exchange);
        // The deadline passed with nothing back: too far.
        assert_eq!(next(&[], 32, Duration::ZERO), Next::TooFar);
        assert_eq!(next(&one, 32, Duration::ZERO), Next::Enough);
    }
}
