//! One end's report of one run ([`SideReport`]): its streams, their interval samples, its CPU and
//! host samplers, on its own clock. The engines fill it in; the client receives the agent's over
//! the control connection.

use super::{RrStreamReport, UdpReceiveReport, UdpSendReport};
use crate::metrics::cpu::CpuSplit;
use crate::metrics::host::HostConfig;
use crate::metrics::sample::{HostInterval, HostUsage};
use serde::{Deserialize, Serialize};

/// A host whose CPUs were at least this busy over the window, all of them together, percent,
/// was CPU-bound: its figures may be the host's limit, not the link's (core's `summary` notes it,
/// the report marks it).
pub const CPU_BOUND_PERCENT: f64 = 95.0;

/// Failures inside a run, counted by kind (they are measurements, not messages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// Connection reset or broken pipe.
    pub resets: u64,
    /// Any other socket error that ended the stream.
    pub other: u64,
}

impl ErrorCounts {
    pub fn add(&mut self, o: &ErrorCounts) {
        self.resets += o.resets;
        self.other += o.other;
    }
}

/// What TCP_INFO said about a connection at one moment (tcp(7), struct tcp_info).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpSnapshot {
    /// Smoothed round-trip time, microseconds.
    pub rtt_us: u32,
    /// Its mean deviation, microseconds.
    pub rttvar_us: u32,
    /// Congestion window, bytes (segments x send MSS).
    pub cwnd_bytes: u64,
    /// Segments retransmitted since the connection opened (tcpi_total_retrans).
    pub retransmits: u64,
    /// Send MSS, bytes.
    pub mss_bytes: u32,
    /// Path MTU, bytes.
    pub pmtu_bytes: u32,
    /// The peer's advertised receive window as the sender sees it, bytes (tcpi_snd_wnd).
    pub snd_wnd_bytes: u32,
    /// Time the connection had data to send, microseconds (tcpi_busy_time).
    pub busy_us: u64,
    /// Of that, time stalled by the receiver's window, microseconds (tcpi_rwnd_limited).
    pub rwnd_limited_us: u64,
    /// Of that, time stalled by a full send buffer, microseconds (tcpi_sndbuf_limited).
    pub sndbuf_limited_us: u64,
}

/// Counts for one stream over one interval, as the side that counted them saw them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    pub stream: u16,
    /// Since this side's time zero (its start of the test), monotonic clock.
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes: u64,
    /// Writes or reads completed.
    pub ops: u64,
    /// TCP_INFO at the end of the interval, on sending streams.
    pub tcp: Option<TcpSnapshot>,
}

/// Whether this end wrote or read a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Send,
    Receive,
}

impl Role {
    /// The client's role on a stream: it sends what flows forward (client to agent) and
    /// receives what flows back; a request-response or HTTP stream counts as forward, the
    /// client asking. The one place a stream's direction becomes who sends: from here on the
    /// role travels with the stream's samples and report.
    pub fn of_client(forward: bool) -> Role {
        if forward { Role::Send } else { Role::Receive }
    }

    /// The agent's role on a stream: the client's, the other way round.
    pub fn of_agent(forward: bool) -> Role {
        Role::of_client(forward).opposite()
    }

    /// Whether a stream that this end has in this role flows forward (client to agent);
    /// `client`: this end is the client. The inverse of [`Role::of_client`].
    pub fn flows_forward(self, client: bool) -> bool {
        (self == Role::Send) == client
    }

    /// The other end's role on the same stream.
    pub fn opposite(self) -> Role {
        match self {
            Role::Send => Role::Receive,
            Role::Receive => Role::Send,
        }
    }
}

/// A figure the engines leave at zero (or empty) when they did not read it: written as null, so
/// a placeholder never reads as data (UDP `mss_bytes: 0`, `congestion: ""`, rr's
/// buffers all 0); null reads back as zero.
mod unknown_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize + Default + PartialEq, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        if *v == T::default() {
            s.serialize_none()
        } else {
            s.serialize_some(v)
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de> + Default, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
    }
}

