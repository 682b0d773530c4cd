//! What a UDP run adds to the document: each sender's and receiver's report (how datagrams were
//! spaced, which were lost and when they arrived) and the run's datagram figures in `summary`.

use super::Bin;
use serde::{Deserialize, Serialize};

/// The most runs of lost sequence numbers a receiver lists per stream (`loss_ranges`); the rest
/// are counted (`loss_range_count`) but not listed.
pub const MAX_LOSS_RANGES: usize = 1000;

/// What one UDP sender did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpSendReport {
    /// Datagrams sent (numbered 0..datagrams).
    pub datagrams: u64,
    pub spacing: SendSpacing,
    /// Sent as UDP GSO trains (UDP_SEGMENT).
    pub gso: bool,
    /// Sends that failed (ICMP port unreachable, other errors); the stream went on.
    pub errors: u64,
    /// Sends the kernel refused with a full queue (ENOBUFS, EAGAIN), each retried; 0 from
    /// older senders.
    #[serde(default)]
    pub full_queue_retries: u64,
    /// CLOCK_REALTIME of the first and last data datagram's send, ns since the Unix epoch; None
    /// when nothing was sent (or the sender predates them).
    #[serde(default)]
    pub first_send_unix_ns: Option<u64>,
    #[serde(default)]
    pub last_send_unix_ns: Option<u64>,
}

/// What one UDP receiver saw. Histograms travel as hex of HdrHistogram's V2 encoding, in ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpReceiveReport {
    /// Distinct datagrams received.
    pub datagrams: u64,
    /// Datagrams never received, of the sender's count (from its end markers) or, without them,
    /// of those up to the highest number seen.
    pub lost: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    /// Datagrams numbered at or past `tracked_datagrams` (numbers the sender of this test cannot
    /// send): counted here and in the interval samples, in no other figure (0 from
    /// older receivers).
    #[serde(default)]
    pub out_of_range: u64,
    /// The sequence numbers the receiver tracked, `0..tracked_datagrams`: what the test's
    /// sender can send (its count, or its time at its rate, at most 33,554,432 a second and
    /// 2^32 in all). None from older receivers.
    #[serde(default)]
    pub tracked_datagrams: Option<u64>,
    /// One past the highest sequence number seen (within the tracked numbers).
    pub highest_plus_one: u64,
    /// The sender's count as its end markers said; None when none arrived.
    pub end_count: Option<u64>,
    pub loss_ranges: Vec<LossRange>,
    pub loss_range_count: u64,
    /// The stream in 64 columns: `.` nothing lost, `-` under 1 %, `x` under 10 %, `X` more.
    pub loss_picture: String,
    /// CLOCK_REALTIME of the first and last data datagram's arrival, ns since the Unix epoch.
    pub first_arrival_unix_ns: Option<u64>,
    pub last_arrival_unix_ns: Option<u64>,
    /// RFC 3550 interarrival jitter at the end, microseconds.
    pub jitter_us: f64,
    /// Where arrival times came from: "kernel" (SO_TIMESTAMPNS), "user", or both.
    pub timestamps: String,
    /// Arrival spacing, ns.
    pub spacing_histogram: String,
    /// One-way delay above its minimum, ns, plus 1 (so that 0 can be stored).
    pub delay_histogram: String,
    /// The smallest one-way delay, ns: arrival (receiver's clock) minus send time (sender's).
    /// Means something only when the clocks are synchronised.
    pub delay_min_ns: i64,
    /// Width of `bins`, microseconds.
    pub bin_us: u32,
    /// Arrival spacing, linear: [start of bin in µs, count], non-empty bins only.
    pub bins: Vec<[u64; 2]>,
    /// Spacings past the last bin.
    pub bin_overflow: u64,
    /// Received through UDP GRO (trains of datagrams per read, one arrival time per train).
    #[serde(default)]
    pub gro: bool,
    /// Loss and one-way delay along the sequence numbers; absent from older agents.
    #[serde(default)]
    pub along_sequence: Option<SequenceProfile>,
}

