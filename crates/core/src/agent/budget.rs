//! The agent's memory budget across all its tests: what a spec makes this end
//! allocate is counted before the test is accepted, and a test that does not fit beside those
//! running is refused with the figures (`serve --max-memory`).

use crate::engine::sequence::tracked_datagrams;
use crate::engine::udp::{BATCH, MAX_BINS};
use crate::spec::{RrSpec, TcpSpec, TestSpec, UdpSpec};
use std::sync::Mutex;

/// Per stream, what no spec field names: its counters, sample slots, thread and socket.
const STREAM_OVERHEAD_BYTES: u64 = 64 << 10;
/// The default budget is this share of the host's memory (MemTotal)...
const DEFAULT_SHARE: u64 = 4;
/// ...but no more than this.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// The budget `serve` uses without `--max-memory`: a quarter of MemTotal, at most 4 GiB (1 GiB
/// when MemTotal cannot be read).
pub fn default_budget_bytes() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    total.map_or(1 << 30, |t| (t / DEFAULT_SHARE).min(DEFAULT_MAX_BYTES))
}

/// What this end of a test of `spec` allocates, at most, in bytes: buffers in user space (length
/// x depth per stream), the socket buffers it asks the kernel for (which the kernel doubles),
/// the receivers' loss maps and histograms, and a per-stream overhead.
pub(super) fn spec_bytes(spec: &TestSpec) -> u64 {
    let streams = spec.streams_per_agent() as u64;
    let per_stream = match spec {
        TestSpec::Tcp(t) => tcp_stream_bytes(t),
        TestSpec::Udp(u) => udp_stream_bytes(u),
        TestSpec::Rr(r) => rr_stream_bytes(r),
        TestSpec::Http(_) | TestSpec::Rpm(_) => 0,
    };
    let maps = match spec {
        TestSpec::Udp(u) => udp_loss_maps_bytes(u),
        _ => 0,
    };
    streams
        .saturating_mul(per_stream.saturating_add(STREAM_OVERHEAD_BYTES))
        .saturating_add(maps)
}

fn tcp_stream_bytes(t: &TcpSpec) -> u64 {
    let buffers = t.buffer_bytes.0.saturating_mul(u64::from(t.depth.max(1)));
    let sockets = t.window_bytes.map_or(0, |w| w.0).max(t.sndbuf_bytes.map_or(0, |s| s.0));
    buffers.saturating_add(sockets.saturating_mul(2))
}

fn udp_stream_bytes(u: &UdpSpec) -> u64 {
    let datagram = u64::from(u.payload_bytes) + 1;
    // The arrival bins, the batch buffers each way and the socket buffer.
    let bins = MAX_BINS as u64 * 8;
    let batches = datagram * BATCH as u64 * 2;
    let socket = u.window_bytes.map_or(0, |w| w.0) * 2;
    bins + batches + socket
}

/// The loss maps of the streams this end receives on (what flows forward): a bit per sequence
/// number each tracks, every one of which a sender, or a forger, can make it touch.
fn udp_loss_maps_bytes(u: &UdpSpec) -> u64 {
    let receiving = (0..u.streams_per_agent())
        .filter(|&i| u.stream_flows_forward(i))
        .count();
    (receiving as u64).saturating_mul(tracked_datagrams(u).div_ceil(64) * 8)
}

fn rr_stream_bytes(r: &RrSpec) -> u64 {
    u64::from(r.request_bytes).max(65_536) + u64::from(r.response_bytes)
}

/// Memory promised to the tests running now, against the budget.
pub(super) struct Budget {
    max_bytes: u64,
    in_use: Mutex<u64>,
}

/// A test's share of the budget, given back when it ends however it ends.
pub(super) struct Reservation<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut in_use = self.budget.in_use.lock().unwrap_or_else(|e| e.into_inner());
        *in_use = in_use.saturating_sub(self.bytes);
    }
}

/// Why a test does not fit the budget: the figures for the refusal.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct OverBudget {
    pub need: u64,
    pub max: u64,
    pub in_use: u64,
}

impl OverBudget {
    /// Whether the test would not fit even on an idle agent.
    pub(super) fn never_fits(&self) -> bool {
        self.need > self.max
    }
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this test needs {} of memory on the agent, its budget is {} of which {} is in use (serve --max-memory)",
            gib(self.need),
            gib(self.max),
            gib(self.in_use)
        )
    }
}

