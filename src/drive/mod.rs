//! The one test driver: every test command (`tcp`, `udp`, `rr`, `http`, `quick`) runs through
//! [`drive`]. A kind hands it a [`Test`]: its [`Kind`] (what differs: how one run goes, its
//! sweep, its words), the spec and the [`Mode`] (once, `--repeat`, or a sweep). The driver
//! owns what every kind shares: the Ctrl-C flag, the live lines, the lab record, the
//! progress of a sweep or repeat, and the end ([`crate::finish`]: print, store, exit status).
//!
//! Each kind's file (`tcp.rs`, `udp.rs`, `rr.rs`, `http.rs`) turns its parsed arguments into a
//! `Test` and implements `Kind`; a new kind is one more such file and one arm in `main.rs`.

pub mod http;
pub mod rr;
pub mod tcp;
pub mod udp;

use crate::cli::ConnectArgs;
use crate::cli::common::{CpuArgs, HostArgs, OutputArgs};
use crate::finish::{Keep, Produced, finish, print_text};
use crate::interrupt::interrupt_flag;
use crate::live::LiveLines;
use anyhow::Context;
use linerate_core::client::{ClientOptions, Sink, Target};
use linerate_core::result::lab::LabRecord;
use linerate_core::result::{RepeatPolicy, TestResult};
use linerate_core::sweep::Sweep;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// What one test kind supplies to the driver; everything else is shared.
pub trait Kind {
    /// The validated spec of one run.
    type Spec;
    /// What a sweep of this kind varies (sizes, gaps, user counts).
    type Plan;
    /// The kind's name in a repeat's document and in errors (`tcp test against ...`).
    const NAME: &'static str;
    /// What the live lines count per second instead of Mbit/s (`transactions`, `responses`).
    const PER_SECOND: Option<&'static str> = None;

    /// How the client reaches the agents (the driver adds the lab record).
    fn options(&self) -> &ClientOptions;
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
        plan: &Self::Plan,
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
    /// One run: neither repeated nor a sweep.
    pub fn is_once(&self) -> bool {
        matches!(self, Mode::Once)
    }

    pub fn of(repeat: Option<RepeatPolicy>, sweep: Option<P>, flags: &str) -> anyhow::Result<Mode<P>> {
        match (repeat, sweep) {
            (Some(_), Some(_)) => Err(crate::cli::usage::usage!(
                "--repeat does not combine with a sweep ({flags}) yet: repeat single tests"
            )
            .into()),
            (Some(policy), None) => Ok(Mode::Repeat(policy)),
            (None, Some(plan)) => Ok(Mode::Sweep(plan)),
            (None, None) => Ok(Mode::Once),
        }
    }
}

/// One test command, ready to run.
pub struct Test<K: Kind> {
    pub kind: K,
    pub spec: K::Spec,
    pub mode: Mode<K::Plan>,
    pub output: OutputArgs,
    /// Labels the command adds to the user's (`quick=yes`).
    pub labels: Vec<(String, String)>,
    /// Whether a run records the lab it ran in (`quick` does not: its loopback crosses no
    /// emulated link).
    pub lab: bool,
}

