//! What tcp, udp and rr share in the driver: a test that goes along a [`Route`] (linerate
//! agents, from here or `--from` one; an iperf3 server; a fleet's pattern). A kind says only
//! what differs ([`AgentKind`]: its spec as the agents receive it, its run from here, its
//! sweep); [`Routed`] is its [`Kind`], and [`command`] the end of its command.

use super::{Kind, Mode, TestCommand, drive};
use crate::cli::ConnectArgs;
use crate::cli::common::{OutputArgs, Route};
use crate::cli::usage::Usage;
use linerate_core::client::{ClientError, ClientOptions, Sink, Target, run_from, run_iperf3};
use linerate_core::result::TestResult;
use linerate_core::spec::{ProbeSpec, TestSpec, Validate};
use linerate_core::sweep::Sweep;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// What one kind that runs against linerate agents supplies; the rest of its [`Kind`] is
/// [`Routed`]'s.
pub trait AgentKind {
    /// The validated spec of one run.
    type Spec;
    /// What a sweep of this kind varies.
    type Points;
    /// [`Kind::NAME`].
    const NAME: &'static str;
    /// [`Kind::PER_SECOND`].
    const PER_SECOND: Option<&'static str> = None;

    /// The spec as the agents (or a third-party run, or an iperf3 server) receive it.
    fn test_spec(spec: &Self::Spec) -> TestSpec;
    /// One run from this host against the targets: the client's `run_<kind>`.
    const HERE: Here<Self::Spec>;
    /// What an iperf3 server cannot take of this spec (a kind whose route refuses iperf3 has
    /// nothing to check).
    fn check_iperf3(_spec: &Self::Spec, _reach: &ConnectArgs) -> Result<(), Usage> {
        Ok(())
    }
    /// [`Kind::point`].
    fn point(spec: &Self::Spec) -> Option<String>;
    /// The latency probes asked to run beside the test (`--probe`), for a kind that has them.
    fn probe(_spec: &Self::Spec) -> Option<&ProbeSpec> {
        None
    }
    /// [`Kind::sweep`], given the route (rr's sweep reads the path toward its first agent).
    fn sweep(
        &self,
        route: &Route,
        base: &Self::Spec,
        plan: &Self::Points,
        run: impl FnMut(&Self::Spec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep>;
}

/// One run of a kind from this host: its spec, the agents, how to reach them, where its samples
/// go, and the Ctrl-C flag (the signature of `client::run_tcp`, `run_udp`, `run_rr`).
pub type Here<S> = fn(&S, &[Target], &ClientOptions, &mut dyn Sink, &AtomicBool) -> Result<TestResult, ClientError>;

/// A test of kind `A` along its route.
pub struct Routed<A> {
    pub route: Route,
    pub opts: ClientOptions,
    pub kind: A,
}

/// The end of a tcp, udp or rr command, its mode, route and spec made: iperf3's checks when
/// the route is an iperf3 server, then the driver.
pub fn command<A: AgentKind>(
    kind: A,
    mode: Mode<A::Points>,
    (route, opts): (Route, ClientOptions),
    reach: &ConnectArgs,
    spec: A::Spec,
    output: OutputArgs,
) -> anyhow::Result<ExitCode> {
    if let Some(p) = A::probe(&spec) {
        super::probe::check(p, &route, &A::test_spec(&spec))?;
    }
    if matches!(route, Route::Iperf3(_)) {
        A::check_iperf3(&spec, reach)?;
    }
    drive(TestCommand::new(Routed { route, opts, kind }, spec, mode, output))
}

impl<A: AgentKind> Kind for Routed<A> {
    type Spec = A::Spec;
    type Points = A::Points;
    const NAME: &'static str = A::NAME;
    const PER_SECOND: Option<&'static str> = A::PER_SECOND;

    fn options(&self) -> &ClientOptions {
        &self.opts
    }

    fn route(&self) -> Option<&Route> {
        Some(&self.route)
    }

    fn test_spec(spec: &A::Spec) -> TestSpec {
        A::test_spec(spec)
    }

    fn interval_seconds(spec: &A::Spec) -> f64 {
        A::test_spec(spec).timing().interval_seconds
    }

    fn run(
        &self,
        spec: &A::Spec,
        opts: &ClientOptions,
        sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult> {
        let test = A::test_spec(spec);
        if let (Some(probe), Route::Agents { targets, from: None }) = (A::probe(spec), &self.route) {
            // A count is refused before the run (`probe::check`).
            let seconds = test.timing().limit.seconds().unwrap_or(0.0);
            return super::probe::run_probed(probe, &targets[0], opts, sink, interrupt, seconds, |sink| {
                A::HERE(spec, targets, opts, sink, interrupt)
            });
        }
        run_routed(&self.route, test, opts, sink, interrupt, |targets, sink| {
            A::HERE(spec, targets, opts, sink, interrupt)
        })
    }

    fn targets(&self) -> Vec<String> {
        self.route.names()
    }

    fn validate(spec: &A::Spec) -> anyhow::Result<()> {
        Ok(A::test_spec(spec).validate()?)
    }

    fn point(spec: &A::Spec) -> Option<String> {
        A::point(spec)
    }

    fn sweep(
        &self,
        base: &A::Spec,
        plan: &A::Points,
        run: impl FnMut(&A::Spec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        self.kind.sweep(&self.route, base, plan, run, progress)
    }
}

/// One run of a kind that runs against linerate agents, along its route: `here` runs it from
/// this host against the agents; with `--from` it is a third-party run of the same spec (no
/// interval lines: the run comes back whole); an iperf3 server takes the spec as iperf3's
/// parameters.
fn run_routed(
    route: &Route,
    spec: TestSpec,
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
    here: impl FnOnce(&[Target], &mut dyn Sink) -> Result<TestResult, ClientError>,
) -> anyhow::Result<TestResult> {
    match route {
        Route::Agents { targets, from: None } => Ok(here(targets, sink)?),
        Route::Agents {
            targets,
            from: Some(from),
        } => Ok(run_from(from, targets[0].addr, &spec, opts, None, None, interrupt)?.result),
        Route::Iperf3(server) => Ok(run_iperf3(&spec, server, opts, sink, interrupt)?),
        Route::Fleet(_) => anyhow::bail!("a pattern runs as a matrix of tests, not as one test"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::rr::Rr;
    use crate::drive::tcp::Tcp;
    use crate::drive::udp::Udp;
    use linerate_core::spec::{RrSpec, TcpSpec, UdpSpec};

    /// `Routed` reads each kind's spec through the kind's `test_spec`, so what the driver sees
    /// (interval, validation, name) is what that kind's own spec says.
    #[test]
    fn routed_kinds_read_their_specs_interval_validation_and_name() {
        let mut tcp = TcpSpec::new();
        tcp.timing.interval_seconds = 0.25;
        assert_eq!(<Routed<Tcp> as Kind>::interval_seconds(&tcp), 0.25);
        assert!(<Routed<Tcp> as Kind>::validate(&tcp).is_ok());
        tcp.streams = 0;
        let e = <Routed<Tcp> as Kind>::validate(&tcp).expect_err("no streams");
        assert_eq!(e.to_string(), tcp.validate().expect_err("the same").to_string());

        let mut udp = UdpSpec::new();
        udp.timing.interval_seconds = 0.0;
        assert_eq!(<Routed<Udp> as Kind>::interval_seconds(&udp), 0.0, "0: no live lines");
        assert!(matches!(<Routed<Udp> as Kind>::test_spec(&udp), TestSpec::Udp(_)));

        let rr = RrSpec::new();
        assert!(matches!(<Routed<Rr> as Kind>::test_spec(&rr), TestSpec::Rr(_)));
        assert_eq!(
            (
                <Routed<Tcp> as Kind>::NAME,
                <Routed<Udp> as Kind>::NAME,
                <Routed<Rr> as Kind>::NAME
            ),
            ("tcp", "udp", "rr")
        );
        assert_eq!(<Routed<Rr> as Kind>::PER_SECOND, Some("transactions"));
        assert_eq!(<Routed<Tcp> as Kind>::PER_SECOND, None);
    }

    /// A kind whose route refuses iperf3 (rr) has nothing of its spec to check against one;
    /// tcp and udp refuse what an iperf3 server cannot take.
    #[test]
    fn only_a_kind_that_takes_iperf3_checks_its_spec_against_it() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["linerate", "tcp", "h"]).expect("parses");
        let crate::cli::Command::Tcp(args) = cli.command else {
            panic!("not tcp")
        };
        let reach = args.reach;
        let mut tcp = TcpSpec::new();
        assert!(Tcp::check_iperf3(&tcp, &reach).is_ok());
        tcp.sndbuf_bytes = Some(linerate_core::units::ByteSize(1 << 20));
        let e = Tcp::check_iperf3(&tcp, &reach).expect_err("no iperf3 parameter for --sndbuf");
        assert!(e.to_string().contains("--sndbuf"), "{e}");
        let mut udp = UdpSpec::new();
        assert!(Udp::check_iperf3(&udp, &reach).is_ok());
        udp.synced_clocks = true;
        assert!(
            Udp::check_iperf3(&udp, &reach).is_err(),
            "iperf3's datagram times are its own"
        );
        assert!(Rr::check_iperf3(&RrSpec::new(), &reach).is_ok());
    }
}
