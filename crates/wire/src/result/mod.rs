//! The result document: what one run of a test measured, on every end, with how it was asked
//! for. docs/results.md is its contract and mirrors these types; a change bumps [`SCHEMA`].
//!
//! Types only, at the bottom of the crate: they import the spec, units and the metrics' data
//! types, nothing that measures or assembles. Each end's engine returns a [`SideReport`] (its own
//! counts, its own clock); `crate::summary` joins the client's report and each agent's into one
//! [`TestResult`], counts attributed to the side that counted them (`sent` = the sender's
//! figure, `received` = the receiver's). By topic: `side` (one end's report), `udp`, `rr`, `mix`
//! and `http` (what each test kind adds), `repeat` (the document of a repeated test), `compare`
//! (the document of a comparison), `profile` (an agent's profile around a test); every type is re-exported here, as `result::X`.

mod compare;
mod http;
mod iperf3;
pub mod lab;
mod latency;
mod matrix;
mod mix;
mod profile;
mod repeat;
mod rr;
mod side;
mod udp;

pub use compare::*;
pub use http::*;
pub use iperf3::*;
pub use latency::*;
pub use matrix::*;
pub use mix::*;
pub use profile::*;
pub use repeat::*;
pub use rr::*;
pub use side::*;
pub use udp::*;

use crate::metrics::host::{HostConfig, HostInfo};
use crate::metrics::sample::{
    HostInterval, InterfaceUsage, InterruptRates, MemoryUsage, ProcessUsage, SoftirqRate, StackUsage,
};
use crate::spec::TestSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the result document's layout.
pub const SCHEMA: u32 = 4;

/// What kind of document a `test` field names: one run (`tcp`), a repeated test (`tcp repeat`),
/// a sweep (`rr sweep`) or a comparison (`compare`). Every reader of stored or written documents
/// tells them apart by this one rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocumentKind {
    Run,
    Repeated,
    Sweep,
    Comparison,
    /// A pattern run over a fleet (`tcp matrix`): [`Matrix`].
    Matrix,
}

impl DocumentKind {
    pub fn of(test: &str) -> DocumentKind {
        if test.ends_with(" repeat") {
            DocumentKind::Repeated
        } else if test.ends_with(" sweep") {
            DocumentKind::Sweep
        } else if test.ends_with(" matrix") {
            DocumentKind::Matrix
        } else if test == "compare" {
            DocumentKind::Comparison
        } else {
            DocumentKind::Run
        }
    }
}

/// The whole document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Version of linerate that measured it.
    pub linerate: String,
    pub schema: u32,
    /// Test kind: "tcp".
    pub test: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// True when some of what was asked was not measured (Ctrl-C, a lost agent).
    pub partial: bool,
    /// Why the run failed as a whole (the agents' results never came, nothing could be
    /// measured); null when it did not. Partial figures may still sit beside it.
    #[serde(default)]
    pub error: Option<String>,
    /// The validated spec, exactly as sent to the agents.
    pub options: TestSpec,
    /// What each end is: "client", and each agent under the address it was reached at.
    pub hosts: BTreeMap<String, HostRecord>,
    pub intervals: Vec<IntervalRecord>,
    pub summary: Summary,
    /// Things the reader should know (an agent that failed, a fallback taken).
    pub notes: Vec<String>,
    /// When measured inside a `linerate lab`: its hosts, links and what emulates each property.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<lab::LabRecord>,
    /// A third-party run (`linerate tcp --from A B`): the agent that ran the client's
    /// half, as the controller named it; its `hosts` entry is "client". Null for a run from
    /// this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The far end was iperf3, not a linerate agent: what it is and its own figures.
    /// Null for a run between linerate's ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3: Option<Iperf3Peer>,
    /// Latency under working load: the probes beside the load (`--probe`), their grades, and
    /// `linerate rpm`'s figures. Absent from a run without probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyUnderLoad>,
}

