//! The far side of an HTTP test: an agent on the server's host samples the host (CPU, interfaces,
//! interrupts) over the same window as the client's users, on the one runner, with no data of
//! its own.

use crate::engine::run::{Gate, Plan, RunState, Runner, StreamInfo};
use crate::engine::{Control, Sink};
use crate::result::{Role, SideReport, StreamEnd};
use crate::spec::HttpSpec;
use std::thread;
use std::time::{Duration, Instant};

/// The far side of an HTTP test: an agent on the server's host samples it from `started` until
/// the client says the run is over; the window leaves out the ramp.
pub fn sample_host(spec: &HttpSpec, sink: &mut dyn Sink, control: &Control) -> SideReport {
    let state = RunState::new(1);
    let gate = Gate::new();
    let shared = state.shared(control);
    let runner = Runner {
        // Nothing moves here by design: the client's users move the data.
        plan: Plan::sampling(&spec.timing),
        streams: vec![StreamInfo {
            id: 0,
            role: Role::Receive,
            grant: Default::default(),
        }],
        workers: 1,
        name: "linerate-s",
        cpus: &[],
        tcp_info: None,
    };
    // The whole run and a margin: a client that never says stop does not hold the agent.
    let limit = runner.plan.deadline().unwrap_or_default() + Duration::from_secs(30);
    let ran = runner.drive(&shared, &gate, sink, |_| {
        gate.arrive_and_wait(&shared.sampler);
        let began = Instant::now();
        while !(shared.control.aborted() || shared.control.sending_stopped()) && began.elapsed() < limit {
            thread::sleep(Duration::from_millis(20));
        }
        shared.finish(0, StreamEnd::Stopped);
    });
    let mut report = match ran {
        Ok((report, _)) => report,
        Err(e) => SideReport {
            partial: true,
            notes: vec![format!("the host was not sampled: {e}")],
            ..Default::default()
        },
    };
    report.streams.clear();
    report.intervals.clear();
    report.io = "none".into();
    report
}