/// Socket settings as the kernel granted them (read back after setting). In the document, a
/// figure that was not read (a UDP socket has no MSS nor congestion control) is null.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SocketGrant {
    /// SO_SNDBUF as read back, bytes (the kernel doubles what is asked for bookkeeping).
    #[serde(with = "unknown_as_null", default)]
    pub sndbuf_bytes: u64,
    /// SO_RCVBUF as read back, bytes.
    #[serde(with = "unknown_as_null", default)]
    pub rcvbuf_bytes: u64,
    /// TCP_MAXSEG as read back, bytes; null on UDP.
    #[serde(with = "unknown_as_null", default)]
    pub mss_bytes: u32,
    /// The congestion control in use; null on UDP.
    #[serde(with = "unknown_as_null", default)]
    pub congestion: String,
    pub nodelay: bool,
    /// `--zerocopy`: the zero-copy send path in use on a sending TCP socket; absent
    /// when writes copy (receiving sockets, runs without it, or a path the kernel or the mode
    /// refused: the notes then say why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<crate::spec::ZeroCopy>,
    /// `--dscp`: the class the socket's packets carry, as IP_TOS (IPv4) or IPV6_TCLASS (IPv6)
    /// read it back; absent when none was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<crate::spec::Dscp>,
}

/// Why a stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamEnd {
    /// The sender reached its time limit.
    Deadline,
    /// The sender wrote its count of buffers.
    Count,
    /// The receiver read end of stream.
    Eof,
    /// Stopped early (Ctrl-C, the peer stopped, or the test was aborted).
    Stopped,
    /// A socket error ended it (see the stream's error counts).
    Error,
}

/// One stream as one end saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    /// Index within the agent's streams; the same number on both ends.
    pub stream: u16,
    pub role: Role,
    /// Bytes written (sender) or read (receiver) inside the measurement window.
    pub bytes: u64,
    pub ops: u64,
    /// Length of this stream's part of the window, seconds.
    pub seconds: f64,
    /// Bytes over the whole run, warm-up and cool-down included.
    pub total_bytes: u64,
    pub socket: SocketGrant,
    /// TCP_INFO when the stream ended (sending streams).
    pub tcp: Option<TcpSnapshot>,
    pub errors: ErrorCounts,
    pub end: StreamEnd,
    /// UDP senders: what was sent and how it was spaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_send: Option<UdpSendReport>,
    /// UDP receivers: what arrived, when, and what did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_receive: Option<UdpReceiveReport>,
    /// Request-response streams: transactions and their round trips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrStreamReport>,
}

impl SideReport {
    /// Each stream's role by stream number, as this end recorded it (None: a number none of its
    /// streams has): the roles its interval samples were counted in.
    pub fn roles(&self) -> Vec<Option<Role>> {
        let count = self
            .streams
            .iter()
            .map(|s| usize::from(s.stream) + 1)
            .max()
            .unwrap_or(0);
        let mut roles = vec![None; count];
        for s in &self.streams {
            roles[usize::from(s.stream)] = Some(s.role);
        }
        roles
    }
}

/// CPU use over the measurement window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// Busy share of all the host's CPUs, percent (100 = every CPU busy), from /proc/stat.
    pub host_percent: Option<f64>,
    /// linerate's own CPU time as a share of all the host's online CPUs, percent (100 = every
    /// CPU busy, the same base as `host_percent`; getrusage). Null when the window was shorter
    /// than 0.1 s (ten clock ticks), too short for a share. Several processes on one host add
    /// up; distinct hosts are averaged.
    #[serde(alias = "process_percent")]
    pub process_percent_of_host: Option<f64>,
    /// linerate's own CPU time over the window, seconds (summed over the counting processes).
    pub process_user_seconds: f64,
    pub process_system_seconds: f64,
    /// Where all CPUs' time went (user, system, irq, softirq, iowait, steal, idle), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<CpuSplit>,
    /// The same for each online CPU, under its number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_cpu: Vec<CpuSplit>,
}

/// Everything one end measured in one run, on its own clock.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SideReport {
    /// The measurement window, since this side's time zero.
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub streams: Vec<StreamReport>,
    pub intervals: Vec<IntervalSample>,
    pub cpu: CpuUsage,
    /// The host's samplers over the measurement window.
    #[serde(default)]
    pub host: Option<HostUsage>,
    /// The host's samplers at each interval.
    #[serde(default)]
    pub timeline: Vec<HostInterval>,
    /// The host's configuration, read when the run ended (the caller fills it in).
    #[serde(default)]
    pub config: Option<HostConfig>,
    /// An agent's report: the profile it ran around the test (the agent fills it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::ProfileRecord>,
    /// An HTTP test's agent: its HTTP server's counts over the test, when the URLs named one of
    /// its ports; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_server: Option<super::HttpServerCounts>,
    /// Which I/O path drove the sockets: "syscall" (blocking read/write) or "io_uring".
    pub io: String,
    /// True when the run was cut short (Ctrl-C, a vanished peer).
    pub partial: bool,
    pub notes: Vec<String>,
}
