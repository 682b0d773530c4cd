//! `linerate rrul` in the driver: flent's Realtime Response Under Load against one agent. A probe
//! session per DSCP class (the `--probe` session of `probe.rs`, its socket marked with the class)
//! runs from before the first phase to after the last; the phases run in turn on one time axis:
//! baseline (probes alone), download, upload, both (each a tcp run of the load's streams, their
//! classes taken in turn, through `client::run_tcp`: the tcp kind's own client, no second TCP
//! engine), recovery (probes alone). Each phase is --phase long; a load phase is its run, from
//! its time zero to its last interval, so the few milliseconds a run takes to connect its
//! streams belong to no phase. `assemble.rs` makes the one document, `text.rs` its phase table.

mod assemble;
mod text;

use super::probe::{MARGIN_SECONDS, START_WAIT, agent_clock, rr_spec, wait_until};
use super::{Kind, Mode, TestCommand, drive};
use crate::cli::common::{CpuArgs, Iperf3, Route};
use crate::cli::rrul::{Rrul, RrulArgs};
use crate::cli::usage::usage;
use assemble::{LoadRun, ProbeRun};
use linerate_core::client::{ClientOptions, NullSink, ProbeRecord, Sink, Target, ZeroClock, run_rr_recorded, run_tcp};
use linerate_core::result::TestResult;
use linerate_core::spec::{Direction, Dscp, TcpSpec, TestSpec};
use linerate_core::sweep::Sweep;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The load phases in their order: each runs the load's streams one way or both.
const LOAD_PHASES: [(&str, Direction); 3] = [
    ("download", Direction::Reverse),
    ("upload", Direction::Send),
    ("both", Direction::Bidir),
];

/// An RRUL run against one agent.
pub struct RrulKind {
    route: Route,
    opts: ClientOptions,
    target: Target,
    /// `--json` or `--brief`: no phase table.
    quiet: bool,
}

/// `linerate rrul`.
pub fn command(args: RrulArgs) -> anyhow::Result<ExitCode> {
    let (route, opts) = args
        .hosts
        .route(Iperf3::Refuses, &CpuArgs { cpus: None }, &args.reach)?;
    let target = match &route {
        Route::Agents { targets, from: None } if targets.len() == 1 => targets[0].clone(),
        _ => {
            return Err(
                usage!("rrul runs from this host against one agent (no --from, --pattern or second host)").into(),
            );
        }
    };
    let output = args.output.clone();
    let quiet = output.json || output.brief;
    let rrul = args.into_rrul()?;
    let kind = RrulKind {
        route,
        opts,
        target,
        quiet,
    };
    drive(TestCommand::new(kind, rrul, Mode::Once, output))
}

impl Kind for RrulKind {
    type Spec = Rrul;
    type Points = ();
    const NAME: &'static str = "rrul";

    fn options(&self) -> &ClientOptions {
        &self.opts
    }

    fn route(&self) -> Option<&Route> {
        Some(&self.route)
    }

    fn test_spec(spec: &Rrul) -> TestSpec {
        TestSpec::Tcp(spec.load.clone())
    }

    fn interval_seconds(spec: &Rrul) -> f64 {
        spec.load.timing.interval_seconds
    }

