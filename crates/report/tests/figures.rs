//! Figures of hand-built documents: the lines, marks and text a sweep's or a UDP run's figures
//! must carry, checked on the figure model and in the SVG and the page.

mod common;
use common::{fit, ran, result, rr_only};

use linerate_core::result::{
    HttpSummary, LatencyFigures, LossRange, RrSummary, SequenceProfile, StreamLoss, StreamProfile, Summary, TestResult,
    UdpSummary,
};
use linerate_core::spec::{RrSpec, TestSpec, UdpSpec};
use linerate_core::sweep::{At, HttpSweep, HttpSweepSummary, RrVaries, Sweep, SweepKind};
use linerate_report::figures::{Subject, figures};
use linerate_report::html;
use linerate_report::plot::{Figure, Mark, Scale, Style};
use linerate_results::document::Document;

fn find<'a>(figs: &'a [Figure], id: &str) -> &'a Figure {
    figs.iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", figs.iter().map(|f| &f.id).collect::<Vec<_>>()))
}

fn rr_sweep() -> Sweep {
    let mut s = common::rr_sweep(RrVaries::Request, "eth0", fit(0.002, 20.0, 0.99, 3), 0.0008, Vec::new());
    for (size, p50) in [(64u32, 20.1), (1000, 22.0), (8000, 36.1)] {
        let mut spec = RrSpec::new();
        spec.request_bytes = size;
        let summary = rr_only(RrSummary {
            latency_us: Some(LatencyFigures {
                p50,
                ..LatencyFigures::default()
            }),
            ..RrSummary::default()
        });
        s.points.push(ran(
            At::Rr {
                request_bytes: size,
                response_bytes: 1,
            },
            "",
            TestSpec::Rr(spec),
            summary,
        ));
    }
    s
}

#[test]
fn an_rr_sweep_draws_the_fitted_and_the_expected_line() {
    let figs = figures(&Subject::Document(Document::Sweep(Box::new(rr_sweep()))));
    let f = find(&figs, "fig-rr-sweep");
    assert_eq!(f.x.scale, Scale::Log, "64 to 8000 bytes spans two decades");
    assert_eq!(f.series[0].style, Style::Points);
    let ys: Vec<f64> = f.series[0].points.iter().map(|p| p.y).collect();
    assert_eq!(ys, [20.1, 22.0, 36.1]);
    // The fitted line from the smallest to the largest size, intercept + slope x size at every
    // point (on a log axis, a curve of many points).
    let line = &f.series[1].points;
    assert!(line.len() > 10);
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
    assert!(close(line[0].x, 64.0) && close(line[line.len() - 1].x, 8000.0));
    assert!(line.iter().all(|p| close(p.y, 20.0 + 0.002 * p.x)));
    let expected = &f.series[2].points;
    assert!(expected.iter().all(|p| close(p.y, 20.0 + 0.0008 * p.x)));
    assert!(f.marks.contains(&Mark::VLine {
        x: 1500.0,
        label: "MTU 1500 bytes".into()
    }));
    let svg = linerate_report::plot::svg::render(f);
    assert!(svg.contains("fit: slope 0.002000 µs/byte, intercept 20.00 µs, R² 0.990 (3 points)"));
    assert!(svg.contains("expected slope 0.000800 µs/byte (--expect)"));
}

#[test]
fn an_http_sweep_marks_its_optimum() {
    let mut s = Sweep::new(
        SweepKind::Http(HttpSweep {
            baseline: None,
            summary: HttpSweepSummary {
                optimum: common::optimum_at_64("the fewest users reaching 95 %"),
            },
        }),
        Vec::new(),
    );
    for (users, rps) in [(16u32, 4100.0), (64, 9600.0), (256, 9800.0)] {
        let summary = Summary {
            http: Some(HttpSummary {
                users,
                responses_per_second: rps,
                bits_per_second_in: rps * 8000.0,
                response_time_us: Some(LatencyFigures {
                    mean: 1000.0 * users as f64,
                    ..LatencyFigures::default()
                }),
                ..HttpSummary::default()
            }),
            ..Summary::default()
        };
        s.points
            .push(ran(At::Http { users }, "", TestSpec::Udp(UdpSpec::new()), summary));
    }
    let figs = figures(&Subject::Document(Document::Sweep(Box::new(s))));
    let f = find(&figs, "fig-http-sweep");
    assert_eq!(f.x.scale, Scale::Linear, "16 to 256 users spans under two decades");
    assert!(f.marks.contains(&Mark::VLine {
        x: 64.0,
        label: "optimum 64 users".into()
    }));
    assert!(f.series[1].right, "Mbit/s on the right axis");
    assert_eq!(f.series[1].points[1].y, 9600.0 * 8000.0 / 1e6);
    let t = find(&figs, "fig-http-sweep-response-time");
    let mean: Vec<f64> = t.series[0].points.iter().map(|p| p.y).collect();
    assert_eq!(mean, [16.0, 64.0, 256.0], "ms");
    assert!(t.description.contains("optimum 64 users"));
}

