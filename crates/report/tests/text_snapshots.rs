//! The text summary of hand-built results, compared with reviewed snapshot files in
//! tests/snapshots/. After an intended change: `UPDATE_SNAPSHOTS=1 cargo test -p linerate-report`
//! rewrites them; review the diff like code.

mod common;
use common::check;

use linerate_core::metrics::cpu::CpuSplit;
use linerate_core::metrics::host::HostInfo;
use linerate_core::metrics::sample::{HostUsage, InterfaceUsage, InterruptRates, SoftirqRate};
use linerate_core::result::{
    CpuUsage, ErrorCounts, Role, SideReport, SocketGrant, StreamEnd, StreamReport, TcpSnapshot,
};
use linerate_core::spec::{Direction, Limit, TcpSpec};
use linerate_core::summary::{AgentOutcome, assemble_tcp};
use linerate_core::units::ByteSize;

fn stream(stream: u16, role: Role, bytes: u64, seconds: f64) -> StreamReport {
    StreamReport {
        stream,
        role,
        bytes,
        ops: bytes / 537_600,
        seconds,
        total_bytes: bytes,
        socket: SocketGrant {
            sndbuf_bytes: 425_984,
            rcvbuf_bytes: 10_752_000,
            mss_bytes: 8948,
            congestion: "cubic".into(),
            nodelay: false,
            zerocopy: None,
            dscp: None,
        },
        tcp: (role == Role::Send).then_some(TcpSnapshot {
            rtt_us: 180,
            rttvar_us: 20,
            cwnd_bytes: 1_431_680,
            retransmits: 2,
            mss_bytes: 8948,
            pmtu_bytes: 9000,
            snd_wnd_bytes: 5_376_000,
            busy_us: 87_000_000,
            rwnd_limited_us: 1_000_000,
            sndbuf_limited_us: 0,
        }),
        errors: ErrorCounts::default(),
        end: if role == Role::Send {
            StreamEnd::Count
        } else {
            StreamEnd::Eof
        },
        udp_send: None,
        udp_receive: None,
        rr: None,
    }
}

fn side(streams: Vec<StreamReport>, host: f64, process: f64) -> SideReport {
    SideReport {
        streams,
        cpu: CpuUsage {
            host_percent: Some(host),
            process_percent_of_host: Some(process),
            process_user_seconds: 1.5,
            process_system_seconds: 20.25,
            ..Default::default()
        },
        io: "io_uring".into(),
        host: Some(usage(host)),
        ..Default::default()
    }
}

/// Samplers of a 2-CPU host at `busy` % over 10 s, with an eth0 that moved 1 GB each way.
fn usage(busy: f64) -> HostUsage {
    let split = |cpu: Option<u32>| CpuSplit {
        cpu,
        busy,
        user: busy / 4.0,
        system: busy / 2.0,
        softirq: busy / 4.0,
        idle: 100.0 - busy,
        ..Default::default()
    };
    let mut softirqs = std::collections::BTreeMap::new();
    for (kind, rate) in [("NET_RX", 50_000.0), ("NET_TX", 2_000.0)] {
        softirqs.insert(
            kind.to_string(),
            SoftirqRate {
                total: rate,
                per_cpu: vec![],
            },
        );
    }
    HostUsage {
        seconds: 10.0,
        cpu: Some(split(None)),
        per_cpu: vec![split(Some(0)), split(Some(1))],
        interrupts_per_second: Some(InterruptRates {
            total: 12_345.0,
            ..Default::default()
        }),
        softirqs_per_second: softirqs,
        interfaces: vec![InterfaceUsage {
            name: "eth0".into(),
            rx_bytes: 1_000_000_000,
            tx_bytes: 1_000_000_000,
            rx_packets: 700_000,
            tx_packets: 700_000,
            rx_bits_per_second: 800e6,
            tx_bits_per_second: 800e6,
            rx_packets_per_second: 70_000.0,
            tx_packets_per_second: 70_000.0,
            ..Default::default()
        }],
        clock_mhz: Some(2000.0),
        ..Default::default()
    }
}

