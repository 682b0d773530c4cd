//! What a TCP run adds to a sending side's summary: retransmits, RTT, windows and what limited
//! the senders, from each sending stream's TCP_INFO at its end.

use super::{AgentOutcome, assemble};
use crate::metrics::host::HostInfo;
use crate::result::{LIMITED_SHARE_PERCENT, StreamReport, TcpTotals, TestResult};
use crate::spec::{TcpSpec, TestSpec};

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

/// The sending streams' TCP_INFO at their end, over streams: retransmits summed, RTT, cwnd and
/// window averaged, stall shares of the senders' busy time, and what limited them at
/// `bits_per_second`. None when no stream carried TCP_INFO.
pub(super) fn totals<'a>(streams: impl Iterator<Item = &'a StreamReport>, bits_per_second: f64) -> Option<TcpTotals> {
    let mut tcp = TcpTotals::default();
    let mut tcp_n = 0usize;
    let (mut busy, mut rwnd, mut sndbuf) = (0u64, 0u64, 0u64);
    for t in streams.filter_map(|s| s.tcp.as_ref()) {
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
    if tcp_n == 0 {
        return None;
    }
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
        tcp.window_limit_bits_per_second > 0.0 && bits_per_second >= 0.85 * tcp.window_limit_bits_per_second;
    tcp.limited_by = if tcp.rwnd_limited_percent >= LIMITED_SHARE_PERCENT || at_ceiling {
        Some("receive window".into())
    } else if tcp.sndbuf_limited_percent >= LIMITED_SHARE_PERCENT {
        Some("send buffer".into())
    } else {
        None
    };
    Some(tcp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{CpuUsage, ErrorCounts, Role, SideReport, SocketGrant, StreamEnd, TcpSnapshot};
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
