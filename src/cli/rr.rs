//! `linerate rr HOST[:PORT]`: request-response round trips (netperf's TCP_RR, UDP_RR, TCP_CRR;
//! UDPmon's latency against frame size).

use super::common::{HostArgs, StreamArgs};
use super::timing::TimingArgs;
use super::usage::{Usage, usage};
use linerate_core::spec::{RrProto, RrSpec};
use linerate_core::units::{BitRate, ByteSize, TimeSpan};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate rr 10.0.0.2 -t 10\n  linerate rr 10.0.0.2 --proto udp --sizes 64:8972:256 --expect 10G,8.5G\n  linerate rr 10.0.0.2 --connect -P 4\n  linerate rr 10.0.0.2 --proto udp --tps 1000 --timeout 50ms"
)]
pub struct RrArgs {
    #[command(flatten)]
    pub hosts: HostArgs,

    /// Transport
    #[arg(long, value_enum, default_value_t = ProtoArg::Tcp)]
    pub proto: ProtoArg,

    /// Request size, bytes
    #[arg(long, value_name = "BYTES", default_value = "1")]
    pub request: ByteSize,

    /// Response size, bytes
    #[arg(long, value_name = "BYTES", default_value = "1")]
    pub response: ByteSize,

    #[command(flatten)]
    pub timing: TimingArgs,

