//! iperf3's results message and linerate's side report, each made from the other:
//! both of linerate's ends that speak iperf3 (the client against `iperf3 -s`, the server behind
//! `serve --iperf3-port`) send their own report as iperf3's [`Results`] and read the peer's
//! into a [`SideReport`] (what `summary::assemble` joins) and an [`Iperf3Peer`] (kept as iperf3
//! said it).
//!
//! Only what iperf3 measured is carried over: bytes, the stream's time, UDP datagrams, loss
//! and jitter, TCP retransmits and its CPU (its own percent of one CPU over its test time,
//! made seconds over the longest stream's time). No TCP_INFO, histogram, host CPU or sampler
//! is made up: those stay null.

use super::check::{ReportError, check_report, run_seconds};
use crate::proto::iperf3::{Results, StreamResults, stream_id};
use crate::result::{
    CpuUsage, Iperf3Peer, Iperf3Stream, Role, SideReport, StreamEnd, StreamReport, UdpReceiveReport, UdpSendReport,
};
use crate::spec::TestSpec;
use std::time::Duration;

/// This end's report as iperf3's results message. `udp`: the test's protocol.
pub fn results_of(side: &SideReport, udp: bool) -> Results {
    let window_s = side.window_end_ns.saturating_sub(side.window_start_ns) as f64 / 1e9;
    let percent = |seconds: f64| {
        if window_s > 0.0 {
            seconds / window_s * 100.0
        } else {
            0.0
        }
    };
    let (user, system) = (side.cpu.process_user_seconds, side.cpu.process_system_seconds);
    let sends = side.streams.iter().any(|s| s.role == Role::Send);
    // A sending stream's algorithm, else a receiving one's: iperf3 reads TCP_CONGESTION of its
    // data socket whichever way it carries, so `iperf3 -c -V` prints `rcv_tcp_congestion` from
    // a server that only received (linerate's said nothing there).
    let with_congestion = |role: Role| {
        side.streams
            .iter()
            .find(|s| s.role == role && !s.socket.congestion.is_empty())
    };
    let congestion_used = with_congestion(Role::Send)
        .or_else(|| with_congestion(Role::Receive))
        .map(|s| s.socket.congestion.clone())
        .filter(|_| !udp);
    let mut streams: Vec<&StreamReport> = side.streams.iter().collect();
    streams.sort_by_key(|s| s.stream);
    Results {
        cpu_util_total: percent(user + system),
        cpu_util_user: percent(user),
        cpu_util_system: percent(system),
        // As iperf3 3.12 says it: a TCP sender reads retransmits, a UDP one does not, a side
        // that only receives says -1.
        sender_has_retransmits: match (sends, udp) {
            (false, _) => -1.0,
            (true, true) => 0.0,
            (true, false) => 1.0,
        },
        congestion_used,
        streams: streams
            .into_iter()
            .map(|s| {
                let mut r = StreamResults {
                    id: stream_id(usize::from(s.stream)) as f64,
                    bytes: s.bytes as f64,
                    retransmits: -1.0,
                    start_time: 0.0,
                    end_time: s.seconds,
                    omitted_errors: Some(0.0),
                    omitted_packets: Some(0.0),
                    ..StreamResults::default()
                };
                match s.role {
                    Role::Send if !udp => r.retransmits = s.tcp.map_or(0, |t| t.retransmits) as f64,
                    Role::Send => r.packets = s.udp_send.as_ref().map_or(0, |u| u.datagrams) as f64,
                    Role::Receive => {
                        if let Some(u) = &s.udp_receive {
                            r.jitter = u.jitter_us / 1e6;
                            r.errors = u.lost as f64;
                            r.packets = u.highest_plus_one as f64;
                        }
                    }
                }
                r
            })
            .collect(),
        server_output_json: None,
        server_output_text: None,
    }
}