fn spec(direction: Direction) -> TcpSpec {
    let mut s = TcpSpec::new();
    s.buffer_bytes = ByteSize(537_600);
    s.timing.limit = Limit::Buffers(200_000);
    s.depth = 8;
    s.window_bytes = Some(ByteSize(5_376_000));
    s.direction = direction;
    s
}

fn host(name: &str) -> HostInfo {
    HostInfo {
        hostname: name.into(),
        kernel: "6.1.0".into(),
        os: None,
        cpu_model: Some("AMD Opteron 275".into()),
        cores: 4,
        boot_id: None,
        net_namespace: None,
    }
}

/// One agent's part of a run: its name, its own report (None: lost) and the client's report of
/// its streams.
type Part<'a> = (&'a str, Option<&'a SideReport>, &'a SideReport);

/// The document of a run of `spec` from client h1 with `agents` (their hosts unknown).
fn assemble(spec: &TcpSpec, agents: &[Part<'_>]) -> linerate_core::result::TestResult {
    let outcomes: Vec<AgentOutcome<'_>> = agents
        .iter()
        .map(|(name, report, client)| AgentOutcome {
            name,
            host: None,
            report: *report,
            client,
        })
        .collect();
    assemble_tcp(spec, host("h1"), &outcomes, 0, vec![])
}

#[test]
fn send_to_one_agent_as_the_seed_table() {
    // The AMD report's Xframe II row: 107,520 MBytes in 87.253 s sent, 87.832 s received.
    let bytes = 200_000 * 537_600;
    let client = side(vec![stream(0, Role::Send, bytes, 87.253)], 15.42, 14.9);
    let agent = side(vec![stream(0, Role::Receive, bytes, 87.832)], 54.34, 50.1);
    let h = host("system-3390");
    let outcomes = [AgentOutcome {
        name: "2.1.1.2:5301",
        host: Some(&h),
        report: Some(&agent),
        client: &client,
    }];
    let r = assemble_tcp(&spec(Direction::Send), host("system-3389"), &outcomes, 0, vec![]);
    check("send_one_agent.txt", &linerate_report::text::render(&r));
}

#[test]
fn send_to_two_agents_with_a_lost_report() {
    let client = side(
        vec![
            stream(0, Role::Send, 1_000_000_000, 10.0),
            stream(1, Role::Send, 900_000_000, 10.0),
        ],
        30.0,
        25.0,
    );
    let a = side(vec![stream(0, Role::Receive, 1_000_000_000, 10.01)], 40.0, 35.0);
    let part = |i: u16| {
        let mut p = client.clone();
        p.streams.retain(|s| s.stream == i);
        p.streams[0].stream = 0;
        p
    };
    let (c0, c1) = (part(0), part(1));
    let r = assemble(&spec(Direction::Send), &[("h2", Some(&a), &c0), ("h3", None, &c1)]);
    check("send_two_agents_partial.txt", &linerate_report::text::render(&r));
}

/// The client's side of a --bidir run: stream 0 sent, stream 1 received.
fn bidir_client() -> SideReport {
    side(
        vec![
            stream(0, Role::Send, 500_000_000, 5.0),
            stream(1, Role::Receive, 400_000_000, 5.0),
        ],
        60.0,
        55.0,
    )
}

#[test]
fn bidirectional_blocks() {
    let client = bidir_client();
    let agent = side(
        vec![
            stream(0, Role::Receive, 500_000_000, 5.0),
            stream(1, Role::Send, 400_000_000, 5.0),
        ],
        70.0,
        65.0,
    );
    let r = assemble(&spec(Direction::Bidir), &[("h2", Some(&agent), &client)]);
    check("bidir.txt", &linerate_report::text::render(&r));
}

#[test]
fn mixed_transfers_block() {
    // --mix 70:30 with 64 KiB transfers: 700 reads (stream 1) and 300 writes (stream 0).
    let mut s = spec(Direction::Send);
    s.depth = 1;
    s.buffer_bytes = ByteSize(65_536);
    s.timing.limit = Limit::Buffers(1_000);
    s.mix = Some("70:30".parse().expect("valid"));
    // Each end: stream 0 as `writes`, stream 1 as `reads`, over 2 s, with its CPU; the reading
    // stream counts its transfers.
    let end = |writes: Role, reads: Role, host: f64, process: f64| {
        let mut e = side(
            vec![
                stream(0, writes, 300 * 65_536, 2.0),
                stream(1, reads, 700 * 65_536, 2.0),
            ],
            host,
            process,
        );
        let (i, ops) = if writes == Role::Receive { (0, 300) } else { (1, 700) };
        e.streams[i].ops = ops;
        e
    };
    let client = end(Role::Send, Role::Receive, 40.0, 30.0);
    let agent = end(Role::Receive, Role::Send, 20.0, 15.0);
    let r = assemble(&s, &[("h2", Some(&agent), &client)]);
    check("mix.txt", &linerate_report::text::render(&r));
}

/// The value a text row `label` shows in its first column (after the label's padding).
fn value_under(text: &str, label: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no row {label:?} in\n{text}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("no value in {line:?}"))
        .to_string()
}

