//! `linerate tcp` in the driver: one run is [`run_tcp`], a sweep varies the transfer size
//! (`--sizes`).

use super::{Kind, Mode, TestCommand, drive, run_routed};
use crate::cli::common::{Iperf3, Route};
use crate::cli::tcp::TcpArgs;
use linerate_core::client::{ClientOptions, Sink, run_tcp};
use linerate_core::result::TestResult;
use linerate_core::spec::{TcpSpec, TestSpec};
use linerate_core::sweep::Sweep;
use linerate_core::units::ByteSize;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// A TCP test along its route: linerate agents, an iperf3 server or a fleet's pattern.
pub struct Tcp {
    pub route: Route,
    pub opts: ClientOptions,
}

/// `linerate tcp`.
pub fn command(args: TcpArgs) -> anyhow::Result<ExitCode> {
    let output = args.output.clone();
    let repeat = args.repeat.policy()?;
    let mode = Mode::of(repeat, args.sizes()?, "--sizes")?;
    let (route, opts) = args.hosts.route(Iperf3::Takes, &args.streams.cpus, &args.reach)?;
    let reach = args.reach.clone();
    let spec = args.into_spec()?;
    if matches!(route, Route::Iperf3(_)) {
        crate::cli::iperf3::check_tcp(&spec, &reach)?;
    }
    drive(TestCommand::new(Tcp { route, opts }, spec, mode, output))
}

impl Kind for Tcp {
    type Spec = TcpSpec;
    type Points = Vec<ByteSize>;
    const NAME: &'static str = "tcp";

    fn options(&self) -> &ClientOptions {
        &self.opts
    }

    fn route(&self) -> Option<&Route> {
        Some(&self.route)
    }

    fn test_spec(spec: &TcpSpec) -> TestSpec {
        TestSpec::Tcp(spec.clone())
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
        run_routed(
            &self.route,
            Self::test_spec(spec),
            opts,
            sink,
            interrupt,
            |targets, sink| run_tcp(spec, targets, opts, sink, interrupt),
        )
    }

    fn targets(&self) -> Vec<String> {
        self.route.names()
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