/// The peer's results as its side report: each stream in the role opposite to this end's
/// (`ours[i]`: this end's role on stream i). Streams it did not report are left out.
pub fn side_of(results: &Results, ours: &[Role], udp: bool) -> SideReport {
    let mut streams = Vec::with_capacity(results.streams.len());
    for r in &results.streams {
        let Some(i) = r.index().filter(|i| *i < ours.len()) else {
            continue;
        };
        let role = ours[i].opposite();
        let bytes = r.bytes();
        let mut s = StreamReport {
            stream: i as u16,
            role,
            bytes,
            ops: 0,
            seconds: r.seconds(),
            total_bytes: bytes,
            socket: Default::default(),
            tcp: None,
            errors: Default::default(),
            // iperf3 stops counting at TEST_END, with bytes it had not read yet in its sockets
            //: a receiver stopped, not one that read to the sender's end (whose
            // count would have to be the sender's exactly, `check::check_report`).
            end: StreamEnd::Stopped,
            udp_send: None,
            udp_receive: None,
            rr: None,
        };
        if role == Role::Send {
            s.end = StreamEnd::Deadline;
            if let Some(c) = results.congestion().filter(|_| !udp) {
                s.socket.congestion = c;
            }
        }
        if udp {
            let packets = r.packets().saturating_sub(r.omitted_packets());
            match role {
                Role::Send => {
                    s.ops = packets;
                    s.udp_send = Some(UdpSendReport {
                        datagrams: packets,
                        ..UdpSendReport::default()
                    });
                }
                Role::Receive => {
                    let lost = r.errors().saturating_sub(r.omitted_errors()).min(packets);
                    s.ops = packets - lost;
                    s.udp_receive = Some(UdpReceiveReport {
                        datagrams: packets - lost,
                        lost,
                        highest_plus_one: packets,
                        jitter_us: r.jitter * 1e6,
                        timestamps: "iperf3".into(),
                        ..UdpReceiveReport::default()
                    });
                }
            }
        }
        streams.push(s);
    }
    streams.sort_by_key(|s| s.stream);
    let seconds = streams.iter().map(|s| s.seconds).fold(0.0, f64::max);
    let cpu_seconds = |percent: f64| {
        if percent.is_finite() && percent >= 0.0 {
            percent / 100.0 * seconds
        } else {
            0.0
        }
    };
    SideReport {
        window_start_ns: 0,
        window_end_ns: (seconds * 1e9) as u64,
        streams,
        cpu: CpuUsage {
            host_percent: None,
            process_percent_of_host: None,
            process_user_seconds: cpu_seconds(results.cpu_util_user),
            process_system_seconds: cpu_seconds(results.cpu_util_system),
            split: None,
            per_cpu: Vec::new(),
        },
        io: "iperf3".into(),
        ..SideReport::default()
    }
}

/// The peer as the document keeps it: `role` "server" or "client", its address, its version
/// (or a hint of it) and its figures as it said them.
pub fn peer_of(
    results: &Results,
    ours: &[Role],
    udp: bool,
    role: &str,
    address: String,
    version: Option<String>,
    version_hint: Option<String>,
) -> Iperf3Peer {
    let finite = |x: f64| x.is_finite().then_some(x);
    let mut streams: Vec<Iperf3Stream> = results
        .streams
        .iter()
        .filter_map(|r| {
            let i = r.index().filter(|i| *i < ours.len())?;
            let role = ours[i].opposite();
            let receiving_udp = udp && role == Role::Receive;
            Some(Iperf3Stream {
                stream: i as u16,
                id: stream_id(i),
                role,
                bytes: r.bytes(),
                seconds: r.seconds(),
                retransmits: r.retransmits().filter(|_| !udp && role == Role::Send),
                jitter_ms: receiving_udp.then_some(r.jitter * 1e3).and_then(finite),
                lost: receiving_udp.then(|| r.errors().saturating_sub(r.omitted_errors())),
                packets: udp.then(|| r.packets().saturating_sub(r.omitted_packets())),
            })
        })
        .collect();
    streams.sort_by_key(|s| s.stream);
    Iperf3Peer {
        role: role.into(),
        address,
        version,
        version_hint,
        cpu_util_total_percent: finite(results.cpu_util_total),
        cpu_util_user_percent: finite(results.cpu_util_user),
        cpu_util_system_percent: finite(results.cpu_util_system),
        congestion_used: results.congestion(),
        streams,
    }
}

/// The most CPU an iperf3 peer may claim, percent of one CPU: every CPU a host may have busy.
const MAX_CPU_PERCENT: f64 = 100.0 * super::check::MAX_CORES as f64;
/// The largest count an iperf3 figure may be (2^63: iperf3 writes its counts as signed or
/// unsigned 64-bit integers, a double above that is no count it can have made).
const MAX_IPERF3_COUNT: f64 = 9.2e18;

