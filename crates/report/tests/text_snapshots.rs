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
    let outcomes = [
        AgentOutcome {
            name: "h2",
            host: None,
            report: Some(&a),
            client: &c0,
        },
        AgentOutcome {
            name: "h3",
            host: None,
            report: None,
            client: &c1,
        },
    ];
    let r = assemble_tcp(&spec(Direction::Send), host("h1"), &outcomes, 0, vec![]);
    check("send_two_agents_partial.txt", &linerate_report::text::render(&r));
}

#[test]
fn bidirectional_blocks() {
    let client = side(
        vec![
            stream(0, Role::Send, 500_000_000, 5.0),
            stream(1, Role::Receive, 400_000_000, 5.0),
        ],
        60.0,
        55.0,
    );
    let agent = side(
        vec![
            stream(0, Role::Receive, 500_000_000, 5.0),
            stream(1, Role::Send, 400_000_000, 5.0),
        ],
        70.0,
        65.0,
    );
    let outcomes = [AgentOutcome {
        name: "h2",
        host: None,
        report: Some(&agent),
        client: &client,
    }];
    let r = assemble_tcp(&spec(Direction::Bidir), host("h1"), &outcomes, 0, vec![]);
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
    let mut client = side(
        vec![
            stream(0, Role::Send, 300 * 65_536, 2.0),
            stream(1, Role::Receive, 700 * 65_536, 2.0),
        ],
        40.0,
        30.0,
    );
    client.streams[1].ops = 700;
    let mut agent = side(
        vec![
            stream(0, Role::Receive, 300 * 65_536, 2.0),
            stream(1, Role::Send, 700 * 65_536, 2.0),
        ],
        20.0,
        15.0,
    );
    agent.streams[0].ops = 300;
    let outcomes = [AgentOutcome {
        name: "h2",
        host: None,
        report: Some(&agent),
        client: &client,
    }];
    let r = assemble_tcp(&s, host("h1"), &outcomes, 0, vec![]);
    check("mix.txt", &linerate_report::text::render(&r));
}
