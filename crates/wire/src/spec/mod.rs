//! What a user asked for, validated once and carried unchanged to every agent and into the result
//! document under `options`. Engines trust a spec that passed [`TestSpec::validate_with`] (core's
//! `spec::Validate::validate` with this host's check); the agent
//! validates every spec it receives, because it comes from the network.

/// An option spelled as one of a few words (`--sched batch`, `--zerocopy msg`): each variant's
/// word as `name()`, shown by `Display` and read back by `FromStr`, whose error names them all
/// (`"x" is not WHAT: a or b`).
macro_rules! words {
    ($ty:ident, $what:literal, $($variant:ident => $word:literal),+ $(,)?) => {
        impl $ty {
            /// The word the flag, the options block and the grant use.
            pub fn name(self) -> &'static str {
                match self {
                    $( $ty::$variant => $word, )+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $( $word => Ok($ty::$variant), )+
                    _ => Err(format!(
                        concat!("{:?} is not ", $what, ": ", words!(@list $($word),+)),
                        s
                    )),
                }
            }
        }
    };
    (@list $first:literal $(, $rest:literal)*) => { concat!($first $(, " or ", $rest)*) };
}

mod mix;
mod sched;
mod timing;
mod zerocopy;

pub use mix::{Mix, MixPattern};
pub use sched::Sched;
pub use timing::{Limit, Timing};
pub use zerocopy::ZeroCopy;

use crate::units::{BitRate, ByteSize};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use timing::TimingRules;

/// Writes `$from.$field` under the key `$field`, for each field in the order given: the specs
/// write their keys by hand so that the timing's keys stay where documents have always had them.
macro_rules! keys {
    ($out:ident, $from:expr, $($field:ident),+) => {
        $( $out.serialize_field(stringify!($field), &$from.$field)?; )+
    };
}

mod dscp;
mod http;
mod probe;
mod rpm;
mod rr;
mod udp;

pub use dscp::{Dscp, class_of};
pub use http::{Http2Spec, HttpSpec, TlsSpec, TlsVersion};
pub use probe::{ProbeSpec, ProbeVia};
pub use rpm::{RpmDirection, RpmSpec, defaults as rpm_defaults};
pub use rr::{RrProto, RrSpec};
pub use udp::MAX_UDP_PAYLOAD_BYTES;
pub use udp::{Multicast, UdpSpec};

/// Whether this host can set a TCP congestion control by name: core reads /proc for it; a spec
/// read back from a document, or a test's, needs none ([`any_congestion`]).
pub type CongestionCheck = fn(&str) -> Result<(), SpecError>;

/// A [`CongestionCheck`] that takes every well-formed name: for the checks that do not ask the
/// host.
pub fn any_congestion(_: &str) -> Result<(), SpecError> {
    Ok(())
}

/// One test of any kind. The tag (`"test": "tcp"`) is the same word as the result's `test` field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "lowercase")]
pub enum TestSpec {
    Tcp(TcpSpec),
    Udp(UdpSpec),
    Rr(RrSpec),
    Http(HttpSpec),
    /// The responsiveness test (`linerate rpm`): reaches no agent, only a server that follows
    /// draft-ietf-ippm-responsiveness.
    Rpm(RpmSpec),
}

impl TestSpec {
    /// The latency probes the test runs beside its load (`--probe`); None without (rr and rpm have none: rpm is itself a latency test).
    pub fn probe(&self) -> Option<&ProbeSpec> {
        match self {
            TestSpec::Tcp(s) => s.probe.as_ref(),
            TestSpec::Udp(s) => s.probe.as_ref(),
            TestSpec::Http(s) => s.probe.as_ref(),
            TestSpec::Rr(_) | TestSpec::Rpm(_) => None,
        }
    }

