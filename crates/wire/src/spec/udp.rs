//! The UDP stream test's spec (and its multicast group).

use super::*;
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

/// The smallest UDP payload: linerate's datagram header (docs/protocol.md).
pub const UDP_HEADER_BYTES: u32 = 32;
/// The largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD_BYTES: u32 = 65_507;

/// A UDP stream test, as UDPmon ran them: datagrams of one size at a regular spacing.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct UdpSpec {
    /// Streams per agent and per direction (`-P`), each on its own socket and worker.
    pub streams: u16,
    /// CPUs the client's workers are pinned to; empty = unpinned.
    pub cpus: Vec<usize>,
    /// CPUs the agents' workers are pinned to.
    pub peer_cpus: Vec<usize>,
    /// UDP payload per datagram, bytes (`-l`), linerate's 32-byte header included.
    pub payload_bytes: u32,
    /// Datagrams per stream (`-n`) or seconds (`-t`), the warm-up, cool-down and interval.
    #[serde(flatten)]
    pub timing: Timing,
    /// Time between datagrams of a stream, ns; 0 = as fast as possible.
    pub gap_ns: u64,
    /// SO_RCVBUF asked for on receiving sockets; None = linerate's default (4 MiB, forced as root).
    pub window_bytes: Option<ByteSize>,
    /// Width of the arrival-spacing histogram's bins, microseconds (`--bin`).
    pub bin_us: u32,
    /// The ends' clocks agree (PTP, NTP): report one-way delay as it is, not relative to its minimum.
    pub synced_clocks: bool,
    pub direction: Direction,
    /// Send to a multicast group instead of each agent: every agent that joined it receives.
    #[serde(default)]
    pub multicast: Option<Multicast>,
    /// `--probe`: latency probes beside the load (idle, loaded, recovery); None = none. Absent
    /// from documents written before it (and when None).
    #[serde(default)]
    pub probe: Option<ProbeSpec>,
    /// `--dscp`: the DSCP classes the datagrams carry, given to each direction's streams in
    /// turn; empty = the kernel's default. Absent from documents written before it (and when
    /// empty).
    #[serde(default)]
    pub dscp: Vec<Dscp>,
}

/// A multicast UDP test's group: stream i goes to `group:port+i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Multicast {
    // `core::net`: the address type alone, no socket (std re-exports this very type).
    pub group: core::net::IpAddr,
    pub port: u16,
    /// Carried in every datagram in place of an agent's cookie (one sender, many receivers).
    pub test_id: u64,
    /// IP_MULTICAST_TTL / hop limit.
    pub ttl: u8,
}

impl UdpSpec {
    /// Whether each side is rated over its own window (first to last send, first to last
    /// arrival, as UDPmon did): only when no warm-up or cool-down cuts the measurement window.
    pub fn own_windows(&self) -> bool {
        self.timing.whole_run_counts()
    }

    /// The datagrams a stream is expected to carry: its count, else its time at its spacing
    /// (a million a second when unpaced). What receivers size their sequence tracking for.
    pub fn expected_datagrams(&self) -> u64 {
        match self.timing.limit {
            Limit::Buffers(n) => n,
            Limit::Seconds(s) if self.gap_ns > 0 => (s * 1e9 / self.gap_ns as f64) as u64 + 1,
            Limit::Seconds(s) => (s * 1e6) as u64,
        }
    }

