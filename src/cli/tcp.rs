//! `linerate tcp HOST[:PORT]...`: flags, and their translation into a [`TcpSpec`].

use super::common::{HostArgs, OutputArgs, ProbeArgs, StreamArgs};
use super::timing::TimingArgs;
use super::usage::Usage;
use linerate_core::spec::{Mix, ProbeVia, TcpSpec, Validate, ZeroCopy};
use linerate_core::units::{BitRate, ByteSize};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate tcp 10.0.0.2 -P 4 -t 30\n  linerate tcp h2 h3 -l 537600 -n 200000 --window 5376000 --depth 8\n  linerate tcp 10.0.0.2 -P 2 --mix 70:30 --sizes 1K,8K,64K,512K"
)]
pub struct TcpArgs {
    #[command(flatten)]
    pub hosts: HostArgs,

    #[command(flatten)]
    pub streams: StreamArgs,

    /// Worker threads on each end, streams spread over them (at most 128)
    #[arg(
        long,
        value_name = "T",
        long_help = "Worker threads on each end (at most 128); streams are spread over them round-robin\nand each worker drives its streams from one event loop. Default: one per CPU the end\nmay use (its --cpus / --peer-cpus list, else its affinity mask), never more than\nstreams. Example: --threads 2"
    )]
    pub threads: Option<u16>,

    /// Bytes per write and read (K = 1024), e.g. 537600, 64K, 1M
    #[arg(short = 'l', long = "length", value_name = "BYTES", default_value = "128K")]
    pub length: ByteSize,

    #[command(flatten)]
    pub timing: TimingArgs,

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

    /// Send without copying: sendfile from a memory file (default) or msg (MSG_ZEROCOPY)
    #[arg(
        long,
        value_name = "PATH",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "sendfile",
        long_help = "The senders hand pages to the kernel instead of copying each write. sendfile (the\ndefault, as iperf3 -Z): sendfile(2) from a memory file holding the buffer.\nmsg: send(2) with MSG_ZEROCOPY (SO_ZEROCOPY), completions read from the error\nqueue; it pays for writes above about 10 KB, and to a local socket (loopback) the\nkernel copies anyway, which the result notes. Applies to sending streams on both\nends (-R, --bidir); with --depth above 1 the writes copy and the result says so.\nExamples: --zerocopy, --zerocopy=msg"
    )]
    pub zerocopy: Option<ZeroCopy>,

    /// The agents send, the client receives
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,

    /// Both directions at once, on separate connections
    #[arg(long)]
    pub bidir: bool,

    /// Mixed transfers on each stream: R % agent to client, W % client to agent
    #[arg(
        long,
        value_name = "R:W",
        conflicts_with_all = ["reverse", "bidir"],
        long_help = "The TOE workload: on every stream, transfers of -l bytes one after another, R % of\nthem agent to client (client reads) and W % client to agent (client writes), spread\nevenly in a fixed pattern (70:30: R W R R W R R W R R). A read is a 1-byte request\nanswered by -l bytes, a write -l bytes answered by a 1-byte ack; the next transfer\nstarts when the current one is complete. Sets TCP_NODELAY; -n counts transfers per\nstream. Examples: --mix 70:30, --mix 0:100 (all writes)"
    )]
    pub mix: Option<Mix>,

    /// Sweep -l: a list (4K,64K,1M) or START:END:STEP, bytes; a row per size
    #[arg(
        long,
        value_name = "LIST",
        long_help = "Sweep the transfer size (-l), one run per size in the order given: a list (4K,64K,1M)\nor START:END:STEP in bytes. Each row: throughput, CPU on both ends and efficiency\n(Mbit/s per CPU %). With --mix, the mixed workload at each size. Default -t per\npoint: 2 s. Example: --sizes 1K,8K,64K,512K --mix 70:30"
    )]
    pub sizes: Option<String>,

    #[command(flatten)]
    pub probe: ProbeArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub repeat: super::common::RepeatArgs,

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
    pub fn into_spec(self) -> Result<TcpSpec, Usage> {
        let sizes = self.sizes()?;
        let probe = self
            .probe
            .spec("tcp", &[ProbeVia::Rr, ProbeVia::Udp], self.link_speed.map(|r| r.0))?;
        let spec = TcpSpec {
            streams: self.streams.count()?,
            threads: self.threads.unwrap_or(0),
            cpus: self.streams.cpus.list(),
            peer_cpus: self.streams.peer_cpus(),
            buffer_bytes: self.length,
            timing: self.timing.timing(if self.sizes.is_some() { 2.0 } else { 10.0 }),
            window_bytes: self.window,
            sndbuf_bytes: self.sndbuf,
            mss_bytes: self.mss,
            congestion: self.congestion,
            nodelay: self.nodelay,
            depth: self.depth,
            direction: super::common::direction(self.reverse, self.bidir),
            link_speed: self.link_speed,
            link_mtu_bytes: self.mtu,
            mix: self.mix,
            zerocopy: self.zerocopy,
            probe,
            dscp: self.streams.dscp(),
        };
        spec.validate()?;
        // Every sweep point before the first runs, not when its turn comes.
        for size in sizes.unwrap_or_default() {
            TcpSpec {
                buffer_bytes: size,
                ..spec.clone()
            }
            .validate()?;
        }
        Ok(spec)
    }

    /// The sweep's transfer sizes in the order given; None without `--sizes`.
    pub fn sizes(&self) -> Result<Option<Vec<ByteSize>>, Usage> {
        let Some(text) = &self.sizes else { return Ok(None) };
        Ok(Some(super::common::parse_sizes(text, Ok)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_core::spec::{Direction, Limit};

    flag_tests!(Tcp, TcpArgs, TcpSpec, ["tcp"], TcpArgs::into_spec);

    #[test]
    fn defaults_are_iperf3_like() {
        let s = spec(&["h"]).expect("valid");
        assert_eq!(s.streams, 1);
        assert_eq!(s.buffer_bytes, ByteSize(128 << 10));
        assert_eq!(s.timing.limit, Limit::Seconds(10.0));
        assert_eq!(s.direction, Direction::Send);
        assert_eq!(s.depth, 1);
        assert_eq!(s.mix, None);
    }

    #[test]
    fn mix_and_sizes_reach_the_spec_and_the_sweep() {
        let s = spec(&["h", "--mix", "70:30"]).expect("valid");
        assert_eq!(s.mix.map(|m| (m.read_percent, m.write_percent)), Some((70, 30)));
        assert_eq!(
            spec(&["h", "--mix=0:100"]).expect("valid").mix.map(|m| m.read_percent),
            Some(0)
        );
        assert!(parse(&["h", "--mix", "50:60"]).is_err());
        assert!(parse(&["h", "--mix", "70"]).is_err());
        assert!(parse(&["h", "--mix", "70:30", "--bidir"]).is_err());
        let a = parse(&["h", "--sizes", "1K,64K,1M", "--mix", "70:30"]).expect("parses");
        assert_eq!(
            a.sizes().expect("a list"),
            Some(vec![ByteSize(1024), ByteSize(65_536), ByteSize(1 << 20)])
        );
        assert_eq!(
            a.into_spec().expect("valid").timing.limit,
            Limit::Seconds(2.0),
            "2 s per point"
        );
        let r = parse(&["h", "--sizes", "4096:16384:4096"]).expect("parses");
        assert_eq!(r.sizes().expect("a range").map(|v| v.len()), Some(4));
        assert!(parse(&["h", "--sizes", "1K,x"]).expect("parses").sizes().is_err());
        assert_eq!(parse(&["h"]).expect("parses").sizes().expect("none"), None);
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
        assert_eq!(
            spec(&["h", "-n", "200000"]).expect("ok").timing.limit,
            Limit::Buffers(200_000)
        );
        assert_eq!(spec(&["h", "-t", "2.5"]).expect("ok").timing.limit, Limit::Seconds(2.5));
        assert_eq!(
            spec(&["h", "-t", "1500ms"]).expect("ok").timing.limit,
            Limit::Seconds(1.5)
        );
        assert_eq!(
            spec(&["h", "-t", "2m"]).expect("ok").timing.limit,
            Limit::Seconds(120.0)
        );
        let s = spec(&["h", "-t", "3", "--warmup", "500ms", "--cooldown=1s", "-i", "250ms"]).expect("ok");
        assert_eq!(
            (
                s.timing.warmup_seconds,
                s.timing.cooldown_seconds,
                s.timing.interval_seconds
            ),
            (0.5, 1.0, 0.25)
        );
        let e = parse(&["h", "-t", "soon"]).expect_err("not a time").to_string();
        assert!(e.contains("'soon' is not a time"), "{e}");
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
        let t = a.hosts.targets().expect("resolve");
        assert_eq!(t[0].addr.to_string(), "127.0.0.1:6000");
        assert_eq!(t[1].addr.to_string(), "[::1]:7000");
        assert!(parse(&[]).is_err(), "a host is required");
        assert!(parse(&["h", "--bogus"]).is_err());
    }
    #[test]
    fn issue_28_zerocopy_takes_a_path_and_bare_means_sendfile() {
        assert_eq!(spec(&["h"]).expect("valid").zerocopy, None);
        assert_eq!(
            spec(&["h", "--zerocopy"]).expect("valid").zerocopy,
            Some(ZeroCopy::Sendfile)
        );
        assert_eq!(
            spec(&["h", "--zerocopy=msg"]).expect("valid").zerocopy,
            Some(ZeroCopy::Msg)
        );
        // The value needs `=`: a word after the bare flag is a target, not a path.
        let a = parse(&["--zerocopy", "h"]).expect("parses");
        assert_eq!(a.zerocopy, Some(ZeroCopy::Sendfile));
        assert!(parse(&["h", "--zerocopy=splice"]).is_err());
        assert!(spec(&["h", "--zerocopy", "--mix", "70:30"]).is_err());
    }
}
