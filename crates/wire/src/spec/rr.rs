//! The request-response test's spec.

use super::*;
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

/// The transport of a request-response test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RrProto {
    Tcp,
    Udp,
}

/// A request-response (latency) test, as netperf's TCP_RR / UDP_RR / TCP_CRR and UDPmon's
/// latency runs: one request, one response, the round trip timed, again and again.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RrSpec {
    pub proto: RrProto,
    /// Concurrent transaction streams (`-P`), each its own socket and worker.
    pub streams: u16,
    pub cpus: Vec<usize>,
    pub peer_cpus: Vec<usize>,
    pub request_bytes: u32,
    pub response_bytes: u32,
    /// Transactions per stream (`-n`) or seconds (`-t`), the warm-up, cool-down and interval.
    #[serde(flatten)]
    pub timing: Timing,
    /// Open loop: transactions per second per stream, each timed from its scheduled start.
    /// None = closed loop (the next request when the response is in).
    pub rate: Option<f64>,
    /// A new TCP connection per transaction (netperf's TCP_CRR): connect, request, response,
    /// close.
    pub connect: bool,
    /// SO_BUSY_POLL on the sockets, microseconds; None = off.
    pub busy_poll_us: Option<u32>,
    /// How long to wait for a response before the transaction counts as lost, ms: UDP, and
    /// TCP in the open loop (its answer, when it comes, counts as stale).
    pub timeout_ms: u32,
    /// Open loop: the most requests one stream keeps in flight (`--max-outstanding`); a request
    /// due when this many are out is not sent, and counted so. Absent from older specs: 1024.
    #[serde(default = "default_max_outstanding")]
    pub max_outstanding: u32,
    /// `--dscp`: the DSCP classes the streams' packets carry, given to the streams in turn;
    /// empty = the kernel's default. Absent from documents written before it (and when empty).
    #[serde(default)]
    pub dscp: Vec<Dscp>,
    /// A latency probe session beside another test (`--probe`): the answering end writes the
    /// Unix time, ns, at which it read each request into the response after the request's
    /// number (bytes 8 to 16, responses of 16 bytes or more), for the one-way split; and the
    /// agent admits it beside the test it probes. Absent (false) in every other rr test.
    #[serde(default)]
    pub stamp: bool,
}

/// The open loop's default bound on the requests in flight per stream.
pub const DEFAULT_MAX_OUTSTANDING: u32 = 1024;

fn default_max_outstanding() -> u32 {
    DEFAULT_MAX_OUTSTANDING
}

impl RrSpec {
    pub fn new() -> RrSpec {
        RrSpec {
            proto: RrProto::Tcp,
            streams: 1,
            cpus: Vec::new(),
            peer_cpus: Vec::new(),
            request_bytes: 1,
            response_bytes: 1,
            timing: Timing::new(Limit::Seconds(10.0)),
            rate: None,
            connect: false,
            busy_poll_us: None,
            timeout_ms: 200,
            max_outstanding: DEFAULT_MAX_OUTSTANDING,
            dscp: Vec::new(),
            stamp: false,
        }
    }

    /// The open loop's spacing of requests on a stream, ns ([`crate::units::spacing_ns`]'s
    /// rule, at least 1); None in the closed loop.
    pub fn gap_ns(&self) -> Option<u64> {
        self.rate.map(|r| crate::units::spacing_ns(1.0, r))
    }

    /// The DSCP class of stream `index`, None without `--dscp`.
    pub fn dscp_of(&self, index: usize) -> Option<Dscp> {
        class_of(&self.dscp, index, usize::from(self.streams))
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        check("streams (-P)", f64::from(self.streams), 1.0, f64::from(MAX_STREAMS))?;
        let max = match self.proto {
            RrProto::Udp => f64::from(MAX_UDP_PAYLOAD_BYTES),
            RrProto::Tcp => 16.0 * 1024.0 * 1024.0,
        };
        check("request bytes", f64::from(self.request_bytes), 1.0, max)?;
        check("response bytes", f64::from(self.response_bytes), 1.0, max)?;
        if let Some(r) = self.rate {
            check("rate (transactions/s)", r, 0.001, 10e6)?;
        }
        if let Some(b) = self.busy_poll_us {
            check("busy poll (us)", f64::from(b), 0.0, 1e6)?;
        }
        check("timeout (ms)", f64::from(self.timeout_ms), 1.0, 60_000.0)?;
        check("max outstanding", f64::from(self.max_outstanding), 1.0, 1_048_576.0)?;
        self.timing.validate(&TimingRules {
            count: Some(("transaction count (-n)", 1e12)),
            sampled_streams: 0,
            ramp: false,
        })?;
        check_cpus(self.cpus.iter().chain(&self.peer_cpus))?;
        dscp::validate_all(&self.dscp)?;
        if self.connect && !self.dscp.is_empty() {
            // The class is set on a stream's socket; --connect opens one per transaction.
            return Err(SpecError::Conflict("--dscp does not apply to --connect".into()));
        }
        if self.connect && self.proto == RrProto::Udp {
            return Err(SpecError::Conflict(
                "--connect is a TCP mode (netperf's TCP_CRR)".into(),
            ));
        }
        Ok(())
    }
}

impl Serialize for RrSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = &self.timing;
        let mut out = serializer.serialize_struct("RrSpec", 17)?;
        keys!(
            out,
            self,
            proto,
            streams,
            cpus,
            peer_cpus,
            request_bytes,
            response_bytes
        );
        keys!(out, t, limit);
        keys!(out, self, rate, connect, busy_poll_us, timeout_ms);
        // Written when not the default, so that options written before it read back and write
        // again byte for byte.
        if self.max_outstanding == DEFAULT_MAX_OUTSTANDING {
            out.skip_field("max_outstanding")?;
        } else {
            keys!(out, self, max_outstanding);
        }
        if self.stamp {
            keys!(out, self, stamp);
        } else {
            out.skip_field("stamp")?;
        }
        keys!(out, t, warmup_seconds, cooldown_seconds, interval_seconds);
        // Absent without classes, likewise.
        if self.dscp.is_empty() {
            out.skip_field("dscp")?;
        } else {
            keys!(out, self, dscp);
        }
        out.end()
    }
}

impl Default for RrSpec {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_outstanding_is_written_when_not_the_default_and_read_back() {
        let mut s = RrSpec::new();
        let text = serde_json::to_string(&s).expect("serialises");
        assert!(!text.contains("max_outstanding"), "{text}");
        assert_eq!(serde_json::from_str::<RrSpec>(&text).expect("parses"), s);
        s.max_outstanding = 64;
        let text = serde_json::to_string(&s).expect("serialises");
        assert!(text.contains(r#""timeout_ms":200,"max_outstanding":64,"#), "{text}");
        assert_eq!(serde_json::from_str::<RrSpec>(&text).expect("parses"), s);
    }
}
