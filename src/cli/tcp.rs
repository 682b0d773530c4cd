//! `linerate tcp HOST[:PORT]...`: flags, and their translation into a [`TcpSpec`].

use anyhow::bail;
use linerate_core::client::Target;
use linerate_core::spec::{Direction, Limit, MAX_STREAMS, TcpSpec};
use linerate_core::units::{BitRate, ByteSize, CpuList};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate tcp 10.0.0.2 -P 4 -t 30\n  linerate tcp h2 h3 -l 537600 -n 200000 --window 5376000 --depth 8"
)]
pub struct TcpArgs {
    /// Agents to test against; several run at once (HOST, HOST:PORT, `[V6]:PORT`)
    #[arg(value_name = "HOST[:PORT]", required = true)]
    pub hosts: Vec<String>,

    /// Port for hosts given without one
    #[arg(short = 'p', long, value_name = "N", default_value_t = linerate_core::proto::DEFAULT_PORT)]
    pub port: u16,

    /// Streams per agent (and per direction with --bidir)
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 1)]
    pub streams: u32,

    /// Worker threads on each end, streams spread over them (at most 128)
    #[arg(
        long,
        value_name = "T",
        long_help = "Worker threads on each end (at most 128); streams are spread over them round-robin\nand each worker drives its streams from one event loop. Default: one per CPU the end\nmay use (its --cpus / --peer-cpus list, else its affinity mask), never more than\nstreams. Example: --threads 2"
    )]
    pub threads: Option<u16>,

    /// Pin the client's workers to these CPUs (worker i on the i-th), e.g. 0,2 or 0-3
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuList>,

    /// Pin the agents' workers to these CPUs
    #[arg(long, value_name = "LIST")]
    pub peer_cpus: Option<CpuList>,

    /// Bytes per write and read (K = 1024), e.g. 537600, 64K, 1M
    #[arg(short = 'l', long = "length", value_name = "BYTES", default_value = "128K")]
    pub length: ByteSize,

    /// Buffers to send per stream, then stop (instead of -t)
    #[arg(short = 'n', long = "count", value_name = "COUNT", conflicts_with = "time")]
    pub count: Option<u64>,

    /// Seconds to send [default: 10]
    #[arg(short = 't', long = "time", value_name = "SECONDS")]
    pub time: Option<f64>,

    /// Seconds at the start left out of the figures
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub warmup: f64,

    /// Seconds at the end left out of the figures (needs -t)
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub cooldown: f64,

    /// Seconds between interval lines; 0 for none
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,

    /// Receive socket buffer (SO_RCVBUF, the TCP window) on receiving sockets
    #[arg(short = 'w', long, value_name = "BYTES")]
    pub window: Option<ByteSize>,

    /// Send socket buffer (SO_SNDBUF) on sending sockets
    #[arg(long, value_name = "BYTES")]
    pub sndbuf: Option<ByteSize>,

    /// TCP maximum segment size (TCP_MAXSEG), set before connecting
    #[arg(short = 'M', long, value_name = "BYTES")]
    pub mss: Option<u32>,

    /// TCP congestion control algorithm on both ends, e.g. cubic, bbr
    #[arg(short = 'C', long, value_name = "NAME")]
    pub congestion: Option<String>,

    /// Disable Nagle's algorithm (TCP_NODELAY) on both ends
    #[arg(short = 'N', long)]
    pub nodelay: bool,

    /// Writes/reads kept in flight per stream (pre-posted buffers, via io_uring)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        long_help = "Writes or reads kept in flight per stream, like NTttcp's pre-posted buffers (-a).\n1 uses plain blocking calls; more submits N operations per stream through io_uring\nand resubmits each as it completes. Where io_uring is unavailable (old kernel,\nseccomp), the run falls back to one call at a time and the result says so."
    )]
    pub depth: u32,

    /// The agents send, the client receives
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,

    /// Both directions at once, on separate connections
    #[arg(long)]
    pub bidir: bool,

    /// Print one JSON document (docs/results.md) instead of text
    #[arg(long)]
    pub json: bool,

    /// Link speed to report the throughput against as a share of line rate (10G, 25gbit);
    /// default: the speed of the interface the test used, where it has one
    #[arg(long, value_name = "RATE")]
    pub link_speed: Option<BitRate>,

    /// MTU for the line-rate figure; default: the interface's, else the path MTU
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u32>,

    #[command(flatten)]
    pub reach: super::ConnectArgs,
}

impl TcpArgs {
    pub fn into_spec(self) -> anyhow::Result<TcpSpec> {
        if self.streams == 0 || self.streams > u32::from(MAX_STREAMS) {
            bail!("-P must be between 1 and {MAX_STREAMS} streams, not {}", self.streams);
        }
        let limit = match (self.count, self.time) {
            (Some(n), _) => Limit::Buffers(n),
            (None, Some(t)) => Limit::Seconds(t),
            (None, None) => Limit::Seconds(10.0),
        };
        let spec = TcpSpec {
            streams: self.streams as u16,
            threads: self.threads.unwrap_or(0),
            cpus: self.cpus.map(|c| c.0).unwrap_or_default(),
            peer_cpus: self.peer_cpus.map(|c| c.0).unwrap_or_default(),
            buffer_bytes: self.length,
            limit,
            warmup_seconds: self.warmup,
            cooldown_seconds: self.cooldown,
            interval_seconds: self.interval,
            window_bytes: self.window,
            sndbuf_bytes: self.sndbuf,
            mss_bytes: self.mss,
            congestion: self.congestion,
            nodelay: self.nodelay,
            depth: self.depth,
            direction: if self.bidir {
                Direction::Bidir
            } else if self.reverse {
                Direction::Reverse
            } else {
                Direction::Send
            },
            link_speed: self.link_speed,
            link_mtu_bytes: self.mtu,
        };
        spec.validate()?;
        Ok(spec)
    }