    /// The test kind as written in documents: `"tcp"`, `"udp"`.
    pub fn kind(&self) -> &'static str {
        match self {
            TestSpec::Tcp(_) => "tcp",
            TestSpec::Udp(_) => "udp",
            TestSpec::Rr(_) => "rr",
            TestSpec::Http(_) => "http",
            TestSpec::Rpm(_) => "rpm",
        }
    }

    /// Validates the spec, asking `congestion_usable` whether this host can set a named TCP
    /// congestion control (core's `spec::Validate::validate` passes its /proc check: nothing
    /// here reads the host).
    pub fn validate_with(&self, congestion_usable: CongestionCheck) -> Result<(), SpecError> {
        match self {
            TestSpec::Tcp(t) => t.validate_with(congestion_usable),
            TestSpec::Udp(u) => u.validate(),
            TestSpec::Rr(r) => r.validate(),
            TestSpec::Http(h) => h.validate(),
            TestSpec::Rpm(r) => r.validate(),
        }
    }

    /// Streams per agent, both directions counted.
    pub fn streams_per_agent(&self) -> usize {
        match self {
            TestSpec::Tcp(t) => t.streams_per_agent(),
            TestSpec::Udp(u) => u.streams_per_agent(),
            TestSpec::Rr(r) => usize::from(r.streams),
            // The agent beside an HTTP server only samples its host.
            TestSpec::Http(_) | TestSpec::Rpm(_) => 0,
        }
    }

    /// Whether stream `index` (per agent) carries data from the client to the agent.
    pub fn stream_flows_forward(&self, index: usize) -> bool {
        match self {
            TestSpec::Tcp(t) => t.stream_flows_forward(index),
            TestSpec::Udp(u) => u.stream_flows_forward(index),
            // The client asks, the agent answers: counted as forward.
            TestSpec::Rr(_) | TestSpec::Http(_) | TestSpec::Rpm(_) => true,
        }
    }

    /// Whether the agent keeps going until the client says the run is over (it answers or
    /// samples, and cannot tell when the asking ends), so the client sends `stop` when done.
    pub fn agent_waits_for_stop(&self) -> bool {
        matches!(self, TestSpec::Rr(_) | TestSpec::Http(_))
    }

    /// How long the test runs and which part of it counts.
    pub fn timing(&self) -> &Timing {
        match self {
            TestSpec::Tcp(t) => &t.timing,
            TestSpec::Udp(u) => &u.timing,
            TestSpec::Rr(r) => &r.timing,
            TestSpec::Http(h) => &h.timing,
            TestSpec::Rpm(r) => &r.timing,
        }
    }

    pub fn direction(&self) -> Direction {
        match self {
            // A mixed stream carries both directions: its document splits them like bidir.
            TestSpec::Tcp(t) if t.mix.is_some() => Direction::Bidir,
            TestSpec::Tcp(t) => t.direction,
            TestSpec::Udp(u) => u.direction,
            TestSpec::Rr(_) | TestSpec::Http(_) => Direction::Send,
            TestSpec::Rpm(r) => match r.direction {
                RpmDirection::Up => Direction::Send,
                RpmDirection::Down => Direction::Reverse,
                RpmDirection::Both | RpmDirection::Sequential => Direction::Bidir,
            },
        }
    }
}

/// Which way the data flows between the client and each agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The client sends, the agent receives (the default).
    Send,
    /// The agent sends, the client receives.
    Reverse,
    /// Both at once, on separate connections: `streams` each way.
    Bidir,
}

