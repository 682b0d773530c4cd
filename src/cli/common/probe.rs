//! `--probe` and its flags: latency probes beside a test's load (tcp, udp, http), one group
//! flattened into each kind that takes it. The kind says which carriers it has
//! ([`ProbeArgs::spec`]); the figures' ranges are the spec's own (`ProbeSpec::validate`).

use super::super::usage::{Usage, usage};
use super::not_negative;
use linerate_core::spec::{ProbeSpec, ProbeVia};
use linerate_core::units::{ByteSize, TimeSpan};

/// Latency probes on a connection of their own, before, during and after the load.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProbeArgs {
    /// Latency probes beside the load: rr (TCP round trips with the agent), udp (UDP round
    /// trips), http (a small GET, http tests only)
    #[arg(
        long,
        value_name = "VIA",
        long_help = "Round trips timed on a connection of their own through the whole test: before the\n\
load starts (--probe-idle), while it runs and after it ends (--probe-recovery). rr: a\n\
TCP request-response with the first agent; udp: the same over UDP; http: a small GET on\n\
a connection of its own (http tests). The result's `latency` block holds each series,\n\
its idle, loaded and recovery figures and the latency the load added. Example: --probe rr"
    )]
    pub probe: Option<ProbeVia>,

    /// Probes per second, sent on schedule (default 10, at most 10000)
    #[arg(long, value_name = "N", requires = "probe", allow_negative_numbers = true,
          value_parser = not_negative::<f64>)]
    pub probe_rate: Option<f64>,

    /// Probe request and response size, bytes (default 64, at least 16)
    #[arg(long, value_name = "BYTES", requires = "probe")]
    pub probe_size: Option<ByteSize>,

    /// Probing before the load starts, the idle figures (default 2s)
    #[arg(long, value_name = "DURATION", requires = "probe", allow_hyphen_values = true,
          value_parser = not_negative::<TimeSpan>)]
    pub probe_idle: Option<TimeSpan>,

    /// Probing after the load ends, the recovery figures (default 2s)
    #[arg(long, value_name = "DURATION", requires = "probe", allow_hyphen_values = true,
          value_parser = not_negative::<TimeSpan>)]
    pub probe_recovery: Option<TimeSpan>,

    /// How long a probe waits for its answer before it counts as lost (default 2s)
    #[arg(long, value_name = "DURATION", requires = "probe", allow_hyphen_values = true,
          value_parser = not_negative::<TimeSpan>)]
    pub probe_timeout: Option<TimeSpan>,
}

impl ProbeArgs {
    /// The probe spec asked for, None without `--probe`. `kind` names the test and `carriers`
    /// are the probes it can run (tcp and udp: rr and udp; http: http). `link_bits_per_second`:
    /// the rate the test says its path has (`--link-speed`, udp's `--rate`), which the probes
    /// alone must not fill.
    pub fn spec(
        &self,
        kind: &str,
        carriers: &[ProbeVia],
        link_bits_per_second: Option<f64>,
    ) -> Result<Option<ProbeSpec>, Usage> {
        let Some(via) = self.probe else { return Ok(None) };
        if !carriers.contains(&via) {
            let names: Vec<String> = carriers.iter().map(ToString::to_string).collect();
            return Err(usage!(
                "--probe {via} is not a probe {kind} runs (it takes {})",
                names.join(" or ")
            ));
        }
        let mut spec = ProbeSpec::new(via);
        if let Some(r) = self.probe_rate {
            spec.rate_per_second = r;
        }
        if let Some(s) = self.probe_size {
            spec.size_bytes = u32::try_from(s.0).map_err(|_| usage!("--probe-size {s} is too large"))?;
        }
        if let Some(t) = self.probe_idle {
            spec.idle_seconds = t.as_secs_f64();
        }
        if let Some(t) = self.probe_recovery {
            spec.recovery_seconds = t.as_secs_f64();
        }
        if let Some(t) = self.probe_timeout {
            let ms = (t.as_secs_f64() * 1e3).round();
            spec.timeout_ms = if ms > f64::from(u32::MAX) { u32::MAX } else { ms as u32 };
        }
        spec.validate()?;
        if let Some(link) = link_bits_per_second.filter(|b| *b > 0.0) {
            // Request and response each way: the probes' own bits on the path.
            let bits = f64::from(spec.size_bytes) * 8.0 * spec.rate_per_second;
            if bits > link {
                return Err(usage!(
                    "--probe-rate {} x --probe-size {} B is {:.0} bit/s, over the {:.0} bit/s the test's rate gives",
                    spec.rate_per_second,
                    spec.size_bytes,
                    bits,
                    link
                ));
            }
        }
        Ok(Some(spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Probed {
        #[command(flatten)]
        probe: ProbeArgs,
    }

    fn spec(args: &[&str], carriers: &[ProbeVia], link: Option<f64>) -> Result<Option<ProbeSpec>, String> {
        let full = [&["x"][..], args].concat();
        let p = Probed::try_parse_from(full).map_err(|e| e.to_string())?;
        p.probe.spec("tcp", carriers, link).map_err(|e| e.to_string())
    }

    const TCP: &[ProbeVia] = &[ProbeVia::Rr, ProbeVia::Udp];

    #[test]
    fn the_flags_reach_the_spec_with_the_defaults_between() {
        assert_eq!(spec(&[], TCP, None), Ok(None));
        let s = spec(
            &[
                "--probe",
                "rr",
                "--probe-rate",
                "50",
                "--probe-idle",
                "1",
                "--probe-recovery=500ms",
            ],
            TCP,
            None,
        )
        .expect("valid")
        .expect("asked for");
        assert_eq!((s.via, s.rate_per_second, s.size_bytes), (ProbeVia::Rr, 50.0, 64));
        assert_eq!((s.idle_seconds, s.recovery_seconds, s.timeout_ms), (1.0, 0.5, 2000));
        let s = spec(
            &["--probe=udp", "--probe-size", "1K", "--probe-timeout", "250ms"],
            TCP,
            None,
        )
        .expect("valid")
        .expect("asked for");
        assert_eq!((s.via, s.size_bytes, s.timeout_ms), (ProbeVia::Udp, 1024, 250));
    }

    #[test]
    fn what_cannot_run_is_named() {
        let e = spec(&["--probe", "http"], TCP, None).expect_err("tcp has no http probe");
        assert!(
            e.contains("--probe http is not a probe tcp runs (it takes rr or udp)"),
            "{e}"
        );
        assert!(spec(&["--probe-rate", "5"], TCP, None).is_err(), "--probe-rate alone");
        let e = spec(&["--probe", "rr", "--probe-rate", "20000"], TCP, None).expect_err("too fast");
        assert!(e.contains("--probe-rate"), "{e}");
        let e = spec(&["--probe", "rr", "--probe-size", "8"], TCP, None).expect_err("too small");
        assert!(e.contains("--probe-size"), "{e}");
        // 1000 x 1 KiB is 8.2 Mbit/s: over a 1 Mbit/s link, under a 100 Mbit/s one.
        let fast = ["--probe", "rr", "--probe-rate", "1000", "--probe-size", "1K"];
        let e = spec(&fast, TCP, Some(1e6)).expect_err("over the link");
        assert!(e.contains("over the 1000000 bit/s"), "{e}");
        assert!(spec(&fast, TCP, Some(100e6)).is_ok());
        assert!(spec(&["--probe", "icmp"], TCP, None).is_err());
    }
}
