//! A pattern run's [`Matrix`], assembled from what each round returned: every cell's value,
//! start and error, the notes (agents not reached, a `from` agent too far off to set its
//! round's start, a round's start skew and a clock's uncertainty past `--skew-bound`), the sum,
//! Jain's indexes and the failed cells. Pure: the controller (`super::run_matrix`) runs the
//! rounds and feeds their outcomes in, round by round, so that it can tell of each cell as
//! its round ends; nothing here reads a clock or a socket.

use super::start::{Far, HORIZON_MAX};
use crate::client::controller::AgentClock;
use crate::client::reach::Target;
use crate::result::lab::LabRecord;
use crate::result::{
    Cell, CellFigure, CellStart, FleetHost, Matrix, Outcome, Pattern, Round, TestResult, group_sum, jain_index,
};
use crate::spec::TestSpec;
use std::time::Duration;

/// A pattern to run: the spec every cell runs, the hosts, the cells (from, to: indexes into
/// `hosts`) and the rounds (indexes into `cells`).
pub struct MatrixLayout<'a> {
    pub spec: &'a TestSpec,
    pub pattern: Pattern,
    pub hosts: &'a [Target],
    pub cells: &'a [(usize, usize)],
    pub rounds: &'a [Vec<usize>],
    /// Tests that run together may start this far apart, and a clock be this unsure, before a
    /// note says so.
    pub skew_bound: Duration,
}

/// The figure a matrix of `spec`'s kind shows in each cell: a test with probes shows its loaded
/// latency (what the probes are there for), else the kind's own figure.
pub fn cell_figure(spec: &TestSpec) -> CellFigure {
    if spec.probe().is_some() {
        return CellFigure::LoadedLatencyP50Ms;
    }
    match spec {
        TestSpec::Rr(_) => CellFigure::RoundTripP50Us,
        TestSpec::Udp(_) => CellFigure::LossPercent,
        TestSpec::Tcp(_) | TestSpec::Http(_) | TestSpec::Rpm(_) => CellFigure::ThroughputMbps,
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
        CellFigure::LoadedLatencyP50Ms => r.latency.as_ref()?.loaded_ms,
    }
}

/// What one cell's third-party run returned: its run and when it started, or why it failed.
pub(super) type CellOutcome = Result<(TestResult, Option<CellStart>), String>;

/// A matrix being assembled, round by round: [`Assembly::not_run`] or [`Assembly::ran`] once
/// per round of the plan, in order, then [`Assembly::finish`].
pub(super) struct Assembly<'p> {
    plan: &'p MatrixLayout<'p>,
    figure: CellFigure,
    hosts: Vec<FleetHost>,
    cells: Vec<Cell>,
    rounds: Vec<Round>,
    notes: Vec<String>,
    interrupted: bool,
}