/// A TCP throughput test, as NTttcp ran them. Sizes are bytes, times are seconds.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TcpSpec {
    /// Streams per agent and per direction (`-P`).
    pub streams: u16,
    /// Worker threads on each end; streams are spread over them round-robin (0 = one per CPU
    /// the end may use: its CPU list, else its affinity mask; never more than its streams).
    pub threads: u16,
    /// CPUs the client's workers are pinned to, worker i on `cpus[i % len]`; empty = unpinned.
    pub cpus: Vec<usize>,
    /// CPUs the agents' workers are pinned to, likewise.
    pub peer_cpus: Vec<usize>,
    /// Bytes per write and per read (`-l`).
    pub buffer_bytes: ByteSize,
    /// Buffers per stream (`-n`) or seconds (`-t`), the warm-up, cool-down and interval.
    #[serde(flatten)]
    pub timing: Timing,
    /// SO_RCVBUF asked for on receiving sockets (the TCP window); None = kernel autotuning.
    pub window_bytes: Option<ByteSize>,
    /// SO_SNDBUF asked for on sending sockets; None = kernel autotuning.
    pub sndbuf_bytes: Option<ByteSize>,
    /// TCP_MAXSEG set before connecting; None = path default.
    pub mss_bytes: Option<u32>,
    /// TCP_CONGESTION on every data socket; None = system default.
    pub congestion: Option<String>,
    /// TCP_NODELAY on every data socket.
    pub nodelay: bool,
    /// Writes or reads kept in flight per stream (NTttcp's pre-posted buffers, `-a`); 1 = plain
    /// blocking calls, more uses io_uring.
    pub depth: u32,
    pub direction: Direction,
    /// Link speed the line-rate figure is taken against (`--link-speed`); None = the speed of
    /// the interface the test used, where it has one.
    #[serde(default)]
    pub link_speed: Option<BitRate>,
    /// MTU for the line-rate figure (`--mtu`); None = the interface's, else the path MTU.
    #[serde(default)]
    pub link_mtu_bytes: Option<u32>,
    /// `--mix R:W`: transfers of `buffer_bytes` both ways on every stream, each answered before
    /// the next (see `spec::mix`); None = one-way streams as `direction` says.
    #[serde(default)]
    pub mix: Option<Mix>,
    /// `--zerocopy`: the sending streams' zero-copy path; None = copying writes.
    /// Absent from documents written before it (and when None).
    #[serde(default)]
    pub zerocopy: Option<ZeroCopy>,
    /// `--probe`: latency probes beside the load (idle, loaded, recovery); None = none. Absent
    /// from documents written before it (and when None).
    #[serde(default)]
    pub probe: Option<ProbeSpec>,
    /// `--dscp`: the DSCP classes the streams' packets carry, given to each direction's streams
    /// in turn ([`class_of`]); empty = the kernel's default (0). Absent from documents written
    /// before it (and when empty).
    #[serde(default)]
    pub dscp: Vec<Dscp>,
}

/// The most streams per agent and direction: far past what a host sustains, short of exhausting
/// file descriptors.
pub const MAX_STREAMS: u16 = 1024;
/// The most TCP worker threads per end (`--threads`): each drives its streams from one event
/// loop, so more threads than CPUs only adds switching.
pub const MAX_THREADS: u16 = 128;
/// The largest buffer: larger writes gain nothing and memory is depth x streams x buffer.
pub const MAX_BUFFER_BYTES: u64 = 1 << 30;
/// The most buffer memory one end allocates for a test.
pub const MAX_BUFFER_MEMORY: u64 = 4 << 30;
pub const MAX_DEPTH: u32 = 1024;
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// The most interval samples one end keeps (each stream each interval is one).
pub const MAX_INTERVAL_SAMPLES: usize = 200_000;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("{name} must be between {min} and {max}, not {got}")]
    OutOfRange {
        name: &'static str,
        min: f64,
        max: f64,
        got: f64,
    },
    #[error("depth x streams x buffer length is {bytes} bytes, over the {max}-byte limit")]
    TooMuchMemory { bytes: u128, max: u64 },
    #[error("warm-up plus cool-down ({total} s) leave nothing of a {seconds} s test")]
    NoWindow { total: f64, seconds: f64 },
    #[error(
        "{streams} streams over {seconds} s at one sample per {interval} s make {samples} interval samples, over the {max} limit: raise -i"
    )]
    TooManySamples {
        streams: usize,
        seconds: f64,
        interval: f64,
        samples: f64,
        max: usize,
    },
    #[error("--cooldown needs a time limit (-t), not a buffer count (-n)")]
    CooldownWithCount,
    #[error("congestion control name '{0}' is not a kernel module name")]
    Congestion(String),
    /// The host cannot set this congestion control (TCP_CONGESTION would fail on every stream).
    #[error("congestion control '{name}' is not in {file} on this host ({listed})")]
    CongestionUnavailable {
        name: String,
        file: &'static str,
        listed: String,
    },
    /// An option that does not fit with another (multicast, --connect).
    #[error("{0}")]
    Conflict(String),
}

fn check_cpus<'a>(cpus: impl IntoIterator<Item = &'a usize>) -> Result<(), SpecError> {
    for cpu in cpus {
        check("CPU number", *cpu as f64, 0.0, 4095.0)?;
    }
    Ok(())
}

fn check(name: &'static str, got: f64, min: f64, max: f64) -> Result<(), SpecError> {
    if got.is_finite() && got >= min && got <= max {
        Ok(())
    } else {
        Err(SpecError::OutOfRange { name, min, max, got })
    }
}