    /// Open loop: transactions per second per stream [default: closed loop]
    #[arg(
        long = "tps",
        alias = "rate",
        value_name = "N",
        long_help = "Open loop: transactions per second per stream. Requests leave on schedule whatever is\n\
outstanding (up to --max-outstanding), each timed from its scheduled moment.\n\
Default: closed loop, the next request when the response is in. Example: --tps 10000"
    )]
    pub tps: Option<f64>,

    /// Open loop: the most requests in flight per stream [default: 1024]
    #[arg(
        long,
        value_name = "N",
        requires = "tps",
        long_help = "Open loop: the most requests one stream keeps in flight. A request due while this\n\
many are unanswered is not sent, and counted as not sent. Default: 1024. Example:\n\
--tps 5000 --max-outstanding 64"
    )]
    pub max_outstanding: Option<u32>,

    #[command(flatten)]
    pub streams: StreamArgs,

    /// Busy-poll the sockets (SO_BUSY_POLL) for this many microseconds, where permitted
    #[arg(long, value_name = "MICROSECONDS", num_args = 0..=1, default_missing_value = "50")]
    pub busy_poll: Option<u32>,

    /// A new TCP connection per transaction (netperf's TCP_CRR): connect, request, response, close
    #[arg(long)]
    pub connect: bool,

    /// UDP and open loop: time to wait for a response before it counts as lost (200ms)
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "200ms",
        long_help = "UDP, and TCP with --tps: how long to wait for a response, from the request's\n\
moment, before the transaction counts as lost (a later answer counts as stale).\n\
A bare number is seconds, as for every time; a count of milliseconds, as this flag\n\
once took, is --timeout-ms 200. Example: --timeout 50ms"
    )]
    pub timeout: TimeSpan,

    /// The old spelling of --timeout, in milliseconds
    #[arg(long, value_name = "MS", hide = true, conflicts_with = "timeout")]
    pub timeout_ms: Option<u32>,

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
    #[arg(long, value_name = "RATES", value_delimiter = ',', requires = "sizes",
          value_parser = super::common::positive_rate)]
    pub expect: Vec<BitRate>,

    #[command(flatten)]
    pub common: super::common::CommonArgs,
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
    pub fn into_spec(self) -> Result<RrSpec, Usage> {
        let sizes = self.sizes()?;
        let bytes = |b: ByteSize, flag: &str| u32::try_from(b.0).map_err(|_| usage!("{flag} {b} is too large"));
        let default_seconds = if self.sizes.is_some() { 2.0 } else { 10.0 };
        let spec = RrSpec {
            proto: match self.proto {
                ProtoArg::Tcp => RrProto::Tcp,
                ProtoArg::Udp => RrProto::Udp,
            },
            streams: self.streams.count()?,
            cpus: self.streams.cpus.list(),
            peer_cpus: self.streams.peer_cpus(),
            request_bytes: bytes(self.request, "--request")?,
            response_bytes: bytes(self.response, "--response")?,
            timing: self.timing.timing(default_seconds),
            rate: self.tps,
            connect: self.connect,
            busy_poll_us: self.busy_poll,
            timeout_ms: match self.timeout_ms {
                Some(ms) => ms,
                // Saturates: the spec's check names a timeout out of range.
                None => (self.timeout.as_secs_f64() * 1e3).round() as u32,
            },
            max_outstanding: self.max_outstanding.unwrap_or(RrSpec::new().max_outstanding),
            dscp: self.streams.dscp(),
            stamp: false,
        };
        spec.validate()?;
        // Every sweep point before the first runs, not when its turn comes.
        for size in sizes.unwrap_or_default() {
            RrSpec {
                request_bytes: size,
                response_bytes: if self.sweep == SweepWhat::Both {
                    size
                } else {
                    spec.response_bytes
                },
                ..spec.clone()
            }
            .validate()?;
        }
        Ok(spec)
    }

    /// The sweep's sizes in the order given; None without `--sizes`.
    pub fn sizes(&self) -> Result<Option<Vec<u32>>, Usage> {
        let Some(text) = &self.sizes else { return Ok(None) };
        Ok(Some(super::common::parse_sizes(text, |b| Ok(u32::try_from(b.0)?))?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    flag_tests!(Rr, RrArgs, RrSpec, ["rr", "h"], RrArgs::into_spec);

    #[test]
    fn tps_is_transactions_per_second_and_rate_its_old_spelling() {
        assert_eq!(spec(&[]).expect("ok").rate, None, "closed loop by default");
        assert_eq!(spec(&["--tps", "1000"]).expect("ok").rate, Some(1000.0));
        assert_eq!(spec(&["--tps=250.5"]).expect("ok").rate, Some(250.5));
        assert_eq!(spec(&["--rate", "2000"]).expect("alias").rate, Some(2000.0));
        assert_eq!(
            spec(&["--rate=1", "--tps", "3"]).expect("last one wins").rate,
            Some(3.0)
        );
        let e = parse(&["--tps", "fast"]).expect_err("not a number").to_string();
        assert!(e.contains("invalid value 'fast' for '--tps <N>'"), "{e}");
        let e = spec(&["--tps", "0"]).expect_err("zero").to_string();
        assert!(e.contains("rate (transactions/s) must be between"), "{e}");
    }

    #[test]
    fn max_outstanding_bounds_the_open_loop_and_needs_tps() {
        assert_eq!(spec(&["--tps", "10"]).expect("ok").max_outstanding, 1024, "the default");
        assert_eq!(
            spec(&["--tps", "10", "--max-outstanding", "64"])
                .expect("ok")
                .max_outstanding,
            64
        );
        assert_eq!(
            spec(&["--tps=10", "--max-outstanding=8", "--max-outstanding", "9"])
                .expect("last one wins")
                .max_outstanding,
            9
        );
        let e = parse(&["--max-outstanding", "8"]).expect_err("closed loop").to_string();
        assert!(e.contains("--tps <N>"), "{e}");
        let e = spec(&["--tps", "10", "--max-outstanding", "0"])
            .expect_err("zero")
            .to_string();
        assert!(e.contains("max outstanding must be between"), "{e}");
    }

    #[test]
    fn timeout_is_a_duration_and_timeout_ms_the_old_meaning() {
        assert_eq!(spec(&[]).expect("ok").timeout_ms, 200);
        assert_eq!(spec(&["--timeout", "50ms"]).expect("ok").timeout_ms, 50);
        assert_eq!(
            spec(&["--timeout=1.5"]).expect("ok").timeout_ms,
            1500,
            "a bare number is seconds"
        );
        assert_eq!(spec(&["--timeout", "2s"]).expect("ok").timeout_ms, 2000);
        assert_eq!(spec(&["--timeout-ms", "20"]).expect("old meaning").timeout_ms, 20);
        assert_eq!(spec(&["--timeout-ms=300"]).expect("old meaning").timeout_ms, 300);
        let e = parse(&["--timeout", "soon"]).expect_err("not a time").to_string();
        assert!(e.contains("'soon' is not a time"), "{e}");
        let e = spec(&["--timeout", "200"]).expect_err("200 s is too long").to_string();
        assert!(
            e.contains("timeout (ms) must be between 1 and 60000, not 200000"),
            "{e}"
        );
        let e = parse(&["--timeout", "1s", "--timeout-ms", "20"])
            .expect_err("both")
            .to_string();
        assert!(e.contains("cannot be used with"), "{e}");
    }

    #[test]
    fn cooldown_reaches_the_spec_and_needs_a_time() {
        let s = spec(&["-t", "3", "--warmup", "500ms", "--cooldown", "1s"]).expect("ok");
        assert_eq!((s.timing.warmup_seconds, s.timing.cooldown_seconds), (0.5, 1.0));
        assert_eq!(
            spec(&["-t", "2", "--cooldown=250ms"])
                .expect("ok")
                .timing
                .cooldown_seconds,
            0.25
        );
        let e = spec(&["-n", "5", "--cooldown", "1"]).expect_err("count").to_string();
        assert_eq!(e, "--cooldown needs a time limit (-t), not a buffer count (-n)");
        let e = spec(&["-t", "2", "--warmup", "1", "--cooldown", "1"])
            .expect_err("no window")
            .to_string();
        assert!(e.contains("leave nothing of a 2 s test"), "{e}");
    }
}
