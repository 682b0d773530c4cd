//! Latency probes beside a test's load (`--probe`): round trips timed on a connection of their
//! own through the whole test, before the load starts (idle), while it runs (loaded) and after it
//! ends (recovery). The load's own connections are probed too where the kind allows (TCP_INFO's
//! smoothed RTT on TCP streams, a small request on an HTTP/2 load connection); those need no spec.

use super::{SpecError, check};
use serde::{Deserialize, Serialize};

/// What carries a probe on its connection of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeVia {
    /// A request-response exchange with the agent over TCP (an open-loop `rr`, one stream).
    Rr,
    /// A request-response exchange with the agent over UDP.
    Udp,
    /// A small HTTP GET on a connection of its own (an HTTP test's server, no agent needed).
    Http,
}

words!(ProbeVia, "a probe", Rr => "rr", Udp => "udp", Http => "http");

/// The probes a test runs beside its load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    pub via: ProbeVia,
    /// Probes per second, sent on schedule (an open loop): a late answer does not delay the next.
    pub rate_per_second: f64,
    /// Request and response size, bytes (for `http`, the response body asked for).
    pub size_bytes: u32,
    /// Probing before the load starts: the idle figures.
    pub idle_seconds: f64,
    /// Probing after the load ends: the recovery figures.
    pub recovery_seconds: f64,
    /// How long a probe waits for its answer before it counts as lost, ms.
    pub timeout_ms: u32,
}

impl ProbeSpec {
    /// Ten probes a second of 64 bytes, two seconds idle before the load and two after it, a
    /// probe lost after 2 s (a bloated queue holds seconds: a shorter wait would count its
    /// delay as loss).
    pub fn new(via: ProbeVia) -> ProbeSpec {
        ProbeSpec {
            via,
            rate_per_second: 10.0,
            size_bytes: 64,
            idle_seconds: 2.0,
            recovery_seconds: 2.0,
            timeout_ms: 2000,
        }
    }

    /// The spacing of probes, ns ([`crate::units::spacing_ns`]'s rule).
    pub fn gap_ns(&self) -> u64 {
        crate::units::spacing_ns(1.0, self.rate_per_second)
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        check("probe rate (--probe-rate)", self.rate_per_second, 0.1, 10_000.0)?;
        let max = match self.via {
            ProbeVia::Udp => f64::from(super::MAX_UDP_PAYLOAD_BYTES),
            ProbeVia::Rr | ProbeVia::Http => 1_048_576.0,
        };
        // 16 bytes at least: a probe carries its number and the far end's time stamp.
        check("probe size (--probe-size)", f64::from(self.size_bytes), 16.0, max)?;
        check("probe idle time (--probe-idle)", self.idle_seconds, 0.0, 3600.0)?;
        check(
            "probe recovery time (--probe-recovery)",
            self.recovery_seconds,
            0.0,
            3600.0,
        )?;
        check(
            "probe timeout (--probe-timeout)",
            f64::from(self.timeout_ms),
            1.0,
            60_000.0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_validate_and_bad_figures_are_named() {
        let spec = ProbeSpec::new(ProbeVia::Udp);
        assert!(spec.validate().is_ok());
        assert_eq!(spec.gap_ns(), 100_000_000);
        let fast = ProbeSpec {
            rate_per_second: 20_000.0,
            ..spec.clone()
        };
        assert!(fast.validate().unwrap_err().to_string().contains("--probe-rate"));
        let tiny = ProbeSpec {
            size_bytes: 8,
            ..spec.clone()
        };
        assert!(tiny.validate().unwrap_err().to_string().contains("--probe-size"));
        let big = ProbeSpec {
            size_bytes: 100_000,
            ..spec
        };
        assert!(big.validate().is_err(), "over a UDP payload");
        assert_eq!("udp".parse::<ProbeVia>(), Ok(ProbeVia::Udp));
        assert!("icmp".parse::<ProbeVia>().unwrap_err().contains("rr or udp or http"));
    }
}