impl TcpSpec {
    /// The spec with iperf3-like defaults: one stream, 128 KiB buffers, 10 s, client sends.
    pub fn new() -> Self {
        TcpSpec {
            streams: 1,
            threads: 0,
            cpus: Vec::new(),
            peer_cpus: Vec::new(),
            buffer_bytes: ByteSize(128 << 10),
            timing: Timing::new(Limit::Seconds(10.0)),
            window_bytes: None,
            sndbuf_bytes: None,
            mss_bytes: None,
            congestion: None,
            nodelay: false,
            depth: 1,
            direction: Direction::Send,
            link_speed: None,
            link_mtu_bytes: None,
            mix: None,
            zerocopy: None,
            probe: None,
            dscp: Vec::new(),
        }
    }

    /// Validates the spec; a `congestion` name is well formed and `congestion_usable` on this
    /// host (core's `spec::Validate::validate` passes its /proc check).
    pub fn validate_with(&self, congestion_usable: CongestionCheck) -> Result<(), SpecError> {
        check("streams (-P)", f64::from(self.streams), 1.0, f64::from(MAX_STREAMS))?;
        check("threads", f64::from(self.threads), 0.0, f64::from(MAX_THREADS))?;
        check(
            "buffer length (-l)",
            self.buffer_bytes.0 as f64,
            1.0,
            MAX_BUFFER_BYTES as f64,
        )?;
        check("depth", f64::from(self.depth), 1.0, f64::from(MAX_DEPTH))?;
        if let Some(r) = self.link_speed {
            check("link speed (bit/s)", r.0, 1e3, 1e13)?;
        }
        if let Some(m) = self.link_mtu_bytes {
            check("MTU", f64::from(m), 68.0, 65_535.0)?;
        }
        check_cpus(self.cpus.iter().chain(&self.peer_cpus))?;
        if let Some(w) = self.window_bytes {
            check("window", w.0 as f64, 1.0, i32::MAX as f64)?;
        }
        if let Some(w) = self.sndbuf_bytes {
            check("send buffer", w.0 as f64, 1.0, i32::MAX as f64)?;
        }
        if let Some(m) = self.mss_bytes {
            check("MSS", f64::from(m), 88.0, 65_535.0)?;
        }
        if let Some(c) = &self.congestion {
            let ok =
                !c.is_empty() && c.len() < 16 && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return Err(SpecError::Congestion(c.clone()));
            }
            congestion_usable(c)?;
        }
        self.validate_mix()?;
        dscp::validate_all(&self.dscp)?;
        if let (Some(z), Some(m)) = (self.zerocopy, self.mix) {
            // A mixed connection's transfers are answered one by one in its own loops.
            return Err(SpecError::Conflict(format!(
                "--zerocopy {z} does not apply to --mix {m}"
            )));
        }
        let directions: u128 = if self.streams_per_agent() > usize::from(self.streams) {
            2
        } else {
            1
        };
        let memory = u128::from(self.depth) * u128::from(self.streams) * directions * u128::from(self.buffer_bytes.0);
        if memory > u128::from(MAX_BUFFER_MEMORY) {
            return Err(SpecError::TooMuchMemory {
                bytes: memory,
                max: MAX_BUFFER_MEMORY,
            });
        }
        if let Some(p) = &self.probe {
            p.validate()?;
        }
        self.timing.validate(&TimingRules {
            count: Some(("buffer count (-n)", 1e15)),
            sampled_streams: self.streams_per_agent(),
            ramp: false,
        })
    }

    /// Streams per agent, counting both directions.
    pub fn streams_per_agent(&self) -> usize {
        let per = usize::from(self.streams);
        if self.direction == Direction::Bidir || self.mix.is_some() {
            2 * per
        } else {
            per
        }
    }

    /// The DSCP class of stream `index` (per agent), None without `--dscp`.
    pub fn dscp_of(&self, index: usize) -> Option<Dscp> {
        class_of(&self.dscp, index, usize::from(self.streams))
    }

    /// Which way stream `index` (0-based, per agent) carries data: streams `0..streams` follow
    /// the direction, and under bidir (or a mix) the next `streams` run the other way.
    pub fn stream_flows_forward(&self, index: usize) -> bool {
        if self.mix.is_some() {
            return index < usize::from(self.streams);
        }
        match self.direction {
            Direction::Send => true,
            Direction::Reverse => false,
            Direction::Bidir => index < usize::from(self.streams),
        }
    }
}

