//! `linerate udp`: paced UDP streams, UDPmon's method.

use super::common::{HostArgs, MAX_SWEEP_POINTS, ProbeArgs, StreamArgs, parse_list, parse_sizes};
use super::timing::TimingArgs;
use super::usage::{Usage, usage};
use linerate_core::spec::{ProbeVia, UdpSpec};
use linerate_core::units::{BitRate, ByteSize};

#[derive(Debug, clap::Args)]
pub struct UdpArgs {
    #[command(flatten)]
    pub hosts: HostArgs,

    #[command(flatten)]
    pub streams: StreamArgs,

    /// UDP payload per datagram, bytes (32 to 65507; linerate's 32-byte header included)
    #[arg(short = 'l', long = "length", value_name = "BYTES", default_value = "1472")]
    pub length: ByteSize,

    #[command(flatten)]
    pub timing: TimingArgs,

    /// Microseconds between datagrams of a stream (0: as fast as possible)
    #[arg(long, value_name = "MICROSECONDS", conflicts_with = "rate", allow_negative_numbers = true,
          value_parser = super::common::not_negative::<f64>)]
    pub gap: Option<f64>,

    /// Send rate per stream, payload bits/s (100m, 1g; 0: as fast as possible)
    #[arg(
        short = 'b',
        long,
        value_name = "BITS_PER_SECOND",
        long_help = "Send rate per stream in payload bits per second; k, m, g, t are powers of 1000.\n\
Sets the gap between datagrams from -l. 0: as fast as possible. Example: --rate 1g"
    )]
    pub rate: Option<BitRate>,

    /// Receive socket buffer (SO_RCVBUF) on receivers (default 4M)
    #[arg(short = 'w', long, value_name = "BYTES")]
    pub window: Option<ByteSize>,

    /// Width of the arrival-spacing histogram's bins, microseconds
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 1)]
    pub bin: u32,

    /// The ends' clocks are synchronised (PTP): report one-way delay as measured, not above its minimum
    #[arg(long)]
    pub synced_clocks: bool,

    /// Send to this multicast group (stream i to GROUP:PORT+i); every agent named, started
    /// with `serve --join GROUP`, reports what it received
    #[arg(long, value_name = "GROUP")]
    pub multicast: Option<std::net::IpAddr>,

    /// Base port of the multicast group's streams
    #[arg(long, value_name = "N", default_value_t = 5310)]
    pub multicast_port: u16,

    /// Multicast TTL (hops)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub ttl: u8,

    /// The agents send
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,

    /// Both directions at once
    #[arg(long)]
    pub bidir: bool,

    /// Sweep payload sizes: a list (64,512,1472,8972) or START:END:STEP, bytes
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<String>,

    /// Sweep gaps: a list (0,10,20) or START:END:STEP, microseconds (0: as fast as possible)
    #[arg(long, value_name = "LIST", conflicts_with = "rate")]
    pub gaps: Option<String>,

    #[command(flatten)]
    pub probe: ProbeArgs,

    #[command(flatten)]
    pub common: super::common::CommonArgs,
}

impl UdpArgs {
    pub fn into_spec(self) -> Result<UdpSpec, Usage> {
        let points: Vec<(u32, u64)> = self.sweep()?.map_or_else(Vec::new, |plan| {
            let sizes = plan.sizes_bytes.iter();
            sizes.flat_map(|s| plan.gaps_ns.iter().map(move |g| (*s, *g))).collect()
        });
        let payload = self.payload()?;
        let probe = self.probe.spec(
            "udp",
            &[ProbeVia::Rr, ProbeVia::Udp],
            self.rate.map(|r| r.0).filter(|r| *r > 0.0),
        )?;
        let gap_ns = match (self.gap, self.rate) {
            (Some(g), _) => {
                if !(g.is_finite() && (0.0..=60e6).contains(&g)) {
                    return Err(usage!("--gap must be between 0 and 60000000 microseconds, not {g}"));
                }
                (g * 1e3).round() as u64
            }
            (None, Some(r)) => UdpSpec::gap_ns_at(payload, r.0),
            _ => 0,
        };
        let spec = UdpSpec {
            streams: self.streams.count()?,
            cpus: self.streams.cpus.list(),
            peer_cpus: self.streams.peer_cpus(),
            payload_bytes: payload,
            timing: self.timing.timing(10.0),
            gap_ns,
            window_bytes: self.window,
            bin_us: self.bin,
            synced_clocks: self.synced_clocks,
            direction: super::common::direction(self.reverse, self.bidir),
            multicast: self.multicast.map(|group| linerate_core::spec::Multicast {
                group,
                port: self.multicast_port,
                test_id: rand_test_id(),
                ttl: self.ttl,
            }),
            probe,
            dscp: self.streams.dscp(),
        };
        spec.validate()?;
        // Every sweep point before the first runs, not when its turn comes.
        for (payload_bytes, gap_ns) in points {
            UdpSpec {
                payload_bytes,
                gap_ns,
                ..spec.clone()
            }
            .validate()?;
        }
        Ok(spec)
    }

