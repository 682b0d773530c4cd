//! `linerate udp` in the driver: one run is [`run_udp`], a sweep varies sizes and gaps
//! (`--sizes`, `--gaps`).

use super::Mode;
use super::routed::{self, AgentKind, Here};
use crate::cli::ConnectArgs;
use crate::cli::common::{Iperf3, Route};
use crate::cli::udp::UdpArgs;
use crate::cli::usage::Usage;
use linerate_core::client::run_udp;
use linerate_core::result::TestResult;
use linerate_core::spec::{ProbeSpec, TestSpec, UdpSpec};
use linerate_core::sweep::Sweep;
use linerate_core::sweep::udp::UdpPoints;
use std::process::ExitCode;

/// A UDP test (along the route [`routed::Routed`] holds).
pub struct Udp;

/// `linerate udp`.
pub fn command(args: UdpArgs) -> anyhow::Result<ExitCode> {
    let sweep = args.sweep()?;
    let mode = Mode::of(args.common.repeat.policy()?, sweep, "--sizes, --gaps")?;
    let at = args
        .hosts
        .route(Iperf3::Takes, &args.streams.cpus, &args.common.reach)?;
    let (reach, output) = (args.common.reach.clone(), args.common.output.clone());
    routed::command(Udp, mode, at, &reach, args.into_spec()?, output)
}

impl AgentKind for Udp {
    type Spec = UdpSpec;
    type Points = UdpPoints;
    const NAME: &'static str = "udp";
    const HERE: Here<UdpSpec> = run_udp;

    fn test_spec(spec: &UdpSpec) -> TestSpec {
        TestSpec::Udp(spec.clone())
    }

    fn check_iperf3(spec: &UdpSpec, reach: &ConnectArgs) -> Result<(), Usage> {
        crate::cli::iperf3::check_udp(spec, reach)
    }

    fn probe(spec: &UdpSpec) -> Option<&ProbeSpec> {
        spec.probe.as_ref()
    }

    fn point(spec: &UdpSpec) -> Option<String> {
        Some(format!(
            "sweep point {} bytes, gap {} us",
            spec.payload_bytes,
            spec.gap_ns as f64 / 1e3
        ))
    }

    fn sweep(
        &self,
        _route: &Route,
        base: &UdpSpec,
        plan: &UdpPoints,
        run: impl FnMut(&UdpSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        linerate_core::sweep::udp::sweep(base, plan, run, progress)
    }
}
