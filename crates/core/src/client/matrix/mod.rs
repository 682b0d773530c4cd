//! Running a pattern over a fleet: every cell a third-party run ([`run_from`]), the cells of a
//! round started together at one instant given to each `from` agent in its own clock (its
//! offset estimated again before the round), and the whole kept as one [`Matrix`]. An agent
//! that cannot be reached, refuses or is lost fails its cells and the rest goes on; Ctrl-C
//! stops the running round (its cells come back partial) and leaves the rounds after it
//! unrun, so what was measured is kept. This file is the I/O (clocks read, rounds run, the
//! time taken); when a round starts is `start`'s, and the document `assemble`'s, both pure.

mod assemble;
mod start;

use super::controller::{AgentClock, read_clock, run_from};
use super::session::{ClientOptions, Target};
use crate::result::{Cell, CellStart, ClockEstimate, Matrix};
use crate::unixtime::unix_ns;
use assemble::{Assembly, CellOutcome};
pub use assemble::{MatrixLayout, cell_figure, cell_value};
use start::{Far, schedule};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

/// Exchanges per clock estimate.
pub const CLOCK_EXCHANGES: u32 = 32;
/// Clock readings made at once; the rest wait for one of them to end (each ends within
/// `controller::CLOCK_READING_MAX`).
const CLOCK_READERS: usize = 32;

/// Every host's clock, read at once (at most `CLOCK_READERS` at a time): what a controller
/// asks before its first round (and what `--different-nodes` filters by).
pub fn read_clocks(hosts: &[Target], opts: &ClientOptions) -> Vec<Result<AgentClock, String>> {
    let all: Vec<&Target> = hosts.iter().collect();
    read_each(&all, opts)
}

/// `targets`' clocks, each read within `controller::CLOCK_READING_MAX`, by at most [`CLOCK_READERS`]
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

/// Runs `plan` round by round. `clocks` are the hosts' first readings ([`read_clocks`]);
/// `progress` hears of each cell as it ends.
pub fn run_matrix(
    plan: &MatrixLayout<'_>,
    clocks: &[Result<AgentClock, String>],
    opts: &ClientOptions,
    interrupt: &AtomicBool,
    progress: &mut dyn FnMut(&Cell),
) -> Matrix {
    let mut matrix = Assembly::new(plan, clocks);
    let started_unix_ms = (unix_ns(SystemTime::now()) / 1_000_000).max(0) as u64;
    for (r, members) in plan.rounds.iter().enumerate() {
        if interrupt.load(Ordering::Relaxed) {
            matrix.not_run(members);
        } else {
            // The first round starts from the readings just made; later ones read again.
            let (ran, far) = run_round(plan, members, clocks, r > 0, opts, interrupt);
            matrix.ran(members, ran, &far);
        }
        for &i in members {
            progress(matrix.cell(i));
        }
    }
    matrix.finish(started_unix_ms, opts.lab.clone())
}

/// One round: each `from` agent's clock (read again when `read_again`, each once, else its
/// first reading), one start given to all, every cell's third-party run at once. The start is as
/// far ahead as the agents that fit under `start::HORIZON_MAX` need; the cells of those that do
/// not are returned beside the outcomes.
fn run_round(
    plan: &MatrixLayout<'_>,
    members: &[usize],
    first: &[Result<AgentClock, String>],
    read_again: bool,
    opts: &ClientOptions,
    interrupt: &AtomicBool,
) -> (Vec<CellOutcome>, Vec<Far>) {
    let froms = reached_froms(plan, members, first);
    let fresh = if read_again {
        let targets: Vec<&Target> = froms.iter().map(|&f| &plan.hosts[f]).collect();
        read_each(&targets, opts)
    } else {
        Vec::new()
    };
    let clocks = member_clocks(plan, members, first, &froms, &fresh);
    let (horizon, far) = schedule(members, &clocks);
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

/// The `from` hosts of `members` that were reached at first (`first`), each once, in order:
/// those whose clocks a round reads again. Hosts never reached fail their cells without
/// another try.
fn reached_froms(plan: &MatrixLayout<'_>, members: &[usize], first: &[Result<AgentClock, String>]) -> Vec<usize> {
    let mut froms: Vec<usize> = members
        .iter()
        .map(|&i| plan.cells[i].0)
        .filter(|&f| first[f].is_ok())
        .collect();
    froms.sort_unstable();
    froms.dedup();
    froms
}

/// The clock each of `members` starts by: its `from` host's fresh reading (`fresh[k]` for
/// `froms[k]`, when the round read again), else its first one; an error naming the host when
/// either end was never reached or the fresh reading failed.
fn member_clocks(
    plan: &MatrixLayout<'_>,
    members: &[usize],
    first: &[Result<AgentClock, String>],
    froms: &[usize],
    fresh: &[Result<AgentClock, String>],
) -> Vec<Result<ClockEstimate, String>> {
    let unreached = |h: usize| first[h].as_ref().err();
    members
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
        .collect()
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
    use crate::spec::{TcpSpec, TestSpec};
    use std::time::Duration;

    fn reading(offset_ns: i64) -> Result<AgentClock, String> {
        Ok(AgentClock {
            estimate: ClockEstimate {
                offset_ns,
                uncertainty_ns: 1000,
                exchanges: 32,
            },
            host_name: "box".into(),
            node: None,
        })
    }

    #[test]
    fn a_round_starts_each_cell_by_its_from_agent_s_latest_reading() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let hosts: Vec<Target> = (0..3)
            .map(|i| Target {
                name: format!("h{i}"),
                addr: format!("10.0.0.{}:5301", i + 1).parse().expect("an address"),
            })
            .collect();
        let cells = [(0, 1), (1, 2), (1, 0), (2, 0)];
        let plan = MatrixLayout {
            spec: &spec,
            pattern: crate::result::Pattern::Pairs,
            hosts: &hosts,
            cells: &cells,
            rounds: &[],
            skew_bound: Duration::from_millis(1),
        };
        let first = [reading(10), reading(20), Err("refused".to_string())];
        let members = [0, 1, 2, 3];
        // h2 was never reached: it is not read again.
        let froms = reached_froms(&plan, &members, &first);
        assert_eq!(froms, [0, 1]);
        let offsets = |clocks: Vec<Result<ClockEstimate, String>>| -> Vec<Result<i64, String>> {
            clocks.into_iter().map(|c| c.map(|c| c.offset_ns)).collect()
        };
        // The first round goes by the first readings.
        assert_eq!(
            offsets(member_clocks(&plan, &members, &first, &froms, &[])),
            [
                Ok(10),
                Err("h2: not reached: refused".to_string()),
                Ok(20),
                Err("h2: not reached: refused".to_string()),
            ]
        );
        // A later one by the fresh readings, a failed one failing its cells.
        let fresh = [reading(11), Err("timed out".to_string())];
        assert_eq!(
            offsets(member_clocks(&plan, &members, &first, &froms, &fresh)),
            [
                Ok(11),
                Err("h2: not reached: refused".to_string()),
                Err("h1: timed out".to_string()),
                Err("h2: not reached: refused".to_string()),
            ]
        );
    }
}
