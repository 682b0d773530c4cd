//! What every connection thread of one agent shares ([`State`]): its configuration, this host,
//! the tests running and the connections opening, the data connections expected, the memory
//! budget, the profile in force and whether the agent is stopping; and the counted [`Slot`] a
//! running test holds.

use super::admit::Opening;
use super::budget::Budget;
use super::config::AgentConfig;
use super::exporter::Exporter;
use super::pending::Pending;
use super::profile::Running;
use crate::metrics::host::HostInfo;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What every connection thread of one agent shares.
pub(super) struct State {
    pub(super) config: AgentConfig,
    pub(super) host: HostInfo,
    pub(super) tests: AtomicUsize,
    /// Latency probe sessions running beside tests (`RrSpec::stamp`), counted apart: a probe
    /// session is admitted beside the test it probes (at most `max_tests` of them).
    pub(super) probes: AtomicUsize,
    /// Clock sessions answered now (at most `clock::MAX_CLOCK_SESSIONS`).
    pub(super) clocks: AtomicUsize,
    pub(super) opening: Opening,
    pub(super) pending: Pending,
    pub(super) budget: Budget,
    /// The soft descriptor limit in force (raised to the hard one at bind).
    pub(super) fd_limit: u64,
    /// The profile whose test runs now, if any, and its pending undo: one profiled test at a time.
    pub(super) profile_running: Running,
    /// The owner stopped the agent: running tests end, set-up refuses.
    pub(super) stopping: AtomicBool,
    /// The counters `serve --metrics` exposes, updated on events and at a test's end.
    pub(super) metrics: Exporter,
}

/// Gives a counted slot back when dropped, however the holder ends.
pub(super) struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    pub(super) fn take(counter: &'a AtomicUsize, max: usize) -> Option<Slot<'a>> {
        let prev = counter.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(counter);
        (prev < max).then_some(slot)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