/// A stream's sequence numbers cut into up to 64 equal stretches, in order: the datagrams lost
/// in each and the one-way delay of each one's arrivals (UDPmon's loss pattern and one-way delay
/// against sequence number). The lists have one entry per stretch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SequenceProfile {
    /// Sequence numbers per stretch (a power of two); the last stretch may be shorter.
    pub width_datagrams: u64,
    /// Datagrams lost in each stretch.
    pub lost: Vec<u64>,
    /// One-way delay above the stream's minimum, µs, over each stretch's arrivals: mean, least
    /// and most; null for a stretch of which nothing arrived.
    pub delay_mean_us: Vec<Option<f64>>,
    pub delay_min_us: Vec<Option<f64>>,
    pub delay_max_us: Vec<Option<f64>>,
}

/// One stream's [`SequenceProfile`], named.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamProfile {
    pub agent: String,
    pub stream: u16,
    #[serde(flatten)]
    pub profile: SequenceProfile,
}

/// The spacing a sender achieved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SendSpacing {
    /// Mean time between consecutive datagrams, microseconds.
    pub mean_us: f64,
    pub stddev_us: f64,
    /// Datagrams sent more than a tenth of a gap (at least 1 µs) after their scheduled moment,
    /// percent.
    pub late_percent: f64,
    /// The spacing asked for, microseconds (0: as fast as possible).
    pub requested_us: f64,
}

/// A run of lost datagrams, `first..=last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossRange {
    pub first: u64,
    pub last: u64,
}

/// What `summary` adds for a UDP run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpSummary {
    pub datagrams_sent: u64,
    /// Distinct datagrams received.
    pub datagrams_received: u64,
    /// Received datagrams per second of the arrival window (first to last arrival).
    pub packets_per_second: f64,
    /// The senders' window: first to last send over all sending streams, seconds; None when
    /// no sender reported its send times.
    pub send_window_seconds: Option<f64>,
    /// Bytes sent over the senders' window, bits per second (the send side's `bits_per_second`).
    pub sent_bits_per_second: Option<f64>,
    /// The receivers' window: first to last arrival over all receiving streams, seconds.
    pub arrival_window_seconds: Option<f64>,
    /// Bytes received over the arrival window, bits per second (UDPmon's receive rate; the
    /// receive side's `bits_per_second`).
    pub received_bits_per_second: Option<f64>,
    /// Where the lost datagrams went, as the hosts' counters say.
    pub loss_causes_datagrams: Option<LossCauses>,
    /// Sent but never received (from each sender's count).
    pub lost: u64,
    /// Datagrams the receivers counted out of range (numbered past what the test's senders can
    /// send), over all receiving streams; in no other figure here.
    #[serde(default)]
    pub out_of_range: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    /// lost / sent x 100.
    pub loss_percent: f64,
    /// RFC 3550 interarrival jitter, microseconds, mean over streams.
    pub jitter_us: f64,
    /// CLOCK_REALTIME of the first and last send, ns since the Unix epoch (senders' clocks).
    pub first_send_unix_ns: Option<u64>,
    pub last_send_unix_ns: Option<u64>,
    /// CLOCK_REALTIME of the first and last arrival, ns since the Unix epoch.
    pub first_arrival_unix_ns: Option<u64>,
    pub last_arrival_unix_ns: Option<u64>,
    pub arrival_spacing_us: Option<SpacingFigures>,
    /// Arrival spacing in bins of `--bin` microseconds (non-empty bins; the last may be "and
    /// longer").
    pub arrival_spacing_histogram: Vec<Bin>,
    pub one_way_delay_us: Option<DelayFigures>,
    /// One-way delay in up to 50 equal bins from its minimum to its maximum.
    pub one_way_delay_histogram: Vec<Bin>,
    pub loss_ranges: Vec<StreamLoss>,
    /// Where arrival times came from: "kernel" (SO_TIMESTAMPNS), "user", or both.
    pub timestamps: String,
    pub send_spacing_us: Option<SendSpacingFigures>,
    /// Each receiving end's own figures (with several agents, and for multicast).
    pub receivers: Vec<ReceiverFigures>,
    /// Each receiving stream's loss and one-way delay along its sequence numbers (streams whose
    /// receiver sent one).
    #[serde(default)]
    pub along_sequence: Vec<StreamProfile>,
    /// A paced run's send rate against the one asked; None when sending as fast as
    /// possible, or when no sender reported its send times.
    #[serde(default)]
    pub send_rate: Option<RateAchieved>,
    /// Datagrams received per receiving end, mean over `receivers` (with multicast each
    /// receiver is sent the same datagrams, so `datagrams_received` is a sum over copies).
    pub received_per_receiver_mean_datagrams: Option<f64>,
}