/// Bytes as binary units with one decimal: "4.0 GiB", "512.0 MiB".
fn gib(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, name) in UNITS {
        if bytes >= size {
            return format!("{:.1} {name}", bytes as f64 / size as f64);
        }
    }
    format!("{bytes} B")
}

impl Budget {
    pub(super) fn new(max_bytes: u64) -> Budget {
        Budget {
            max_bytes,
            in_use: Mutex::new(0),
        }
    }

    /// Counts `bytes` against the budget, or says why they do not fit.
    pub(super) fn reserve(&self, bytes: u64) -> Result<Reservation<'_>, OverBudget> {
        let mut in_use = self.in_use.lock().unwrap_or_else(|e| e.into_inner());
        if in_use.saturating_add(bytes) > self.max_bytes {
            return Err(OverBudget {
                need: bytes,
                max: self.max_bytes,
                in_use: *in_use,
            });
        }
        *in_use += bytes;
        Ok(Reservation { budget: self, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Limit;
    use crate::units::ByteSize;

    #[test]
    fn issue_14_a_gibibyte_buffer_four_deep_needs_four_gibibytes() {
        let mut t = TcpSpec::new();
        t.buffer_bytes = ByteSize(1 << 30);
        t.depth = 4;
        let need = spec_bytes(&TestSpec::Tcp(t.clone()));
        assert_eq!(need, (4u64 << 30) + STREAM_OVERHEAD_BYTES);
        t.streams = 3;
        assert_eq!(spec_bytes(&TestSpec::Tcp(t)), 3 * need);
        let budget = Budget::new(2 << 30);
        let refused = budget.reserve(need).err().expect("over the budget");
        assert!(refused.never_fits());
        assert_eq!(
            refused.to_string(),
            "this test needs 4.0 GiB of memory on the agent, its budget is 2.0 GiB of which 0 B is in use (serve --max-memory)"
        );
    }

    #[test]
    fn tests_that_fit_alone_but_not_together_are_refused_in_turn() {
        let budget = Budget::new(100);
        let first = budget.reserve(60).expect("fits");
        let second = budget.reserve(60).err().expect("does not fit beside the first");
        assert_eq!(
            second,
            OverBudget {
                need: 60,
                max: 100,
                in_use: 60
            }
        );
        assert!(!second.never_fits());
        drop(first);
        let _again = budget.reserve(60).expect("fits once the first ended");
    }

    #[test]
    fn every_kind_counts_its_streams_and_buffers() {
        let mut r = RrSpec::new();
        r.request_bytes = 16 << 20;
        r.streams = 2;
        assert_eq!(
            spec_bytes(&TestSpec::Rr(r)),
            2 * ((16 << 20) + 1 + STREAM_OVERHEAD_BYTES)
        );
        let mut u = UdpSpec::new();
        u.timing.limit = Limit::Buffers(8_000_000);
        let bytes = spec_bytes(&TestSpec::Udp(u));
        assert!(bytes > 1_000_000 + MAX_BINS as u64 * 8, "{bytes}");
        assert!(default_budget_bytes() <= DEFAULT_MAX_BYTES);
        assert!(default_budget_bytes() > 0);
    }

    #[test]
    fn issue_22_a_udp_receiver_counts_every_number_its_map_may_hold() {
        let mut u = UdpSpec::new();
        u.streams = 4;
        // 10 s as fast as possible: 2^25 a second, a bit each, 40 MiB per stream.
        let per_stream = spec_bytes(&TestSpec::Udp(u.clone())) / 4;
        let map = (10 * crate::engine::sequence::MAX_DATAGRAMS_PER_SECOND + 1).div_ceil(64) * 8;
        assert!(
            per_stream > map && per_stream < map + (4 << 20),
            "{per_stream} vs {map}"
        );
        // The largest count the spec allows: 2^32 numbers, 512 MiB per stream.
        u.timing.limit = Limit::Buffers(1 << 32);
        assert!(spec_bytes(&TestSpec::Udp(u.clone())) > 4 * (512 << 20));
        // The agent sends on every stream of a reverse test: no map.
        u.direction = crate::spec::Direction::Reverse;
        assert!(spec_bytes(&TestSpec::Udp(u)) < 8 << 20);
    }
}
