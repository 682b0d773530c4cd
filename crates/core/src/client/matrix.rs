//! Running a pattern over a fleet (issue 24): every cell a third-party run ([`run_from`]), the
//! cells of a round started together at one instant given to each `from` agent in its own
//! clock (its offset estimated again before the round), and the whole kept as one
//! [`Matrix`]. An agent that cannot be reached, refuses or is lost fails its cells and the
//! rest goes on; Ctrl-C stops the running round (its cells come back partial) and leaves the
//! rounds after it unrun, so what was measured is kept.

use super::fleet::{AgentClock, read_clock, run_from};
use super::session::{ClientOptions, Target};
use crate::result::{
    Cell, CellFigure, CellStart, ClockEstimate, FleetHost, Matrix, Outcome, Pattern, Round, TestResult, group_sum,
    jain_index,
};
use crate::spec::TestSpec;
use crate::unixtime::unix_ns;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// Exchanges per clock estimate.
pub const CLOCK_EXCHANGES: u32 = 32;
/// The least time between giving a round its start and that start: every `from` agent must
/// reach its `to`, authenticate and open its data connections before it.
const START_MARGIN: Duration = Duration::from_millis(600);
/// Round trips of its clock a `from` agent is given, on top of [`START_MARGIN`], to have the
/// request and reach its `to` before the start.
const START_ROUND_TRIPS: u32 = 10;
/// The furthest ahead a round's start is set (issue 39): under the 8 s an agent waits for a
/// start (`START_WAIT_MAX`), leaving 2 s for a clock's error and the request's way there. A
/// `from` agent whose clock needs a start further off (0.6 s + 10 round trips: a round trip over
/// 540 ms) does not set it: it is given the start the others need, its test starts when it is
/// ready, and a note says how late. So one far agent never spoils its neighbours' cells.
const HORIZON_MAX: Duration = Duration::from_secs(6);
/// Clock readings made at once; the rest wait for one of them to end (each ends within
/// `fleet::CLOCK_READING_MAX`).
const CLOCK_READERS: usize = 32;

/// A pattern to run: the spec every cell runs, the hosts, the cells (from, to: indexes into
/// `hosts`) and the rounds (indexes into `cells`).
pub struct MatrixPlan<'a> {
    pub spec: &'a TestSpec,
    pub pattern: Pattern,
    pub hosts: &'a [Target],
    pub cells: &'a [(usize, usize)],
    pub rounds: &'a [Vec<usize>],
    /// Tests that run together may start this far apart, and a clock be this unsure, before a
    /// note says so.
    pub skew_bound: Duration,
}

/// Every host's clock, read at once (at most `CLOCK_READERS` at a time): what a controller
/// asks before its first round (and what `--different-nodes` filters by).
pub fn read_clocks(hosts: &[Target], opts: &ClientOptions) -> Vec<Result<AgentClock, String>> {
    let all: Vec<&Target> = hosts.iter().collect();
    read_each(&all, opts)
}

/// `targets`' clocks, each read within `fleet::CLOCK_READING_MAX`, by at most [`CLOCK_READERS`]
/// threads: so reading any number of agents takes that bound per [`CLOCK_READERS`] agents.
fn read_each(targets: &[&Target], opts: &ClientOptions) -> Vec<Result<AgentClock, String>> {
    let next = AtomicUsize::new(0);
    let read: Vec<OnceLock<Result<AgentClock, String>>> = targets.iter().map(|_| OnceLock::new()).collect();
    std::thread::scope(|scope| {
        for _ in 0..CLOCK_READERS.min(targets.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(t) = targets.get(i) else { return };
                    let _ = read[i].set(read_clock(t, opts, CLOCK_EXCHANGES).map_err(|e| error_chain(&e)));
                }
            });
        }
    });
    read.into_iter()
        .map(|r| r.into_inner().expect("every clock was read"))
        .collect()
}

/// The figure a matrix of `spec`'s kind shows in each cell.
pub fn cell_figure(spec: &TestSpec) -> CellFigure {
    match spec {
        TestSpec::Rr(_) => CellFigure::RoundTripP50Us,
        TestSpec::Udp(_) => CellFigure::LossPercent,
        TestSpec::Tcp(_) | TestSpec::Http(_) => CellFigure::ThroughputMbps,
    }
}