fn udp_run(along: bool) -> TestResult {
    let mut u = UdpSummary {
        datagrams_sent: 1000,
        lost: 30,
        loss_percent: 3.0,
        loss_ranges: vec![StreamLoss {
            agent: "h2".into(),
            stream: 0,
            lost: 30,
            ranges: vec![LossRange { first: 100, last: 119 }, LossRange { first: 990, last: 999 }],
            range_count: 2,
            picture: String::new(),
        }],
        ..UdpSummary::default()
    };
    if along {
        let mut lost = vec![0u64; 63];
        lost[6] = 20;
        lost[61] = 2;
        lost[62] = 8;
        let delay: Vec<Option<f64>> = (0..63).map(|i| (i != 62).then_some(i as f64)).collect();
        u.along_sequence = vec![StreamProfile {
            agent: "h2".into(),
            stream: 0,
            profile: SequenceProfile {
                width_datagrams: 16,
                lost,
                delay_mean_us: delay.clone(),
                delay_min_us: delay.iter().map(|d| d.map(|v| v / 2.0)).collect(),
                delay_max_us: delay.iter().map(|d| d.map(|v| v * 2.0)).collect(),
            },
        }];
    }
    let mut spec = UdpSpec::new();
    spec.payload_bytes = 1000;
    let mut r = result(
        TestSpec::Udp(spec),
        Summary {
            udp: Some(u),
            ..Summary::default()
        },
    );
    r.summary.sent.streams = 1;
    r
}

#[test]
fn the_loss_pattern_comes_from_the_profile_or_else_the_loss_runs() {
    let figs = figures(&Subject::Document(Document::Run(Box::new(udp_run(true)))));
    let loss = find(&figs, "fig-udp-loss");
    assert_eq!(loss.series.len(), 1);
    let bars = &loss.series[0].points;
    assert_eq!(bars.len(), 63);
    assert_eq!((bars[6].x, bars[6].x_end, bars[6].y), (96.0, Some(112.0), 20.0));
    assert_eq!(bars.iter().map(|p| p.y).sum::<f64>(), 30.0);
    let owd = find(&figs, "fig-udp-owd-sequence");
    let p = &owd.series[0].points;
    assert_eq!(p.len(), 62, "the stretch with no arrival is left out");
    assert_eq!((p[4].x, p[4].y, p[4].error), (72.0, 4.0, Some((2.0, 8.0))));

    // Without the profile (older documents): the listed runs, in 64 stretches of 16.
    let figs = figures(&Subject::Document(Document::Run(Box::new(udp_run(false)))));
    assert!(figs.iter().all(|f| f.id != "fig-udp-owd-sequence"));
    let loss = find(&figs, "fig-udp-loss");
    let bars = &loss.series[0].points;
    let lost: f64 = bars.iter().map(|p| p.y).sum();
    assert_eq!(lost, 30.0);
    assert_eq!(bars[6].y, 12.0, "100..=111 of 96..112");
    assert_eq!(bars[7].y, 8.0);
}

#[test]
fn a_page_of_two_sources_keeps_its_ids_apart() {
    let a = Subject::Document(Document::Run(Box::new(udp_run(true))));
    let b = Subject::Document(Document::Sweep(Box::new(rr_sweep())));
    let sections = [html::section(&a, "a.json", 1, 2), html::section(&b, "b.json", 2, 2)];
    let page = html::page("two", &sections);
    assert!(page.contains("id=\"s1-fig-udp-loss\""));
    assert!(page.contains("id=\"s2-fig-rr-sweep\""));
    assert!(page.contains("id=\"s2-fig-rr-sweep-s1\""));
    assert!(page.contains("href=\"#source-2\""));
    assert!(!page.contains("id=\"fig-rr-sweep\""));
}