/// Checks an iperf3 peer's results against the test asked (`spec`) and the client's own report
/// (`client`, this end of the same streams), after `elapsed` of the run: its
/// figures as iperf3 sent them first (whole counts; times, jitter and CPU that a run of this
/// length can make), then, read as a side report (`side`, [`side_of`]), the
/// same checks as an agent's report ([`check_report`], whose errors it gives): no more bytes or datagrams received
/// than this end sent, no stream longer than the run.
pub(crate) fn check_iperf3(
    spec: &TestSpec,
    results: &Results,
    side: &SideReport,
    client: &SideReport,
    elapsed: Duration,
) -> Result<(), ReportError> {
    let seconds = run_seconds(spec, elapsed);
    let figure = |what: String, value: f64, ok: bool, why: &'static str| {
        if ok {
            Ok(())
        } else {
            Err(ReportError::Figure { what, value, why })
        }
    };
    let count = |x: f64| (0.0..MAX_IPERF3_COUNT).contains(&x) && x.fract() == 0.0;
    for (what, value) in [
        ("cpu_util_total", results.cpu_util_total),
        ("cpu_util_user", results.cpu_util_user),
        ("cpu_util_system", results.cpu_util_system),
    ] {
        figure(
            format!("{what} percent"),
            value,
            (0.0..=MAX_CPU_PERCENT).contains(&value),
            "more than every CPU of a host busy",
        )?;
    }
    for st in &results.streams {
        let id = st.id;
        let counts = [
            ("bytes", Some(st.bytes)),
            ("packets", Some(st.packets)),
            ("errors", Some(st.errors)),
            ("omitted_packets", st.omitted_packets),
            ("omitted_errors", st.omitted_errors),
        ];
        for (what, value) in counts.into_iter().filter_map(|(w, v)| Some((w, v?))) {
            figure(format!("{what} on stream {id}"), value, count(value), "not a count")?;
        }
        // -1 (or its unsigned form) says "none"; anything else is a count.
        let none = st.retransmits == -1.0 || st.retransmits == u64::MAX as f64;
        figure(
            format!("retransmits on stream {id}"),
            st.retransmits,
            none || count(st.retransmits),
            "not a count",
        )?;
        for (what, value) in [("start_time", st.start_time), ("end_time", st.end_time)] {
            figure(
                format!("{what} on stream {id}"),
                value,
                (0.0..=seconds).contains(&value),
                "outside the run",
            )?;
        }
        figure(
            format!("end_time on stream {id}"),
            st.end_time,
            st.end_time >= st.start_time,
            "before its start_time",
        )?;
        figure(
            format!("jitter on stream {id}"),
            st.jitter,
            (0.0..=seconds).contains(&st.jitter),
            "longer than the run",
        )?;
    }
    // No stream receives more bytes than this end sent on it: on UDP too, where an agent's
    // report is held to datagrams only (iperf3 counts every datagram's bytes it read).
    for st in side.streams.iter().filter(|s| s.role == Role::Receive) {
        let sent = client
            .streams
            .iter()
            .find(|c| c.stream == st.stream && c.role == Role::Send);
        if let Some(c) = sent.filter(|c| st.bytes > c.total_bytes) {
            return Err(ReportError::ReceivedMoreThanSent {
                stream: st.stream,
                agent: st.bytes,
                client: c.total_bytes,
            });
        }
    }
    // With a warm-up iperf3 leaves its first seconds out of a sender's count (its omit), where
    // this end's total is of the whole run: the server's sent bytes have nothing here to be
    // held to. What it received is held to what this end sent all the same.
    if spec.timing().warmup_seconds > 0.0 {
        let mut receiving = client.clone();
        receiving.streams.retain(|s| s.role == Role::Send);
        return check_report(spec, side, &receiving, elapsed);
    }
    check_report(spec, side, client, elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{SocketGrant, TcpSnapshot};

    fn stream(n: u16, role: Role, bytes: u64) -> StreamReport {
        StreamReport {
            stream: n,
            role,
            bytes,
            ops: 10,
            seconds: 2.0,
            total_bytes: bytes,
            socket: SocketGrant {
                congestion: "cubic".into(),
                ..SocketGrant::default()
            },
            tcp: Some(TcpSnapshot {
                retransmits: 7,
                ..TcpSnapshot::default()
            }),
            errors: Default::default(),
            end: StreamEnd::Deadline,
            udp_send: None,
            udp_receive: None,
            rr: None,
        }
    }

    #[test]
    fn issue_26_a_side_report_becomes_iperf3_results_and_back() {
        let side = SideReport {
            window_start_ns: 0,
            window_end_ns: 2_000_000_000,
            streams: vec![stream(0, Role::Send, 1000), stream(1, Role::Receive, 500)],
            cpu: CpuUsage {
                process_user_seconds: 0.2,
                process_system_seconds: 0.6,
                ..CpuUsage::default()
            },
            ..SideReport::default()
        };
        let r = results_of(&side, false);
        assert!((r.cpu_util_total - 40.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.sender_has_retransmits, 1.0);
        assert_eq!(r.congestion_used.as_deref(), Some("cubic"));
        // A side that only received still says its sockets' algorithm, not for UDP.
        let receiver = SideReport {
            streams: vec![stream(1, Role::Receive, 500)],
            ..side.clone()
        };
        assert_eq!(results_of(&receiver, false).congestion_used.as_deref(), Some("cubic"));
        assert_eq!(results_of(&receiver, true).congestion_used, None);
        assert_eq!(r.streams.iter().map(|s| s.id).collect::<Vec<_>>(), vec![1.0, 3.0]);
        assert_eq!((r.streams[0].retransmits, r.streams[1].retransmits), (7.0, -1.0));
        // Read back by the other end, whose roles are the opposite.
        let theirs = [Role::Receive, Role::Send];
        let back = side_of(&r, &theirs, false);
        assert_eq!(
            back.streams
                .iter()
                .map(|s| (s.stream, s.role, s.bytes))
                .collect::<Vec<_>>(),
            vec![(0, Role::Send, 1000), (1, Role::Receive, 500)]
        );
        assert!(
            (back.cpu.process_system_seconds - 0.6).abs() < 1e-9,
            "30 % of one CPU over 2 s"
        );
        assert_eq!(back.cpu.process_percent_of_host, None, "no host CPU is made up");
        assert!(back.streams.iter().all(|s| s.tcp.is_none()));
        let peer = peer_of(&r, &theirs, false, "server", "127.0.0.1:5201".into(), None, None);
        assert_eq!(peer.streams[0].retransmits, Some(7));
        assert_eq!(peer.streams[1].retransmits, None);
    }

    #[test]
    fn issue_26_udp_loss_and_jitter_cross_over() {
        let mut rx = stream(0, Role::Receive, 14_720);
        rx.udp_receive = Some(UdpReceiveReport {
            datagrams: 9,
            lost: 1,
            highest_plus_one: 10,
            jitter_us: 35.0,
            ..UdpReceiveReport::default()
        });
        let side = SideReport {
            window_end_ns: 1_000_000_000,
            streams: vec![rx],
            ..SideReport::default()
        };
        let r = results_of(&side, true);
        assert_eq!(r.sender_has_retransmits, -1.0);
        assert_eq!((r.streams[0].packets, r.streams[0].errors), (10.0, 1.0));
        assert!((r.streams[0].jitter - 35e-6).abs() < 1e-12);
        let back = side_of(&r, &[Role::Send], true);
        let u = back.streams[0].udp_receive.as_ref().expect("a receiver");
        assert_eq!((u.datagrams, u.lost, u.highest_plus_one), (9, 1, 10));
        let peer = peer_of(&r, &[Role::Send], true, "server", "x".into(), None, None);
        assert_eq!((peer.streams[0].lost, peer.streams[0].packets), (Some(1), Some(10)));
        assert!((peer.streams[0].jitter_ms.expect("jitter") - 0.035).abs() < 1e-9);
    }

    #[test]
    fn issue_39_an_iperf3_servers_figures_are_checked_as_an_agents_report() {
        let spec = TestSpec::Tcp(crate::spec::TcpSpec::new());
        let client = SideReport {
            streams: vec![stream(0, Role::Send, 1000)],
            ..SideReport::default()
        };
        let results = |bytes: f64, end_time: f64, cpu: f64| Results {
            cpu_util_total: cpu,
            cpu_util_user: cpu,
            streams: vec![StreamResults {
                id: 1.0,
                bytes,
                retransmits: -1.0,
                end_time,
                ..StreamResults::default()
            }],
            ..Results::default()
        };
        let check = |r: Results| {
            let side = side_of(&r, &[Role::Send], false);
            check_iperf3(&spec, &r, &side, &client, Duration::from_secs(10)).map_err(|e| e.to_string())
        };
        // True, and fewer bytes than sent (iperf3 stops counting at TEST_END).
        assert_eq!(check(results(1000.0, 10.0, 5.0)), Ok(()));
        assert_eq!(check(results(900.0, 10.0, 5.0)), Ok(()));
        assert_eq!(
            check(results(u64::MAX as f64, 10.0, 5.0)),
            Err("it reports bytes on stream 1 as 1.8446744073709552e19, not a count".into())
        );
        assert_eq!(
            check(results(1000.0, 1e308, 5.0)),
            Err("it reports end_time on stream 1 as 1e308, outside the run".into())
        );
        assert_eq!(
            check(results(1000.0, 10.0, 1e308)),
            Err("it reports cpu_util_total percent as 1e308, more than every CPU of a host busy".into())
        );
        assert_eq!(
            check(results(1001.0, 10.0, 5.0)),
            Err("it claims 1001 bytes received on stream 0, the client sent 1000".into())
        );
        assert!(check(results(0.5, 10.0, 5.0)).is_err(), "half a byte");
        let mut jittery = results(1000.0, 10.0, 5.0);
        jittery.streams[0].jitter = 1e300;
        assert!(check(jittery).is_err());
        let mut backwards = results(1000.0, 10.0, 5.0);
        backwards.streams[0].start_time = 11.0;
        assert!(check(backwards).is_err());
    }
}