#[test]
fn issue_23_rtt_rows_say_what_they_are_and_print_the_documents_figures() {
    // One sending stream whose RTT rose during the run and came back at its end: the samples
    // say 3400 us, TCP_INFO at the end 3141 us (the issue's case: 3271 printed "at end").
    let bytes = 2_000_000_000;
    let mut client = side(vec![stream(0, Role::Send, bytes, 10.0)], 20.0, 15.0);
    if let Some(t) = client.streams[0].tcp.as_mut() {
        t.rtt_us = 3141;
    }
    let sample = |i: u64, rtt_us: u32| linerate_core::result::IntervalSample {
        stream: 0,
        start_ns: i * 1_000_000_000,
        end_ns: (i + 1) * 1_000_000_000,
        bytes: bytes / 10,
        ops: 1,
        tcp: client.streams[0].tcp.map(|t| TcpSnapshot { rtt_us, ..t }),
    };
    client.intervals = (0..9).map(|i| sample(i, 3400)).chain([sample(9, 3141)]).collect();
    let agent = side(vec![stream(0, Role::Receive, bytes, 10.0)], 30.0, 25.0);
    let r = assemble(&spec(Direction::Send), &[("h2", Some(&agent), &client)]);
    let text = linerate_report::text::render(&r);
    let run_mean = r.summary.sent.tcp.as_ref().expect("TCP_INFO").rtt_us;
    let end = r.summary.streams[0].tcp.expect("TCP_INFO at the end").rtt_us;
    assert_eq!(end, 3141);
    assert!(
        (run_mean - 3141.0).abs() > 100.0,
        "the fixture's run mean differs: {run_mean}"
    );
    assert_eq!(value_under(&text, "RTT at end (us, mean of streams)"), end.to_string());
    assert_eq!(
        value_under(&text, "RTT, mean over the run (us)"),
        format!("{run_mean:.0}")
    );
}