/// A cell's headline figure from its run; None when the run failed or lacks it.
pub fn cell_value(figure: CellFigure, r: &TestResult) -> Option<f64> {
    if r.outcome() == Outcome::Failed {
        return None;
    }
    match figure {
        CellFigure::ThroughputMbps => Some(r.summary.received.bits_per_second / 1e6),
        CellFigure::RoundTripP50Us => r.summary.rr.as_ref()?.latency_us.map(|l| l.p50),
        CellFigure::LossPercent => r.summary.udp.as_ref().map(|u| u.loss_percent),
    }
}

/// Runs `plan` round by round. `clocks` are the hosts' first readings ([`read_clocks`]);
/// `progress` hears of each cell as it ends.
pub fn run_matrix(
    plan: &MatrixPlan<'_>,
    clocks: &[Result<AgentClock, String>],
    opts: &ClientOptions,
    interrupt: &AtomicBool,
    progress: &mut dyn FnMut(&Cell),
) -> Matrix {
    let figure = cell_figure(plan.spec);
    let mut hosts: Vec<FleetHost> = plan
        .hosts
        .iter()
        .zip(clocks)
        .map(|(t, c)| FleetHost {
            name: t.name.clone(),
            address: t.addr.to_string(),
            host_name: c.as_ref().ok().map(|c| c.host_name.clone()),
            node: c.as_ref().ok().and_then(|c| c.node.clone()),
            clock: c.as_ref().ok().map(|c| c.estimate),
        })
        .collect();
    let mut cells: Vec<Cell> = plan
        .cells
        .iter()
        .map(|&(f, t)| Cell {
            from: plan.hosts[f].name.clone(),
            to: plan.hosts[t].name.clone(),
            round: 0,
            value: None,
            start: None,
            result: None,
            error: None,
        })
        .collect();
    let mut notes = Vec::new();
    for (h, c) in plan.hosts.iter().zip(clocks) {
        if let Err(e) = c {
            notes.push(format!("{}: not reached: {e}", h.name));
        }
    }
    let started_unix_ms = (unix_ns(SystemTime::now()) / 1_000_000).max(0) as u64;
    let mut rounds = Vec::with_capacity(plan.rounds.len());
    let mut interrupted = false;
    for (r, members) in plan.rounds.iter().enumerate() {
        for &i in members {
            cells[i].round = r;
        }
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            for &i in members {
                cells[i].error = Some("not run: interrupted".into());
                progress(&cells[i]);
            }
            rounds.push(Round {
                cells: members.clone(),
                start_skew_ns: None,
                jain: None,
            });
            continue;
        }
        // The first round starts from the readings just made; later ones read again.
        let (ran, far) = run_round(plan, members, clocks, r > 0, opts, interrupt);
        for (&i, outcome) in members.iter().zip(ran) {
            let cell = &mut cells[i];
            match outcome {
                Ok((result, start)) => {
                    cell.value = cell_value(figure, &result);
                    cell.start = start;
                    if result.outcome() == Outcome::Failed {
                        cell.error = Some(
                            result
                                .error
                                .clone()
                                .unwrap_or_else(|| "the run measured nothing".into()),
                        );
                    }
                    cell.result = Some(Box::new(result));
                }
                Err(e) => cell.error = Some(e),
            }
            progress(cell);
        }
        // A `from` agent too far off to set the round's start: how late its test began.
        for Far { cell: i, rtt, need } in far {
            let c = &cells[i];
            let late = c
                .start
                .map(|s| s.actual_unix_ns.saturating_sub(s.scheduled_unix_ns) as f64 / 1e9);
            notes.push(format!(
                "{}: its clock's round trip of {:.0} ms would have set round {}'s start {:.1} s ahead, past the {} s a start may be; the start was set for the round's other agents{}",
                c.from,
                rtt.as_secs_f64() * 1e3,
                r + 1,
                need.as_secs_f64(),
                HORIZON_MAX.as_secs(),
                match late {
                    Some(late) if late > 0.0 => format!(", and its test started {late:.3} s after it"),
                    Some(_) => ", and its test started with them".to_string(),
                    None => String::new(),
                }
            ));
        }
        // The latest estimate of each `from` agent's clock is the one its hosts entry keeps.
        for &i in members {
            if let Some(s) = cells[i].start
                && let Some(h) = hosts.iter_mut().find(|h| h.name == cells[i].from)
                && let Some(c) = &mut h.clock
            {
                c.offset_ns = s.offset_ns;
                c.uncertainty_ns = s.uncertainty_ns;
            }
        }
        let round = summarise_round(&cells, members);
        let bound = plan.skew_bound.as_nanos() as u64;
        if members.len() > 1
            && let Some(skew) = round.start_skew_ns
            && skew > bound
        {
            notes.push(format!(
                "round {}: its tests started {:.3} ms apart, more than the {:.3} ms bound (--skew-bound)",
                r + 1,
                skew as f64 / 1e6,
                bound as f64 / 1e6
            ));
        }
        rounds.push(round);
    }
    let bound = plan.skew_bound.as_nanos() as u64;
    for h in &hosts {
        if let Some(c) = h.clock
            && c.uncertainty_ns > bound
        {
            notes.push(format!(
                "{}: its clock is known within ± {:.3} ms only, more than the {:.3} ms bound (--skew-bound)",
                h.name,
                c.uncertainty_ns as f64 / 1e6,
                bound as f64 / 1e6
            ));
        }
    }
    let measured: Vec<f64> = cells.iter().filter_map(|c| c.value).collect();
    let failed: Vec<String> = cells
        .iter()
        .filter(|c| c.value.is_none() || c.error.is_some())
        .map(|c| format!("{} -> {}", c.from, c.to))
        .collect();
    let partial = interrupted
        || cells
            .iter()
            .any(|c| c.error.is_some() || c.result.as_ref().is_some_and(|r| r.partial));
    if interrupted {
        notes.push("interrupted: the rounds after the running one were not run".into());
    }
    // A concurrent group's sum and index over its common window (issue 38); a one-at-a-time
    // pattern's cells ran apart, their values added.
    let group = if plan.pattern.concurrent() && figure == CellFigure::ThroughputMbps {
        group_sum(&cells)
    } else {
        None
    };
    Matrix {
        linerate: crate::VERSION.to_string(),
        schema: crate::result::SCHEMA,
        test: format!("{} matrix", plan.spec.kind()),
        pattern: plan.pattern,
        started_unix_ms,
        partial,
        options: plan.spec.clone(),
        hosts,
        figure,
        sum: match group {
            Some(g) => Some(g.mbps),
            None => (figure == CellFigure::ThroughputMbps && !measured.is_empty()).then(|| measured.iter().sum()),
        },
        sum_window_seconds: group.map(|g| g.window_seconds),
        jain: match (plan.pattern.concurrent(), group) {
            (true, Some(g)) => g.jain,
            (true, None) => jain_index(&measured),
            (false, _) => None,
        },
        cells,
        rounds,
        failed,
        skew_bound_ns: bound,
        notes,
        lab: opts.lab.clone(),
    }
}

