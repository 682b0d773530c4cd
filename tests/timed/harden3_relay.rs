//! A relay answers a closed port, a silent listener and a listener
//! that drips bytes alike, in words and in time, so that a secret holder cannot use a `from`
//! agent to probe ports from where it stands.

use crate::fake_agent::*;
use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;
use std::time::{Duration, Instant};

#[apply(timed!)]
fn issue_39_a_relay_answers_a_closed_port_a_silent_and_a_stalling_listener_alike() {
    let from = fleet_agent(&[]);
    let (silent, _, stop_silent) = not_an_agent(false);
    let (dripping, _, stop_drip) = not_an_agent(true);
    let _stops = (
        crate::attack::StopOnDrop(&stop_silent),
        crate::attack::StopOnDrop(&stop_drip),
    );
    let closed = closed_port();
    // Each asked in turn: the times are the relay's alone, not a loaded machine's sharing.
    let mut seen = Vec::new();
    for (what, to) in [("closed", closed), ("silent", silent), ("dripping", dripping)] {
        let to = to.to_string();
        let began = Instant::now();
        let out = with_fleet_secret(
            &["tcp", "--json", "--no-store", "--from", &from.addr, &to, "-t", "1"],
            Duration::from_secs(60),
        );
        let took = began.elapsed();
        let err = stderr(&out).replace(&to, "TO");
        assert!(!out.status.success(), "{what}: {err}");
        seen.push((what, took, err));
    }
    let (_, _, first) = &seen[0];
    for (what, took, err) in &seen {
        assert_eq!(err, first, "{what}: the same words for every far end that is no agent");
        // The relay answers at its 5 s reach time (REACH_TIME); the controller adds its own
        // connection and a clock reading of the local agent, well under a second even on a
        // loaded box. On main: 0.1, 5 and 10 s.
        assert!(
            *took >= Duration::from_millis(4900) && *took < Duration::from_millis(7500),
            "{what}: answered after {took:?} ({seen:?})"
        );
    }
}
