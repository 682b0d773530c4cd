use super::*;
use linerate_core::sweep::stub_result;
use linerate_wire::result::{CpuUsage, SideSummary, Summary};
use linerate_wire::spec::{TcpSpec, TestSpec};

fn tcp(mbit_per_second: f64, cpu_percent: f64) -> TestResult {
    let side = |cpu: f64| SideSummary {
        bytes: (mbit_per_second * 1e6 / 8.0 * 2.0) as u64,
        seconds: 2.0,
        bits_per_second: mbit_per_second * 1e6,
        cpu: CpuUsage {
            host_percent: Some(cpu),
            ..CpuUsage::default()
        },
        ..SideSummary::default()
    };
    let summary = Summary {
        sent: side(cpu_percent),
        received: side(cpu_percent),
        ..Summary::default()
    };
    stub_result(TestSpec::Tcp(TcpSpec::new()), summary)
}

fn side(name: &str, runs: &[(f64, f64)]) -> SideInput {
    SideInput {
        source: name.into(),
        entries: runs
            .iter()
            .enumerate()
            .map(|(i, (m, c))| Entry {
                source: format!("{name}{i}"),
                document: Document::Run(Box::new(tcp(*m, *c))),
                test: None,
                coordinates: Vec::new(),
            })
            .collect(),
    }
}

fn figure<'c>(c: &'c Comparison, name: &str) -> &'c FigureComparison {
    c.points[0].figures.iter().find(|f| f.figure == name).expect(name)
}

#[test]
fn double_the_throughput_at_the_same_cost_is_better_by_100_percent() {
    let a = side("a", &[(100.0, 20.0), (98.0, 21.0), (101.0, 19.0)]);
    let b = side("b", &[(200.0, 20.0), (199.0, 21.0), (202.0, 19.0)]);
    let c = compare(&a, &b, DEFAULT_THRESHOLD_PERCENT);
    assert_eq!(c.points.len(), 1, "{c:?}");
    assert_eq!((c.points[0].runs_a, c.points[0].runs_b), (3, 3));
    let t = figure(&c, "received_mbit_per_second");
    assert_eq!(t.verdict, Verdict::Better);
    let change = t.change_percent.expect("change");
    assert!((change - 101.0).abs() < 1.0, "{change}");
    assert_eq!(t.method, Some(IntervalMethod::Welch));
    assert!(t.difference_ci95_low.expect("ci") > 0.0);
    // A lower CPU is better; the same CPU is no significant change.
    let cpu = c.points[0]
        .figures
        .iter()
        .find(|f| f.better == Better::Down)
        .expect("a CPU figure");
    assert_eq!(cpu.verdict, Verdict::NoSignificantChange, "{cpu:?}");
    assert!(c.worse_by_more_than(5.0).is_empty());
    // The other way round it is worse, by about 50 %.
    let back = compare(&b, &a, DEFAULT_THRESHOLD_PERCENT);
    let t = figure(&back, "received_mbit_per_second");
    assert_eq!(t.verdict, Verdict::Worse);
    assert_eq!(back.worse_by_more_than(40.0).len(), back.worse_by_more_than(0.0).len());
    assert!(back.worse_by_more_than(60.0).is_empty());
}

