//! `--probe` on an HTTP test: the probes on a connection of their own start first and run
//! alone for the idle time, the load runs as without them, the probes run on for the recovery
//! time, then stop; their series joins the run's latency (beside the self probes the HTTP/2 load
//! connections carried) on the load's time axis, its zero as the runner tells it.

use super::super::probe::wait_until;
use linerate_core::client::{
    ClientOptions, HttpAgent, HttpTarget, Sink, ZeroClock, add_probe_series, run_http, start_probes,
};
use linerate_core::result::TestResult;
use linerate_core::spec::{HttpSpec, ProbeSpec};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The load with probes beside it: `target` is what the probes ask for (a small object on the
/// first URL's server).
#[allow(clippy::too_many_arguments)]
pub fn run_probed(
    spec: &HttpSpec,
    probe: &ProbeSpec,
    target: &HttpTarget,
    targets: &[HttpTarget],
    agents: &[HttpAgent],
    opts: &ClientOptions,
    sink: &mut dyn Sink,
    interrupt: &AtomicBool,
) -> anyhow::Result<TestResult> {
    let probing = start_probes(spec, probe, target)?;
    wait_until(Instant::now() + Duration::from_secs_f64(probe.idle_seconds), interrupt);
    let mut clock = ZeroClock::new(sink);
    let ran = run_http(spec, targets, agents, opts, &mut clock, interrupt);
    let zero = clock.time_zero();
    if ran.is_ok() {
        wait_until(
            Instant::now() + Duration::from_secs_f64(probe.recovery_seconds),
            interrupt,
        );
    }
    let origin = probing.origin();
    let log = probing.stop();
    let mut result = ran?;
    match zero {
        Some(zero) => add_probe_series(spec, &mut result, &log, origin, zero),
        None => result
            .notes
            .push("the load never started: the probes have no time axis to be put on".into()),
    }
    Ok(result)
}