    pub fn targets(&self) -> anyhow::Result<Vec<Target>> {
        super::resolve_targets(&self.hosts, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<TcpArgs, clap::Error> {
        let mut full = vec!["linerate", "tcp"];
        full.extend_from_slice(args);
        Cli::try_parse_from(full).map(|c| match c.command {
            Command::Tcp(t) => t,
            other => panic!("parsed as {other:?}"),
        })
    }

    fn spec(args: &[&str]) -> anyhow::Result<TcpSpec> {
        parse(args).map_err(anyhow::Error::from)?.into_spec()
    }

    #[test]
    fn defaults_are_iperf3_like() {
        let s = spec(&["h"]).expect("valid");
        assert_eq!(s.streams, 1);
        assert_eq!(s.buffer_bytes, ByteSize(128 << 10));
        assert_eq!(s.limit, Limit::Seconds(10.0));
        assert_eq!(s.direction, Direction::Send);
        assert_eq!(s.depth, 1);
    }

    #[test]
    fn length_takes_plain_and_prefixed_sizes() {
        assert_eq!(
            spec(&["h", "-l", "537600"]).expect("ok").buffer_bytes,
            ByteSize(537_600)
        );
        assert_eq!(spec(&["h", "-l64K"]).expect("ok").buffer_bytes, ByteSize(65_536));
        assert_eq!(spec(&["h", "--length=1M"]).expect("ok").buffer_bytes, ByteSize(1 << 20));
        assert_eq!(
            spec(&["h", "-l", "1K", "-l", "2K"])
                .expect("last one wins")
                .buffer_bytes,
            ByteSize(2048)
        );
        assert!(spec(&["h", "-l", "0"]).is_err());
        assert!(parse(&["h", "-l", "lots"]).is_err());
    }

    #[test]
    fn streams_threads_and_cpus() {
        let s = spec(&["h", "-P", "4", "--threads", "2", "--cpus", "0-1", "--peer-cpus=1"]).expect("ok");
        assert_eq!((s.streams, s.threads), (4, 2));
        assert_eq!(s.cpus, [0, 1]);
        assert_eq!(s.peer_cpus, [1]);
        assert_eq!(spec(&["h", "--parallel=3"]).expect("ok").streams, 3);
        let e = spec(&["h", "-P", "100000"]).expect_err("too many");
        assert!(e.to_string().contains("-P must be between 1 and 1024"), "{e}");
        assert!(parse(&["h", "--cpus", "x"]).is_err());
        assert_eq!(spec(&["h", "--threads=128"]).expect("ok").threads, 128);
        assert_eq!(
            spec(&["h", "--threads", "1", "--threads", "3"])
                .expect("last one wins")
                .threads,
            3
        );
        let e = spec(&["h", "--threads", "129"]).expect_err("too many");
        assert!(e.to_string().contains("threads must be between 0 and 128"), "{e}");
    }

    #[test]
    fn count_and_time_conflict() {
        assert_eq!(spec(&["h", "-n", "200000"]).expect("ok").limit, Limit::Buffers(200_000));
        assert_eq!(spec(&["h", "-t", "2.5"]).expect("ok").limit, Limit::Seconds(2.5));
        assert!(parse(&["h", "-n", "5", "-t", "3"]).is_err());
        assert!(spec(&["h", "-n", "5", "--cooldown", "1"]).is_err());
        assert!(spec(&["h", "-t", "2", "--warmup", "1", "--cooldown", "1"]).is_err());
    }

    #[test]
    fn directions() {
        assert_eq!(spec(&["h", "-R"]).expect("ok").direction, Direction::Reverse);
        assert_eq!(spec(&["h", "--reverse"]).expect("ok").direction, Direction::Reverse);
        assert_eq!(spec(&["h", "--bidir"]).expect("ok").direction, Direction::Bidir);
        assert!(parse(&["h", "-R", "--bidir"]).is_err());
    }

    #[test]
    fn socket_options() {
        let s = spec(&[
            "h", "-w", "5376000", "--sndbuf", "1M", "-M", "1400", "-C", "cubic", "-N", "--depth", "8",
        ])
        .expect("ok");
        assert_eq!(s.window_bytes, Some(ByteSize(5_376_000)));
        assert_eq!(s.sndbuf_bytes, Some(ByteSize(1 << 20)));
        assert_eq!(s.mss_bytes, Some(1400));
        assert_eq!(s.congestion.as_deref(), Some("cubic"));
        assert!(s.nodelay);
        assert_eq!(s.depth, 8);
        assert!(spec(&["h", "--depth", "0"]).is_err());
        assert!(spec(&["h", "--mss", "10"]).is_err());
    }

    #[test]
    fn hosts_resolve_with_default_port() {
        let a = parse(&["127.0.0.1", "[::1]:7000", "-p", "6000"]).expect("ok");
        let t = a.targets().expect("resolve");
        assert_eq!(t[0].addr.to_string(), "127.0.0.1:6000");
        assert_eq!(t[1].addr.to_string(), "[::1]:7000");
        assert!(parse(&[]).is_err(), "a host is required");
        assert!(parse(&["h", "--bogus"]).is_err());
    }
}
