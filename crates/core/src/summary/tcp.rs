//! What a TCP run adds to a sending side's summary: retransmits, RTT, windows and what limited
//! the senders, from each sending stream's TCP_INFO at its end; and a mixed run's `summary.mix`
//! (per-direction bytes and transfers, CPU on both ends, efficiency).

use super::{AgentOutcome, assemble};
use crate::metrics::host::HostInfo;
use crate::result::{
    CEILING_SLACK, Counted, DirectionSummary, LIMITED_SHARE_PERCENT, MixDirection, MixSummary, SideReport,
    StreamReport, Summary, TcpTotals, TestResult,
};
use crate::spec::{Mix, TcpSpec, TestSpec};

/// Joins the client's and the agents' reports of one TCP run into the result document (its
/// line-rate figure, if any, taken over IPv4).
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
        false,
    )
}

/// A mixed run's figures from its two directions (forward = the writes, reverse = the reads),
/// each counted by its receiver; the client's CPU from the side it counted (the writes' senders),
/// the agents' from theirs. None when the directions are missing.
pub(super) fn mix_summary(mix: Mix, transfer_bytes: u64, s: &Summary) -> Option<MixSummary> {
    let d = s.directions.as_ref()?;
    let (writes, reads) = (d.get("forward")?, d.get("reverse")?);
    let seconds = writes.received.seconds.max(reads.received.seconds);
    let rate = |bytes: u64| Counted::new(bytes, seconds).bits_per_second;
    let direction = |x: &DirectionSummary| MixDirection {
        bytes: x.received.bytes,
        bits_per_second: rate(x.received.bytes),
        transfers: x.received.ops,
        sent_bytes: x.sent.bytes,
    };
    let (read, write) = (direction(reads), direction(writes));
    let bytes = read.bytes + write.bytes;
    let transfers = read.transfers + write.transfers;
    let bits_per_second = rate(bytes);
    let per_cpu = |cpu: Option<f64>| cpu.filter(|c| *c > 0.0).map(|c| bits_per_second / 1e6 / c);
    let (client_cpu, agent_cpu) = (writes.sent.cpu.host_percent, writes.received.cpu.host_percent);
    Some(MixSummary {
        read_percent: mix.read_percent,
        write_percent: mix.write_percent,
        transfer_bytes,
        read,
        write,
        transfers,
        seconds,
        transfers_per_second: if seconds > 0.0 { transfers as f64 / seconds } else { 0.0 },
        bits_per_second,
        read_share_percent: (bytes > 0).then(|| 100.0 * read.bytes as f64 / bytes as f64),
        client_cpu_percent: client_cpu,
        agent_cpu_percent: agent_cpu,
        client_mbit_per_second_per_cpu_percent: per_cpu(client_cpu),
        agent_mbit_per_second_per_cpu_percent: per_cpu(agent_cpu),
    })
}