/// A round's start skew (latest minus earliest actual start) and Jain's index.
fn summarise_round(cells: &[Cell], members: &[usize]) -> Round {
    let starts: Vec<i64> = members
        .iter()
        .filter_map(|&i| cells[i].start.map(|s| s.actual_unix_ns))
        .collect();
    let skew = match (starts.iter().min(), starts.iter().max()) {
        (Some(lo), Some(hi)) if starts.len() > 1 => Some(hi.abs_diff(*lo)),
        _ => None,
    };
    let values: Vec<f64> = members.iter().filter_map(|&i| cells[i].value).collect();
    Round {
        cells: members.to_vec(),
        start_skew_ns: skew,
        jain: jain_index(&values),
    }
}

type CellOutcome = Result<(TestResult, Option<CellStart>), String>;

/// A cell whose `from` agent's clock was too far off to set its round's start (issue 39).
struct Far {
    /// The cell's index.
    cell: usize,
    /// Its clock's best round trip.
    rtt: Duration,
    /// How far ahead the round's start would have had to be for it.
    need: Duration,
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

/// One round: each `from` agent's clock (read again when `read_again`, each once, else its
/// first reading), one start given to all, every cell's third-party run at once. The start is as
/// far ahead as the agents that fit under [`HORIZON_MAX`] need; the cells of those that do not
/// are returned beside the outcomes.
fn run_round(
    plan: &MatrixPlan<'_>,
    members: &[usize],
    first: &[Result<AgentClock, String>],
    read_again: bool,
    opts: &ClientOptions,
    interrupt: &AtomicBool,
) -> (Vec<CellOutcome>, Vec<Far>) {
    // Hosts that were never reached fail their cells without another try.
    let unreached = |h: usize| first[h].as_ref().err().cloned();
    let mut froms: Vec<usize> = members
        .iter()
        .map(|&i| plan.cells[i].0)
        .filter(|&f| unreached(f).is_none())
        .collect();
    froms.sort_unstable();
    froms.dedup();
    let fresh = if read_again {
        let targets: Vec<&Target> = froms.iter().map(|&f| &plan.hosts[f]).collect();
        read_each(&targets, opts)
    } else {
        Vec::new()
    };
    let clocks: Vec<Result<ClockEstimate, String>> = members
        .iter()
        .map(|&i| {
            let (f, t) = plan.cells[i];
            if let Some(e) = unreached(f) {
                return Err(format!("{}: not reached: {e}", plan.hosts[f].name));
            }
            if let Some(e) = unreached(t) {
                return Err(format!("{}: not reached: {e}", plan.hosts[t].name));
            }
            match froms.binary_search(&f).ok().and_then(|k| fresh.get(k)) {
                Some(read) => read
                    .as_ref()
                    .map(|c| c.estimate)
                    .map_err(|e| format!("{}: {e}", plan.hosts[f].name)),
                None => first[f]
                    .as_ref()
                    .map(|c| c.estimate)
                    .map_err(|e| format!("{}: not reached: {e}", plan.hosts[f].name)),
            }
        })
        .collect();
    // The start: far enough off for every agent that fits under the bound to reach its peer with
    // its exchanges counting for nothing; an agent further off is not waited for.
    let needs: Vec<Duration> = clocks.iter().filter_map(|c| c.as_ref().ok()).map(start_need).collect();
    let horizon = round_horizon(&needs);
    let far: Vec<Far> = members
        .iter()
        .zip(&clocks)
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
    let start = unix_ns(SystemTime::now() + horizon);
    let outcomes = std::thread::scope(|scope| {
        let running: Vec<_> = members
            .iter()
            .zip(&clocks)
            .map(|(&i, clock)| {
                let (f, t) = plan.cells[i];
                scope.spawn(move || -> CellOutcome {
                    let clock = clock.clone()?;
                    let to = plan.hosts[t].addr;
                    let far_start = start.saturating_add(clock.offset_ns);
                    let relayed = run_from(
                        &plan.hosts[f],
                        to,
                        plan.spec,
                        opts,
                        Some(far_start),
                        Some(clock),
                        interrupt,
                    )
                    .map_err(|e| format!("{}: {}", plan.hosts[f].name, error_chain(&e)))?;
                    let here = |far: i64| far.saturating_sub(clock.offset_ns);
                    let cell_start = relayed.start_sent_far_unix_ns.map(|sent| CellStart {
                        scheduled_unix_ns: start,
                        actual_unix_ns: here(sent),
                        answered_unix_ns: relayed.started_far_unix_ns.map(here),
                        offset_ns: clock.offset_ns,
                        uncertainty_ns: clock.uncertainty_ns,
                    });
                    Ok((relayed.result, cell_start))
                })
            })
            .collect();
        running
            .into_iter()
            .map(|r| r.join().expect("a cell's run does not panic"))
            .collect()
    });
    (outcomes, far)
}

/// An error with its causes, one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
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
}
