//! The far end of a run that was not a linerate agent but iperf3: linerate's client
//! against an `iperf3 -s`, or an `iperf3 -c` against `serve --iperf3-port`. What iperf3 said
//! about itself and its streams in its results message is kept here as it said it, beside the
//! side report linerate made of it.

use serde::{Deserialize, Serialize};

/// The iperf3 peer of a run, and its own figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iperf3Peer {
    /// "server" (linerate's client against `iperf3 -s`) or "client" (`iperf3 -c` against
    /// `linerate serve`).
    pub role: String,
    /// Where it was: its control connection's address.
    pub address: String,
    /// Its version as it said it: a client's `client_version`, a server's own output when it
    /// ran with `-J` and was asked for it; null when it did not say.
    pub version: Option<String>,
    /// What its messages show of its version when it did not say it (a server's UDP answer,
    /// keys only later versions send); null when nothing does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_hint: Option<String>,
    /// Its process's CPU time over its test's wall time, percent (100 = one CPU busy), as
    /// iperf3 counts it (getrusage over its own test time): total, user and system.
    pub cpu_util_total_percent: Option<f64>,
    pub cpu_util_user_percent: Option<f64>,
    pub cpu_util_system_percent: Option<f64>,
    /// The congestion control its sending streams used, as it said it.
    #[serde(default)]
    pub congestion_used: Option<String>,
    /// Its streams, by linerate's stream number.
    pub streams: Vec<Iperf3Stream>,
}

/// One stream as iperf3 reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iperf3Stream {
    /// linerate's number for the stream (iperf3's id 1, 3, 4, ... is stream 0, 1, 2, ...).
    pub stream: u16,
    /// iperf3's id for it.
    pub id: u64,
    /// What the iperf3 end did with it: "send" or "receive".
    pub role: super::Role,
    /// Bytes it sent (warm-up left out) or received (after its omit).
    pub bytes: u64,
    /// Its stream's time, seconds (end_time - start_time).
    pub seconds: f64,
    /// TCP segments retransmitted, on a stream it sent; null otherwise.
    pub retransmits: Option<u64>,
    /// UDP, a stream it received: RFC 1889 jitter, milliseconds.
    pub jitter_ms: Option<f64>,
    /// UDP: datagrams it lost (receiver) over the counted part.
    pub lost: Option<u64>,
    /// UDP: datagrams it sent (sender), or the highest sequence number it saw (receiver), over
    /// the counted part.
    pub packets: Option<u64>,
}
