//! `linerate rr` in the driver: one run is [`run_rr`], a sweep grows the requests (or both
//! frames) over `--sizes` and fits the latency line.

use super::Mode;
use super::routed::{self, AgentKind, Here};
use crate::cli::common::{Iperf3, Route};
use crate::cli::rr::{RrArgs, SweepWhat};
use anyhow::Context;
use linerate_core::client::run_rr;
use linerate_core::result::TestResult;
use linerate_core::spec::{RrSpec, TestSpec};
use linerate_core::sweep::rr::{PathToward, RrPoints};
use linerate_core::sweep::{RrVaries, Sweep};
use std::process::ExitCode;

/// A request-response test (along the route [`routed::Routed`] holds: linerate agents or a
/// fleet's pattern), and what a size sweep grows and expects.
pub struct Rr {
    varies: RrVaries,
    /// `--expect`: the bandwidths a sweep's fit is compared with, bits per second.
    expect: Vec<f64>,
}

/// `linerate rr`.
pub fn command(args: RrArgs) -> anyhow::Result<ExitCode> {
    let sizes = args.sizes()?;
    let mode = Mode::of(args.common.repeat.policy()?, sizes, "--sizes")?;
    let at = args
        .hosts
        .route(Iperf3::Refuses, &args.streams.cpus, &args.common.reach)?;
    let expect: Vec<f64> = args.expect.iter().map(|r| r.0).collect();
    anyhow::ensure!(expect.iter().all(|b| *b > 0.0), "--expect bandwidths must be above 0");
    let varies = if args.sweep == SweepWhat::Both {
        RrVaries::Both
    } else {
        RrVaries::Request
    };
    let (reach, output) = (args.common.reach.clone(), args.common.output.clone());
    routed::command(Rr { varies, expect }, mode, at, &reach, args.into_spec()?, output)
}

impl AgentKind for Rr {
    type Spec = RrSpec;
    /// The request (or frame) sizes, bytes.
    type Points = Vec<u32>;
    const NAME: &'static str = "rr";
    const PER_SECOND: Option<&'static str> = Some("transactions");
    const HERE: Here<RrSpec> = run_rr;

    fn test_spec(spec: &RrSpec) -> TestSpec {
        TestSpec::Rr(spec.clone())
    }

    /// A failed point becomes a note at that point in the sweep, which names it.
    fn point(_spec: &RrSpec) -> Option<String> {
        None
    }

    fn sweep(
        &self,
        route: &Route,
        base: &RrSpec,
        sizes: &Vec<u32>,
        run: impl FnMut(&RrSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        let first = route.agents().first().context("no agent named")?;
        let plan = RrPoints {
            sizes_bytes: sizes.clone(),
            varies: self.varies,
            expect_bits_per_second: self.expect.clone(),
            path: PathToward::read(first.addr.ip()),
        };
        linerate_core::sweep::rr::sweep(base, &plan, run, progress)
    }
}
