//! `linerate rr` in the driver: one run is [`run_rr`], a sweep grows the requests (or both
//! frames) over `--sizes` and fits the latency line.

use super::{Agents, Kind, Mode, Test, drive};
use crate::cli::rr::{RrArgs, SweepWhat};
use anyhow::Context;
use linerate_core::client::{ClientOptions, Sink, run_rr};
use linerate_core::result::TestResult;
use linerate_core::spec::RrSpec;
use linerate_core::sweep::rr::{PathToward, RrPlan};
use linerate_core::sweep::{RrVaries, Sweep};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// A request-response test against its agents, and what a size sweep grows and expects.
pub struct Rr {
    agents: Agents,
    varies: RrVaries,
    /// `--expect`: the bandwidths a sweep's fit is compared with, bits per second.
    expect: Vec<f64>,
}

/// `linerate rr`.
pub fn command(args: RrArgs) -> anyhow::Result<ExitCode> {
    let output = args.output.clone();
    let sizes = args.sizes()?;
    let mode = Mode::of(args.repeat.policy()?, sizes, "--sizes")?;
    if args.hosts.fleet.pattern.is_some() {
        let (hosts, reach) = (args.hosts.clone(), args.reach.clone());
        let spec = linerate_core::spec::TestSpec::Rr(args.into_spec()?);
        return crate::fleet::command(spec, mode.is_once(), &hosts, &reach, &output);
    }
    let agents = Agents::new(&args.hosts, &args.streams.cpus, &args.reach)?;
    let expect: Vec<f64> = args.expect.iter().map(|r| r.0).collect();
    anyhow::ensure!(expect.iter().all(|b| *b > 0.0), "--expect bandwidths must be above 0");
    let varies = if args.sweep == SweepWhat::Both {
        RrVaries::Both
    } else {
        RrVaries::Request
    };
    drive(Test::new(
        Rr { agents, varies, expect },
        args.into_spec()?,
        mode,
        output,
    ))
}

impl Kind for Rr {
    type Spec = RrSpec;
    /// The request (or frame) sizes, bytes.
    type Plan = Vec<u32>;
    const NAME: &'static str = "rr";
    const PER_SECOND: Option<&'static str> = Some("transactions");

    fn options(&self) -> &ClientOptions {
        &self.agents.opts
    }

    fn interval_seconds(spec: &RrSpec) -> f64 {
        spec.timing.interval_seconds
    }

    fn run(
        &self,
        spec: &RrSpec,
        opts: &ClientOptions,
        sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult> {
        self.agents.run(
            || linerate_core::spec::TestSpec::Rr(spec.clone()),
            opts,
            interrupt,
            |targets| run_rr(spec, targets, opts, sink, interrupt),
        )
    }

    fn targets(&self) -> Vec<String> {
        self.agents.names()
    }

    fn validate(spec: &RrSpec) -> anyhow::Result<()> {
        Ok(spec.validate()?)
    }

    /// A failed point becomes a note at that point in the sweep, which names it.
    fn point(_spec: &RrSpec) -> Option<String> {
        None
    }

    fn sweep(
        &self,
        base: &RrSpec,
        sizes: &Vec<u32>,
        run: impl FnMut(&RrSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        let first = self.agents.targets.first().context("no agent named")?;
        let plan = RrPlan {
            sizes_bytes: sizes.clone(),
            varies: self.varies,
            expect_bits_per_second: self.expect.clone(),
            path: PathToward::read(first.addr.ip()),
        };
        linerate_core::sweep::rr::sweep(base, &plan, run, progress)
    }
}