/// Two batches on one 100 Mbit/s link, each within 0.2 %, 0.6 % apart (p < 0.001): a
/// significant change smaller than the threshold is no change; the same batches past it are.
#[test]
fn a_significant_change_under_the_threshold_is_no_significant_change() {
    let a = side("a", &[(96.34, 20.0), (96.35, 20.0), (96.31, 20.0)]);
    let b = side("b", &[(95.73, 20.0), (95.75, 20.0), (95.72, 20.0)]);
    let c = compare(&a, &b, DEFAULT_THRESHOLD_PERCENT);
    assert_eq!(c.threshold_percent, Some(DEFAULT_THRESHOLD_PERCENT));
    let t = figure(&c, "received_mbit_per_second");
    assert!(t.p_value.expect("p") < 0.001, "{t:?}");
    assert!(
        t.difference_ci95_high.expect("ci") < 0.0,
        "the interval leaves out zero: {t:?}"
    );
    assert_eq!(t.verdict, Verdict::NoSignificantChange, "{t:?}");
    assert!(
        c.worse_by_more_than(0.0).is_empty(),
        "a gate does not fire on it either"
    );
    // With no threshold the same runs are worse; with 0.5 % too.
    for pct in [0.0, 0.5] {
        let t = compare(&a, &b, pct).points[0].figures[0].clone();
        assert_eq!(t.figure, "received_mbit_per_second");
        assert_eq!(t.verdict, Verdict::Worse, "at {pct} %: {t:?}");
    }
    // A change of 5 % is past the default.
    let b5 = side("b", &[(91.5, 20.0), (91.6, 20.0), (91.4, 20.0)]);
    let t = compare(&a, &b5, DEFAULT_THRESHOLD_PERCENT).points[0].figures[0].clone();
    assert_eq!(t.verdict, Verdict::Worse, "{t:?}");
}

#[test]
fn the_same_runs_twice_are_no_significant_change_and_one_run_needs_repeats() {
    let runs = [(100.0, 20.0), (104.0, 21.0), (97.0, 19.0)];
    let c = compare(&side("a", &runs), &side("b", &runs), DEFAULT_THRESHOLD_PERCENT);
    // Figures the fixtures measure (they carry no TCP_INFO: no retransmit count).
    let measured = |f: &&crate::compare::FigureComparison| f.a.is_some();
    assert!(
        c.points[0]
            .figures
            .iter()
            .filter(measured)
            .all(|f| f.verdict == Verdict::NoSignificantChange),
        "{c:?}"
    );
    let one = compare(
        &side("a", &runs[..1]),
        &side("b", &runs[..1]),
        DEFAULT_THRESHOLD_PERCENT,
    );
    assert!(
        one.points[0]
            .figures
            .iter()
            .filter(measured)
            .all(|f| f.verdict == Verdict::NeedsRepeats)
    );
    assert!(one.notes.iter().any(|n| n.contains("needs repeats")));
}

#[test]
fn points_match_by_test_and_coordinates() {
    let mut a = side("a", &[(100.0, 20.0)]);
    let mut b = side("b", &[(100.0, 20.0), (100.0, 20.0)]);
    a.entries[0].coordinates = vec![Coordinate {
        name: "length".into(),
        value: "64K".into(),
    }];
    b.entries[0].coordinates = a.entries[0].coordinates.clone();
    b.entries[1].coordinates = vec![Coordinate {
        name: "length".into(),
        value: "1M".into(),
    }];
    let c = compare(&a, &b, DEFAULT_THRESHOLD_PERCENT);
    assert_eq!(c.points.len(), 1);
    assert_eq!(c.points[0].coordinates[0].value, "64K");
    assert_eq!(c.only_b, ["tcp length=1M"]);
}

#[test]
fn percentiles_are_told_by_their_name() {
    assert!(is_percentile("latency_p50_us"));
    assert!(is_percentile("response_time_p999_us"));
    assert!(!is_percentile("received_mbit_per_second"));
    assert!(!is_percentile("loss_percent"));
}

#[test]
fn a_sides_interval_is_its_means_t_interval_or_its_medians_bootstrap() {
    let c = compare(
        &side("a", &[(100.0, 20.0), (104.0, 21.0), (97.0, 19.0)]),
        &side("b", &[(100.0, 20.0)]),
        DEFAULT_THRESHOLD_PERCENT,
    );
    let t = figure(&c, "received_mbit_per_second");
    let a = t.a.as_ref().expect("side a");
    // n = 3, mean 100.333, s = 3.5119: half-width t(0.975, 2) 4.303 x 3.5119 / sqrt(3) = 8.724.
    let (lo, hi) = side_interval(&t.figure, a).expect("three runs");
    assert!(
        (lo - (100.333 - 8.724)).abs() < 0.01 && (hi - (100.333 + 8.724)).abs() < 0.01,
        "{lo} {hi}"
    );
    assert_eq!(side_interval(&t.figure, t.b.as_ref().expect("side b")), None, "one run");
    // A percentile's side is its median: the interval lies within its runs.
    let p = SideFigure {
        n: 3,
        value: 50.0,
        values: vec![40.0, 50.0, 90.0],
    };
    let (lo, hi) = side_interval("latency_p99_us", &p).expect("three runs");
    assert!((40.0..=50.0).contains(&lo) && (50.0..=90.0).contains(&hi), "{lo} {hi}");
}

