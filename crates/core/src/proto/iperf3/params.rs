//! linerate's spec ⇄ iperf3's parameters, both ways in one place (docs/iperf3.md lists the
//! mapping): what linerate's client asks an `iperf3 -s` for a TCP or UDP spec ([`params_of`];
//! the callers checked what cannot map, `src/cli/iperf3.rs`), and the spec linerate's iperf3
//! server runs for the parameters an `iperf3 -c` sent ([`spec_of`]). A spec that iperf3 can
//! express comes back from its parameters as it went (the round-trip test below), but for the
//! time limit, which the server's spec outlasts: the client ends the test.

use super::{Checked, End, Params};
use crate::spec::{Direction, Limit, MAX_INTERVAL_SAMPLES, TcpSpec, TestSpec, Timing, UdpSpec};
use crate::units::ByteSize;

/// A time-limited test runs this long past its omit and time on the server, so that the
/// client's TEST_END, not the server's clock, ends it.
pub const END_SLACK_SECONDS: f64 = 10.0;
/// A test ended by a byte or block count runs on the server at most this long.
pub const UNTIMED_SECONDS: f64 = 3600.0;
/// iperf3's default TCP block (`-l`) and UDP datagram payload when the client names none.
const DEFAULT_TCP_LEN: u64 = 128 << 10;
const DEFAULT_UDP_LEN: u64 = 1460;

/// What iperf3 is asked for a TCP or UDP spec; None for the other kinds (iperf3 runs neither).
pub fn params_of(spec: &TestSpec) -> Option<Params> {
    match spec {
        TestSpec::Tcp(s) => Some(tcp_params(s)),
        TestSpec::Udp(s) => Some(udp_params(s)),
        _ => None,
    }
}

/// What iperf3 is asked for a TCP test: its parameters from the spec (`-n` is per stream in
/// linerate, iperf3's block count is over all streams; `-t` and `--warmup` in whole seconds,
/// the callers checked they are).
fn tcp_params(spec: &TcpSpec) -> Params {
    Params {
        tcp: Some(true),
        mss: spec.mss_bytes.map(f64::from),
        nodelay: spec.nodelay.then_some(true),
        window: spec.window_bytes.map(|w| w.0 as f64),
        len: Some(spec.buffer_bytes.0 as f64),
        congestion: spec.congestion.clone(),
        ..common_params(&spec.timing, spec.streams, spec.direction, &spec.peer_cpus)
    }
}

/// What iperf3 is asked for a UDP test: as TCP, with the rate per stream (payload bits/s; 0
/// for as fast as possible).
fn udp_params(spec: &UdpSpec) -> Params {
    Params {
        udp: Some(true),
        len: Some(f64::from(spec.payload_bytes)),
        window: spec.window_bytes.map(|w| w.0 as f64),
        bandwidth: Some(spec.stream_bits_per_second().map_or(0.0, f64::round)),
        ..common_params(&spec.timing, spec.streams, spec.direction, &spec.peer_cpus)
    }
}

/// The parameters every kind shares: the end, the omit, the streams and their direction.
fn common_params(timing: &Timing, streams: u16, direction: Direction, peer_cpus: &[usize]) -> Params {
    let warmup = timing.warmup_seconds.ceil();
    let (time, blockcount) = match timing.limit.count() {
        Some(n) => (0.0, n as f64 * f64::from(streams)),
        None => ((timing.length_seconds().unwrap_or(0.0) - warmup).max(1.0).ceil(), 0.0),
    };
    Params {
        omit: Some(warmup),
        time: Some(time),
        num: Some(0.0),
        blockcount: Some(blockcount),
        parallel: Some(f64::from(streams)),
        reverse: (direction == Direction::Reverse).then_some(true),
        bidirectional: (direction == Direction::Bidir).then_some(true),
        pacing_timer: Some(1000.0),
        // A server run with -J says its version in its output (`start.version`).
        get_server_output: Some(1.0),
        server_affinity: peer_cpus.first().map(|c| *c as f64),
        ..Params::default()
    }
}

