//! `linerate rpm` in the driver: the server's configuration fetched once (a server that answers
//! none is a usage error, exit 2), then each run against it through `drive` (once or
//! `--repeat`); it reaches no agent, so it implements `Kind` itself, as http does.

use super::{Kind, Mode, TestCommand, drive};
use crate::cli::rpm::RpmArgs;
use crate::cli::usage::usage;
use linerate_core::client::{ClientOptions, RpmSetupError, RpmTarget, Sink, rpm_target, run_rpm};
use linerate_core::result::TestResult;
use linerate_core::spec::{RpmSpec, TestSpec};
use linerate_core::sweep::Sweep;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// A responsiveness server, its configuration read.
pub struct Rpm {
    target: RpmTarget,
    opts: ClientOptions,
}

/// `linerate rpm`: one run, or repeated runs.
pub fn command(args: &RpmArgs) -> anyhow::Result<ExitCode> {
    let spec = args.spec()?;
    let mode = Mode::of(args.repeat.policy()?, None, "")?;
    let target = rpm_target(&spec).map_err(|e| match e {
        RpmSetupError::Server(why) => usage!("{why}"),
        RpmSetupError::Tls(e) => usage!("{:#}", anyhow::Error::from(e)),
    })?;
    let rpm = Rpm {
        target,
        opts: ClientOptions::default(),
    };
    drive(TestCommand::new(rpm, spec, mode, args.output.clone()))
}

impl Kind for Rpm {
    type Spec = RpmSpec;
    type Points = ();
    const NAME: &'static str = "rpm";

    fn options(&self) -> &ClientOptions {
        &self.opts
    }

    fn test_spec(spec: &RpmSpec) -> TestSpec {
        TestSpec::Rpm(spec.clone())
    }

    /// No interval lines: the draft's intervals are seconds long and the document holds them.
    fn interval_seconds(_: &RpmSpec) -> f64 {
        0.0
    }

    fn run(
        &self,
        spec: &RpmSpec,
        opts: &ClientOptions,
        _sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult> {
        let mut result = run_rpm(spec, &self.target, interrupt)?;
        result.lab = opts.lab.clone();
        Ok(result)
    }

    fn targets(&self) -> Vec<String> {
        vec![self.target.name.clone()]
    }

    fn validate(spec: &RpmSpec) -> anyhow::Result<()> {
        Ok(spec.validate()?)
    }

    fn point(_: &RpmSpec) -> Option<String> {
        None
    }

    fn sweep(
        &self,
        _: &RpmSpec,
        _: &(),
        _: impl FnMut(&RpmSpec) -> anyhow::Result<TestResult>,
        _: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        unreachable!("rpm has no sweep: Mode::of is never given one")
    }
}
