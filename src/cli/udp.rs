//! `linerate udp`: paced UDP streams, UDPmon's method.

use super::SecretArgs;
use anyhow::{Context, bail};
use linerate_core::client::Target;
use linerate_core::spec::{Direction, Limit, MAX_STREAMS, UdpSpec};
use linerate_core::units::{BitRate, ByteSize, CpuList};

#[derive(Debug, clap::Args)]
pub struct UdpArgs {
    /// Agents to test against
    #[arg(value_name = "HOST[:PORT]", required = true)]
    pub hosts: Vec<String>,

    /// Agent port when HOST gives none
    #[arg(short = 'p', long, value_name = "N", default_value_t = linerate_core::proto::DEFAULT_PORT)]
    pub port: u16,

    /// Streams per agent (each its own socket and thread)
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 1)]
    pub streams: u32,

    /// Pin the client's workers to these CPUs (0,2 or 1-3)
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuList>,

    /// Pin the agents' workers to these CPUs
    #[arg(long, value_name = "LIST")]
    pub peer_cpus: Option<CpuList>,

    /// UDP payload per datagram, bytes (32 to 65507; linerate's 32-byte header included)
    #[arg(short = 'l', long = "length", value_name = "BYTES", default_value = "1472")]
    pub length: ByteSize,

    /// Datagrams per stream
    #[arg(short = 'n', long = "count", value_name = "COUNT", conflicts_with = "time")]
    pub count: Option<u64>,

    /// Seconds to send (default 10)
    #[arg(short = 't', long = "time", value_name = "SECONDS")]
    pub time: Option<f64>,

    /// Microseconds between datagrams of a stream (0: as fast as possible)
    #[arg(long, value_name = "MICROSECONDS", conflicts_with = "rate")]
    pub gap: Option<f64>,

    /// Send rate per stream in payload bits/s (100M, 1G; 0: as fast as possible)
    #[arg(short = 'b', long, value_name = "RATE")]
    pub rate: Option<BitRate>,

    /// Seconds at the start left out of the throughput figures
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub warmup: f64,

    /// Seconds between interval lines; 0 for none
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,

    /// Receive socket buffer (SO_RCVBUF) on receivers (default 4M)
    #[arg(short = 'w', long, value_name = "BYTES")]
    pub window: Option<ByteSize>,

    /// Width of the arrival-spacing histogram's bins, microseconds
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 1)]
    pub bin: u32,

    /// The ends' clocks are synchronised (PTP): report one-way delay as measured, not above its minimum
    #[arg(long)]
    pub synced_clocks: bool,

    /// The agents send
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,

    /// Both directions at once
    #[arg(long)]
    pub bidir: bool,

    /// Print one JSON document (docs/results.md) instead of text
    #[arg(long)]
    pub json: bool,

    /// Seconds to wait for an agent to answer a connection
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub connect_timeout: f64,

    #[command(flatten)]
    pub secret: SecretArgs,
}

impl UdpArgs {
    pub fn into_spec(self) -> anyhow::Result<UdpSpec> {
        if self.streams == 0 || self.streams > u32::from(MAX_STREAMS) {
            bail!("-P must be between 1 and {MAX_STREAMS} streams, not {}", self.streams);
        }
        let payload = u32::try_from(self.length.0).context("-l is too large")?;
        let limit = match (self.count, self.time) {
            (Some(n), _) => Limit::Buffers(n),
            (None, Some(t)) => Limit::Seconds(t),
            (None, None) => Limit::Seconds(10.0),
        };
        let gap_ns = match (self.gap, self.rate) {
            (Some(g), _) => {
                if !(g.is_finite() && (0.0..=60e6).contains(&g)) {
                    bail!("--gap must be between 0 and 60000000 microseconds, not {g}");
                }
                (g * 1e3).round() as u64
            }
            (None, Some(r)) if r.0 > 0.0 => (f64::from(payload) * 8.0 * 1e9 / r.0).round().max(1.0) as u64,
            _ => 0,
        };
        let spec = UdpSpec {
            streams: self.streams as u16,
            cpus: self.cpus.map(|c| c.0).unwrap_or_default(),
            peer_cpus: self.peer_cpus.map(|c| c.0).unwrap_or_default(),
            payload_bytes: payload,
            limit,
            gap_ns,
            warmup_seconds: self.warmup,
            interval_seconds: self.interval,
            window_bytes: self.window,
            bin_us: self.bin,
            synced_clocks: self.synced_clocks,
            direction: if self.bidir {
                Direction::Bidir
            } else if self.reverse {
                Direction::Reverse
            } else {
                Direction::Send
            },
        };
        spec.validate()?;
        Ok(spec)
    }

    pub fn targets(&self) -> anyhow::Result<Vec<Target>> {
        self.hosts
            .iter()
            .map(|h| Target::resolve(h, self.port).with_context(|| format!("agent address '{h}'")))
            .collect()
    }
}
