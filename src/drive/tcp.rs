//! `linerate tcp` in the driver: one run is [`run_tcp`], a sweep varies the transfer size
//! (`--sizes`).

use super::{Agents, Kind, Mode, Test, drive};
use crate::cli::tcp::TcpArgs;
use linerate_core::client::{ClientOptions, Sink, Target, run_iperf3, run_tcp};
use linerate_core::result::TestResult;
use linerate_core::spec::TcpSpec;
use linerate_core::sweep::Sweep;
use linerate_core::units::ByteSize;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// A TCP test against its agents, or against the iperf3 server named
/// `iperf3://HOST[:PORT]` (issue 26).
pub struct Tcp(pub Agents, pub Option<Target>);

/// `linerate tcp`.
pub fn command(args: TcpArgs) -> anyhow::Result<ExitCode> {
    let output = args.output.clone();
    let repeat = args.repeat.policy()?;
    let mode = Mode::of(repeat, args.sizes()?, "--sizes")?;
    if let Some(server) = crate::cli::iperf3::server(&args.hosts)? {
        let agents = Agents::none(&args.streams.cpus, &args.reach)?;
        let reach = args.reach.clone();
        let spec = args.into_spec()?;
        crate::cli::iperf3::check_tcp(&spec, &reach)?;
        return drive(Test::new(Tcp(agents, Some(server)), spec, mode, output));
    }
    if args.hosts.fleet.pattern.is_some() {
        let (hosts, reach) = (args.hosts.clone(), args.reach.clone());
        let spec = linerate_core::spec::TestSpec::Tcp(args.into_spec()?);
        return crate::fleet::command(spec, mode.is_once(), &hosts, &reach, &output);
    }
    let agents = Agents::new(&args.hosts, &args.streams.cpus, &args.reach)?;
    drive(Test::new(Tcp(agents, None), args.into_spec()?, mode, output))
}

impl Kind for Tcp {
    type Spec = TcpSpec;
    type Plan = Vec<ByteSize>;
    const NAME: &'static str = "tcp";

    fn options(&self) -> &ClientOptions {
        &self.0.opts
    }

    fn interval_seconds(spec: &TcpSpec) -> f64 {
        spec.timing.interval_seconds
    }

    fn run(
        &self,
        spec: &TcpSpec,
        opts: &ClientOptions,
        sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult> {
        if let Some(server) = &self.1 {
            let test = linerate_core::spec::TestSpec::Tcp(spec.clone());
            return Ok(run_iperf3(&test, server, opts, sink, interrupt)?);
        }
        self.0.run(
            || linerate_core::spec::TestSpec::Tcp(spec.clone()),
            opts,
            interrupt,
            |targets| run_tcp(spec, targets, opts, sink, interrupt),
        )
    }

    fn targets(&self) -> Vec<String> {
        match &self.1 {
            Some(server) => vec![server.name.clone()],
            None => self.0.names(),
        }
    }

    fn validate(spec: &TcpSpec) -> anyhow::Result<()> {
        Ok(spec.validate()?)
    }

    fn point(spec: &TcpSpec) -> Option<String> {
        Some(format!("sweep point -l {}", spec.buffer_bytes))
    }

    fn sweep(
        &self,
        base: &TcpSpec,
        sizes: &Vec<ByteSize>,
        run: impl FnMut(&TcpSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        linerate_core::sweep::tcp::sweep(base, sizes, run, progress)
    }
}