/// How a run ended, the one rule the exit status follows (README "Exit status").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything asked for was measured.
    Complete,
    /// Cut short (Ctrl-C, an agent lost): what was measured is true but not all that was asked.
    Partial,
    /// Nothing measured: an `error` set, every stream ended in error, no transaction
    /// completed; or an HTTP run in which no request got a 2xx response, or whose failed
    /// requests passed its `--max-errors`.
    Failed,
}

impl TestResult {
    /// How this run ended: failed wins over partial, partial over complete.
    pub fn outcome(&self) -> Outcome {
        let s = &self.summary;
        let nothing = if self.error.is_some() {
            true
        } else if let Some(h) = &s.http {
            // Every request failed (no 2xx), or more than `--max-errors` did.
            h.failure().is_some()
        } else if let Some(rr) = &s.rr {
            rr.transactions == 0
        } else {
            s.sent.ops == 0 && s.received.ops == 0 && s.sent.bytes == 0 && s.received.bytes == 0
        };
        if nothing {
            Outcome::Failed
        } else if self.partial {
            Outcome::Partial
        } else {
            Outcome::Complete
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// "client" or "agent".
    pub role: String,
    #[serde(flatten)]
    pub info: HostInfo,
    /// The configuration the end reported with its run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<HostConfig>,
    /// An agent: the profile it ran around the test (`--profile`), if the client asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileRecord>,
}

/// One record of the timeline: a stream's counts, or a host's samplers, over one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
// Built once per interval after a run, never on a hot path: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum IntervalRecord {
    Stream(StreamInterval),
    Host(HostIntervalRecord),
    /// HTTP runs: what the users did in the interval.
    Http(HttpIntervalRecord),
}

/// A host's samplers over one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostIntervalRecord {
    /// "client" or the agent's name.
    pub host: String,
    #[serde(flatten)]
    pub sample: HostInterval,
}

/// One interval sample of a stream, attributed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamInterval {
    /// The agent this stream ran with.
    pub agent: String,
    /// "client" or "agent": the end that counted.
    pub counted_by: String,
    /// "forward" (client to agent) or "reverse" (agent to client).
    pub direction: String,
    /// "sent" or "received".
    pub side: String,
    #[serde(flatten)]
    pub sample: IntervalSample,
    /// bytes x 8 / interval length.
    pub bits_per_second: f64,
}

/// Bytes counted by one side over a time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    pub bytes: u64,
    pub seconds: f64,
    /// bytes x 8 / seconds (1 Mbit = 10^6 bits).
    pub bits_per_second: f64,
}

