//! Latency under working load (`latency` at the top level of a result): what the probes beside a
//! test's load measured, before it (idle), during it (loaded) and after it (recovery), on the
//! same time axis as the test's intervals; the grades made from them; and, for `linerate rpm`,
//! the responsiveness figure. Absent from a run without probes (and from documents before them).

use super::{Bin, LatencyFigures};
use serde::{Deserialize, Serialize};

/// Everything the probes of one run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyUnderLoad {
    /// When the load ran on the probes' time axis, seconds since the load's time zero (the zero
    /// of the result's `intervals`): the load is `[0, load_end_s]`; idle probes have negative
    /// times, recovery probes times past `load_end_s`.
    pub load_end_s: f64,
    /// Each probe series: on a connection of its own, and on the load's own connections.
    pub series: Vec<ProbeSeries>,
    /// The headline, from the first series on a connection of its own (else the first series):
    /// its round trips' idle and loaded medians and their difference, ms; null where a phase
    /// had no answered probe.
    pub idle_ms: Option<f64>,
    pub loaded_ms: Option<f64>,
    pub added_ms: Option<f64>,
    /// The same difference one way, client to far end (up) and back (down), ms; null without
    /// a clock offset to split the round trip.
    pub added_up_ms: Option<f64>,
    pub added_down_ms: Option<f64>,
    /// The far end's clock against this one, when the one-way figures used it.
    pub clock: Option<ClockOffset>,
    /// Grades made from these samples (bufferbloat, RPM band, Quality of Outcome), each with the
    /// rule that made it.
    pub grades: Vec<Grade>,
    /// `linerate rpm`: the responsiveness (draft-ietf-ippm-responsiveness); absent from other
    /// kinds' runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<RpmFigures>,
    /// A test of several load phases on one time axis (`linerate rrul`: baseline, download,
    /// upload, both, recovery), in order; each series' `by_phase` follows this list. Absent
    /// (empty) for a test with one load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<LoadPhase>,
}

/// How far a stage of the responsiveness test got (the draft's "Confidence of Test-Results"; the
/// "Accuracy" Apple's networkQuality prints beside its figures).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Fewer than MAD intervals ran: the moving average does not cover its whole window.
    #[default]
    Low,
    /// MAD intervals or more ran, but the figure never came within the standard deviation
    /// tolerance.
    Medium,
    /// The figure reached stability within the tolerance.
    High,
}

impl Confidence {
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// The responsiveness test's figures: the headline and each stage's (one for `both`, `up` or
/// `down`; a download then an upload stage for `sequential`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RpmFigures {
    /// Round trips per minute: the one stage's figure, or the mean of the sequential stages'
    /// (the lower bound of both is in each stage); null when no stage measured one.
    pub rpm: Option<f64>,
    /// The lowest of the stages' responsiveness confidences.
    pub confidence: Confidence,
    pub stages: Vec<RpmStage>,
}

/// One stage of the responsiveness test: its load, its probes' trimmed means over the last MAD
/// intervals, and how far its stability went.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RpmStage {
    /// What it loaded: `both`, `down` or `up`.
    pub direction: String,
    /// Responsiveness, round trips per minute: the mean of `foreign_rpm` and `self_rpm` (the
    /// draft's formula); null without both kinds of probe answered.
    pub rpm: Option<f64>,
    /// 60000 / the mean of the foreign probes' three trimmed means (two without TLS).
    pub foreign_rpm: Option<f64>,
    /// 60000 / the self probes' trimmed mean.
    pub self_rpm: Option<f64>,
    /// How far the responsiveness got: low, medium, high.
    pub confidence: Confidence,
    /// How far the goodput got.
    pub goodput_confidence: Confidence,
    /// The trimmed means (the draft's TM) over the last MAD intervals, ms: the foreign probes'
    /// TCP handshake, TLS handshake per round trip (null without TLS) and 1-byte GET, and the
    /// self probes' 1-byte GET on a load-generating connection.
    pub tcp_handshake_ms: Option<f64>,
    pub tls_handshake_ms: Option<f64>,
    pub http_get_ms: Option<f64>,
    pub self_ms: Option<f64>,
    /// Probes whose samples went into the trimmed means (before trimming): foreign and self.
    pub foreign_probes: u64,
    pub self_probes: u64,
    /// The moving average of the goodput over the last MAD intervals, Mbit/s, each way (null
    /// for a direction this stage did not load).
    pub goodput_down_mbps: Option<f64>,
    pub goodput_up_mbps: Option<f64>,
    /// Intervals (ID) the stage ran, and its seconds.
    pub intervals: u32,
    pub seconds: f64,
    /// Goodput, and responsiveness after it, came within the standard deviation tolerance.
    pub goodput_stable: bool,
    pub stable: bool,
    /// Load-generating connections open at the stage's end, each way.
    pub connections_down: u32,
    pub connections_up: u32,
}