    fn run(
        &self,
        spec: &Rrul,
        opts: &ClientOptions,
        sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult> {
        run_rrul(spec, &self.target, opts, sink, interrupt)
    }

    fn complete(&self, result: &mut TestResult) {
        if !self.quiet {
            // Before the run's own text and headline, which `finish` prints.
            let _ = crate::finish::print_text(&text::phases(result));
        }
    }

    fn targets(&self) -> Vec<String> {
        self.route.names()
    }

    fn validate(_spec: &Rrul) -> anyhow::Result<()> {
        Ok(())
    }

    fn point(_spec: &Rrul) -> Option<String> {
        None
    }

    fn sweep(
        &self,
        _base: &Rrul,
        _plan: &(),
        _run: impl FnMut(&Rrul) -> anyhow::Result<TestResult>,
        _progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        anyhow::bail!("rrul has no sweep")
    }
}

/// The classes probed: each class of the load once, in its order.
fn probed_classes(load: &TcpSpec) -> Vec<Dscp> {
    let mut out: Vec<Dscp> = Vec::new();
    for c in &load.dscp {
        if !out.contains(c) {
            out.push(*c);
        }
    }
    out
}

/// One RRUL run: the probe sessions started and their first requests awaited, then the phases in
/// turn, the sessions stopped, and the document assembled. A load phase that fails ends the
/// sequence: what was measured is kept and the run marked partial (an error when no load ran).
fn run_rrul(
    r: &Rrul,
    target: &Target,
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> anyhow::Result<TestResult> {
    let mut notes = Vec::new();
    let clock = agent_clock(target, opts, &mut notes);
    let classes = probed_classes(&r.load);
    let phase = Duration::from_secs_f64(r.phase_seconds);
    let seconds = 5.0 * r.phase_seconds + MARGIN_SECONDS;
    let records: Vec<Arc<ProbeRecord>> = classes
        .iter()
        .map(|_| Arc::new(ProbeRecord::new((r.probe.rate_per_second * seconds) as usize + 64)))
        .collect();
    let stop = AtomicBool::new(false);
    let targets = [target.clone()];
    let (loads, baseline, recovery_end, started_unix_ms) = std::thread::scope(|scope| {
        let sessions: Vec<_> = classes
            .iter()
            .zip(&records)
            .map(|(class, record)| {
                let mut spec = rr_spec(&r.probe, seconds);
                spec.dscp = vec![*class];
                let (targets, stop, record) = (&targets, &stop, record.clone());
                scope.spawn(move || run_rr_recorded(&spec, targets, opts, &mut NullSink, stop, Some(record)))
            })
            .collect();
        let begun = Instant::now();
        while records.iter().any(|r| r.zero().is_none())
            && !sessions.iter().any(|s| s.is_finished())
            && begun.elapsed() < START_WAIT
            && !interrupt.load(Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        let started_unix_ms = linerate_core::unixtime::now_unix_ms();
        let baseline = Instant::now();
        wait_until(baseline + phase, interrupt);
        let mut loads = Vec::new();
        for (name, direction) in LOAD_PHASES {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            let spec = TcpSpec {
                direction,
                ..r.load.clone()
            };
            let mut zeroed = ZeroClock::new(&mut *sink);
            let result = run_tcp(&spec, &targets, opts, &mut zeroed, interrupt);
            let ok = result.is_ok();
            loads.push((name, spec, zeroed.time_zero(), result));
            if !ok {
                break;
            }
        }
        let last_end = loads.iter().rev().find_map(|(_, _, zero, result)| {
            let (zero, result) = (zero.as_ref()?, result.as_ref().ok()?);
            Some(*zero + Duration::from_secs_f64(super::probe::load_end_s(result, *zero).max(0.0)))
        });
        let recovery_start = last_end.unwrap_or_else(Instant::now);
        wait_until(recovery_start + phase, interrupt);
        let recovery_end = Instant::now();
        stop.store(true, Ordering::Relaxed);
        for (class, session) in classes.iter().zip(sessions) {
            match session.join() {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => notes.push(format!("probes {class}: {e}")),
                Err(_) => notes.push(format!("probes {class}: the session's thread panicked")),
            }
        }
        (loads, baseline, recovery_end, started_unix_ms)
    });
    let mut runs = Vec::new();
    let mut failure = None;
    for (name, spec, zero, result) in loads {
        match (result, zero) {
            (Ok(result), Some(zero)) => runs.push(LoadRun {
                name,
                spec,
                zero,
                result,
            }),
            (Ok(_), None) => notes.push(format!("the {name} phase never started its streams")),
            (Err(e), _) => failure = Some(anyhow::Error::new(e).context(format!("the {name} phase"))),
        }
    }
    if runs.is_empty() {
        return Err(failure.unwrap_or_else(|| anyhow::anyhow!("no load phase ran (interrupted)")));
    }
    let interrupted = interrupt.load(Ordering::Relaxed);
    let cut = interrupted || failure.is_some() || runs.len() < LOAD_PHASES.len();
    if let Some(e) = failure {
        notes.push(format!("{e:#}: the phases after it did not run"));
    }
    let probes: Vec<ProbeRun> = classes
        .iter()
        .zip(&records)
        .filter_map(|(class, record)| {
            let (zero, unix_zero_ns) = record.zero()?;
            Some(ProbeRun {
                class: *class,
                zero,
                unix_zero_ns,
                requests: record.requests(),
            })
        })
        .collect();
    if probes.len() < classes.len() {
        notes.push("probes: a class's probe session never started: its series is missing".into());
    }
    let mut result = assemble::document(
        r,
        &assemble::Timeline {
            baseline,
            recovery_end,
            started_unix_ms,
        },
        runs,
        &probes,
        clock,
    );
    result.partial |= cut || probes.len() < classes.len();
    result.notes.extend(notes);
    Ok(result)
}
