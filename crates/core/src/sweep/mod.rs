//! Sweeps as data: one document for a series of runs that vary a parameter, each point's whole
//! result, and the figures derived over the points (the rr size fit, the http optimum).
//!
//! In: a base spec, a plan (what varies, over which values) and a closure that runs one test
//! (the client in the binary, a stub in tests). Out: a [`Sweep`], handed to a progress callback
//! after each point so the caller can show it as it grows. Nothing here prints or touches the
//! network itself; the per-kind drivers are in [`udp`], [`rr`], [`http`] and [`tcp`]. The report crate
//! renders a sweep; docs/results.md describes its layout (schema [`crate::result::SCHEMA`]).

pub mod http;
pub mod rr;
pub mod tcp;
pub mod udp;

// The document's types and the math over its points are the wire crate's (no I/O there).
pub use linerate_wire::sweep::{
    At, HttpSweep, HttpSweepSummary, KNEE_SHARE, Parameter, RrSweep, RrSweepSummary, RrVaries, SizeLatency, Sweep,
    SweepKind, SweepPoint, UserLoad, expected_slope, fit, optimum,
};

#[cfg(any(test, feature = "testing"))]
use crate::result::TestResult;

/// Adds a point, tells the caller, and says whether the sweep must stop (a point cut short:
/// the run was interrupted or lost an agent, and the next would be too).
fn push<E>(
    sweep: &mut Sweep,
    point: SweepPoint,
    progress: &mut impl FnMut(&Sweep) -> Result<(), E>,
) -> Result<bool, E> {
    let cut = point.result.as_ref().is_some_and(|r| r.partial);
    sweep.points.push(point);
    if cut {
        sweep.partial = true;
    }
    progress(sweep)?;
    Ok(cut)
}

/// The sweep read back from its JSON, less the points' results, whose flattened per-kind
/// summaries do not all read back (see the tests of the kinds), for round-trip tests.
#[cfg(test)]
pub(crate) fn read_back_without_results(v: serde_json::Value) -> Sweep {
    let mut s: Sweep = serde_json::from_value(v).expect("reads back");
    for p in &mut s.points {
        p.result = None;
    }
    s
}

/// A stand-in result for unit tests of the drivers: the spec as run, everything else empty.
/// Also for linerate-results' tests (feature `testing`); not an API.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub fn stub_result(spec: crate::spec::TestSpec, summary: crate::result::Summary) -> TestResult {
    TestResult {
        linerate: crate::VERSION.to_string(),
        schema: crate::result::SCHEMA,
        test: spec.kind().to_string(),
        started_unix_ms: 0,
        partial: false,
        error: None,
        options: spec,
        hosts: Default::default(),
        intervals: Vec::new(),
        summary,
        notes: Vec::new(),
        lab: None,
        from: None,
        iperf3: None,
        latency: None,
    }
}

