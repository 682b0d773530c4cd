//! The sweep tables of hand-built sweep documents, compared with reviewed snapshot files in
//! tests/snapshots/. After an intended change: `UPDATE_SNAPSHOTS=1 cargo test -p linerate-report`
//! rewrites them; review the diff like code.

mod common;
use common::{check, failed, fit, ran, rr_only, rr_sweep};

use linerate_core::result::HttpSummary;
use linerate_core::result::Summary;
use linerate_core::result::UdpSummary;
use linerate_core::result::{LatencyFigures, RrSummary};
use linerate_core::spec::{HttpSpec, RrProto, RrSpec, TestSpec, UdpSpec};
use linerate_core::sweep::http::HttpBaseline;
use linerate_core::sweep::{At, HttpSweep, HttpSweepSummary, Parameter, RrVaries, Sweep, SweepKind};
use linerate_report::sweep;

fn parameter(name: &str, unit: &str, values: &[f64]) -> Parameter {
    Parameter {
        name: name.into(),
        unit: unit.into(),
        values: values.to_vec(),
    }
}

/// Shows the table as a running sweep does, point by point, and checks it against the whole.
fn shown_as_it_runs(whole: &Sweep) -> String {
    let mut growing = Sweep {
        points: Vec::new(),
        ..whole.clone()
    };
    let mut out = sweep::progress(&growing);
    for p in &whole.points {
        growing.points.push(p.clone());
        out += &sweep::progress(&growing);
    }
    out += &sweep::tail(&growing);
    assert_eq!(
        out,
        sweep::text(whole),
        "shown point by point or at once: the same table"
    );
    out
}

fn udp_sweep(partial: bool) -> Sweep {
    let mut s = Sweep::new(
        SweepKind::Udp,
        vec![
            parameter("gap_us", "us", &[0.0, 12.5]),
            parameter("payload_bytes", "bytes", &[64.0, 1472.0]),
        ],
    );
    let runs = [
        (64, 0.0, 912.4e6, 0.0),
        (1472, 0.0, 9_412.0e6, 0.125),
        (64, 12.5, 40.96e6, 0.0),
    ];
    for (size, gap_us, bits, loss) in runs {
        let mut spec = UdpSpec::new();
        spec.payload_bytes = size;
        spec.gap_ns = (gap_us * 1e3) as u64;
        let mut summary = Summary {
            udp: Some(UdpSummary {
                loss_percent: loss,
                ..UdpSummary::default()
            }),
            ..Summary::default()
        };
        summary.received.bits_per_second = bits;
        s.points.push(ran(
            At::Udp {
                payload_bytes: size,
                gap_us,
            },
            "",
            TestSpec::Udp(spec),
            summary,
        ));
    }
    if !partial {
        s.points.push(failed(
            At::Udp {
                payload_bytes: 1472,
                gap_us: 12.5,
            },
            "",
            "no answer",
        ));
    }
    s.partial = partial;
    s
}

#[test]
fn a_udp_sweep_is_a_row_per_gap_and_a_column_per_size() {
    check("sweep_udp.txt", &shown_as_it_runs(&udp_sweep(false)));
}

#[test]
fn a_partial_udp_sweep_ends_its_last_row_and_says_it_was_cut_short() {
    check("sweep_udp_partial.txt", &shown_as_it_runs(&udp_sweep(true)));
}

#[test]
fn an_rr_sweep_shows_latency_against_size_and_the_fit() {
    let mut s = rr_sweep(
        RrVaries::Both,
        "eth1",
        fit(0.0017, 30.25, 0.9987, 2),
        0.0016,
        vec![parameter("request_bytes", "bytes", &[64.0, 9000.0, 60000.0])],
    );
    for (size, p50, note) in [(64, 30.36, ""), (9000, 45.55, "over MTU 1500: 7 IP fragments")] {
        let mut spec = RrSpec::new();
        spec.proto = RrProto::Udp;
        spec.request_bytes = size;
        spec.response_bytes = size;
        let summary = rr_only(RrSummary {
            transactions_per_second: 1e6 / p50,
            lost: u64::from(size / 3000),
            latency_us: Some(LatencyFigures {
                min: p50 - 2.0,
                mean: p50 + 1.5,
                p50,
                p99: p50 * 2.0,
                ..LatencyFigures::default()
            }),
            ..RrSummary::default()
        });
        s.points.push(ran(
            At::Rr {
                request_bytes: size,
                response_bytes: size,
            },
            note,
            TestSpec::Rr(spec),
            summary,
        ));
    }
    s.points.push(failed(
        At::Rr {
            request_bytes: 60000,
            response_bytes: 60000,
        },
        "over MTU 1500: 42 IP fragments; failed: message too long",
        "message too long",
    ));
    check("sweep_rr.txt", &shown_as_it_runs(&s));
}