impl<'p> Assembly<'p> {
    /// The hosts as their first clock readings (`clocks`, one per host) describe them, every
    /// cell not yet run, and a note for each host that was not reached.
    pub fn new(plan: &'p MatrixLayout<'p>, clocks: &[Result<AgentClock, String>]) -> Assembly<'p> {
        let hosts = plan
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
        let cells = plan
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
        let notes = plan
            .hosts
            .iter()
            .zip(clocks)
            .filter_map(|(h, c)| c.as_ref().err().map(|e| format!("{}: not reached: {e}", h.name)))
            .collect();
        Assembly {
            plan,
            figure: cell_figure(plan.spec),
            hosts,
            cells,
            rounds: Vec::with_capacity(plan.rounds.len()),
            notes,
            interrupted: false,
        }
    }

    /// Cell `i` as it stands.
    pub fn cell(&self, i: usize) -> &Cell {
        &self.cells[i]
    }

    /// The next round, `members`, was not run: Ctrl-C came before it.
    pub fn not_run(&mut self, members: &[usize]) {
        let r = self.rounds.len();
        self.interrupted = true;
        for &i in members {
            self.cells[i].round = r;
            self.cells[i].error = Some("not run: interrupted".into());
        }
        self.rounds.push(Round {
            cells: members.to_vec(),
            start_skew_ns: None,
            jain: None,
        });
    }

    /// The next round, `members`, ran: `outcomes[k]` is what `members[k]` returned, `far` the
    /// cells whose `from` agent was too far off to set the round's start.
    pub fn ran(&mut self, members: &[usize], outcomes: Vec<CellOutcome>, far: &[Far]) {
        let r = self.rounds.len();
        for (&i, outcome) in members.iter().zip(outcomes) {
            let cell = &mut self.cells[i];
            cell.round = r;
            match outcome {
                Ok((result, start)) => {
                    cell.value = cell_value(self.figure, &result);
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
        }
        for f in far {
            self.notes.push(far_note(&self.cells[f.cell], f, r));
        }
        // The latest estimate of each `from` agent's clock is the one its hosts entry keeps.
        for &i in members {
            if let Some(s) = self.cells[i].start
                && let Some(h) = self.hosts.iter_mut().find(|h| h.name == self.cells[i].from)
                && let Some(c) = &mut h.clock
            {
                c.offset_ns = s.offset_ns;
                c.uncertainty_ns = s.uncertainty_ns;
            }
        }
        let round = summarise_round(&self.cells, members);
        let bound = self.skew_bound_ns();
        if members.len() > 1
            && let Some(skew) = round.start_skew_ns
            && skew > bound
        {
            self.notes.push(format!(
                "round {}: its tests started {:.3} ms apart, more than the {:.3} ms bound (--skew-bound)",
                r + 1,
                skew as f64 / 1e6,
                bound as f64 / 1e6
            ));
        }
        self.rounds.push(round);
    }

    fn skew_bound_ns(&self) -> u64 {
        self.plan.skew_bound.as_nanos() as u64
    }

    /// The matrix: the clocks too unsure, the failed cells, the sum and Jain's index.
    /// `started_unix_ms`: when the first round was begun; `lab`: the lab the run ran in.
    pub fn finish(self, started_unix_ms: u64, lab: Option<LabRecord>) -> Matrix {
        let bound = self.skew_bound_ns();
        let Assembly {
            plan,
            figure,
            hosts,
            cells,
            rounds,
            mut notes,
            interrupted,
        } = self;
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
        // A concurrent group's sum and index over its common window; a one-at-a-time
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
            lab,
        }
    }
}