/// The linerate spec of an iperf3 test: its streams, lengths and socket options; a timing whose
/// limit outlasts the client's (the client ends the test), with `-O` as the warm-up.
pub fn spec_of(c: &Checked) -> TestSpec {
    let direction = if c.bidirectional {
        Direction::Bidir
    } else if c.reverse {
        Direction::Reverse
    } else {
        Direction::Send
    };
    let streams = u16::try_from(c.parallel).unwrap_or(u16::MAX);
    let each_way = usize::from(streams) * if c.bidirectional { 2 } else { 1 };
    let seconds = match c.end {
        End::Seconds(t) => c.omit_seconds + t + END_SLACK_SECONDS,
        End::Bytes(_) | End::Blocks(_) => UNTIMED_SECONDS,
    };
    // An interval sample a second, fewer for many streams over a long limit (the kept samples
    // are capped).
    let per_sample = (each_way as f64 * seconds / (MAX_INTERVAL_SAMPLES / 2) as f64).ceil();
    let mut timing = Timing::new(Limit::Seconds(seconds));
    timing.warmup_seconds = c.omit_seconds;
    timing.interval_seconds = per_sample.max(1.0);
    if c.udp {
        let len = c.len.unwrap_or(DEFAULT_UDP_LEN);
        // A count of bytes or blocks bounds each stream's datagrams (iperf3 counts them over
        // every stream together; the client still says when it is over).
        match c.end {
            End::Bytes(b) => timing.limit = Limit::Buffers(b.div_ceil(len.max(1))),
            End::Blocks(k) => timing.limit = Limit::Buffers(k),
            End::Seconds(_) => {}
        }
        let mut u = UdpSpec::new();
        u.streams = streams;
        u.payload_bytes = u32::try_from(len).unwrap_or(u32::MAX);
        u.timing = timing;
        // `-b`: payload bits a second per stream, as iperf3 paces them.
        u.gap_ns = c.bandwidth.map_or(0, |b| UdpSpec::gap_ns_at(u.payload_bytes, b as f64));
        u.window_bytes = c.window.map(ByteSize);
        u.direction = direction;
        TestSpec::Udp(u)
    } else {
        let mut t = TcpSpec::new();
        t.streams = streams;
        t.buffer_bytes = ByteSize(c.len.unwrap_or(DEFAULT_TCP_LEN));
        t.timing = timing;
        // iperf3's -w sets both buffers on both ends.
        t.window_bytes = c.window.map(ByteSize);
        t.sndbuf_bytes = c.window.map(ByteSize);
        t.mss_bytes = c.mss;
        t.congestion = c.congestion.clone();
        t.nodelay = c.nodelay;
        t.direction = direction;
        TestSpec::Tcp(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Validate;
    use std::net::SocketAddr;

    fn checked(text: &str) -> Checked {
        let peer: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        Params::parse(text.as_bytes(), peer)
            .expect("parses")
            .check()
            .expect("checks")
    }

    #[test]
    fn issue_26_parameters_map_linerate_flags_to_iperf3s() {
        let mut spec = TcpSpec::new();
        spec.streams = 4;
        spec.direction = Direction::Bidir;
        spec.timing.limit = Limit::Seconds(2.5);
        spec.timing.warmup_seconds = 1.0;
        spec.window_bytes = Some(ByteSize(1 << 20));
        spec.congestion = Some("cubic".into());
        let p = tcp_params(&spec);
        assert_eq!(
            (p.tcp, p.parallel, p.bidirectional, p.reverse),
            (Some(true), Some(4.0), Some(true), None)
        );
        assert_eq!(
            (p.time, p.omit, p.blockcount),
            (Some(2.0), Some(1.0), Some(0.0)),
            "2.5 s less 1 s of omit, whole"
        );
        assert_eq!((p.window, p.congestion.as_deref()), (Some(1_048_576.0), Some("cubic")));
        spec.timing.limit = Limit::Buffers(100);
        spec.timing.warmup_seconds = 0.0;
        let p = tcp_params(&spec);
        assert_eq!(
            (p.time, p.blockcount),
            (Some(0.0), Some(400.0)),
            "-n is per stream here, all streams there"
        );
        let mut u = UdpSpec::new();
        u.payload_bytes = 1000;
        u.gap_ns = 80_000;
        let p = udp_params(&u);
        assert_eq!(
            (p.udp, p.len, p.bandwidth),
            (Some(true), Some(1000.0), Some(100_000_000.0))
        );
        assert!(p.check().is_ok(), "a server takes it: {:?}", p.check());
    }

    #[test]
    fn issue_26_iperf3_parameters_become_a_linerate_spec_that_outlasts_the_client() {
        let TestSpec::Tcp(t) = spec_of(&checked(
            r#"{"tcp":true,"omit":1,"time":2,"parallel":2,"bidirectional":true,"len":65536,"window":262144,"nodelay":true}"#,
        )) else {
            panic!("a TCP spec");
        };
        assert_eq!(
            (t.streams, t.direction, t.buffer_bytes.0),
            (2, Direction::Bidir, 65_536)
        );
        assert_eq!(
            (t.window_bytes, t.sndbuf_bytes),
            (Some(ByteSize(262_144)), Some(ByteSize(262_144)))
        );
        assert!(t.nodelay);
        assert_eq!(t.timing.warmup_seconds, 1.0, "-O is the warm-up");
        assert_eq!(
            t.timing.limit,
            Limit::Seconds(1.0 + 2.0 + END_SLACK_SECONDS),
            "the client ends it"
        );
        assert!(t.validate().is_ok());
        let TestSpec::Tcp(n) = spec_of(&checked(r#"{"tcp":true,"num":1048576,"reverse":true,"parallel":128}"#)) else {
            panic!("a TCP spec");
        };
        assert_eq!(
            (n.direction, n.timing.limit),
            (Direction::Reverse, Limit::Seconds(UNTIMED_SECONDS))
        );
        assert!(
            n.validate().is_ok(),
            "128 streams over the untimed limit keep within the sample cap"
        );
        let TestSpec::Udp(u) = spec_of(&checked(r#"{"udp":true,"time":1,"len":1000,"bandwidth":8000000}"#)) else {
            panic!("a UDP spec");
        };
        assert_eq!(
            (u.payload_bytes, u.gap_ns),
            (1000, 1_000_000),
            "8 Mbit/s of 1000-byte datagrams"
        );
        let TestSpec::Udp(k) = spec_of(&checked(r#"{"udp":true,"num":10000,"len":1000,"bandwidth":0}"#)) else {
            panic!("a UDP spec");
        };
        assert_eq!((k.timing.limit, k.gap_ns), (Limit::Buffers(10), 0), "-b 0: unpaced");
    }

    /// spec → iperf3's parameters (as JSON, as the wire carries them) → the server's checks →
    /// spec.
    fn round_trip(spec: &TestSpec) -> TestSpec {
        let json = serde_json::to_vec(&params_of(spec).expect("tcp or udp")).expect("serializes");
        spec_of(&checked(std::str::from_utf8(&json).expect("utf-8")))
    }

    #[test]
    fn a_spec_iperf3_can_express_comes_back_from_its_parameters() {
        let mut t = TcpSpec::new();
        t.streams = 3;
        t.direction = Direction::Reverse;
        t.buffer_bytes = ByteSize(65_536);
        // iperf3's -w sets both buffers: a spec with one only is not expressible.
        t.window_bytes = Some(ByteSize(262_144));
        t.sndbuf_bytes = Some(ByteSize(262_144));
        t.mss_bytes = Some(1400);
        t.nodelay = true;
        t.congestion = Some("reno".into());
        t.timing.limit = Limit::Seconds(7.0);
        t.timing.warmup_seconds = 2.0;
        let TestSpec::Tcp(back) = round_trip(&TestSpec::Tcp(t.clone())) else {
            panic!("a TCP spec");
        };
        // The time is the one difference: the server's spec outlasts the client's, which ends it.
        assert_eq!(back.timing.limit, Limit::Seconds(7.0 + END_SLACK_SECONDS));
        let mut expected = t.clone();
        expected.timing.limit = back.timing.limit;
        expected.timing.interval_seconds = back.timing.interval_seconds;
        assert_eq!(back, expected);
        for direction in [Direction::Send, Direction::Bidir] {
            t.direction = direction;
            let TestSpec::Tcp(back) = round_trip(&TestSpec::Tcp(t.clone())) else {
                panic!("a TCP spec");
            };
            assert_eq!(back.direction, direction);
        }

        let mut u = UdpSpec::new();
        u.streams = 2;
        u.direction = Direction::Bidir;
        u.payload_bytes = 1200;
        u.window_bytes = Some(ByteSize(1 << 20));
        u.timing.limit = Limit::Seconds(5.0);
        // Rates of whole bits a second are what iperf3's -b says: 1200-byte datagrams every
        // 96 us (100 Mbit/s), every 3 ns (3.2 Tbit/s), every 1.5 s (6400 bit/s).
        for gap_ns in [96_000, 3, 1_500_000_000, 0] {
            u.gap_ns = gap_ns;
            let TestSpec::Udp(back) = round_trip(&TestSpec::Udp(u.clone())) else {
                panic!("a UDP spec");
            };
            let mut expected = u.clone();
            expected.timing.limit = Limit::Seconds(5.0 + END_SLACK_SECONDS);
            expected.timing.interval_seconds = back.timing.interval_seconds;
            assert_eq!(back, expected, "gap {gap_ns} ns");
        }
    }

    #[test]
    fn the_server_paces_iperf3s_rate_by_the_one_rule() {
        // 1000-byte datagrams at 3 Mbit/s: 2,666,666.67 ns, rounded (truncating gave ...666).
        let TestSpec::Udp(u) = spec_of(&checked(r#"{"udp":true,"time":1,"len":1000,"bandwidth":3000000}"#)) else {
            panic!("a UDP spec");
        };
        assert_eq!(u.gap_ns, 2_666_667);
        assert_eq!(u.gap_ns, UdpSpec::gap_ns_at(1000, 3e6));
        // A rate so high the gap would be 0 (unpaced) is paced at 1 ns, as the CLI's --rate is.
        let TestSpec::Udp(u) = spec_of(&checked(
            r#"{"udp":true,"time":1,"len":100,"bandwidth":10000000000000}"#,
        )) else {
            panic!("a UDP spec");
        };
        assert_eq!(u.gap_ns, 1);
    }
}
