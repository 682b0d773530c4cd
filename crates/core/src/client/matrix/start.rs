//! When a round starts: how far ahead of the instant it is given its start is set, from what
//! each `from` agent's clock needs, and which agents are too far off to set it. Pure: the
//! controller (`super::run_round`) reads the clocks and the time, this decides.

use crate::result::ClockEstimate;
use std::time::Duration;

/// The least time between giving a round its start and that start: every `from` agent must
/// reach its `to`, authenticate and open its data connections before it.
const START_MARGIN: Duration = Duration::from_millis(600);
/// Round trips of its clock a `from` agent is given, on top of [`START_MARGIN`], to have the
/// request and reach its `to` before the start.
const START_ROUND_TRIPS: u32 = 10;
/// The furthest ahead a round's start is set: under the 8 s an agent waits for a start
/// (`START_WAIT_MAX`), leaving 2 s for a clock's error and the request's way there. A `from`
/// agent whose clock needs a start further off (0.6 s + 10 round trips: a round trip over
/// 540 ms) does not set it: it is given the start the others need, its test starts when it is
/// ready, and a note says how late. So one far agent never spoils its neighbours' cells.
pub(super) const HORIZON_MAX: Duration = Duration::from_secs(6);

/// A cell whose `from` agent's clock was too far off to set its round's start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Far {
    /// The cell's index.
    pub cell: usize,
    /// Its clock's best round trip.
    pub rtt: Duration,
    /// How far ahead the round's start would have had to be for it.
    pub need: Duration,
}

/// How far ahead a start must be for an agent whose clock reads `c`: [`START_MARGIN`] and
/// [`START_ROUND_TRIPS`] of its round trips.
fn start_need(c: &ClockEstimate) -> Duration {
    START_MARGIN + Duration::from_nanos(c.uncertainty_ns.saturating_mul(2)) * START_ROUND_TRIPS
}

/// How far ahead a round's start is set, from what each of its agents needs ([`start_need`]):
/// as far as the furthest need at most [`HORIZON_MAX`]; when every agent needs more, that bound.
fn round_horizon(needs: &[Duration]) -> Duration {
    match needs.iter().filter(|n| **n <= HORIZON_MAX).max() {
        Some(n) => *n,
        None if needs.is_empty() => START_MARGIN,
        None => HORIZON_MAX,
    }
}

/// A round's start horizon and its cells too far off to set it, from each member cell's
/// `from` clock (`clocks[k]` for `members[k]`; a cell that failed already counts for nothing).
/// The start is far enough off for every agent that fits under the bound to reach its peer
/// with its exchanges counting for nothing; an agent further off is not waited for.
pub(super) fn schedule(members: &[usize], clocks: &[Result<ClockEstimate, String>]) -> (Duration, Vec<Far>) {
    let needs: Vec<Duration> = clocks.iter().filter_map(|c| c.as_ref().ok()).map(start_need).collect();
    let horizon = round_horizon(&needs);
    let far = members
        .iter()
        .zip(clocks)
        .filter_map(|(&i, c)| {
            let c = c.as_ref().ok()?;
            let need = start_need(c);
            (need > horizon).then(|| Far {
                cell: i,
                rtt: Duration::from_nanos(c.uncertainty_ns.saturating_mul(2)),
                need,
            })
        })
        .collect();
    (horizon, far)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(rtt_ms: u64) -> ClockEstimate {
        ClockEstimate {
            offset_ns: 0,
            uncertainty_ns: rtt_ms * 1_000_000 / 2,
            exchanges: 32,
        }
    }

    #[test]
    fn a_start_is_as_far_ahead_as_its_agents_need() {
        let needs: Vec<Duration> = [1, 3, 200].map(|ms| start_need(&clock(ms))).to_vec();
        assert_eq!(round_horizon(&needs), Duration::from_millis(600 + 2000));
    }

    #[test]
    fn an_agent_too_far_off_does_not_set_the_start() {
        // 800 ms away needs 8.6 s, past the 6 s bound: the others' 0.61 s is the start.
        let needs: Vec<Duration> = [1, 800].map(|ms| start_need(&clock(ms))).to_vec();
        assert_eq!(needs[1], Duration::from_millis(8600));
        assert_eq!(round_horizon(&needs), Duration::from_millis(610));
        // Just under the bound still counts.
        let needs: Vec<Duration> = [1, 540].map(|ms| start_need(&clock(ms))).to_vec();
        assert_eq!(round_horizon(&needs), HORIZON_MAX);
    }

    #[test]
    fn when_every_agent_is_too_far_off_the_start_is_the_bound() {
        let needs: Vec<Duration> = [900, 2000].map(|ms| start_need(&clock(ms))).to_vec();
        assert_eq!(round_horizon(&needs), HORIZON_MAX);
        assert_eq!(round_horizon(&[]), START_MARGIN);
    }

    #[test]
    fn a_schedule_names_the_far_cells_and_ignores_failed_ones() {
        // Cells 4, 7, 9: a near clock, one 800 ms away, one that failed.
        let clocks = [Ok(clock(1)), Ok(clock(800)), Err("not reached".to_string())];
        let (horizon, far) = schedule(&[4, 7, 9], &clocks);
        assert_eq!(horizon, Duration::from_millis(610));
        assert_eq!(
            far,
            [Far {
                cell: 7,
                rtt: Duration::from_millis(800),
                need: Duration::from_millis(8600),
            }]
        );
        // Nothing to go by: the margin alone, nobody far.
        let (horizon, far) = schedule(&[1], &[Err("refused".to_string())]);
        assert_eq!((horizon, far.len()), (START_MARGIN, 0));
    }
}