    /// The sweep's sizes and gaps (sizes varying fastest); None without
    /// `--sizes` or `--gaps`.
    /// `-l` as the spec's payload size.
    fn payload(&self) -> Result<u32, Usage> {
        u32::try_from(self.length.0).map_err(|_| usage!("-l {} is too large", self.length))
    }

    pub fn sweep(&self) -> Result<Option<linerate_core::sweep::udp::UdpPoints>, Usage> {
        if self.sizes.is_none() && self.gaps.is_none() {
            return Ok(None);
        }
        let sizes = match &self.sizes {
            Some(text) => parse_sizes(text, |b| Ok(u32::try_from(b.0)?))?,
            None => vec![self.payload()?],
        };
        let gaps = match &self.gaps {
            Some(text) => parse_list(text, "--gaps", |v| {
                let us: f64 = v.parse()?;
                anyhow::ensure!(
                    us.is_finite() && (0.0..=60e6).contains(&us),
                    "gap {v} us is out of range"
                );
                Ok((us * 1e3).round() as u64)
            })?,
            None => vec![self.gap.map_or(0, |g| (g * 1e3).round() as u64)],
        };
        if sizes.len() * gaps.len() > MAX_SWEEP_POINTS {
            return Err(usage!(
                "the sweep has {} points, over {MAX_SWEEP_POINTS}",
                sizes.len() * gaps.len()
            ));
        }
        Ok(Some(linerate_core::sweep::udp::UdpPoints::new(&sizes, &gaps)))
    }
}

/// A test id for multicast datagrams, from the clock: distinct between runs, no secret.
fn rand_test_id() -> u64 {
    let t = linerate_core::unixtime::now_unix_ns_stamp();
    t ^ (u64::from(std::process::id()) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    flag_tests!(Udp, UdpArgs, UdpSpec, ["udp", "h"], UdpArgs::into_spec);

    #[test]
    fn rate_is_bits_per_second_with_suffixes() {
        // 1472-byte payloads: 11,776 bits each.
        assert_eq!(spec(&["--rate", "1g"]).expect("ok").gap_ns, 11_776);
        assert_eq!(spec(&["-b", "100M"]).expect("ok").gap_ns, 117_760);
        assert_eq!(spec(&["--rate=11776k"]).expect("ok").gap_ns, 1_000_000);
        assert_eq!(spec(&["-b", "0"]).expect("as fast as possible").gap_ns, 0);
        let e = spec(&["--rate", "fast"]).expect_err("not a rate").to_string();
        assert!(e.contains("invalid value 'fast' for '--rate <BITS_PER_SECOND>'"), "{e}");
        assert!(spec(&["--rate", "1g", "--gap", "10"]).is_err());
    }

    #[test]
    fn cooldown_reaches_the_spec_and_needs_a_time() {
        assert_eq!(
            spec(&["-t", "3", "--cooldown", "1s"])
                .expect("ok")
                .timing
                .cooldown_seconds,
            1.0
        );
        assert_eq!(
            spec(&["-t", "3", "--cooldown=0.5"])
                .expect("ok")
                .timing
                .cooldown_seconds,
            0.5
        );
        let e = spec(&["-n", "5", "--cooldown", "1"]).expect_err("count").to_string();
        assert_eq!(e, "--cooldown needs a time limit (-t), not a buffer count (-n)");
        assert!(spec(&["-t", "2", "--warmup", "1", "--cooldown", "1"]).is_err());
    }
}
