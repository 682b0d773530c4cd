//! The far side of an HTTP test: an agent on the server's host samples the host (CPU, interfaces,
//! interrupts) over the same window as the client's users, on the one runner, with no data of
//! its own. What it counts as moving, for the runner's idle rule, is the bytes of its interface
//! toward the client: a client that holds the test with nothing moving lets it go at the idle
//! limit, as with every other kind.

use crate::engine::run::{Deadlines, Gate, RunState, Runner, StreamInfo};
use crate::engine::{Control, Sink};
use crate::result::{Role, SideReport, StreamEnd};
use crate::spec::HttpSpec;
use std::thread;
use std::time::{Duration, Instant};

/// How often the worker reads the interface's counters: the idle rule sees movement within this.
const MOVED_POLL: Duration = Duration::from_millis(250);

/// Bytes received and sent on `interface` (every interface when None) since it was created, as
/// this thread's network namespace counts them; 32-bit counters that wrap only look like movement.
fn interface_bytes(interface: Option<&str>) -> u64 {
    crate::metrics::netdev::read()
        .iter()
        .filter(|c| interface.is_none_or(|name| c.name == name))
        .fold(0u64, |sum, c| sum.wrapping_add(c.rx_bytes).wrapping_add(c.tx_bytes))
}

/// The far side of an HTTP test: an agent on the server's host samples it from `started` until
/// the client says the run is over; the window leaves out the ramp. `interface` is the one toward
/// the client (None: all of them), whose bytes keep the run from the idle rule.
pub fn sample_host(spec: &HttpSpec, interface: Option<&str>, sink: &mut dyn Sink, control: &Control) -> SideReport {
    let state = RunState::new(1);
    let gate = Gate::new();
    let shared = state.shared(control);
    let runner = Runner {
        // Nothing moves here by design: the client's users move the data.
        deadlines: Deadlines::sampling(&spec.timing),
        streams: vec![StreamInfo {
            id: 0,
            role: Role::Receive,
            grant: Default::default(),
        }],
        workers: 1,
        name: "linerate-s",
        cpus: &[],
        sched: crate::spec::Sched::Normal,
        tcp_info: None,
        queued: None,
        received: None,
    };
    // The whole run and a margin: a client that never says stop does not hold the agent.
    let limit = runner.deadlines.deadline().unwrap_or_default() + Duration::from_secs(30);
    let ran = runner.drive(&shared, &gate, sink, |_| {
        gate.arrive_and_wait(&shared.sampler);
        let began = Instant::now();
        let base = interface_bytes(interface);
        let mut read_at = began;
        while !(shared.control.aborted() || shared.control.sending_stopped()) && began.elapsed() < limit {
            if read_at.elapsed() >= MOVED_POLL {
                read_at = Instant::now();
                let moved = interface_bytes(interface).wrapping_sub(base);
                shared.counters[0]
                    .bytes
                    .store(moved, std::sync::atomic::Ordering::Relaxed);
            }
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
