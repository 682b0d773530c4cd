//! What iperf3 is asked (its parameter JSON) for a linerate TCP or UDP spec: the mapping
//! docs/results.md lists. The callers checked what cannot map (`src/cli/iperf3.rs`).

use crate::proto::iperf3::Params;
use crate::spec::{Direction, TcpSpec, Timing, UdpSpec};

/// What iperf3 is asked for a TCP test: its parameters from the spec (`-n` is per stream in
/// linerate, iperf3's block count is over all streams; `-t` and `--warmup` in whole seconds,
/// the callers checked they are).
pub(super) fn tcp_params(spec: &TcpSpec) -> Params {
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
pub(super) fn udp_params(spec: &UdpSpec) -> Params {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Limit;
    use crate::units::ByteSize;

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
}