#[test]
fn issue_23_a_lost_agents_side_is_na_not_zero() {
    let client = side(vec![stream(0, Role::Send, 1_000_000_000, 10.0)], 30.0, 25.0);
    let r = assemble(&spec(Direction::Send), &[("h2", None, &client)]);
    let text = linerate_report::text::render(&r);
    check("send_lost_agent.txt", &text);
    let receive: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("RECEIVE SIDE"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(receive[0].ends_with("h2: no report"), "{}", receive[0]);
    assert!(
        receive[1..].iter().all(|l| l.trim_end().ends_with("n/a")),
        "every figure unknown: {receive:#?}"
    );
    assert!(!receive.iter().any(|l| l.contains("0.000")), "{receive:#?}");
    let last = text.lines().last().expect("a line");
    assert!(
        last.starts_with("tcp: partial; receiver throughput n/a Mbit/s"),
        "{last}"
    );
}

#[test]
fn issue_23_two_agents_columns_say_where_the_data_went() {
    // --reverse: the agents send, the client receives "from h2" and "from h3".
    let agent = |b: u64| side(vec![stream(0, Role::Send, b, 10.0)], 40.0, 35.0);
    let (a, b) = (agent(1_000_000_000), agent(900_000_000));
    let recv = |b: u64| side(vec![stream(0, Role::Receive, b, 10.0)], 30.0, 25.0);
    let (c0, c1) = (recv(1_000_000_000), recv(900_000_000));
    let r = assemble(
        &spec(Direction::Reverse),
        &[("h2", Some(&a), &c0), ("h3", Some(&b), &c1)],
    );
    let text = linerate_report::text::render(&r);
    check("reverse_two_agents.txt", &text);
    let head = |title: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.starts_with(title)).expect("block");
        line[title.len()..]
            .split("  ")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    assert_eq!(head("SEND SIDE"), ["h2", "h3", "total"]);
    assert_eq!(head("RECEIVE SIDE"), ["from h2", "from h3", "total"]);
}

#[test]
fn issue_23_the_text_ends_with_the_headline_line() {
    let client = side(vec![stream(0, Role::Send, 1_000_000_000, 10.0)], 30.0, 25.0);
    let agent = side(vec![stream(0, Role::Receive, 1_000_000_000, 10.0)], 40.0, 35.0);
    let r = assemble(&spec(Direction::Send), &[("h2", Some(&agent), &client)]);
    let text = linerate_report::text::render(&r);
    assert_eq!(
        text.lines().last(),
        Some(linerate_report::headline::run_line(&r).as_str())
    );
    assert_eq!(
        linerate_report::headline::run_line(&r),
        "tcp: complete; receiver throughput 800 Mbit/s; sender's host CPU 30 % of host; \
         receiver's host CPU 40 % of host; TCP retransmits 2 segments"
    );
}

#[test]
fn issue_26_an_iperf3_server_as_the_far_end() {
    // linerate's client against an iperf3 3.12 server, --bidir: the far end's side is made from
    // its results message alone (no host, no samplers), and it is kept as it said it.
    let client = bidir_client();
    let text = br#"{"cpu_util_total":41.5,"cpu_util_user":1.5,"cpu_util_system":40.0,"sender_has_retransmits":1,"congestion_used":"cubic","streams":[{"id":1,"bytes":500000000,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":5.01},{"id":3,"bytes":400000000,"retransmits":12,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":5.0}]}"#;
    let peer = "127.0.0.1:5201".parse().expect("an address");
    let results = linerate_core::proto::iperf3::Results::parse(text, peer, 2).expect("iperf3's results");
    let ours = [Role::Send, Role::Receive];
    let far = linerate_core::summary::iperf3::side_of(&results, &ours, false);
    let mut r = assemble(&spec(Direction::Bidir), &[("iperf3://127.0.0.1", Some(&far), &client)]);
    r.iperf3 = Some(linerate_core::summary::iperf3::peer_of(
        &results,
        &ours,
        false,
        "server",
        "127.0.0.1:5201".into(),
        None,
        Some("before 3.14 (its results lack omitted_packets)".into()),
    ));
    check("iperf3_server_bidir.txt", &linerate_report::text::render(&r));
}

