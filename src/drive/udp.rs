//! `linerate udp` in the driver: one run is [`run_udp`], a sweep varies sizes and gaps
//! (`--sizes`, `--gaps`).

use super::{Kind, Mode, TestCommand, drive, run_routed};
use crate::cli::common::{Iperf3, Route};
use crate::cli::udp::UdpArgs;
use linerate_core::client::{ClientOptions, Sink, run_udp};
use linerate_core::result::TestResult;
use linerate_core::spec::{TestSpec, UdpSpec};
use linerate_core::sweep::Sweep;
use linerate_core::sweep::udp::UdpPoints;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// A UDP test along its route: linerate agents, an iperf3 server or a fleet's pattern.
pub struct Udp {
    pub route: Route,
    pub opts: ClientOptions,
}

/// `linerate udp`.
pub fn command(args: UdpArgs) -> anyhow::Result<ExitCode> {
    let output = args.output.clone();
    let sweep = args.sweep()?;
    let mode = Mode::of(args.repeat.policy()?, sweep, "--sizes, --gaps")?;
    let (route, opts) = args.hosts.route(Iperf3::Takes, &args.streams.cpus, &args.reach)?;
    let reach = args.reach.clone();
    let spec = args.into_spec()?;
    if matches!(route, Route::Iperf3(_)) {
        crate::cli::iperf3::check_udp(&spec, &reach)?;
    }
    drive(TestCommand::new(Udp { route, opts }, spec, mode, output))
}

impl Kind for Udp {
    type Spec = UdpSpec;
    type Points = UdpPoints;
    const NAME: &'static str = "udp";

    fn options(&self) -> &ClientOptions {
        &self.opts
    }

    fn route(&self) -> Option<&Route> {
        Some(&self.route)
    }

    fn test_spec(spec: &UdpSpec) -> TestSpec {
        TestSpec::Udp(spec.clone())
    }

    fn interval_seconds(spec: &UdpSpec) -> f64 {
        spec.timing.interval_seconds
    }

    fn run(
        &self,
        spec: &UdpSpec,
        opts: &ClientOptions,
        sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult> {
        run_routed(
            &self.route,
            Self::test_spec(spec),
            opts,
            sink,
            interrupt,
            |targets, sink| run_udp(spec, targets, opts, sink, interrupt),
        )
    }

    fn targets(&self) -> Vec<String> {
        self.route.names()
    }

    fn validate(spec: &UdpSpec) -> anyhow::Result<()> {
        Ok(spec.validate()?)
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
        base: &UdpSpec,
        plan: &UdpPoints,
        run: impl FnMut(&UdpSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        linerate_core::sweep::udp::sweep(base, plan, run, progress)
    }
}