/// A tcp throughput matrix for the tests of the crates above (feature `testing`), not an API:
/// `pattern` over `hosts`, a cell per `(from, to, value)`, `Ok(Mbit/s)` measured and `Err(why)`
/// failed. Every cell runs at once for a concurrent pattern, else in the first round where
/// neither of its hosts is busy; rounds start 10 s apart, each cell of a round 0.4 ms after the
/// one before it; every host's clock is 2 ms ahead, within ± 0.15 ms. The sum, Jain's indexes
/// and the failed cells follow from the cells.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub fn stub_matrix(
    pattern: crate::result::Pattern,
    hosts: &[&str],
    cells: &[(&str, &str, Result<f64, &str>)],
) -> crate::result::Matrix {
    use crate::result::{Cell, CellFigure, CellStart, ClockEstimate, FleetHost, Matrix, Round, jain_index};
    const STARTED_MS: u64 = 1_700_000_000_000;
    let clock = ClockEstimate {
        offset_ns: 2_000_000,
        uncertainty_ns: 150_000,
        exchanges: 100,
    };
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (i, (from, to, _)) in cells.iter().enumerate() {
        let busy = |r: &Vec<usize>| {
            r.iter()
                .any(|&j| [cells[j].0, cells[j].1].iter().any(|h| h == from || h == to))
        };
        match rounds.iter_mut().find(|r| pattern.concurrent() || !busy(r)) {
            Some(r) => r.push(i),
            None => rounds.push(vec![i]),
        }
    }
    let mut out: Vec<Cell> = cells
        .iter()
        .map(|(from, to, value)| Cell {
            from: from.to_string(),
            to: to.to_string(),
            round: 0,
            value: value.ok(),
            start: None,
            result: value.ok().map(|mbps| {
                let mut summary = crate::result::Summary::default();
                for side in [&mut summary.sent, &mut summary.received] {
                    side.seconds = 10.0;
                    side.bits_per_second = mbps * 1e6;
                    side.bytes = (mbps * 1e6 * 10.0 / 8.0) as u64;
                    side.ops = side.bytes / 131_072 + 1;
                }
                let spec = crate::spec::TestSpec::Tcp(crate::spec::TcpSpec::new());
                let mut r = stub_result(spec, summary);
                r.started_unix_ms = STARTED_MS;
                r.from = Some(from.to_string());
                Box::new(r)
            }),
            error: value.err().map(str::to_string),
        })
        .collect();
    let rounds: Vec<Round> = rounds
        .into_iter()
        .enumerate()
        .map(|(k, members)| {
            let mut starts = Vec::new();
            for (n, &i) in members.iter().enumerate() {
                let cell = &mut out[i];
                cell.round = k;
                let scheduled = (STARTED_MS as i64 + k as i64 * 10_000) * 1_000_000;
                if cell.result.is_some() {
                    let actual = scheduled + n as i64 * 400_000;
                    starts.push(actual);
                    cell.start = Some(CellStart {
                        scheduled_unix_ns: scheduled,
                        actual_unix_ns: actual,
                        answered_unix_ns: Some(actual + 300_000),
                        offset_ns: clock.offset_ns,
                        uncertainty_ns: clock.uncertainty_ns,
                    });
                }
            }
            let values: Vec<f64> = members.iter().filter_map(|&i| out[i].value).collect();
            Round {
                start_skew_ns: (starts.len() > 1)
                    .then(|| (starts.iter().max().unwrap_or(&0) - starts.iter().min().unwrap_or(&0)) as u64),
                jain: jain_index(&values),
                cells: members,
            }
        })
        .collect();
    let values: Vec<f64> = out.iter().filter_map(|c| c.value).collect();
    let group = if pattern.concurrent() {
        crate::result::group_sum(&out)
    } else {
        None
    };
    let failed: Vec<String> = out
        .iter()
        .filter(|c| c.error.is_some())
        .map(|c| format!("{} -> {}", c.from, c.to))
        .collect();
    Matrix {
        linerate: crate::VERSION.to_string(),
        schema: crate::result::SCHEMA,
        test: "tcp matrix".into(),
        pattern,
        started_unix_ms: STARTED_MS,
        partial: !failed.is_empty(),
        options: crate::spec::TestSpec::Tcp(crate::spec::TcpSpec::new()),
        hosts: hosts
            .iter()
            .enumerate()
            .map(|(i, h)| FleetHost {
                name: h.to_string(),
                address: format!("10.0.0.{}:5301", i + 1),
                host_name: Some(h.to_string()),
                node: None,
                clock: Some(clock),
            })
            .collect(),
        figure: CellFigure::ThroughputMbps,
        sum: match group {
            Some(g) => Some(g.mbps),
            None => (!values.is_empty()).then(|| values.iter().sum()),
        },
        sum_window_seconds: group.map(|g| g.window_seconds),
        jain: match group {
            Some(g) => g.jain,
            None => jain_index(&values),
        },
        cells: out,
        rounds,
        failed,
        skew_bound_ns: 10_000_000,
        notes: Vec::new(),
        lab: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one rule the exit status follows (here for `stub_result`).
    #[test]
    fn issue_13_outcome_failed_wins_over_partial_over_complete() {
        use crate::result::{Outcome, RrSummary, SideSummary, Summary};
        use crate::spec::{RrSpec, TestSpec, UdpSpec};
        let moved = Summary {
            sent: SideSummary {
                bytes: 100,
                ops: 1,
                ..SideSummary::default()
            },
            ..Summary::default()
        };
        let udp = || TestSpec::Udp(UdpSpec::new());
        let mut r = stub_result(udp(), moved.clone());
        assert_eq!(r.outcome(), Outcome::Complete);
        r.partial = true;
        assert_eq!(r.outcome(), Outcome::Partial);
        r.error = Some("agent gone".into());
        assert_eq!(r.outcome(), Outcome::Failed);
        assert_eq!(
            stub_result(udp(), Summary::default()).outcome(),
            Outcome::Failed,
            "nothing moved"
        );
        let no_transactions = Summary {
            rr: Some(RrSummary::default()),
            ..moved
        };
        assert_eq!(
            stub_result(TestSpec::Rr(RrSpec::new()), no_transactions).outcome(),
            Outcome::Failed
        );
    }
}
