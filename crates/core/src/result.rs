//! The result document: what one run of a test measured, on every end, with how it was asked for.
//! docs/results.md is its contract and mirrors these types; a change bumps [`SCHEMA`].
//!
//! Each end's engine returns a [`SideReport`] (its own counts, its own clock). [`assemble_tcp`] joins
//! the client's report and each agent's into one [`TestResult`]: counts stay attributed to the side
//! that counted them (`sent` = the sender's figure, `received` = the receiver's).

use crate::engine::pacing::SendSpacing;
use crate::engine::sequence::LossRange;
use crate::metrics::cpu::CpuSplit;
use crate::metrics::host::{HostConfig, HostInfo};
use crate::metrics::sample::{
    HostInterval, HostUsage, InterfaceUsage, InterruptRates, MemoryUsage, ProcessUsage, SoftirqRate, StackUsage,
};
use crate::spec::{TcpSpec, TestSpec};
use crate::goodput::Goodput;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the result document's layout.
pub const SCHEMA: u32 = 1;

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

/// Socket settings as the kernel granted them (read back after setting).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SocketGrant {
    /// SO_SNDBUF as read back, bytes (the kernel doubles what is asked for bookkeeping).
    pub sndbuf_bytes: u64,
    /// SO_RCVBUF as read back, bytes.
    pub rcvbuf_bytes: u64,
    /// TCP_MAXSEG as read back, bytes.
    pub mss_bytes: u32,
    pub congestion: String,
    pub nodelay: bool,
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

/// One request-response stream, as its end saw it. Histograms are hex of HdrHistogram's V2
/// encoding, in ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RrStreamReport {
    /// Transactions completed (asking end: timed round trips; answering end: answered).
    pub transactions: u64,
    /// UDP requests that got no answer within the timeout.
    pub lost: u64,
    /// Answers that came after their request had timed out.
    pub stale: u64,
    /// Failed transactions (a refused connect, a reset).
    pub errors: u64,
    /// Round-trip times (asking end).
    pub latency_histogram: String,
    /// TCP_CRR: connect times.
    pub connect_histogram: Option<String>,
    /// Open loop: the rate asked for, transactions/s per stream.
    pub requested_rate: Option<f64>,
    /// Open loop: the mean spacing achieved between requests, microseconds.
    pub achieved_spacing_us: Option<f64>,
}

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
    /// One past the highest sequence number seen.
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
}

/// CPU use over the measurement window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// Busy share of all the host's CPUs, percent (100 = every CPU busy), from /proc/stat.
    pub host_percent: Option<f64>,
    /// linerate's own CPU time as a share of all the host's CPUs, percent (getrusage).
    pub process_percent: Option<f64>,
    pub process_user_seconds: f64,
    pub process_system_seconds: f64,
    /// Where all CPUs' time went (user, system, irq, softirq, iowait, steal, idle), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<CpuSplit>,
    /// The same for each online CPU, under its number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_cpu: Vec<CpuSplit>,
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
    /// "given" (--link-speed, --mtu) or "detected: IF on HOST".
    pub source: String,
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
    /// Which I/O path drove the sockets: "syscall" (blocking read/write) or "io_uring".
    pub io: String,
    /// True when the run was cut short (Ctrl-C, a vanished peer).
    pub partial: bool,
    pub notes: Vec<String>,
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
    pub lab: Option<serde_json::Value>,
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
    Http(crate::http_summary::HttpIntervalRecord),
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
    /// Mean over the counting ends of their host CPU; process time summed. The split and the
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
    /// The counting hosts' stack counters, summed.
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
    /// Sent side only: retransmits summed, RTT and cwnd averaged over streams (TCP_INFO at the end).
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

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    pub udp: Option<crate::udp_summary::UdpSummary>,
    /// Request-response runs: transactions/s, latency, histogram, peaks (flattened into `summary`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<crate::rr_summary::RrSummary>,
    /// HTTP runs: responses, bits/s, response times, connections, errors (flattened into `summary`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub http: Option<crate::http_summary::HttpSummary>,
    /// HTTP runs with an agent on the server's host: that host's samplers over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<SideSummary>,
}

