//! `linerate rr HOST[:PORT]`: request-response round trips (netperf's TCP_RR, UDP_RR, TCP_CRR;
//! UDPmon's latency against frame size).

use anyhow::{Context, bail};
use linerate_core::client::Target;
use linerate_core::spec::{Limit, MAX_STREAMS, RrProto, RrSpec};
use linerate_core::units::{BitRate, ByteSize, CpuList};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate rr 10.0.0.2 -t 10\n  linerate rr 10.0.0.2 --proto udp --sizes 64:8972:256 --expect 10G,8.5G\n  linerate rr 10.0.0.2 --connect -P 4"
)]
pub struct RrArgs {
    /// Agents to test against
    #[arg(value_name = "HOST[:PORT]", required = true)]
    pub hosts: Vec<String>,

    /// Agent port when HOST gives none
    #[arg(short = 'p', long, value_name = "N", default_value_t = linerate_core::proto::DEFAULT_PORT)]
    pub port: u16,

    /// Transport
    #[arg(long, value_enum, default_value_t = ProtoArg::Tcp)]
    pub proto: ProtoArg,

    /// Request size, bytes
    #[arg(long, value_name = "BYTES", default_value = "1")]
    pub request: ByteSize,

    /// Response size, bytes
    #[arg(long, value_name = "BYTES", default_value = "1")]
    pub response: ByteSize,

    /// Transactions per stream, then stop (instead of -t)
    #[arg(short = 'n', long = "count", value_name = "COUNT", conflicts_with = "time")]
    pub count: Option<u64>,

    /// Seconds to run [default: 10; 2 per sweep point]
    #[arg(short = 't', long = "time", value_name = "SECONDS")]
    pub time: Option<f64>,

    /// Open loop: transactions per second per stream, each timed from its scheduled start
    /// [default: closed loop, the next request when the response is in]
    #[arg(long, value_name = "PER_SECOND")]
    pub rate: Option<f64>,

    /// Concurrent transaction streams per agent (each its own socket and thread)
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 1)]
    pub streams: u32,

    /// Pin the client's workers to these CPUs (0,2 or 1-3)
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuList>,

    /// Pin the agents' workers to these CPUs
    #[arg(long, value_name = "LIST")]
    pub peer_cpus: Option<CpuList>,

    /// Busy-poll the sockets (SO_BUSY_POLL) for this many microseconds, where permitted
    #[arg(long, value_name = "MICROSECONDS", num_args = 0..=1, default_missing_value = "50")]
    pub busy_poll: Option<u32>,

    /// A new TCP connection per transaction (netperf's TCP_CRR): connect, request, response, close
    #[arg(long)]
    pub connect: bool,

    /// UDP: milliseconds to wait for a response before the transaction counts as lost
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub timeout: u32,

    /// Seconds at the start left out of the figures
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub warmup: f64,

    /// Seconds between interval lines; 0 for none
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,

    /// Sweep the request size: a list (64,512,1472) or START:END:STEP, bytes; latency against
    /// size with its least-squares line
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<String>,

    /// With --sizes, what the size applies to
    #[arg(long, value_enum, default_value_t = SweepWhat::Request, requires = "sizes")]
    pub sweep: SweepWhat,

    /// Bandwidths of the data path's stages (copies, buses, links), e.g. 10G,8.5G,8.5G: the slope
    /// to expect is the sum of 1/bandwidth [default: the link speed of the interface toward the
    /// first agent]
    #[arg(long, value_name = "RATES", value_delimiter = ',', requires = "sizes")]
    pub expect: Vec<BitRate>,

    /// Print one JSON document (docs/results.md) instead of text
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub reach: super::ConnectArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtoArg {
    Tcp,
    Udp,
}

/// Which frames a size sweep grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepWhat {
    /// Requests grow, responses keep --response (the bytes cross the path once per transaction)
    Request,
    /// Requests and responses grow together (the bytes cross twice)
    Both,
}

impl RrArgs {
    pub fn into_spec(self) -> anyhow::Result<RrSpec> {
        if self.streams == 0 || self.streams > u32::from(MAX_STREAMS) {
            bail!("-P must be between 1 and {MAX_STREAMS} streams, not {}", self.streams);
        }
        let bytes = |b: ByteSize, flag: &str| u32::try_from(b.0).with_context(|| format!("{flag} is too large"));
        let default_seconds = if self.sizes.is_some() { 2.0 } else { 10.0 };
        let spec = RrSpec {
            proto: match self.proto {
                ProtoArg::Tcp => RrProto::Tcp,
                ProtoArg::Udp => RrProto::Udp,
            },
            streams: self.streams as u16,
            cpus: self.cpus.map(|c| c.0).unwrap_or_default(),
            peer_cpus: self.peer_cpus.map(|c| c.0).unwrap_or_default(),
            request_bytes: bytes(self.request, "--request")?,
            response_bytes: bytes(self.response, "--response")?,
            limit: match (self.count, self.time) {
                (Some(n), _) => Limit::Buffers(n),
                (None, Some(t)) => Limit::Seconds(t),
                (None, None) => Limit::Seconds(default_seconds),
            },
            rate: self.rate,
            connect: self.connect,
            busy_poll_us: self.busy_poll,
            timeout_ms: self.timeout,
            warmup_seconds: self.warmup,
            interval_seconds: self.interval,
        };
        spec.validate()?;
        Ok(spec)
    }

    /// The sweep's sizes in the order given; None without `--sizes`.
    pub fn sizes(&self) -> anyhow::Result<Option<Vec<u32>>> {
        let Some(text) = &self.sizes else { return Ok(None) };
        let sizes = super::udp::parse_list(text, "--sizes", |v| {
            let b: ByteSize = v.parse()?;
            Ok(u32::try_from(b.0)?)
        })?;
        anyhow::ensure!(sizes.len() <= 10_000, "--sizes has {} points, over 10000", sizes.len());
        Ok(Some(sizes))
    }

    pub fn targets(&self) -> anyhow::Result<Vec<Target>> {
        super::resolve_targets(&self.hosts, self.port)
    }
}