impl Counted {
    pub fn new(bytes: u64, seconds: f64) -> Counted {
        let bits_per_second = if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds
        } else {
            0.0
        };
        Counted {
            bytes,
            seconds,
            bits_per_second,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SummaryDocument")]
pub struct Summary {
    /// Counted by the senders, summed over streams and agents.
    pub sent: SideSummary,
    /// Counted by the receivers: the figure to trust for throughput.
    pub received: SideSummary,
    /// With bidir: "forward" and "reverse" separately.
    pub directions: Option<BTreeMap<String, DirectionSummary>>,
    pub agents: Vec<AgentSummary>,
    pub streams: Vec<StreamSummary>,
    /// UDP runs: datagrams, loss, order, arrival spacing, one-way delay (flattened into `summary`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpSummary>,
    /// Request-response runs: transactions/s, latency, histogram, peaks (flattened into `summary`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrSummary>,
    /// HTTP runs: responses, bits/s, response times, connections, errors (flattened into `summary`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpSummary>,
    /// HTTP runs with an agent on the server's host: that host's samplers over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<SideSummary>,
    /// Mixed TCP runs (`--mix`): bytes and transfers per direction, CPU and efficiency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<MixSummary>,
}

/// [`Summary`] as the document holds it: the kind's figures sit flattened beside the common ones,
/// so a derived reader would hand every key to the first flattened kind that accepts it (UDP's
/// `lost` and `errors` made an rr summary vanish). Each kind is read whole from the rest, chosen
/// by the key only it has, so every stored document reads back as it was written.
#[derive(Deserialize)]
struct SummaryDocument {
    sent: SideSummary,
    received: SideSummary,
    directions: Option<BTreeMap<String, DirectionSummary>>,
    agents: Vec<AgentSummary>,
    streams: Vec<StreamSummary>,
    #[serde(default)]
    server: Option<SideSummary>,
    #[serde(default)]
    mix: Option<MixSummary>,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

impl TryFrom<SummaryDocument> for Summary {
    type Error = String;

    fn try_from(doc: SummaryDocument) -> Result<Summary, String> {
        fn kind<T: serde::de::DeserializeOwned>(
            rest: &serde_json::Map<String, serde_json::Value>,
            key: &str,
            name: &str,
        ) -> Result<Option<T>, String> {
            if !rest.contains_key(key) {
                return Ok(None);
            }
            serde_json::from_value(serde_json::Value::Object(rest.clone()))
                .map(Some)
                .map_err(|e| format!("summary's {name} figures: {e}"))
        }
        Ok(Summary {
            sent: doc.sent,
            received: doc.received,
            directions: doc.directions,
            agents: doc.agents,
            streams: doc.streams,
            udp: kind(&doc.rest, "datagrams_sent", "udp")?,
            rr: kind(&doc.rest, "transactions", "rr")?,
            http: kind(&doc.rest, "responses", "http")?,
            server: doc.server,
            mix: doc.mix,
        })
    }
}

/// A side of the transfer (all senders, or all receivers) over the measurement window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SideSummary {
    pub bytes: u64,
    /// The longest of the counting ends' windows, seconds.
    pub seconds: f64,
    /// bytes x 8 / seconds.
    pub bits_per_second: f64,
    /// Writes (sent) or reads (received).
    pub ops: u64,
    pub streams: usize,
    /// The ends whose counts these are ("client", agent names).
    pub counted_by: Vec<String>,
    /// Distinct hosts (by boot id) whose host-wide counters this side carries: each host once,
    /// however many of the counting ends ran on it.
    #[serde(default)]
    pub hosts: usize,
    /// Mean over the counting hosts of their host CPU; process time summed. The split and the
    /// per-CPU figures are the counting host's (when several hosts counted: their mean split,
    /// per-CPU figures under `summary.agents`).
    pub cpu: CpuUsage,
    /// The counting hosts' interrupts (summed over hosts when several).
    #[serde(default)]
    pub interrupts_per_second: Option<InterruptRates>,
    #[serde(default)]
    pub softirqs_per_second: BTreeMap<String, SoftirqRate>,
    /// The counting hosts' interfaces that counted anything (named HOST/IF when several hosts).
    #[serde(default)]
    pub interfaces: Vec<InterfaceUsage>,
    /// The counting hosts' stack counters, summed once per network namespace.
    #[serde(default)]
    pub stack: Option<StackUsage>,
    #[serde(default)]
    pub memory: Option<MemoryUsage>,
    /// linerate's own use on the counting hosts: CPU seconds and context switches, summed.
    #[serde(default)]
    pub process: Option<ProcessUsage>,
    #[serde(default)]
    pub efficiency: Option<Efficiency>,
    #[serde(default)]
    pub line_rate: Option<LineRate>,
    /// Sent side only: retransmits summed and cwnd averaged over streams (TCP_INFO at the end);
    /// RTT and window the mean over each stream's samples, averaged over streams.
    pub tcp: Option<TcpTotals>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpTotals {
    pub retransmits: u64,
    pub rtt_us: f64,
    pub cwnd_bytes: f64,
    /// Mean over streams of the receive window the sender saw at the end, bytes.
    pub window_bytes: f64,
    /// The most the windows allow at the measured RTTs: sum over streams of window x 8 / RTT.
    pub window_limit_bits_per_second: f64,
    /// Share of the senders' busy time stalled by the receivers' windows, percent.
    pub rwnd_limited_percent: f64,
    /// Share of the senders' busy time stalled by full send buffers, percent.
    pub sndbuf_limited_percent: f64,
    /// "receive window" when the receivers' windows stalled the senders [`LIMITED_SHARE_PERCENT`]
    /// of their busy time or more, or the throughput reached 85 % of
    /// `window_limit_bits_per_second`; "send buffer" when full send buffers stalled them that
    /// long: the test then measured the socket settings, not the path. None otherwise.
    pub limited_by: Option<String>,
}

/// The share of a sender's busy time stalled on the receive window or on its send buffer from
/// which the result names it as the limit. On a path-limited run both shares stay near 0 (the
/// congestion window is the limit there); a quarter of the time stalled costs a quarter or more
/// of the throughput.
pub const LIMITED_SHARE_PERCENT: f64 = 25.0;
/// How far the measured rate may pass `window_limit_bits_per_second` before the limit is taken
/// to contradict it: the ceiling comes from smoothed RTTs (queueing included) and mean windows,
/// an estimate a run can pass by a few percent. Past this factor no window advice is given.
pub const CEILING_SLACK: f64 = 1.10;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionSummary {
    pub sent: SideSummary,
    pub received: SideSummary,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    pub agent: String,
    pub sent: SideSummary,
    pub received: SideSummary,
}

/// One stream, both ends' view side by side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamSummary {
    pub agent: String,
    pub stream: u16,
    pub direction: String,
    /// The sender's count; absent when the sender's report was lost.
    pub sent: Option<Counted>,
    /// The receiver's count; absent when the receiver's report was lost.
    pub received: Option<Counted>,
    /// Sender's TCP_INFO when it ended.
    pub tcp: Option<TcpSnapshot>,
    pub sender_socket: Option<SocketGrant>,
    pub receiver_socket: Option<SocketGrant>,
    pub errors: ErrorCounts,
}

/// What a throughput cost in CPU, from the counting hosts' busy CPU over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Efficiency {
    /// Busy cores: the hosts' busy share x their CPUs, summed over the counting hosts.
    pub busy_cores: f64,
    /// Gbit/s (10^9 bits) per busy core.
    pub gbit_per_core: f64,
    /// CPU % (100 = one core) per Gbit/s.
    pub cpu_percent_per_gbit: f64,
    /// Busy core-seconds x clock (Hz) / bytes; absent when the clock is unknown.
    pub cycles_per_byte: Option<f64>,
}

/// The throughput against the most the wire allows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineRate {
    /// Link speed, bits/s.
    pub link_bits_per_second: f64,
    pub mtu_bytes: u32,
    /// The largest goodput that link and MTU allow (see `goodput`), bits/s.
    pub limit_bits_per_second: f64,
    /// This side's bits_per_second as a share of the limit.
    pub percent: f64,
    /// "given" (--link-speed, --mtu) or "detected: IF on HOST"; ", a tbf-shaped lab link" after
    /// it where the run was in a lab whose rate tbf emulates.
    pub source: String,
    /// What the link counts of each packet: `ethernet` (on the wire) or `tbf` (a shaped lab
    /// link); `ethernet` in older documents.
    #[serde(default)]
    pub link_kind: crate::goodput::LinkKind,
}

/// A histogram bin: [from, to) microseconds and its count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    pub from_us: f64,
    /// Infinite for an open last bin, written null (JSON has no infinity) and read back so.
    #[serde(deserialize_with = "null_is_infinite")]
    pub to_us: f64,
    pub count: u64,
}

/// A stored document reads back what serde_json wrote for an infinite bound: null.
fn null_is_infinite<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored document renders again, so it must read back; serde_json writes an
    /// infinite bound as null.
    #[test]
    fn an_open_last_bin_reads_back() {
        let bins = vec![
            Bin {
                from_us: 0.0,
                to_us: 10.0,
                count: 3,
            },
            Bin {
                from_us: 10.0,
                to_us: f64::INFINITY,
                count: 1,
            },
        ];
        let text = serde_json::to_string(&bins).expect("serialise");
        assert!(text.contains("\"to_us\":null"), "{text}");
        let back: Vec<Bin> = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, bins);
    }
}