/// The share of a sender's busy time stalled on the receive window or on its send buffer from
/// which the result names it as the limit. On a path-limited run both shares stay near 0 (the
/// congestion window is the limit there); a quarter of the time stalled costs a quarter or more
/// of the throughput.
pub const LIMITED_SHARE_PERCENT: f64 = 25.0;

/// One end's report with its name and whether it is the client.
pub struct Side<'a> {
    pub name: &'a str,
    pub report: &'a SideReport,
}

/// What the client knows of one agent after a run.
pub struct AgentOutcome<'a> {
    pub name: &'a str,
    pub host: Option<&'a HostInfo>,
    /// The agent's own report; None if it never came (the agent vanished).
    pub report: Option<&'a SideReport>,
    /// The client's report restricted to this agent's streams, renumbered 0.. per agent.
    pub client: &'a SideReport,
}

fn direction_name(forward: bool) -> &'static str {
    if forward { "forward" } else { "reverse" }
}

/// A stream's count within a report, with the report's owner and CPU.
struct Entry<'a> {
    owner: &'a str,
    report: &'a SideReport,
    stream: &'a StreamReport,
}

fn summarise(entries: &[Entry<'_>], sending: bool) -> SideSummary {
    let mut s = SideSummary::default();
    let mut owners: Vec<&str> = Vec::new();
    let mut reports: Vec<&SideReport> = Vec::new();
    let mut tcp = TcpTotals::default();
    let mut tcp_n = 0usize;
    let (mut busy, mut rwnd, mut sndbuf) = (0u64, 0u64, 0u64);
    for e in entries {
        s.bytes += e.stream.bytes;
        s.ops += e.stream.ops;
        s.streams += 1;
        s.seconds = s.seconds.max(e.stream.seconds);
        if !owners.contains(&e.owner) {
            owners.push(e.owner);
            reports.push(e.report);
        }
        if let (true, Some(t)) = (sending, &e.stream.tcp) {
            tcp.retransmits += t.retransmits;
            tcp.rtt_us += f64::from(t.rtt_us);
            tcp.cwnd_bytes += t.cwnd_bytes as f64;
            tcp.window_bytes += f64::from(t.snd_wnd_bytes);
            if t.rtt_us > 0 {
                tcp.window_limit_bits_per_second += f64::from(t.snd_wnd_bytes) * 8.0 / (f64::from(t.rtt_us) / 1e6);
            }
            busy += t.busy_us;
            rwnd += t.rwnd_limited_us;
            sndbuf += t.sndbuf_limited_us;
            tcp_n += 1;
        }
    }
    s.bits_per_second = Counted::new(s.bytes, s.seconds).bits_per_second;
    s.counted_by = owners.iter().map(|o| o.to_string()).collect();
    let mean = |f: fn(&CpuUsage) -> Option<f64>| {
        let v: Vec<f64> = reports.iter().filter_map(|r| f(&r.cpu)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    s.cpu.host_percent = mean(|c| c.host_percent);
    s.cpu.process_percent = mean(|c| c.process_percent);
    s.cpu.process_user_seconds = reports.iter().map(|r| r.cpu.process_user_seconds).sum();
    s.cpu.process_system_seconds = reports.iter().map(|r| r.cpu.process_system_seconds).sum();
    let hosts: Vec<(&str, &HostUsage)> = owners
        .iter()
        .zip(&reports)
        .filter_map(|(o, r)| r.host.as_ref().map(|h| (*o, h)))
        .collect();
    add_host_usage(&mut s, &hosts);
    if tcp_n > 0 {
        tcp.rtt_us /= tcp_n as f64;
        tcp.cwnd_bytes /= tcp_n as f64;
        tcp.window_bytes /= tcp_n as f64;
        if busy > 0 {
            tcp.rwnd_limited_percent = 100.0 * rwnd as f64 / busy as f64;
            tcp.sndbuf_limited_percent = 100.0 * sndbuf as f64 / busy as f64;
        }
        // The windows limited the run when the senders stalled on them a quarter of the time, or when
        // the throughput sits at the ceiling the windows set at the measured RTT.
        let at_ceiling =
            tcp.window_limit_bits_per_second > 0.0 && s.bits_per_second >= 0.85 * tcp.window_limit_bits_per_second;
        tcp.limited_by = if tcp.rwnd_limited_percent >= LIMITED_SHARE_PERCENT || at_ceiling {
            Some("receive window".into())
        } else if tcp.sndbuf_limited_percent >= LIMITED_SHARE_PERCENT {
            Some("send buffer".into())
        } else {
            None
        };
        s.tcp = Some(tcp);
    }
    s
}

/// A side counted by one host alone (an HTTP client, an HTTP server's agent): given counts over
/// `seconds`, with that host's samplers over its window.
pub(crate) fn host_side_summary(
    owner: &str,
    report: &SideReport,
    bytes: u64,
    ops: u64,
    streams: usize,
    seconds: f64,
) -> SideSummary {
    let mut s = SideSummary {
        bytes,
        seconds,
        bits_per_second: Counted::new(bytes, seconds).bits_per_second,
        ops,
        streams,
        counted_by: vec![owner.to_string()],
        cpu: report.cpu.clone(),
        ..Default::default()
    };
    let hosts: Vec<(&str, &HostUsage)> = report.host.iter().map(|h| (owner, h)).collect();
    add_host_usage(&mut s, &hosts);
    s
}

/// The counting hosts' samplers into a side's summary: copied for one host; for several, totals
/// summed, CPU split averaged, interfaces named HOST/IF.
fn add_host_usage(s: &mut SideSummary, hosts: &[(&str, &HostUsage)]) {
    if let [(_, h)] = hosts {
        s.cpu.split = h.cpu;
        s.cpu.per_cpu = h.per_cpu.clone();
        s.interrupts_per_second = h.interrupts_per_second.clone();
        s.softirqs_per_second = h.softirqs_per_second.clone();
        s.interfaces = h.interfaces.clone();
        s.stack = h.stack;
        s.memory = h.memory;
        s.process = h.process;
    } else if !hosts.is_empty() {
        let splits: Vec<CpuSplit> = hosts.iter().filter_map(|(_, h)| h.cpu).collect();
        if !splits.is_empty() {
            let n = splits.len() as f64;
            let mean = |f: fn(&CpuSplit) -> f64| splits.iter().map(f).sum::<f64>() / n;
            s.cpu.split = Some(CpuSplit {
                cpu: None,
                busy: mean(|c| c.busy),
                user: mean(|c| c.user),
                system: mean(|c| c.system),
                irq: mean(|c| c.irq),
                softirq: mean(|c| c.softirq),
                iowait: mean(|c| c.iowait),
                steal: mean(|c| c.steal),
                idle: mean(|c| c.idle),
            });
        }
        let mut ints = InterruptRates::default();
        for (name, h) in hosts {
            if let Some(i) = &h.interrupts_per_second {
                ints.total += i.total;
                for (iface, rate) in &i.per_interface {
                    ints.per_interface.insert(format!("{name}/{iface}"), *rate);
                }
            }
            for (kind, r) in &h.softirqs_per_second {
                s.softirqs_per_second.entry(kind.clone()).or_default().total += r.total;
            }
            s.interfaces.extend(h.interfaces.iter().map(|i| InterfaceUsage {
                name: format!("{name}/{}", i.name),
                ..i.clone()
            }));
            if let Some(p) = h.process {
                let t = s.process.get_or_insert_with(ProcessUsage::default);
                t.user_seconds += p.user_seconds;
                t.system_seconds += p.system_seconds;
                t.cpu_percent += p.cpu_percent;
                t.voluntary_context_switches += p.voluntary_context_switches;
                t.involuntary_context_switches += p.involuntary_context_switches;
            }
            if let Some(st) = h.stack {
                let t = s.stack.get_or_insert_with(StackUsage::default);
                t.tcp_retransmitted_segments += st.tcp_retransmitted_segments;
                t.tcp_out_segments += st.tcp_out_segments;
                t.tcp_in_segments += st.tcp_in_segments;
                t.udp_in_datagrams += st.udp_in_datagrams;
                t.udp_out_datagrams += st.udp_out_datagrams;
                t.udp_receive_buffer_errors += st.udp_receive_buffer_errors;
                t.udp_send_buffer_errors += st.udp_send_buffer_errors;
                t.softnet_processed += st.softnet_processed;
                t.softnet_dropped += st.softnet_dropped;
                t.softnet_squeezed += st.softnet_squeezed;
            }
        }
        s.interrupts_per_second = Some(ints);
    }
    s.efficiency = efficiency(s.bytes, s.bits_per_second, hosts);
}

/// Throughput per busy core, CPU per Gbit/s and cycles per byte of the counting hosts.
pub fn efficiency(bytes: u64, bits_per_second: f64, hosts: &[(&str, &HostUsage)]) -> Option<Efficiency> {
    let mut busy_cores = 0.0;
    let mut cycles = Some(0.0);
    for (_, h) in hosts {
        let cores = h.busy_cores()?;
        busy_cores += cores;
        cycles = cycles
            .zip(h.clock_mhz)
            .map(|(c, mhz)| c + cores * h.seconds * mhz * 1e6);
    }
    let gbit = bits_per_second / 1e9;
    if hosts.is_empty() || busy_cores <= 0.0 || gbit <= 0.0 || bytes == 0 {
        return None;
    }
    Some(Efficiency {
        busy_cores,
        gbit_per_core: gbit / busy_cores,
        cpu_percent_per_gbit: 100.0 * busy_cores / gbit,
        cycles_per_byte: cycles.map(|c| c / bytes as f64),
    })
}

/// The side's throughput against what the wire allows.
pub fn line_rate(s: &SideSummary, g: &Goodput, source: &str) -> LineRate {
    LineRate {
        link_bits_per_second: g.link_bits_per_second,
        mtu_bytes: g.mtu_bytes,
        limit_bits_per_second: g.bits_per_second,
        percent: 100.0 * s.bits_per_second / g.bits_per_second,
        source: source.to_string(),
    }
}

/// Sets every side's line-rate figure (totals, directions, agents) against `g`.
pub fn add_line_rate(r: &mut TestResult, g: &Goodput, source: &str) {
    let mut sides: Vec<&mut SideSummary> = vec![&mut r.summary.sent, &mut r.summary.received];
    if let Some(d) = r.summary.directions.as_mut() {
        for v in d.values_mut() {
            sides.push(&mut v.sent);
            sides.push(&mut v.received);
        }
    }
    for a in &mut r.summary.agents {
        sides.push(&mut a.sent);
        sides.push(&mut a.received);
    }
    for s in sides {
        if s.bytes > 0 {
            s.line_rate = Some(line_rate(s, g, source));
        }
    }
}

/// Joins the client's and the agents' reports of one TCP run into the result document.
pub fn assemble_tcp(
    spec: &TcpSpec,
    client_host: HostInfo,
    agents: &[AgentOutcome<'_>],
    started_unix_ms: u64,
    notes: Vec<String>,
) -> TestResult {
    assemble(
        &TestSpec::Tcp(spec.clone()),
        client_host,
        agents,
        started_unix_ms,
        notes,
    )
}

/// Joins the client's and the agents' reports of one run of any kind into the result document;
/// a UDP run's summary also gets its datagram figures ([`crate::udp_summary::UdpSummary`]).
pub fn assemble(
    spec: &TestSpec,
    client_host: HostInfo,
    agents: &[AgentOutcome<'_>],
    started_unix_ms: u64,
    mut notes: Vec<String>,
) -> TestResult {
    let mut hosts = BTreeMap::new();
    hosts.insert(
        "client".to_string(),
        HostRecord {
            role: "client".into(),
            info: client_host,
            config: agents.first().and_then(|a| a.client.config.clone()),
        },
    );
    let mut intervals = Vec::new();
    let mut streams = Vec::new();
    let mut partial = false;
    // (forward?, sending?) -> entries, overall and per agent
    let mut all: Vec<(bool, bool, usize, Entry<'_>)> = Vec::new();
    for (ai, a) in agents.iter().enumerate() {
        if let Some(h) = a.host {
            hosts.insert(
                a.name.to_string(),
                HostRecord {
                    role: "agent".into(),
                    info: h.clone(),
                    config: a.report.and_then(|r| r.config.clone()),
                },
            );
        }
        partial |= a.client.partial;
        match a.report {
            Some(r) => partial |= r.partial,
            None => {
                partial = true;
                notes.push(format!("agent {}: no report received; its counts are missing", a.name));
            }
        }
        let sides: [(&str, Option<&SideReport>); 2] = [("client", Some(a.client)), ("agent", a.report)];
        for (counted_by, report) in sides {
            let Some(report) = report else { continue };
            let owner = if counted_by == "client" { "client" } else { a.name };
            for st in &report.streams {
                let forward = spec.stream_flows_forward(usize::from(st.stream));
                let sending = st.role == Role::Send;
                all.push((
                    forward,
                    sending,
                    ai,
                    Entry {
                        owner,
                        report,
                        stream: st,
                    },
                ));
            }
            for smp in &report.intervals {
                let forward = spec.stream_flows_forward(usize::from(smp.stream));
                let client_sends = forward;
                let sending = (counted_by == "client") == client_sends;
                let secs = smp.end_ns.saturating_sub(smp.start_ns) as f64 / 1e9;
                intervals.push(IntervalRecord::Stream(StreamInterval {
                    agent: a.name.to_string(),
                    counted_by: counted_by.to_string(),
                    direction: direction_name(forward).to_string(),
                    side: if sending { "sent" } else { "received" }.to_string(),
                    sample: *smp,
                    bits_per_second: Counted::new(smp.bytes, secs).bits_per_second,
                }));
            }
            // The client's part for each agent carries the client's one timeline: keep it once.
            let timeline = if counted_by == "client" && ai > 0 {
                &[][..]
            } else {
                &report.timeline[..]
            };
            intervals.extend(timeline.iter().map(|t| {
                IntervalRecord::Host(HostIntervalRecord {
                    host: owner.to_string(),
                    sample: t.clone(),
                })
            }));
        }
        for index in 0..spec.streams_per_agent() {
            let forward = spec.stream_flows_forward(index);
            let find = |r: Option<&'_ SideReport>, role: Role| {
                r.and_then(|r| {
                    r.streams
                        .iter()
                        .find(|s| usize::from(s.stream) == index && s.role == role)
                        .cloned()
                })
            };
            let (client_role, agent_role) = if forward {
                (Role::Send, Role::Receive)
            } else {
                (Role::Receive, Role::Send)
            };
            let c = find(Some(a.client), client_role);
            let g = find(a.report, agent_role);
            let (snd, rcv) = if forward { (c, g) } else { (g, c) };
            let mut errors = ErrorCounts::default();
            for s in [&snd, &rcv].into_iter().flatten() {
                errors.add(&s.errors);
            }
            streams.push(StreamSummary {
                agent: a.name.to_string(),
                stream: index as u16,
                direction: direction_name(forward).to_string(),
                sent: snd.as_ref().map(|s| Counted::new(s.bytes, s.seconds)),
                received: rcv.as_ref().map(|s| Counted::new(s.bytes, s.seconds)),
                tcp: snd.as_ref().and_then(|s| s.tcp),
                sender_socket: snd.map(|s| s.socket),
                receiver_socket: rcv.map(|s| s.socket),
                errors,
            });
        }
    }
    let pick = |f: &dyn Fn(bool, bool, usize) -> bool| -> Vec<Entry<'_>> {
        all.iter()
            .filter(|(fw, snd, ai, _)| f(*fw, *snd, *ai))
            .map(|(_, _, _, e)| Entry {
                owner: e.owner,
                report: e.report,
                stream: e.stream,
            })
            .collect()
    };
    let sent = summarise(&pick(&|_, snd, _| snd), true);
    let received = summarise(&pick(&|_, snd, _| !snd), false);
    let directions = (spec.direction() == crate::spec::Direction::Bidir).then(|| {
        let mut m = BTreeMap::new();
        for forward in [true, false] {
            m.insert(
                direction_name(forward).to_string(),
                DirectionSummary {
                    sent: summarise(&pick(&|fw, snd, _| fw == forward && snd), true),
                    received: summarise(&pick(&|fw, snd, _| fw == forward && !snd), false),
                },
            );
        }
        m
    });
    let per_agent = agents
        .iter()
        .enumerate()
        .map(|(i, a)| AgentSummary {
            agent: a.name.to_string(),
            sent: summarise(&pick(&|_, snd, ai| ai == i && snd), true),
            received: summarise(&pick(&|_, snd, ai| ai == i && !snd), false),
        })
        .collect();
    let udp = match spec {
        TestSpec::Udp(u) => Some(crate::udp_summary::summarise(u, agents, &received)),
        _ => None,
    };
    let rr = match spec {
        TestSpec::Rr(r) => Some(crate::rr_summary::summarise(r, agents, &sent, &received)),
        _ => None,
    };
    TestResult {
        linerate: crate::VERSION.to_string(),
        schema: SCHEMA,
        test: spec.kind().into(),
        started_unix_ms,
        partial,
        options: spec.clone(),
        hosts,
        intervals,
        summary: Summary {
            sent,
            received,
            directions,
            agents: per_agent,
            streams,
            udp,
            rr,
            http: None,
            server: None,
        },
        notes,
        lab: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Direction;

    fn stream(stream: u16, role: Role, bytes: u64, seconds: f64) -> StreamReport {
        StreamReport {
            stream,
            role,
            bytes,
            ops: bytes / 1000,
            seconds,
            total_bytes: bytes,
            socket: SocketGrant::default(),
            tcp: (role == Role::Send).then_some(TcpSnapshot {
                retransmits: 3,
                rtt_us: 100,
                ..Default::default()
            }),
            errors: ErrorCounts::default(),
            end: StreamEnd::Eof,
            udp_send: None,
            udp_receive: None,
            rr: None,
        }
    }

    fn report(streams: Vec<StreamReport>, host_percent: f64) -> SideReport {
        SideReport {
            streams,
            cpu: CpuUsage {
                host_percent: Some(host_percent),
                process_percent: Some(1.0),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn send_test_attributes_counts_to_who_counted() {
        let mut spec = TcpSpec::new();
        spec.streams = 2;
        let client = report(
            vec![
                stream(0, Role::Send, 1_000_000, 1.0),
                stream(1, Role::Send, 3_000_000, 1.0),
            ],
            10.0,
        );
        let agent = report(
            vec![
                stream(0, Role::Receive, 900_000, 1.0),
                stream(1, Role::Receive, 2_900_000, 2.0),
            ],
            40.0,
        );
        let r = assemble_tcp(
            &spec,
            HostInfo::default(),
            &[AgentOutcome {
                name: "a:1",
                host: None,
                report: Some(&agent),
                client: &client,
            }],
            0,
            vec![],
        );
        assert_eq!(r.summary.sent.bytes, 4_000_000);
        assert_eq!(r.summary.sent.counted_by, ["client"]);
        assert_eq!(r.summary.sent.cpu.host_percent, Some(10.0));
        assert_eq!(r.summary.sent.tcp.as_ref().map(|t| t.retransmits), Some(6));
        assert_eq!(r.summary.received.bytes, 3_800_000);
        assert_eq!(r.summary.received.seconds, 2.0);
        assert_eq!(r.summary.received.bits_per_second, 3_800_000.0 * 8.0 / 2.0);
        assert_eq!(r.summary.received.counted_by, ["a:1"]);
        assert_eq!(r.summary.received.cpu.host_percent, Some(40.0));
        assert_eq!(r.summary.streams.len(), 2);
        assert_eq!(r.summary.streams[1].received.map(|c| c.bytes), Some(2_900_000));
        assert!(!r.partial);
        assert!(r.summary.directions.is_none());
    }

    #[test]
    fn bidir_splits_directions_and_missing_agent_marks_partial() {
        let mut spec = TcpSpec::new();
        spec.direction = Direction::Bidir;
        let client = report(
            vec![stream(0, Role::Send, 100, 1.0), stream(1, Role::Receive, 50, 1.0)],
            10.0,
        );
        let agent = report(
            vec![stream(0, Role::Receive, 90, 1.0), stream(1, Role::Send, 60, 1.0)],
            20.0,
        );
        let outcomes = [
            AgentOutcome {
                name: "a",
                host: None,
                report: Some(&agent),
                client: &client,
            },
            AgentOutcome {
                name: "b",
                host: None,
                report: None,
                client: &client,
            },
        ];
        let r = assemble_tcp(&spec, HostInfo::default(), &outcomes, 0, vec![]);
        let d = r.summary.directions.as_ref().expect("bidir has directions");
        assert_eq!(d["forward"].sent.bytes, 200);
        assert_eq!(d["forward"].received.bytes, 90);
        assert_eq!(d["reverse"].sent.bytes, 60);
        assert_eq!(d["reverse"].received.bytes, 100);
        assert!(r.partial);
        assert!(r.notes.iter().any(|n| n.contains("agent b")));
        assert_eq!(r.summary.agents[1].received.bytes, 50);
    }
}
