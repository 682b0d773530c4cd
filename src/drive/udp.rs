//! `linerate udp` in the driver: one run is [`run_udp`], a sweep varies sizes and gaps
//! (`--sizes`, `--gaps`).

use super::{Agents, Kind, Mode, Test, drive};
use crate::cli::udp::UdpArgs;
use linerate_core::client::{ClientOptions, Sink, Target, run_iperf3, run_udp};
use linerate_core::result::TestResult;
use linerate_core::spec::UdpSpec;
use linerate_core::sweep::Sweep;
use linerate_core::sweep::udp::UdpPlan;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// A UDP test against its agents, or against the iperf3 server named
/// `iperf3://HOST[:PORT]` (issue 26).
pub struct Udp(pub Agents, pub Option<Target>);

/// `linerate udp`.
pub fn command(args: UdpArgs) -> anyhow::Result<ExitCode> {
    let output = args.output.clone();
    let sweep = args.sweep()?;
    let mode = Mode::of(args.repeat.policy()?, sweep, "--sizes, --gaps")?;
    if let Some(server) = crate::cli::iperf3::server(&args.hosts)? {
        let agents = Agents::none(&args.streams.cpus, &args.reach)?;
        let reach = args.reach.clone();
        let spec = args.into_spec()?;
        crate::cli::iperf3::check_udp(&spec, &reach)?;
        return drive(Test::new(Udp(agents, Some(server)), spec, mode, output));
    }
    if args.hosts.fleet.pattern.is_some() {
        let (hosts, reach) = (args.hosts.clone(), args.reach.clone());
        let spec = linerate_core::spec::TestSpec::Udp(args.into_spec()?);
        return crate::fleet::command(spec, mode.is_once(), &hosts, &reach, &output);
    }
    let agents = Agents::new(&args.hosts, &args.streams.cpus, &args.reach)?;
    drive(Test::new(Udp(agents, None), args.into_spec()?, mode, output))
}

impl Kind for Udp {
    type Spec = UdpSpec;
    type Plan = UdpPlan;
    const NAME: &'static str = "udp";

    fn options(&self) -> &ClientOptions {
        &self.0.opts
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
        if let Some(server) = &self.1 {
            let test = linerate_core::spec::TestSpec::Udp(spec.clone());
            return Ok(run_iperf3(&test, server, opts, sink, interrupt)?);
        }
        self.0.run(
            || linerate_core::spec::TestSpec::Udp(spec.clone()),
            opts,
            interrupt,
            |targets| run_udp(spec, targets, opts, sink, interrupt),
        )
    }

    fn targets(&self) -> Vec<String> {
        match &self.1 {
            Some(server) => vec![server.name.clone()],
            None => self.0.names(),
        }
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
        plan: &UdpPlan,
        run: impl FnMut(&UdpSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        linerate_core::sweep::udp::sweep(base, plan, run, progress)
    }
}
