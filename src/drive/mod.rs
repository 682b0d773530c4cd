//! The one test driver: every test command (`tcp`, `udp`, `rr`, `http`, `quick`) runs through
//! [`drive`]. A kind hands it a [`TestCommand`]: its [`Kind`] (what differs: how one run goes, its
//! sweep, its words, the [`Route`] it was given), the spec and the [`Mode`] (once, `--repeat`,
//! or a sweep). The driver owns what every kind shares: the Ctrl-C flag, the live lines, the
//! lab record, the progress of a sweep or repeat, a pattern's matrix (`pattern.rs`: a route to a
//! fleet runs there, once), the grades of every run's latency under load (`--qoo`), and the end ([`crate::finish`]: print, store, exit status).
//!
//! Each kind's file (`tcp.rs`, `udp.rs`, `rr.rs`, `http.rs`) turns its parsed arguments into a
//! `TestCommand` (its route made once by `HostArgs::route`, its spec once by `into_spec`) and
//! implements `Kind` (tcp, udp and rr through `routed.rs`: the part of a `Kind` that runs
//! along a `Route` is written once there); a new kind is one more such file and one arm in
//! `main.rs`.

pub mod http;
mod pattern;
mod probe;
pub mod routed;
pub mod rpm;
pub mod rr;
pub mod rrul;
pub mod tcp;
pub mod udp;

use crate::cli::common::{OutputArgs, Route};
use crate::cli::usage::usage;
use crate::finish::{Keep, finish, print_text};
use crate::interrupt::interrupt_flag;
use crate::live::LiveLines;
use anyhow::Context;
use linerate_core::client::{ClientOptions, Sink};
use linerate_core::result::lab::LabRecord;
use linerate_core::result::{RepeatPolicy, TestResult};
use linerate_core::spec::TestSpec;
use linerate_core::sweep::Sweep;
use linerate_results::document::Document;
use linerate_results::qoo::{QooRequirement, grade_run};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// What one test kind supplies to the driver; everything else is shared.
pub trait Kind {
    /// The validated spec of one run.
    type Spec;
    /// What a sweep of this kind varies (sizes, gaps, user counts).
    type Points;
    /// The kind's name in a repeat's document and in errors (`tcp test against ...`).
    const NAME: &'static str;
    /// What the live lines count per second instead of Mbit/s (`transactions`, `responses`).
    const PER_SECOND: Option<&'static str> = None;