/// An https run's text shows its handshakes (full, resumed, failed, per second, CPU),
/// their times, and the failed ones' classes; a cleartext run's shows none of it.
#[test]
fn issue_27_an_https_run_shows_its_handshakes_and_their_failures() {
    use linerate_core::result::{ErrorSummary, HttpErrors, HttpSummary, LatencyFigures, Summary, TlsSummary};
    use linerate_core::spec::{HttpSpec, TestSpec, Timing, TlsSpec};
    let spec = HttpSpec {
        urls: vec!["https://10.0.0.2/bytes/1024".into()],
        users: 4,
        think_ms: 0.0,
        keepalive: false,
        timing: Timing::ramp(0.0, 2.0),
        rate: None,
        timeout_ms: 10_000,
        threads: 0,
        cpus: Vec::new(),
        sched: Default::default(),
        tls: Some(TlsSpec::default()),
        http2: None,
        probe: None,
    };
    let lat = |p50: f64| LatencyFigures {
        p50,
        mean: p50,
        max: p50 * 2.0,
        ..LatencyFigures::default()
    };
    let errors = HttpErrors {
        tls_certificate: 2,
        ..HttpErrors::default()
    };
    let http = |tls: Option<TlsSummary>, errors: HttpErrors| HttpSummary {
        users: 4,
        steady_seconds: 2.0,
        responses: 100,
        tls,
        errors: ErrorSummary {
            by_class: errors,
            total: errors.tls_failed(),
        },
        ..HttpSummary::default()
    };
    let tls = TlsSummary {
        handshakes: 100,
        full: 4,
        resumed: 96,
        handshakes_per_second: 50.0,
        full_per_second: 2.0,
        resumed_per_second: 48.0,
        failed: 2,
        full_time_us: Some(lat(1875.9)),
        resumed_time_us: Some(lat(950.5)),
        cpu_us_per_full_handshake: Some(812.4),
        cpu_us_per_resumed_handshake: None,
        server_cpu_us_per_handshake: Some(95.5),
    };
    let render = |h: HttpSummary| {
        let summary = Summary {
            http: Some(h),
            ..Summary::default()
        };
        linerate_report::text::render(&linerate_core::sweep::stub_result(
            TestSpec::Http(spec.clone()),
            summary,
        ))
    };
    let text = render(http(Some(tls), errors));
    let row_of = |label: &str| {
        let line = text.lines().find(|l| l.trim_start().starts_with(label));
        let line = line.unwrap_or_else(|| panic!("no row {label:?} in\n{text}"));
        line.trim_start()[label.len()..].trim().to_string()
    };
    let row = row_of("TLS handshakes full/resumed/failed");
    assert_eq!(
        row, "4 / 96 / 2 (2.0 / 48.0 per second; CPU us each 812.4 / n/a)",
        "{text}"
    );
    // The server's CPU per handshake beside the client's.
    assert_eq!(
        row_of("TLS CPU us per handshake"),
        "client 812.4 full / n/a resumed; server 95.5 (full and resumed)",
        "{text}"
    );
    assert!(row_of("TLS full handshake (us)").contains("p50 1875.9"), "{text}");
    assert!(row_of("TLS resumed handshake (us)").contains("p50 950.5"), "{text}");
    assert!(
        row_of("Failed requests (errors)")
            .ends_with("other 0, TLS certificate 2, TLS protocol 0, TLS timeout 0, TLS other 0)"),
        "{text}"
    );
    let clear = render(http(None, HttpErrors::default()));
    assert!(!clear.contains("TLS"), "{clear}");
}

/// Retransmits on a run that crossed loopback only are not called loss in the
/// network; on a real interface with no drops they still are.
#[test]
fn retransmits_on_loopback_are_the_hosts_not_the_networks() {
    let bytes = 200_000 * 537_600;
    let client = side(vec![stream(0, Role::Send, bytes, 87.253)], 15.42, 14.9);
    let agent = side(vec![stream(0, Role::Receive, bytes, 87.832)], 54.34, 50.1);
    let mut r = assemble(&spec(Direction::Send), &[("h2", Some(&agent), &client)]);
    let text = linerate_report::text::render(&r);
    assert!(text.contains("loss was in the network"), "{text}");
    for side in [&mut r.summary.sent, &mut r.summary.received] {
        assert!(!side.interfaces.is_empty());
        for i in &mut side.interfaces {
            i.name = "lo".into();
        }
    }
    let text = linerate_report::text::render(&r);
    assert!(!text.contains("loss was in the network"), "{text}");
    assert!(
        text.contains("loopback only, which dropped 0 packets: no network was crossed"),
        "{text}"
    );
}