/// The note for cell `c` of round `r` (from 0), whose `from` agent was too far off to set the
/// round's start: how late its test began.
fn far_note(c: &Cell, f: &Far, r: usize) -> String {
    let late = c
        .start
        .map(|s| s.actual_unix_ns.saturating_sub(s.scheduled_unix_ns) as f64 / 1e9);
    format!(
        "{}: its clock's round trip of {:.0} ms would have set round {}'s start {:.1} s ahead, past the {} s a start may be; the start was set for the round's other agents{}",
        c.from,
        f.rtt.as_secs_f64() * 1e3,
        r + 1,
        f.need.as_secs_f64(),
        HORIZON_MAX.as_secs(),
        match late {
            Some(late) if late > 0.0 => format!(", and its test started {late:.3} s after it"),
            Some(_) => ", and its test started with them".to_string(),
            None => String::new(),
        }
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{ClockEstimate, Summary};
    use crate::spec::TcpSpec;
    use crate::sweep::stub_result;

    /// A Unix instant to start cells at, nanoseconds.
    const T0: i64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    fn hosts(n: usize) -> Vec<Target> {
        (0..n)
            .map(|i| Target {
                name: format!("h{i}"),
                addr: format!("10.0.0.{}:5301", i + 1).parse().expect("an address"),
            })
            .collect()
    }

    fn clock(uncertainty_ns: u64) -> Result<AgentClock, String> {
        Ok(AgentClock {
            estimate: ClockEstimate {
                offset_ns: 2_000_000,
                uncertainty_ns,
                exchanges: 32,
            },
            host_name: "box".into(),
            node: Some("n1".into()),
        })
    }

    /// A tcp run whose receivers counted `mbps` over 10 s (its senders always sent something,
    /// so 0 is a measured 0, not a failed run).
    fn run(mbps: f64) -> TestResult {
        let mut summary = Summary::default();
        for side in [&mut summary.sent, &mut summary.received] {
            side.seconds = 10.0;
            side.bits_per_second = mbps * 1e6;
            side.bytes = (mbps * 1e6 * 10.0 / 8.0) as u64;
            side.ops = side.bytes / 1000;
        }
        summary.sent.ops += 1;
        stub_result(TestSpec::Tcp(TcpSpec::new()), summary)
    }

    fn started(after_ns: i64, uncertainty_ns: u64) -> Option<CellStart> {
        Some(CellStart {
            scheduled_unix_ns: T0,
            actual_unix_ns: T0 + after_ns,
            answered_unix_ns: None,
            offset_ns: 2_000_000,
            uncertainty_ns,
        })
    }

    fn plan<'a>(
        spec: &'a TestSpec,
        pattern: Pattern,
        hosts: &'a [Target],
        cells: &'a [(usize, usize)],
        rounds: &'a [Vec<usize>],
    ) -> MatrixLayout<'a> {
        MatrixLayout {
            spec,
            pattern,
            hosts,
            cells,
            rounds,
            skew_bound: Duration::from_millis(1),
        }
    }

    #[test]
    fn a_mesh_adds_its_values_and_lists_its_failed_cells_outside_the_sum() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let hosts = hosts(3);
        let (cells, rounds) = ([(0, 1), (1, 2), (2, 0)], [vec![0], vec![1], vec![2]]);
        let plan = plan(&spec, Pattern::Mesh, &hosts, &cells, &rounds);
        let mut a = Assembly::new(&plan, &[clock(MS / 10), clock(MS / 10), clock(MS / 10)]);
        a.ran(&[0], vec![Ok((run(100.0), started(0, MS / 10)))], &[]);
        a.ran(&[1], vec![Err("h1: refused".into())], &[]);
        a.ran(&[2], vec![Ok((run(50.0), started(0, MS / 10)))], &[]);
        assert_eq!(a.cell(2).round, 2);
        let m = a.finish(1_700_000_000_000, None);
        let values: Vec<Option<f64>> = m.cells.iter().map(|c| c.value).collect();
        assert_eq!(values, [Some(100.0), None, Some(50.0)]);
        assert_eq!(m.cells[1].error.as_deref(), Some("h1: refused"));
        assert_eq!(m.sum, Some(150.0));
        assert_eq!(m.sum_window_seconds, None);
        // One at a time: no index over the whole, and a round of one has none either.
        assert_eq!(m.jain, None);
        assert!(m.rounds.iter().all(|r| r.jain.is_none() && r.start_skew_ns.is_none()));
        assert_eq!(m.failed, ["h1 -> h2"]);
        assert!(m.partial);
        assert_eq!(m.test, "tcp matrix");
        assert_eq!((m.started_unix_ms, m.skew_bound_ns), (1_700_000_000_000, MS));
        assert!(m.notes.is_empty(), "{:?}", m.notes);
    }

    #[test]
    fn a_run_that_measured_nothing_fails_its_cell_and_stays_unknown_not_zero() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let hosts = hosts(2);
        let (cells, rounds) = ([(0, 1), (1, 0)], [vec![0], vec![1]]);
        let plan = plan(&spec, Pattern::Pairs, &hosts, &cells, &rounds);
        let mut a = Assembly::new(&plan, &[clock(0), clock(0)]);
        let nothing = stub_result(spec.clone(), Summary::default());
        let mut refused = nothing.clone();
        refused.error = Some("result refused: too many bytes".into());
        a.ran(&[0], vec![Ok((nothing, None))], &[]);
        a.ran(&[1], vec![Ok((refused, None))], &[]);
        let m = a.finish(0, None);
        assert_eq!(m.cells[0].value, None);
        assert_eq!(m.cells[0].error.as_deref(), Some("the run measured nothing"));
        assert_eq!(m.cells[1].error.as_deref(), Some("result refused: too many bytes"));
        assert!(m.cells.iter().all(|c| c.result.is_some()), "the runs are kept");
        assert_eq!(m.failed, ["h0 -> h1", "h1 -> h0"]);
        // Nothing measured: the sum is unknown, not 0.
        assert_eq!(m.sum, None);
        assert_eq!(m.outcome(), Outcome::Failed);
    }

    /// An incast of h1 and h2 into h0, its one round's outcomes as given.
    fn incast(outcomes: [CellOutcome; 2]) -> Matrix {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let hosts = hosts(3);
        let (cells, rounds) = ([(1, 0), (2, 0)], [vec![0, 1]]);
        let plan = plan(&spec, Pattern::Incast, &hosts, &cells, &rounds);
        let mut a = Assembly::new(&plan, &[clock(0), clock(0), clock(0)]);
        a.ran(&[0, 1], outcomes.into(), &[]);
        a.finish(0, None)
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_one_share() {
        let m = incast([Ok((run(40.0), started(0, 0))), Ok((run(40.0), started(0, 0)))]);
        assert_eq!(m.rounds[0].jain, Some(1.0));
        assert_eq!(m.jain, Some(1.0));
        // A concurrent group's sum is over its common window: both ran the same 10 s.
        assert_eq!(m.sum_window_seconds, Some(10.0));
        assert!((m.sum.expect("a sum") - 80.0).abs() < 1e-9, "{:?}", m.sum);

        let m = incast([Ok((run(80.0), started(0, 0))), Ok((run(0.0), started(0, 0)))]);
        assert_eq!(m.cells[1].value, Some(0.0), "a measured 0 is a value");
        assert_eq!(m.rounds[0].jain, Some(0.5));
        assert_eq!(m.jain, Some(0.5));
        assert!(m.failed.is_empty() && !m.partial);
    }

    #[test]
    fn a_round_s_skew_is_noted_only_past_the_bound() {
        let skewed = |apart_ns: i64| incast([Ok((run(10.0), started(apart_ns, 0))), Ok((run(10.0), started(0, 0)))]);
        let at = skewed(MS as i64);
        assert_eq!(at.rounds[0].start_skew_ns, Some(MS));
        assert!(at.notes.is_empty(), "{:?}", at.notes);
        let past = skewed(2 * MS as i64 + 500_000);
        assert_eq!(
            past.notes,
            ["round 1: its tests started 2.500 ms apart, more than the 1.000 ms bound (--skew-bound)"]
        );
        // The window runs from the earlier start to the later end.
        assert_eq!(past.sum_window_seconds, Some(10.0025));
    }

    #[test]
    fn a_clock_is_noted_past_the_bound_by_its_latest_estimate() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let hosts = hosts(3);
        let (cells, rounds) = ([(0, 2), (1, 2)], [vec![0], vec![1]]);
        let plan = plan(&spec, Pattern::Pairs, &hosts, &cells, &rounds);
        // h0 was unsure at first and is read again within the bound; h1 stays past it; h2 is
        // exactly at it.
        let mut a = Assembly::new(&plan, &[clock(5 * MS), clock(3 * MS), clock(MS)]);
        a.ran(&[0], vec![Ok((run(10.0), started(0, MS / 2)))], &[]);
        a.ran(&[1], vec![Ok((run(10.0), None))], &[]);
        let m = a.finish(0, None);
        assert_eq!(m.hosts[0].clock.map(|c| c.uncertainty_ns), Some(MS / 2));
        assert_eq!(m.hosts[1].clock.map(|c| c.uncertainty_ns), Some(3 * MS));
        assert_eq!(
            m.notes,
            ["h1: its clock is known within ± 3.000 ms only, more than the 1.000 ms bound (--skew-bound)"]
        );
    }

    #[test]
    fn unreached_hosts_and_unrun_rounds_are_noted_and_leave_the_matrix_partial() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let hosts = hosts(3);
        let (cells, rounds) = ([(0, 1), (1, 2)], [vec![0], vec![1]]);
        let plan = plan(&spec, Pattern::Mesh, &hosts, &cells, &rounds);
        let mut a = Assembly::new(&plan, &[clock(0), clock(0), Err("connection refused".into())]);
        a.ran(&[0], vec![Ok((run(10.0), started(0, 0)))], &[]);
        a.not_run(&[1]);
        assert_eq!(a.cell(1).error.as_deref(), Some("not run: interrupted"));
        let m = a.finish(0, None);
        assert_eq!(m.hosts[2].clock, None);
        assert_eq!(m.hosts[2].host_name, None);
        assert_eq!(m.hosts[0].node.as_deref(), Some("n1"));
        assert_eq!(m.cells[1].round, 1);
        assert_eq!(m.rounds[1].cells, [1]);
        assert_eq!(m.failed, ["h1 -> h2"]);
        assert_eq!(m.sum, Some(10.0));
        assert!(m.partial);
        assert_eq!(
            m.notes,
            [
                "h2: not reached: connection refused",
                "interrupted: the rounds after the running one were not run",
            ]
        );
    }

    #[test]
    fn a_far_agent_s_note_says_how_late_its_test_began() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let hosts = hosts(2);
        let (cells, rounds) = ([(0, 1), (1, 0)], [vec![0], vec![1]]);
        let plan = plan(&spec, Pattern::Mesh, &hosts, &cells, &rounds);
        let far = |cell| Far {
            cell,
            rtt: Duration::from_millis(800),
            need: Duration::from_millis(8600),
        };
        let mut a = Assembly::new(&plan, &[clock(400 * MS), clock(0)]);
        a.ran(
            &[0],
            vec![Ok((run(10.0), started(250 * MS as i64, 400 * MS)))],
            &[far(0)],
        );
        a.ran(&[1], vec![Ok((run(10.0), None))], &[far(1)]);
        let m = a.finish(0, None);
        let said = "its clock's round trip of 800 ms would have set round";
        assert_eq!(
            m.notes[..2],
            [
                format!(
                    "h0: {said} 1's start 8.6 s ahead, past the 6 s a start may be; the start was set for the round's other agents, and its test started 0.250 s after it"
                ),
                format!(
                    "h1: {said} 2's start 8.6 s ahead, past the 6 s a start may be; the start was set for the round's other agents"
                ),
            ]
        );
    }

    #[test]
    fn each_kind_shows_its_figure() {
        let rr = stub_result(TestSpec::Tcp(TcpSpec::new()), Summary::default());
        assert_eq!(cell_figure(&TestSpec::Tcp(TcpSpec::new())), CellFigure::ThroughputMbps);
        assert_eq!(cell_value(CellFigure::ThroughputMbps, &run(12.5)), Some(12.5));
        // A run without the kind's figures has no value of them, measured or not.
        assert_eq!(cell_value(CellFigure::RoundTripP50Us, &run(12.5)), None);
        assert_eq!(cell_value(CellFigure::LossPercent, &run(12.5)), None);
        assert_eq!(cell_value(CellFigure::ThroughputMbps, &rr), None);
    }

    #[test]
    fn a_test_with_probes_shows_its_loaded_latency() {
        use crate::spec::{ProbeSpec, ProbeVia, UdpSpec};
        let mut tcp = TcpSpec::new();
        tcp.probe = Some(ProbeSpec::new(ProbeVia::Rr));
        let mut udp = UdpSpec::new();
        udp.probe = Some(ProbeSpec::new(ProbeVia::Udp));
        for spec in [TestSpec::Tcp(tcp), TestSpec::Udp(udp)] {
            assert_eq!(cell_figure(&spec), CellFigure::LoadedLatencyP50Ms, "{spec:?}");
        }
        let mut r = run(94.0);
        assert_eq!(
            cell_value(CellFigure::LoadedLatencyP50Ms, &r),
            None,
            "no probe answered"
        );
        r.latency = Some(crate::result::LatencyUnderLoad {
            loaded_ms: Some(221.5),
            ..Default::default()
        });
        assert_eq!(cell_value(CellFigure::LoadedLatencyP50Ms, &r), Some(221.5));
        assert!(!CellFigure::LoadedLatencyP50Ms.higher_is_better());
        assert_eq!(CellFigure::LoadedLatencyP50Ms.unit(), "ms");
    }
}