    /// How the client reaches the agents (the driver adds the lab record).
    fn options(&self) -> &ClientOptions;
    /// Where the test goes, for a kind that runs against linerate agents (none: http's URLs).
    fn route(&self) -> Option<&Route> {
        None
    }
    /// The spec as the agents (or a third-party run, or an iperf3 server) receive it.
    fn test_spec(spec: &Self::Spec) -> TestSpec;
    /// The spec's interval; 0 means no live lines.
    fn interval_seconds(spec: &Self::Spec) -> f64;
    /// Runs one test with `opts`, its samples to `sink`, stopped early when `interrupt` is set.
    fn run(
        &self,
        spec: &Self::Spec,
        opts: &ClientOptions,
        sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult>;
    /// What a single or repeated run adds to its result once measured (http: the baseline).
    fn complete(&self, _result: &mut TestResult) {}
    /// The agents (HOST:PORT) or URLs as given, as the store keeps them.
    fn targets(&self) -> Vec<String>;
    /// The targets as an error names them (`tcp test against a, b`).
    fn against(&self) -> String {
        self.targets().join(", ")
    }
    /// Checks a sweep point's spec before it runs.
    fn validate(spec: &Self::Spec) -> anyhow::Result<()>;
    /// What an error of a sweep point names it by; none: the sweep's own words suffice.
    fn point(spec: &Self::Spec) -> Option<String>;
    /// Runs the kind's sweep over `plan`, each point through `run`, `progress` after each.
    fn sweep(
        &self,
        base: &Self::Spec,
        plan: &Self::Points,
        run: impl FnMut(&Self::Spec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep>;
}

/// How a test command runs.
pub enum Mode<P> {
    Once,
    /// `--repeat`: the same test, run by the policy.
    Repeat(RepeatPolicy),
    /// The kind's sweep over this plan.
    Sweep(P),
}

impl<P> Mode<P> {
    /// The mode the flags ask for; a repeat and a sweep (named by `flags`) do not combine yet.
    pub fn of(repeat: Option<RepeatPolicy>, sweep: Option<P>, flags: &str) -> anyhow::Result<Mode<P>> {
        match (repeat, sweep) {
            (Some(_), Some(_)) => {
                Err(usage!("--repeat does not combine with a sweep ({flags}) yet: repeat single tests").into())
            }
            (Some(policy), None) => Ok(Mode::Repeat(policy)),
            (None, Some(plan)) => Ok(Mode::Sweep(plan)),
            (None, None) => Ok(Mode::Once),
        }
    }
}

/// One test command, ready to run.
pub struct TestCommand<K: Kind> {
    pub kind: K,
    pub spec: K::Spec,
    pub mode: Mode<K::Points>,
    pub output: OutputArgs,
    /// Labels the command adds to the user's (`quick=yes`).
    pub labels: Vec<(String, String)>,
    /// Whether a run records the lab it ran in (`quick` does not: its loopback crosses no
    /// emulated link).
    pub lab: bool,
}

impl<K: Kind> TestCommand<K> {
    /// A test command's test: no labels of its own, its lab recorded.
    pub fn new(kind: K, spec: K::Spec, mode: Mode<K::Points>, output: OutputArgs) -> TestCommand<K> {
        TestCommand {
            kind,
            spec,
            mode,
            output,
            labels: Vec::new(),
            lab: true,
        }
    }
}

/// Runs the test as its mode says, then prints, stores and returns the exit status.
pub fn drive<K: Kind>(test: TestCommand<K>) -> anyhow::Result<ExitCode> {
    let TestCommand {
        kind,
        spec,
        mode,
        output,
        labels,
        lab,
    } = test;
    let json = output.json;
    // Read before any traffic: a bad requirement is a usage error, not a lost run.
    let qoo = output.grades.requirements()?;
    // `--brief`: the headline line alone (interval lines with an explicit -i); a repeated
    // test's run lines and a sweep's rows go where they go with --json.
    let quiet = json || output.brief;
    let produced = match (kind.route(), mode) {
        (Some(Route::Fleet(f)), Mode::Once) => {
            let opts = with_lab(kind.options(), lab);
            let mut m = pattern::matrix(f, &K::test_spec(&spec), &opts, quiet)?;
            for r in m.cells.iter_mut().filter_map(|c| c.result.as_deref_mut()) {
                grade_run(r, &qoo);
            }
            Document::Matrix(Box::new(m))
        }
        (Some(Route::Fleet(_)), _) => {
            return Err(usage!(
                "--pattern runs each cell once: --repeat and sweeps (--sizes, --gaps) are not for patterns"
            )
            .into());
        }
        (_, Mode::Once) => Document::Run(Box::new(measure(&kind, &spec, !output.interval_lines(), lab, &qoo)?)),
        (_, Mode::Repeat(policy)) => {
            Document::Repeated(Box::new(crate::repeat::repeat_test(K::NAME, &policy, quiet, |_| {
                measure(&kind, &spec, true, lab, &qoo)
            })?))
        }
        (_, Mode::Sweep(plan)) => {
            let run = |spec: &K::Spec| {
                K::validate(spec)?;
                let result = run_one(&kind, spec, kind.options(), true).map(|mut r| {
                    grade_run(&mut r, &qoo);
                    r
                });
                match K::point(spec) {
                    Some(point) => result.context(point),
                    None => result,
                }
            };
            Document::Sweep(Box::new(kind.sweep(&spec, &plan, run, |s| show_sweep(s, quiet))?))
        }
    };
    let keep = Keep {
        json,
        brief: output.brief,
        store: &output.store,
        targets: kind.targets(),
        labels,
    };
    finish(&produced, &keep)
}

/// A single or repeated run: measured with the lab it runs in recorded (the client's drive
/// writes it into the result), completed by the kind, then its latency graded (before a repeat
/// aggregates its figures).
fn measure<K: Kind>(
    kind: &K,
    spec: &K::Spec,
    quiet: bool,
    lab: bool,
    qoo: &[QooRequirement],
) -> anyhow::Result<TestResult> {
    let opts = with_lab(kind.options(), lab);
    let mut result =
        run_one(kind, spec, &opts, quiet).with_context(|| format!("{} test against {}", K::NAME, kind.against()))?;
    kind.complete(&mut result);
    grade_run(&mut result, qoo);
    Ok(result)
}

/// One run of any kind (a test, a sweep point, a repeat's run, http's baseline): live lines
/// (none when `quiet`) and Ctrl-C handling.
pub fn run_one<K: Kind>(kind: &K, spec: &K::Spec, opts: &ClientOptions, quiet: bool) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let mut live = LiveLines::new(quiet || K::interval_seconds(spec) == 0.0);
    if let Some(what) = K::PER_SECOND {
        live = live.per_second(what);
    }
    kind.run(spec, opts, &mut live, &interrupt)
}

/// `opts` with the lab the run runs in, when the test records it (the client's drive writes it
/// into the result).
fn with_lab(opts: &ClientOptions, lab: bool) -> ClientOptions {
    ClientOptions {
        lab: if lab { lab_record() } else { None },
        ..opts.clone()
    }
}

/// Inside a lab (`linerate lab exec`), the emulated links, for the result to record.
pub(crate) fn lab_record() -> Option<LabRecord> {
    let name = std::env::var_os("LINERATE_LAB")?.into_string().ok()?;
    let state = linerate_lab::load(&name).ok()?;
    Some(linerate_lab::status(&state))
}

/// A running sweep's table as it grows (nothing when `quiet`, with `--json` or `--brief`: the
/// document or the headline line comes at the end).
fn show_sweep(sweep: &Sweep, quiet: bool) -> anyhow::Result<()> {
    if quiet {
        return Ok(());
    }
    print_text(&linerate_report::sweep::progress(sweep))
}
