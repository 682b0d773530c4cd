//! Clock sessions held to a cap of their own. The
//! timed half (a session's idle and total deadlines, a fleet round beside an agent 800 ms away)
//! is in tests/timed/harden3_fleetclock.rs.

use crate::attack::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// 3,000 clock sessions opened one after another against an agent without a secret, each kept
/// open by the flood: the agent's threads and descriptors, sampled while it goes on, stay within
/// the clock sessions' cap (16, `agent::clock::MAX_CLOCK_SESSIONS`) over what it held before,
/// and the sessions past the cap are refused `busy` with the limit named. On main every session
/// kept its thread: 3,002 threads and 3,006 descriptors.
#[test]
fn issue_39_3000_clock_sessions_are_held_to_their_cap() {
    const SESSIONS: usize = 3000;
    // The cap, and room for the one connection in its handshake and the agent's own threads
    // that come and go (the sampler sees a few at once at most).
    const CAP: usize = 16;
    const SLACK: usize = 16;
    let agent = LoggedAgent::start(&[], &[]);
    let (threads_before, fds_before) = (agent.threads(), agent.descriptors());
    let stop = AtomicBool::new(false);
    let (peak_threads, peak_fds) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let (mut readings, mut busy, mut other) = (0usize, 0usize, Vec::new());
    let began = Instant::now();
    std::thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                peak_threads.fetch_max(agent.threads(), Ordering::Relaxed);
                peak_fds.fetch_max(agent.descriptors(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let mut held = Vec::with_capacity(SESSIONS);
        for _ in 0..SESSIONS {
            // Bounded: the unfixed agent gave every session a thread; past 1,000 it has shown it.
            if began.elapsed() > Duration::from_secs(40) {
                break;
            }
            match open_clock_session(agent.addr) {
                Some((s, answer)) => {
                    match answer["type"].as_str() {
                        Some("clock_reading") => readings += 1,
                        Some("error") if answer["kind"] == "busy" => {
                            let m = answer["message"].as_str().unwrap_or_default();
                            assert!(m.contains("clock sessions"), "the refusal names the limit: {m}");
                            busy += 1;
                        }
                        _ => other.push(answer.to_string()),
                    }
                    held.push(s);
                }
                None => other.push("closed before answering".into()),
            }
        }
        stop.store(true, Ordering::Relaxed);
        drop(held);
    });
    let (threads, fds) = (peak_threads.into_inner(), peak_fds.into_inner());
    eprintln!(
        "{} sessions in {:.1} s: {readings} readings, {busy} busy; agent threads {threads_before} -> peak {threads}, descriptors {fds_before} -> peak {fds}, peak RSS {:.1} MiB",
        readings + busy,
        began.elapsed().as_secs_f64(),
        peak_rss_bytes(agent.child.id()) as f64 / (1 << 20) as f64
    );
    assert!(
        threads <= threads_before + CAP + SLACK,
        "threads held to the cap: {threads_before} before, peak {threads}"
    );
    assert!(
        fds <= fds_before + CAP + SLACK,
        "descriptors held to the cap: {fds_before} before, peak {fds}"
    );
    assert!(
        other.is_empty(),
        "every session answered: {:?}",
        &other[..other.len().min(3)]
    );
    assert_eq!(readings + busy, SESSIONS, "all sessions were opened");
    assert!(busy > 0, "sessions past the cap were refused");
    // The agent still answers a clock once the flood is gone.
    let (_s, answer) = open_clock_session(agent.addr).expect("a session after the flood");
    assert_eq!(answer["type"], "clock_reading", "{answer}");
}