impl<K: Kind> Test<K> {
    /// A test command's test: no labels of its own, its lab recorded.
    pub fn new(kind: K, spec: K::Spec, mode: Mode<K::Plan>, output: OutputArgs) -> Test<K> {
        Test {
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
pub fn drive<K: Kind>(test: Test<K>) -> anyhow::Result<ExitCode> {
    let Test {
        kind,
        spec,
        mode,
        output,
        labels,
        lab,
    } = test;
    let json = output.json;
    // `--brief`: the headline line alone (interval lines with an explicit -i); a repeated
    // test's run lines and a sweep's rows go where they go with --json.
    let quiet = json || output.brief;
    let produced = match mode {
        Mode::Once => Produced::Test(measure(&kind, &spec, !output.interval_lines(), lab)?),
        Mode::Repeat(policy) => Produced::Repeated(crate::repeat::repeat_test(K::NAME, &policy, quiet, |_| {
            measure(&kind, &spec, true, lab)
        })?),
        Mode::Sweep(plan) => {
            let run = |spec: &K::Spec| {
                K::validate(spec)?;
                let result = run_one(&kind, spec, kind.options(), true);
                match K::point(spec) {
                    Some(point) => result.context(point),
                    None => result,
                }
            };
            Produced::Sweep(kind.sweep(&spec, &plan, run, |s| show_sweep(s, quiet))?)
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
/// writes it into the result), then completed by the kind.
fn measure<K: Kind>(kind: &K, spec: &K::Spec, quiet: bool, lab: bool) -> anyhow::Result<TestResult> {
    let opts = ClientOptions {
        lab: if lab { lab_record() } else { None },
        ..kind.options().clone()
    };
    let mut result =
        run_one(kind, spec, &opts, quiet).with_context(|| format!("{} test against {}", K::NAME, kind.against()))?;
    kind.complete(&mut result);
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

/// The agents a tcp, udp or rr test runs against, and how it reaches them.
pub struct Agents {
    pub targets: Vec<Target>,
    pub opts: ClientOptions,
    /// `--from A`: the agent that runs the client's half (a third-party test, issue 24).
    pub from: Option<Target>,
}

impl Agents {
    /// The agents named on the command line and the options to reach them; `--cpus` checked
    /// against this host when the client's half runs here (not `--from`).
    pub fn new(hosts: &HostArgs, cpus: &CpuArgs, reach: &ConnectArgs) -> anyhow::Result<Agents> {
        // tcp and udp took an iperf3 server before: any other kind cannot speak to one.
        let scheme = linerate_core::client::IPERF3_SCHEME;
        if hosts.hosts.iter().any(|h| h.starts_with(scheme)) {
            return Err(crate::cli::usage::usage!(
                "an {scheme} target takes `linerate tcp` or `linerate udp` only: this kind runs against linerate agents"
            )
            .into());
        }
        let fleet = &hosts.fleet;
        if fleet.pattern.is_none() {
            if !fleet.pairs.is_empty() {
                return Err(crate::cli::usage::usage!("--pair names a pattern's pairs: give --pattern pairs").into());
            }
            if fleet.different_nodes {
                return Err(
                    crate::cli::usage::usage!("--different-nodes filters a pattern's pairs: give --pattern").into(),
                );
            }
        }
        // `--from` names agents as the targets do (`dns:NAME`, `@FILE` expanded): without a
        // pattern, one test from one agent against one agent.
        let targets = hosts.targets()?;
        let from = if fleet.from.is_empty() {
            None
        } else {
            let from = linerate_core::fleet::expand_all(&fleet.from, hosts.port)
                .map_err(|e| crate::cli::usage::Usage::Flag(e.to_string()))?;
            match (from.as_slice(), targets.len()) {
                ([one], 1) => Some(crate::cli::resolve_targets(std::slice::from_ref(one), hosts.port)?.remove(0)),
                _ => {
                    return Err(crate::cli::usage::usage!(
                        "--from without --pattern runs one test from one agent against one agent; for more give --pattern"
                    )
                    .into());
                }
            }
        };
        if from.is_none() {
            cpus.check_here()?;
        }
        Ok(Agents {
            targets,
            opts: reach.options()?,
            from,
        })
    }

    /// No agents: the far end is not a linerate agent (an `iperf3://` server, issue 26); the
    /// client's half runs here, on `cpus`.
    pub fn none(cpus: &CpuArgs, reach: &ConnectArgs) -> anyhow::Result<Agents> {
        cpus.check_here()?;
        Ok(Agents {
            targets: Vec::new(),
            opts: reach.options()?,
            from: None,
        })
    }

    /// One run: from here against the targets (`here`), or with `--from` a third-party run
    /// of the same spec (no interval lines: the run comes back whole).
    pub fn run(
        &self,
        spec: impl FnOnce() -> linerate_core::spec::TestSpec,
        opts: &ClientOptions,
        interrupt: &std::sync::atomic::AtomicBool,
        here: impl FnOnce(&[Target]) -> Result<TestResult, linerate_core::client::ClientError>,
    ) -> anyhow::Result<TestResult> {
        match &self.from {
            None => Ok(here(&self.targets)?),
            Some(from) => {
                let to = self.targets[0].addr;
                Ok(linerate_core::client::run_from(from, to, &spec(), opts, None, None, interrupt)?.result)
            }
        }
    }

    /// The agents' names as given.
    pub fn names(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.name.clone()).collect()
    }
}