/// The lost datagrams split by where the hosts' counters say they were dropped, in datagrams.
/// The counters are host-wide (other traffic counts too), so each share is capped at what was
/// still unattributed, in the order below; `network` is the remainder. None: that counter was
/// not available on the host that would have counted it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LossCauses {
    /// The receiver's socket buffer was full (Udp RcvbufErrors): raise `--window`.
    pub receive_buffer: Option<u64>,
    /// The receiving interface dropped or missed them (rx_dropped + rx_missed + rx_errors).
    pub receive_interface: Option<u64>,
    /// The receiver's softnet backlog overflowed (/proc/net/softnet_stat dropped).
    pub softnet: Option<u64>,
    /// The sender never got them out (Udp SndbufErrors + the sending interfaces' tx_dropped).
    pub sender: Option<u64>,
    /// The rest: lost between the hosts.
    pub network: u64,
    /// Datagrams one counted receive-side drop stood for: the sender sent GSO trains and the
    /// receiver read them whole (GRO), so the kernel dropped and counted whole trains; the
    /// receive-side shares are the counters times this, capped. None: one drop, one datagram.
    pub train_datagrams: Option<u64>,
}

/// What one receiving end got.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiverFigures {
    /// The agent whose streams these are ("client" counted them under `--reverse`).
    pub agent: String,
    pub counted_by: String,
    pub datagrams_received: u64,
    pub lost: u64,
    pub loss_percent: f64,
    pub out_of_order: u64,
    pub duplicates: u64,
}

/// Spacing between arrivals, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpacingFigures {
    pub mean: f64,
    pub stddev: f64,
    pub p50: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
}

/// One-way delay, microseconds: relative to the smallest seen (`relative`), unless the run said
/// the clocks are synchronised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayFigures {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub relative: bool,
}

/// Below this share of the rate asked, a paced UDP run says the rate was not reached (a note,
/// not a failure).
pub const RATE_SHORT_PERCENT: f64 = 95.0;

/// What a paced UDP run sent of the rate it asked for, and what held it back where the ends'
/// counters say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateAchieved {
    /// The rate asked (`--rate`, or `--gap` at `-l`), payload bits/s over all sending streams.
    pub asked_bits_per_second: f64,
    /// Payload bits/s the senders sent over their window (`sent_bits_per_second`).
    pub sent_bits_per_second: f64,
    /// sent / asked x 100.
    pub percent: f64,
    /// Datagrams sent more than a tenth of a gap after their moment, percent, mean over the
    /// sending streams: a sender that cannot keep its schedule (CPU, a blocked socket).
    pub late_percent: f64,
    /// Sends the kernel refused with a full queue (ENOBUFS, EAGAIN) and the sender retried,
    /// over all sending streams; 0 from older senders.
    pub full_queue_retries: u64,
    /// Datagrams the sending host's stack could not queue (its UDP SndbufErrors over the
    /// window: a full socket buffer or a qdisc that dropped them); None when not counted.
    pub send_buffer_errors: Option<u64>,
    /// The sending streams.
    #[serde(default)]
    pub streams: u64,
    /// linerate's CPU time on the sending ends (user + system, getrusage) over the senders'
    /// window, in cores (1.0 = one core busy): near one core per sending stream, the senders
    /// were CPU-bound. None with `--bidir` (receivers share the processes) or when unknown.
    #[serde(default)]
    pub sender_busy_cores: Option<f64>,
}

/// Lost datagrams of one stream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamLoss {
    pub agent: String,
    pub stream: u16,
    pub lost: u64,
    /// The first runs of lost sequence numbers (at most [`MAX_LOSS_RANGES`]).
    pub ranges: Vec<LossRange>,
    /// Runs of lost sequence numbers in all, listed or not; 0 from older documents (then
    /// `ranges` is all that is known).
    #[serde(default)]
    pub range_count: u64,
    /// The stream in 64 columns: `.` nothing lost, `-` under 1 %, `x` under 10 %, `X` more.
    pub picture: String,
}

/// The achieved send spacing, microseconds, over all sending streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SendSpacingFigures {
    pub requested: f64,
    pub mean: f64,
    pub stddev: f64,
    pub late_percent: f64,
}