/// One phase of a test of several load phases: when it ran on the probes' time axis and what
/// load it carried.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadPhase {
    /// `baseline`, `download`, `upload`, `both`, `recovery`.
    pub name: String,
    /// Its start and end, seconds on the time axis of [`LatencyUnderLoad::load_end_s`]: a load
    /// phase from its run's time zero to its last interval's end; probes sent between phases
    /// (a run's connection set-up) belong to none.
    pub start_s: f64,
    pub end_s: f64,
    /// The load's throughput per class and direction over the phase, as the receivers counted
    /// it; empty in a phase of probes alone.
    pub load: Vec<ClassLoad>,
}

/// The streams of one DSCP class and direction over one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassLoad {
    /// The class's code point (0-63) and its name (`EF`), the number where it has none.
    pub dscp: crate::spec::Dscp,
    pub class: String,
    /// `upload` (client to agent) or `download`.
    pub direction: String,
    pub streams: u16,
    /// Bytes received over the phase, summed over the class's streams that way.
    pub bytes: u64,
    /// The longest of those streams' receiving windows, seconds.
    pub seconds: f64,
    /// bytes x 8 / seconds; null over an empty window.
    pub bits_per_second: Option<f64>,
}

/// Where a probe series was timed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeOn {
    /// On a connection of its own, beside the load.
    #[default]
    Separate,
    /// On the load's own connections (TCP_INFO's RTT, a request on an HTTP/2 load connection).
    Load,
}

/// One series of probes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSeries {
    /// What it times, in words: `tcp round trip`, `udp round trip`, `http GET`, `tcp_info rtt`,
    /// `http2 on a load connection`.
    pub name: String,
    pub on: ProbeOn,
    /// Probes sent, answered and lost (unanswered within the timeout), over the whole series;
    /// sent = answered + lost + in flight at the end. Null where the series counts no sends
    /// (TCP_INFO's RTT is read, not sent).
    pub sent: Option<u64>,
    pub answered: u64,
    pub lost: Option<u64>,
    /// One-way figures the clock offset's bounds make impossible (a negative delay beyond the
    /// offset's uncertainty): counted, and left out of the one-way figures, as iperf2 counts
    /// clock-sync errors.
    pub clock_errors: u64,
    /// Every answered probe, in time order.
    pub samples: Vec<ProbeSample>,
    pub idle: Option<PhaseLatency>,
    pub loaded: Option<PhaseLatency>,
    pub recovery: Option<PhaseLatency>,
    /// Per phase of [`LatencyUnderLoad::phases`], in its order, the probes sent in it; null
    /// where a phase had no answered probe. Absent (empty) without phases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_phase: Vec<Option<PhaseLatency>>,
}

/// One answered probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSample {
    /// When it was sent, seconds on the load's time axis ([`LatencyUnderLoad::load_end_s`]).
    pub t_s: f64,
    /// Its round trip, ms.
    pub rtt_ms: f64,
    /// One way, ms, from the far end's time stamp and the clock offset; null without them or
    /// when impossible (a clock error).
    pub up_ms: Option<f64>,
    pub down_ms: Option<f64>,
}

/// One phase's probes (idle, loaded or recovery).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseLatency {
    /// Answered probes sent in the phase.
    pub answered: u64,
    /// Lost probes sent in the phase; null where the series counts no sends.
    pub lost: Option<u64>,
    /// Round trips, ms.
    pub rtt_ms: LatencyFigures,
    /// One way, ms; null without a clock offset.
    pub up_ms: Option<LatencyFigures>,
    pub down_ms: Option<LatencyFigures>,
    /// The round trips in up to 100 equal bins (µs, as rr's histogram).
    pub histogram: Vec<Bin>,
}

/// The far end's clock against this host's, from the controller's clock estimate: the far end
/// reads `offset_ms` more than this host at one instant, give or take `uncertainty_ms` (half the
/// fastest exchange's round trip).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    pub offset_ms: f64,
    pub uncertainty_ms: f64,
}

/// A grade made from measured figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    /// The scale: `bufferbloat`, `rpm`, `qoo video call`.
    pub scale: String,
    /// Its mark on that scale: `A+`, `Medium`, `82 %`.
    pub grade: String,
    /// The figure it was made from, in `unit`; null where it takes several.
    pub value: Option<f64>,
    pub unit: String,
    /// The rule that made it, in words: "added latency 212 ms (mean of up 210 and down 214):
    /// 200 ms or more and under 400 ms is D".
    pub rule: String,
}
