//! `linerate tcp` in the driver: one run is [`run_tcp`], a sweep varies the transfer size
//! (`--sizes`).

use super::Mode;
use super::routed::{self, AgentKind, Here};
use crate::cli::ConnectArgs;
use crate::cli::common::{Iperf3, Route};
use crate::cli::tcp::TcpArgs;
use crate::cli::usage::Usage;
use linerate_core::client::run_tcp;
use linerate_core::result::TestResult;
use linerate_core::spec::{ProbeSpec, TcpSpec, TestSpec};
use linerate_core::sweep::Sweep;
use linerate_core::units::ByteSize;
use std::process::ExitCode;

/// A TCP test (along the route [`routed::Routed`] holds).
pub struct Tcp;

/// `linerate tcp`.
pub fn command(args: TcpArgs) -> anyhow::Result<ExitCode> {
    let mode = Mode::of(args.repeat.policy()?, args.sizes()?, "--sizes")?;
    let at = args.hosts.route(Iperf3::Takes, &args.streams.cpus, &args.reach)?;
    let (reach, output) = (args.reach.clone(), args.output.clone());
    routed::command(Tcp, mode, at, &reach, args.into_spec()?, output)
}

impl AgentKind for Tcp {
    type Spec = TcpSpec;
    type Points = Vec<ByteSize>;
    const NAME: &'static str = "tcp";
    const HERE: Here<TcpSpec> = run_tcp;

    fn test_spec(spec: &TcpSpec) -> TestSpec {
        TestSpec::Tcp(spec.clone())
    }

    fn check_iperf3(spec: &TcpSpec, reach: &ConnectArgs) -> Result<(), Usage> {
        crate::cli::iperf3::check_tcp(spec, reach)
    }

    fn probe(spec: &TcpSpec) -> Option<&ProbeSpec> {
        spec.probe.as_ref()
    }

    fn point(spec: &TcpSpec) -> Option<String> {
        Some(format!("sweep point -l {}", spec.buffer_bytes))
    }

    fn sweep(
        &self,
        _route: &Route,
        base: &TcpSpec,
        sizes: &Vec<ByteSize>,
        run: impl FnMut(&TcpSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        linerate_core::sweep::tcp::sweep(base, sizes, run, progress)
    }
}