    pub fn new() -> UdpSpec {
        UdpSpec {
            streams: 1,
            cpus: Vec::new(),
            peer_cpus: Vec::new(),
            payload_bytes: 1472,
            timing: Timing::new(Limit::Seconds(10.0)),
            gap_ns: 0,
            window_bytes: None,
            bin_us: 1,
            synced_clocks: false,
            direction: Direction::Send,
            multicast: None,
            probe: None,
            dscp: Vec::new(),
        }
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        check("streams (-P)", f64::from(self.streams), 1.0, f64::from(MAX_STREAMS))?;
        check(
            "datagram payload (-l)",
            f64::from(self.payload_bytes),
            f64::from(UDP_HEADER_BYTES),
            f64::from(MAX_UDP_PAYLOAD_BYTES),
        )?;
        check("gap (ns)", self.gap_ns as f64, 0.0, 60e9)?;
        self.timing.validate(&TimingRules {
            // 2^32 datagrams is the most a receiver tracks (engine::sequence).
            count: Some(("datagram count (-n)", 4_294_967_296.0)),
            sampled_streams: self.streams_per_agent(),
            ramp: false,
        })?;
        check("histogram bin (us)", f64::from(self.bin_us), 1.0, 1e6)?;
        if let Some(p) = &self.probe {
            p.validate()?;
        }
        check_cpus(self.cpus.iter().chain(&self.peer_cpus))?;
        dscp::validate_all(&self.dscp)?;
        if let Some(w) = self.window_bytes {
            check("receive buffer", w.0 as f64, 1.0, i32::MAX as f64)?;
        }
        if let Some(m) = &self.multicast {
            if !m.group.is_multicast() {
                return Err(SpecError::Conflict(format!("{} is not a multicast address", m.group)));
            }
            if self.direction != Direction::Send {
                return Err(SpecError::Conflict(
                    "multicast runs client to agents only (no -R, --bidir)".into(),
                ));
            }
            check(
                "multicast port",
                f64::from(m.port),
                1024.0,
                65_535.0 - f64::from(self.streams),
            )?;
        }
        Ok(())
    }

    /// Streams per agent, counting both directions.
    pub fn streams_per_agent(&self) -> usize {
        let per = usize::from(self.streams);
        if self.direction == Direction::Bidir {
            2 * per
        } else {
            per
        }
    }

    /// The DSCP class of stream `index` (per agent), None without `--dscp`.
    pub fn dscp_of(&self, index: usize) -> Option<Dscp> {
        class_of(&self.dscp, index, usize::from(self.streams))
    }

    /// Which way stream `index` carries data (as for TCP).
    pub fn stream_flows_forward(&self, index: usize) -> bool {
        match self.direction {
            Direction::Send => true,
            Direction::Reverse => false,
            Direction::Bidir => index < usize::from(self.streams),
        }
    }

    /// The gap, ns, that sends `payload_bytes` datagrams at `bits_per_second` of payload per
    /// stream ([`crate::units::spacing_ns`]'s rule: rounded, at least 1; 0 for a rate of 0, as
    /// fast as possible). The CLI's `--rate` and iperf3's `-b` both come here.
    pub fn gap_ns_at(payload_bytes: u32, bits_per_second: f64) -> u64 {
        crate::units::spacing_ns(f64::from(payload_bytes) * 8.0, bits_per_second)
    }

    /// The send rate this spacing makes, per stream, in payload bits/s (None: as fast as possible).
    pub fn stream_bits_per_second(&self) -> Option<f64> {
        (self.gap_ns > 0).then(|| f64::from(self.payload_bytes) * 8.0 * 1e9 / self.gap_ns as f64)
    }
}

impl Serialize for UdpSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = &self.timing;
        let mut out = serializer.serialize_struct(
            "UdpSpec",
            14 + usize::from(self.probe.is_some()) + usize::from(!self.dscp.is_empty()),
        )?;
        keys!(out, self, streams, cpus, peer_cpus, payload_bytes);
        keys!(out, t, limit);
        keys!(out, self, gap_ns);
        keys!(out, t, warmup_seconds, cooldown_seconds, interval_seconds);
        keys!(out, self, window_bytes, bin_us, synced_clocks, direction, multicast);
        // Absent without probes, so documents before them write again byte for byte.
        if self.probe.is_some() {
            keys!(out, self, probe);
        }
        if !self.dscp.is_empty() {
            keys!(out, self, dscp);
        }
        out.end()
    }
}

impl Default for UdpSpec {
    fn default() -> Self {
        Self::new()
    }
}