impl Serialize for TcpSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct(
            "TcpSpec",
            18 + usize::from(self.mix.is_some())
                + usize::from(self.zerocopy.is_some())
                + usize::from(self.probe.is_some())
                + usize::from(!self.dscp.is_empty()),
        )?;
        keys!(out, self, streams, threads, cpus, peer_cpus, buffer_bytes);
        keys!(
            out,
            self.timing,
            limit,
            warmup_seconds,
            cooldown_seconds,
            interval_seconds
        );
        keys!(
            out,
            self,
            window_bytes,
            sndbuf_bytes,
            mss_bytes,
            congestion,
            nodelay,
            depth
        );
        keys!(out, self, direction, link_speed, link_mtu_bytes);
        // Absent, not null, when the streams run one way (documents before --mix had no key).
        if self.mix.is_some() {
            keys!(out, self, mix);
        }
        // Likewise absent when writes copy (documents before --zerocopy had no key).
        if self.zerocopy.is_some() {
            keys!(out, self, zerocopy);
        }
        // Likewise absent without probes.
        if self.probe.is_some() {
            keys!(out, self, probe);
        }
        // Likewise absent without classes.
        if !self.dscp.is_empty() {
            keys!(out, self, dscp);
        }
        out.end()
    }
}

impl Default for TcpSpec {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks without the host's: the wire crate reads none (core's `spec::Validate` adds it).
    pub(in crate::spec) trait Validate {
        fn validate(&self) -> Result<(), SpecError>;
    }

    impl Validate for TcpSpec {
        fn validate(&self) -> Result<(), SpecError> {
            self.validate_with(any_congestion)
        }
    }

    impl Validate for TestSpec {
        fn validate(&self) -> Result<(), SpecError> {
            self.validate_with(any_congestion)
        }
    }

    fn refuse(name: &str) -> Result<(), SpecError> {
        Err(SpecError::CongestionUnavailable {
            name: name.into(),
            file: "the host's list",
            listed: "reno cubic".into(),
        })
    }

    #[test]
    fn the_hosts_congestion_check_is_asked_for_a_well_formed_name_only() {
        let mut s = TcpSpec::new();
        assert_eq!(
            s.validate_with(refuse),
            Ok(()),
            "no congestion control named: nothing asked"
        );
        s.congestion = Some("bbr".into());
        assert_eq!(s.validate_with(any_congestion), Ok(()));
        let refused = s.validate_with(refuse);
        assert!(
            matches!(&refused, Err(SpecError::CongestionUnavailable { name, .. }) if name == "bbr"),
            "{refused:?}"
        );
        assert_eq!(
            TestSpec::Tcp(s.clone()).validate_with(refuse),
            refused,
            "through the test's spec too"
        );
        s.congestion = Some("no spaces".into());
        assert_eq!(
            s.validate_with(refuse),
            Err(SpecError::Congestion("no spaces".into())),
            "the name's form first"
        );
        // A field checked before the congestion control is named before the host is asked.
        s.congestion = Some("bbr".into());
        s.streams = 0;
        assert!(
            matches!(s.validate_with(refuse), Err(SpecError::OutOfRange { .. })),
            "{:?}",
            s.validate_with(refuse)
        );
    }

    #[test]
    fn defaults_validate() {
        assert_eq!(TcpSpec::new().validate(), Ok(()));
    }

    #[test]
    fn rejects_out_of_range_values() {
        let mut s = TcpSpec::new();
        s.buffer_bytes = ByteSize(0);
        assert!(matches!(
            s.validate(),
            Err(SpecError::OutOfRange {
                name: "buffer length (-l)",
                ..
            })
        ));
        let mut s = TcpSpec::new();
        s.streams = 0;
        assert!(s.validate().is_err());
        let mut s = TcpSpec::new();
        s.timing.limit = Limit::Seconds(2.0);
        s.timing.warmup_seconds = 1.0;
        s.timing.cooldown_seconds = 1.0;
        assert!(matches!(s.validate(), Err(SpecError::NoWindow { .. })));
        let mut s = TcpSpec::new();
        s.timing.limit = Limit::Buffers(10);
        s.timing.cooldown_seconds = 1.0;
        assert_eq!(s.validate(), Err(SpecError::CooldownWithCount));
        let mut s = TcpSpec::new();
        s.congestion = Some("bbr; rm".into());
        assert!(s.validate().is_err());
        let mut s = TcpSpec::new();
        s.timing.limit = Limit::Seconds(f64::NAN);
        assert!(s.validate().is_err());
    }

    #[test]
    fn rejects_more_interval_samples_than_are_kept() {
        let mut s = TcpSpec::new();
        s.streams = 1024;
        s.direction = Direction::Bidir;
        s.timing.limit = Limit::Seconds(MAX_SECONDS);
        s.timing.interval_seconds = 0.01;
        assert!(matches!(s.validate(), Err(SpecError::TooManySamples { .. })));
        s.timing.interval_seconds = 0.0;
        assert_eq!(s.validate(), Ok(()), "no intervals, no samples");
    }

    #[test]
    fn rejects_buffer_memory_past_the_limit() {
        let mut s = TcpSpec::new();
        s.buffer_bytes = ByteSize(1 << 30);
        s.depth = 8;
        assert!(matches!(s.validate(), Err(SpecError::TooMuchMemory { .. })));
    }

    #[test]
    fn bidir_streams_run_both_ways() {
        let mut s = TcpSpec::new();
        s.streams = 2;
        s.direction = Direction::Bidir;
        assert_eq!(s.streams_per_agent(), 4);
        let forward: Vec<bool> = (0..4).map(|i| s.stream_flows_forward(i)).collect();
        assert_eq!(forward, [true, true, false, false]);
    }

    #[test]
    fn spec_round_trips_through_json_with_its_tag() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let text = serde_json::to_string(&spec).expect("serialises");
        assert!(text.starts_with(r#"{"test":"tcp""#), "{text}");
        let back: TestSpec = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, spec);
    }

    /// Options blocks as the build before [`Timing`] wrote them (686406a), one per kind and
    /// limit: they must read back and write again to the same bytes, keys in the same order.
    const WRITTEN_BEFORE_TIMING: [&str; 5] = [
        r#"{"test":"tcp","streams":1,"threads":0,"cpus":[],"peer_cpus":[],"buffer_bytes":131072,"limit":{"seconds":2.5},"warmup_seconds":0.5,"cooldown_seconds":0.25,"interval_seconds":0.1,"window_bytes":null,"sndbuf_bytes":null,"mss_bytes":null,"congestion":null,"nodelay":false,"depth":1,"direction":"send","link_speed":null,"link_mtu_bytes":null}"#,
        r#"{"test":"tcp","streams":1,"threads":0,"cpus":[],"peer_cpus":[],"buffer_bytes":131072,"limit":{"buffers":7},"warmup_seconds":0.0,"cooldown_seconds":0.0,"interval_seconds":1.0,"window_bytes":null,"sndbuf_bytes":null,"mss_bytes":null,"congestion":null,"nodelay":false,"depth":1,"direction":"send","link_speed":null,"link_mtu_bytes":null,"mix":{"read_percent":70,"write_percent":30}}"#,
        r#"{"test":"udp","streams":1,"cpus":[],"peer_cpus":[],"payload_bytes":1472,"limit":{"buffers":1000},"gap_ns":12000,"warmup_seconds":0.3,"cooldown_seconds":0.0,"interval_seconds":1.0,"window_bytes":null,"bin_us":1,"synced_clocks":false,"direction":"send","multicast":null}"#,
        r#"{"test":"rr","proto":"tcp","streams":1,"cpus":[],"peer_cpus":[],"request_bytes":1,"response_bytes":1,"limit":{"seconds":3.0},"rate":100.0,"connect":false,"busy_poll_us":null,"timeout_ms":200,"warmup_seconds":0.0,"cooldown_seconds":1.0,"interval_seconds":1.0}"#,
        r#"{"test":"http","urls":["http://127.0.0.1:8080/x"],"users":4,"think_ms":0.0,"keepalive":true,"ramp_seconds":1.5,"duration_seconds":4.0,"cooldown_seconds":0.5,"rate":null,"timeout_ms":10000,"threads":0,"cpus":[],"interval_seconds":1.0}"#,
    ];

    #[test]
    fn options_written_before_timing_round_trip_byte_for_byte() {
        for text in WRITTEN_BEFORE_TIMING {
            let spec: TestSpec = serde_json::from_str(text).expect(text);
            assert_eq!(spec.validate(), Ok(()), "{text}");
            assert_eq!(serde_json::to_string(&spec).expect("serialises"), text);
        }
    }

    #[test]
    fn dscp_classes_are_written_only_when_set_and_read_back() {
        let mut s = TcpSpec::new();
        let plain = serde_json::to_string(&TestSpec::Tcp(s.clone())).expect("serialises");
        assert!(!plain.contains("dscp"), "{plain}");
        s.streams = 4;
        s.direction = Direction::Bidir;
        s.dscp = Dscp::RRUL.to_vec();
        let text = serde_json::to_string(&TestSpec::Tcp(s.clone())).expect("serialises");
        assert!(text.ends_with(r#""dscp":[0,8,40,46]}"#), "{text}");
        assert_eq!(
            serde_json::from_str::<TestSpec>(&text).expect("parses"),
            TestSpec::Tcp(s.clone())
        );
        assert_eq!(
            (s.dscp_of(1), s.dscp_of(5)),
            (Some(Dscp::BK), Some(Dscp::BK)),
            "each direction from the start"
        );
        s.dscp = vec![Dscp(64)];
        assert!(s.validate().is_err());
        let mut r = RrSpec::new();
        r.dscp = vec![Dscp::EF];
        let text = serde_json::to_string(&r).expect("serialises");
        assert!(text.ends_with(r#""dscp":[46]}"#), "{text}");
        assert_eq!(serde_json::from_str::<RrSpec>(&text).expect("parses"), r);
        r.connect = true;
        assert!(matches!(r.validate(), Err(SpecError::Conflict(_))));
        let mut u = UdpSpec::new();
        u.dscp = vec![Dscp::CS5];
        let text = serde_json::to_string(&u).expect("serialises");
        assert_eq!(serde_json::from_str::<UdpSpec>(&text).expect("parses"), u);
    }

    #[test]
    fn timing_reads_each_layout_into_one_value() {
        let read = |i: usize| serde_json::from_str::<TestSpec>(WRITTEN_BEFORE_TIMING[i]).expect("parses");
        let tcp = Timing {
            warmup_seconds: 0.5,
            cooldown_seconds: 0.25,
            interval_seconds: 0.1,
            ..Timing::new(Limit::Seconds(2.5))
        };
        assert_eq!(*read(0).timing(), tcp);
        assert_eq!(read(2).timing().limit, Limit::Buffers(1000));
        let http = Timing {
            cooldown_seconds: 0.5,
            ..Timing::ramp(1.5, 4.0)
        };
        assert_eq!(*read(4).timing(), http);
        assert_eq!(http.length_seconds(), Some(5.5), "the ramp comes before the duration");
        assert_eq!(tcp.length_seconds(), Some(2.5), "a warm-up is the limit's first part");
    }

    #[test]
    fn documents_before_cooldown_read_with_none() {
        let text = WRITTEN_BEFORE_TIMING[3].replace(r#""cooldown_seconds":1.0,"#, "");
        let spec: TestSpec = serde_json::from_str(&text).expect("parses");
        assert_eq!(spec.timing().cooldown_seconds, 0.0);
        let text = WRITTEN_BEFORE_TIMING[0].replace(r#""limit":{"seconds":2.5},"#, "");
        let e = serde_json::from_str::<TestSpec>(&text)
            .expect_err("no limit")
            .to_string();
        assert!(e.contains("missing field `limit`"), "{e}");
    }

    #[test]
    fn timing_kinds_do_not_mix() {
        let mut s = TcpSpec::new();
        s.timing = Timing::ramp(1.0, 5.0);
        assert!(matches!(s.validate(), Err(SpecError::Conflict(_))));
        let mut r = RrSpec::new();
        r.timing.limit = Limit::Buffers(0);
        assert!(matches!(
            r.validate(),
            Err(SpecError::OutOfRange {
                name: "transaction count (-n)",
                ..
            })
        ));
    }
}