#[test]
fn issue_23_sides_that_share_no_point_or_no_figure_compared_nothing() {
    let a = side("a", &[(100.0, 20.0)]);
    let mut b = side("b", &[(100.0, 20.0)]);
    assert_eq!(nothing_compared(&compare(&a, &b, DEFAULT_THRESHOLD_PERCENT)), None);
    b.entries[0].test = Some("other".into());
    let why = nothing_compared(&compare(&a, &b, DEFAULT_THRESHOLD_PERCENT)).expect("no shared point");
    assert!(
        why.contains("share no point") && why.contains("A has tcp, B has other"),
        "{why}"
    );
    let mut c = compare(&a, &side("b", &[(100.0, 20.0)]), DEFAULT_THRESHOLD_PERCENT);
    for f in &mut c.points[0].figures {
        f.b = None;
    }
    let why = nothing_compared(&c).expect("no figure on both sides");
    assert!(why.contains("no figure"), "{why}");
}

#[test]
fn a_lower_loaded_latency_is_better() {
    use linerate_wire::result::LatencyUnderLoad;
    use linerate_wire::spec::{ProbeSpec, ProbeVia};
    // The same throughput; the loaded latency falls from about 220 ms (a 200 ms FIFO) to about
    // 24 ms (a 5 ms one): a 89 % fall, better, by the bootstrap of the medians (a percentile).
    let probed = |loaded_ms: f64| {
        let mut r = tcp(94.0, 10.0);
        let TestSpec::Tcp(spec) = &mut r.options else {
            unreachable!("a tcp run")
        };
        spec.probe = Some(ProbeSpec::new(ProbeVia::Rr));
        r.latency = Some(LatencyUnderLoad {
            idle_ms: Some(20.0),
            loaded_ms: Some(loaded_ms),
            added_ms: Some(loaded_ms - 20.0),
            ..LatencyUnderLoad::default()
        });
        r
    };
    let side = |name: &str, loaded: &[f64]| SideInput {
        source: name.into(),
        entries: loaded
            .iter()
            .enumerate()
            .map(|(i, l)| Entry {
                source: format!("{name}{i}"),
                document: Document::Run(Box::new(probed(*l))),
                test: None,
                coordinates: Vec::new(),
            })
            .collect(),
    };
    let a = side("a", &[221.0, 219.0, 220.0, 222.0]);
    let b = side("b", &[24.0, 23.5, 24.5, 24.0]);
    let c = compare(&a, &b, DEFAULT_THRESHOLD_PERCENT);
    let loaded = figure(&c, "loaded_latency_p50_ms");
    assert_eq!(loaded.verdict, Verdict::Better, "{loaded:?}");
    assert_eq!(loaded.method, Some(IntervalMethod::Bootstrap));
    // Medians 220.5 and 24: (24 - 220.5) / 220.5 = -89.1 %.
    let change = loaded.change_percent.expect("change");
    assert!((change - (24.0 - 220.5) / 220.5 * 100.0).abs() < 1e-9, "{change}");
    let added = figure(&c, "added_latency_ms");
    assert_eq!(
        (added.verdict, added.method),
        (Verdict::Better, Some(IntervalMethod::Welch))
    );
    // Throughput did not move: no verdict on it.
    assert_eq!(
        figure(&c, "received_mbit_per_second").verdict,
        Verdict::NoSignificantChange
    );
}
