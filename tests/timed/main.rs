//! Timed tests: every test that asserts a rate, a delay, a spacing, a loss share, a
//! CPU or interface count, a start skew or a ratio to a peer tool, and every test across a lab
//! link shaped in rate, delay, loss or order. Cargo runs test binaries one after another, so
//! nothing of the suite's other targets (tests/it, the crates' unit tests) runs beside these;
//! inside this one every test is written `#[apply(timed!)]`, which takes [`machine::alone`] for
//! the test's length, so no two of them run at once either, whatever `--test-threads` says.
//! `tests/it/layout/` holds the split: no shaped link and no lock under tests/it, no plain
//! `#[test]` here. A failure prints the machine's state beside its own figures.

/// `#[apply(timed!)] fn name() { ... }`: a test that runs alone in this process and, when it
/// fails, says what the machine was doing (load average, the copy-loop control) before and at the
/// failure. The only way a test is written in this target.
macro_rules! timed {
    ($(#[$attr:meta])* fn $name:ident() $body:block) => {
        $(#[$attr])*
        #[test]
        fn $name() {
            let _alone = $crate::machine::alone(stringify!($name));
            $body
        }
    };
}

#[path = "../harness/attack.rs"]
mod attack;
#[path = "../harness/fake_agent.rs"]
mod fake_agent;
#[path = "../harness/iperf3.rs"]
mod iperf3;
#[path = "../harness/kinds.rs"]
mod kinds;
#[path = "../harness/unit_check.rs"]
mod unit_check;
#[path = "../harness/util.rs"]
mod util;

mod agent;
mod attack_agent;
mod bufferbloat;
mod compare;
mod cost;
mod flags;
mod fleet;
mod h2_client;
mod harden3_fleetclock;
mod harden3_iperf3targets;
mod harden3_relay;
mod harden3_serving;
mod http;
mod iperf3_client;
mod iperf3_server;
mod lab;
mod machine;
mod mix;
mod netns;
mod probe;
mod repeat;
mod rpm;
mod rr;
mod tcp;
mod udp;