#[test]
fn an_http_sweep_shows_a_row_per_user_count_and_the_optimum() {
    let mut s = Sweep::new(
        SweepKind::Http(HttpSweep {
            baseline: Some(HttpBaseline {
                responses_per_second: 41_250.5,
                bits_per_second_in: 346.1e6,
                object_bytes: 1048,
                users: 16,
            }),
            summary: HttpSweepSummary {
                optimum: common::optimum_at_64(
                    "the fewest users reaching 95 % of the sweep's most responses per second (9800.0)",
                ),
            },
        }),
        vec![parameter("users", "users", &[16.0, 64.0, 256.0])],
    );
    for (users, rps, mean, p99, errors) in [
        (16, 4100.0, 3900.0, 7100.0, 0),
        (64, 9600.0, 6600.0, 15_000.0, 2),
        (256, 9800.0, 26_100.0, 61_000.0, 17),
    ] {
        let spec = HttpSpec {
            urls: vec!["http://10.0.0.2/index.html".into()],
            users,
            think_ms: 0.0,
            keepalive: true,
            timing: linerate_core::spec::Timing::ramp(2.0, 10.0),
            rate: None,
            timeout_ms: 10_000,
            threads: 0,
            cpus: Vec::new(),
            sched: Default::default(),
            tls: None,
            http2: None,
            probe: None,
        };
        let mut http = HttpSummary {
            users,
            responses_per_second: rps,
            successful_responses_per_second: Some(rps),
            bits_per_second_in: rps * 8.0 * 1048.0,
            response_time_us: Some(LatencyFigures {
                mean,
                p99,
                ..LatencyFigures::default()
            }),
            ..HttpSummary::default()
        };
        http.errors.total = errors;
        let summary = Summary {
            http: Some(http),
            ..Summary::default()
        };
        s.points
            .push(ran(At::Http { users }, "", TestSpec::Http(spec), summary));
    }
    check("sweep_http.txt", &shown_as_it_runs(&s));
    // The JSON is the document itself.
    let v: serde_json::Value = serde_json::from_str(&sweep::json(&s)).expect("JSON");
    assert_eq!(v["test"], "http sweep");
    assert_eq!(v["summary"]["optimum"]["users"], 64);
    assert_eq!(v["points"][2]["result"]["summary"]["errors"]["total"], 17);
}

#[test]
fn tcp_size_sweep_table_with_a_mix() {
    use linerate_core::result::MixSummary;
    use linerate_core::spec::TcpSpec;
    use linerate_core::sweep::tcp::{TcpSizeFigures, TcpSweep};
    let mix = Some("70:30".parse().expect("valid"));
    let mut s = Sweep::new(
        SweepKind::Tcp(TcpSweep {
            mix,
            figures: Vec::new(),
        }),
        vec![parameter("buffer_bytes", "bytes", &[1024.0, 65_536.0, 1_048_576.0])],
    );
    let runs = [(1024u64, 812.5e6, 60.0, 55.0), (65_536, 9_412.0e6, 48.0, 44.0)];
    for (size, bits, client_cpu, agent_cpu) in runs {
        let mut spec = TcpSpec::new();
        spec.buffer_bytes = linerate_core::units::ByteSize(size);
        spec.mix = mix;
        let summary = Summary {
            mix: Some(MixSummary {
                bits_per_second: bits,
                transfers_per_second: bits / 8.0 / size as f64,
                ..Default::default()
            }),
            ..Summary::default()
        };
        if let SweepKind::Tcp(t) = &mut s.kind {
            t.figures.push(TcpSizeFigures {
                buffer_bytes: size,
                bits_per_second: bits,
                client_cpu_percent: Some(client_cpu),
                agent_cpu_percent: Some(agent_cpu),
                client_mbit_per_second_per_cpu_percent: Some(bits / 1e6 / client_cpu),
                agent_mbit_per_second_per_cpu_percent: Some(bits / 1e6 / agent_cpu),
                transfers_per_second: Some(bits / 8.0 / size as f64),
            });
        }
        s.points
            .push(ran(At::Tcp { buffer_bytes: size }, "", TestSpec::Tcp(spec), summary));
    }
    s.points.push(failed(
        At::Tcp {
            buffer_bytes: 1_048_576,
        },
        "failed: no answer",
        "no answer",
    ));
    check("sweep_tcp.txt", &shown_as_it_runs(&s));
}