/// The sending streams' TCP_INFO over the run: retransmits summed and stall shares of the
/// senders' busy time from each stream's end; RTT and window the mean of every sample the stream
/// took (its interval samples and its end), averaged over streams; and what limited the senders
/// at `bits_per_second`. The window's ceiling comes from those run-long means, not one sample,
/// and a limit below the measured rate is never claimed ("a window of 101 KiB at RTT
/// 0.1 ms allows 12,536 Mbit/s" under a measured 21,715 Mbit/s). None when no stream carried
/// TCP_INFO.
pub(super) fn totals<'a>(
    streams: impl Iterator<Item = (&'a StreamReport, &'a SideReport)>,
    bits_per_second: f64,
) -> Option<TcpTotals> {
    let mut tcp = TcpTotals::default();
    let mut tcp_n = 0usize;
    let (mut busy, mut rwnd, mut sndbuf) = (0u64, 0u64, 0u64);
    for (st, report) in streams {
        let Some(t) = st.tcp.as_ref() else { continue };
        let samples = report
            .intervals
            .iter()
            .filter(|i| i.stream == st.stream)
            .filter_map(|i| i.tcp.as_ref())
            .chain(std::iter::once(t))
            .filter(|s| s.rtt_us > 0);
        let (mut n, mut rtt, mut wnd) = (0usize, 0.0, 0.0);
        for s in samples {
            n += 1;
            rtt += f64::from(s.rtt_us);
            wnd += f64::from(s.snd_wnd_bytes);
        }
        let (rtt_us, window_bytes) = if n > 0 {
            (rtt / n as f64, wnd / n as f64)
        } else {
            (f64::from(t.rtt_us), f64::from(t.snd_wnd_bytes))
        };
        tcp.retransmits += t.retransmits;
        tcp.rtt_us += rtt_us;
        tcp.cwnd_bytes += t.cwnd_bytes as f64;
        tcp.window_bytes += window_bytes;
        if rtt_us > 0.0 {
            tcp.window_limit_bits_per_second += window_bytes * 8.0 / (rtt_us / 1e6);
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
    judge(&mut tcp, bits_per_second);
    Some(tcp)
}

/// What limited the senders at `bits_per_second` (the receivers' count, once it is known): the
/// windows when the senders stalled on them a quarter of the time or the throughput sits at the
/// ceiling they set at the measured RTT; the send buffers when they stalled the senders as
/// often. A ceiling the measurement passed (beyond [`CEILING_SLACK`]) names no limit.
pub(super) fn judge(tcp: &mut TcpTotals, bits_per_second: f64) {
    let at_ceiling =
        tcp.window_limit_bits_per_second > 0.0 && bits_per_second >= 0.85 * tcp.window_limit_bits_per_second;
    let consistent = tcp.window_limit_bits_per_second * CEILING_SLACK >= bits_per_second;
    tcp.limited_by = if !consistent {
        None
    } else if tcp.rwnd_limited_percent >= LIMITED_SHARE_PERCENT || at_ceiling {
        Some("receive window".into())
    } else if tcp.sndbuf_limited_percent >= LIMITED_SHARE_PERCENT {
        Some("send buffer".into())
    } else {
        None
    };
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
                process_percent_of_host: Some(1.0),
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

    #[test]
    fn mix_counts_each_direction_by_its_receiver_with_cpu_and_efficiency() {
        let mut spec = TcpSpec::new();
        spec.mix = Some("70:30".parse().expect("valid"));
        spec.buffer_bytes = crate::units::ByteSize(1_000);
        // Stream 0 carries the writes (client to agent), stream 1 the reads.
        // Each end: stream 0 as `writes`, stream 1 as `reads`; its reading stream counts its
        // transfers.
        let end = |writes: Role, reads: Role, host_percent: f64| {
            let streams = vec![stream(0, writes, 30_000, 1.0), stream(1, reads, 70_000, 1.0)];
            let mut e = report(streams, host_percent);
            let (i, ops) = if writes == Role::Receive { (0, 30) } else { (1, 70) };
            e.streams[i].ops = ops;
            e
        };
        let client = end(Role::Send, Role::Receive, 20.0);
        let agent = end(Role::Receive, Role::Send, 40.0);
        let outcomes = [AgentOutcome {
            name: "a",
            host: None,
            report: Some(&agent),
            client: &client,
        }];
        let r = assemble_tcp(&spec, HostInfo::default(), &outcomes, 0, vec![]);
        let m = r.summary.mix.expect("a mixed run has mix figures");
        assert_eq!((m.read_percent, m.write_percent, m.transfer_bytes), (70, 30, 1_000));
        assert_eq!((m.read.bytes, m.read.transfers), (70_000, 70));
        assert_eq!((m.write.bytes, m.write.transfers), (30_000, 30));
        assert_eq!(m.transfers, 100);
        assert_eq!(m.transfers_per_second, 100.0);
        assert_eq!(m.bits_per_second, 800_000.0);
        assert_eq!(m.read_share_percent, Some(70.0));
        assert_eq!((m.client_cpu_percent, m.agent_cpu_percent), (Some(20.0), Some(40.0)));
        assert_eq!(m.client_mbit_per_second_per_cpu_percent, Some(0.8 / 20.0));
        assert_eq!(m.agent_mbit_per_second_per_cpu_percent, Some(0.8 / 40.0));
        assert!(
            assemble_tcp(&TcpSpec::new(), HostInfo::default(), &outcomes, 0, vec![])
                .summary
                .mix
                .is_none()
        );
    }

    fn window_limited(bytes: u64, seconds: f64) -> SideReport {
        let snap = TcpSnapshot {
            rtt_us: 100,
            snd_wnd_bytes: 101 * 1024,
            busy_us: 1_000_000,
            rwnd_limited_us: 600_000,
            ..Default::default()
        };
        let mut st = stream(0, Role::Send, bytes, seconds);
        st.tcp = Some(snap);
        report(vec![st], 10.0)
    }

    #[test]
    fn issue_13_no_window_advice_below_the_measured_rate() {
        // 101 KiB at 0.1 ms allows 8,274 Mbit/s: a measured 21,715 Mbit/s contradicts it.
        let fast = window_limited(21_715_000_000 / 8, 1.0);
        let t = totals(fast.streams.iter().map(|s| (s, &fast)), 21_715e6).expect("tcp");
        assert!(t.window_limit_bits_per_second < 21_715e6);
        assert_eq!(t.limited_by, None);
        // At 8,000 Mbit/s the same stalls and window are a consistent explanation.
        let slow = window_limited(1_000_000_000, 1.0);
        let t = totals(slow.streams.iter().map(|s| (s, &slow)), 8_000e6).expect("tcp");
        assert_eq!(t.limited_by.as_deref(), Some("receive window"));
    }

    #[test]
    fn issue_13_window_and_rtt_are_run_long_means() {
        let mut r = window_limited(1_000, 1.0);
        for (i, rtt_us) in [300u32, 300, 300].into_iter().enumerate() {
            r.intervals.push(crate::result::IntervalSample {
                stream: 0,
                start_ns: i as u64,
                end_ns: i as u64 + 1,
                bytes: 0,
                ops: 0,
                tcp: Some(TcpSnapshot {
                    rtt_us,
                    snd_wnd_bytes: 101 * 1024,
                    ..Default::default()
                }),
            });
        }
        let t = totals(r.streams.iter().map(|s| (s, &r)), 1e6).expect("tcp");
        assert_eq!(t.rtt_us, 250.0, "three samples at 300 us and the end at 100 us");
    }

    fn host_with_interrupts(boot: &str, netns: &str) -> HostInfo {
        HostInfo {
            boot_id: Some(boot.into()),
            net_namespace: Some(netns.into()),
            ..Default::default()
        }
    }

    fn counted(streams: Vec<StreamReport>) -> SideReport {
        let mut r = report(streams, 30.0);
        r.host = Some(crate::metrics::sample::HostUsage {
            seconds: 1.0,
            interrupts_per_second: Some(crate::metrics::sample::InterruptRates {
                total: 33_000.0,
                ..Default::default()
            }),
            stack: Some(crate::metrics::sample::StackUsage {
                tcp_in_segments: 10,
                softnet_processed: 7,
                ..Default::default()
            }),
            ..Default::default()
        });
        r
    }

    #[test]
    fn issue_13_one_host_is_summed_once_however_many_agents_ran_on_it() {
        let spec = TcpSpec::new();
        let client = report(vec![stream(0, Role::Send, 100, 1.0)], 10.0);
        let a = counted(vec![stream(0, Role::Receive, 100, 1.0)]);
        let b = counted(vec![stream(0, Role::Receive, 100, 1.0)]);
        let run = |ha: HostInfo, hb: HostInfo| {
            let outcomes = [
                AgentOutcome {
                    name: "a",
                    host: Some(&ha),
                    report: Some(&a),
                    client: &client,
                },
                AgentOutcome {
                    name: "b",
                    host: Some(&hb),
                    report: Some(&b),
                    client: &client,
                },
            ];
            assemble_tcp(&spec, HostInfo::default(), &outcomes, 0, vec![])
                .summary
                .received
        };
        let ints = |s: &crate::result::SideSummary| s.interrupts_per_second.as_ref().map(|i| i.total);
        // Same machine, same namespace: once.
        let one = run(
            host_with_interrupts("x", "net:[1]"),
            host_with_interrupts("x", "net:[1]"),
        );
        assert_eq!((one.hosts, ints(&one)), (1, Some(33_000.0)));
        assert_eq!(one.stack.map(|s| s.tcp_in_segments), Some(10));
        assert_eq!(one.cpu.host_percent, Some(30.0));
        assert_eq!(
            one.cpu.process_percent_of_host,
            Some(2.0),
            "two processes on one host add up"
        );
        // Same machine, two namespaces: interrupts once, each namespace's stack, softnet once.
        let ns = run(
            host_with_interrupts("x", "net:[1]"),
            host_with_interrupts("x", "net:[2]"),
        );
        assert_eq!((ns.hosts, ints(&ns)), (1, Some(33_000.0)));
        assert_eq!(
            ns.stack.map(|s| (s.tcp_in_segments, s.softnet_processed)),
            Some((20, 7))
        );
        // Two machines: summed.
        let two = run(
            host_with_interrupts("x", "net:[1]"),
            host_with_interrupts("y", "net:[1]"),
        );
        assert_eq!((two.hosts, ints(&two)), (2, Some(66_000.0)));
        assert_eq!(
            two.cpu.process_percent_of_host,
            Some(1.0),
            "shares of two hosts are averaged"
        );
    }
}
