use super::*;
use linerate_core::sweep::stub_result;
use linerate_wire::result::{RepeatError, SideSummary, Summary};
use linerate_wire::spec::{TcpSpec, TestSpec};

/// A TCP run whose receivers counted `mbit` Mbit/s (and the senders the same).
fn tcp_run(mbit: f64) -> TestResult {
    let side = SideSummary {
        bytes: (mbit * 1e6 / 8.0) as u64,
        seconds: 1.0,
        bits_per_second: mbit * 1e6,
        ops: 1,
        ..SideSummary::default()
    };
    let summary = Summary {
        sent: side.clone(),
        received: side,
        ..Summary::default()
    };
    stub_result(TestSpec::Tcp(TcpSpec::new()), summary)
}

fn fixed(runs: u32, best: Option<u32>) -> RepeatPolicy {
    RepeatPolicy {
        runs: Runs::Fixed { runs },
        pause_seconds: 0.0,
        best,
    }
}

fn auto(ci_percent: f64, min_runs: u32, max_runs: u32) -> RepeatPolicy {
    RepeatPolicy {
        runs: Runs::Auto {
            ci_percent,
            min_runs,
            max_runs,
        },
        pause_seconds: 0.0,
        best: None,
    }
}

/// Runs `policy` over runs measuring `values` in turn.
fn run_over(policy: &RepeatPolicy, values: &[f64]) -> Repeated {
    let stop = AtomicBool::new(false);
    repeat(
        "tcp",
        policy,
        &stop,
        |k| Ok::<_, String>(tcp_run(values[(k - 1) as usize])),
        |_| Ok(()),
    )
    .expect("every run starts")
}

#[test]
fn a_fixed_count_runs_that_many_and_aggregates_each_figure() {
    let mut seen = Vec::new();
    let stop = AtomicBool::new(false);
    let values = [940.0, 950.0, 930.0, 945.0, 935.0];
    let rep = repeat(
        "tcp",
        &fixed(5, Some(3)),
        &stop,
        |k| Ok::<_, String>(tcp_run(values[(k - 1) as usize])),
        |r| {
            seen.push(r.runs.len());
            Ok(())
        },
    )
    .expect("runs");
    assert_eq!(seen, [1, 2, 3, 4, 5], "progress after each run");
    assert_eq!(
        (rep.test.as_str(), rep.partial, rep.converged),
        ("tcp repeat", false, None)
    );
    assert_eq!(rep.aggregated_runs, [1, 2, 3, 4, 5]);
    let recv = rep.figure("received_mbit_per_second").expect("throughput");
    assert_eq!(recv.values, values.map(Some));
    assert_eq!((recv.stats.n, recv.stats.mean, recv.stats.median), (5, 940.0, 940.0));
    assert_eq!((recv.stats.min, recv.stats.max), (930.0, 950.0));
    // s = sqrt(62.5); half-width t(0.975, 4) x s / sqrt(5).
    let half = 2.776_445 * 62.5f64.sqrt() / 5f64.sqrt();
    assert!((recv.stats.ci95_high.expect("n > 1") - (940.0 + half)).abs() < 1e-3);
    assert_eq!(
        rep.aggregate[0].figure, "received_mbit_per_second",
        "the primary figure leads"
    );
    assert!(
        rep.figure("sender_cpu_percent").is_none(),
        "no run measured CPU: left out"
    );
    let best = rep.best.as_ref().expect("--best 3 of 5");
    assert_eq!(best.runs_kept, [1, 2, 4]);
    assert!((best.mean - 945.0).abs() < 1e-9);
    assert_eq!(rep.runs.len(), 5);
    assert_eq!(rep.outcome(), Outcome::Complete);
}

#[test]
fn the_document_names_its_parts() {
    let rep = run_over(&fixed(2, None), &[100.0, 110.0]);
    let v = serde_json::to_value(&rep).expect("serialises");
    assert_eq!(v["test"], "tcp repeat");
    assert_eq!(v["schema"], linerate_wire::result::SCHEMA);
    assert_eq!(v["policy"]["mode"], "fixed");
    assert_eq!(v["policy"]["runs"], 2);
    assert_eq!(v["aggregate"][0]["figure"], "received_mbit_per_second");
    assert_eq!(v["aggregate"][0]["unit"], "Mbit/s");
    assert_eq!(v["aggregate"][0]["better"], "up");
    assert_eq!(v["aggregate"][0]["mean"], 105.0);
    assert_eq!(v["runs"][1]["test"], "tcp");
    assert!(v["best"].is_null() && v["converged"].is_null());
    assert_eq!(v["primary"], "received_mbit_per_second");
    // It reads back (the store keeps documents and renders them again).
    let back: Repeated = serde_json::from_value(v.clone()).expect("reads back");
    assert_eq!(serde_json::to_value(&back).expect("serialises"), v);
}

#[test]
fn auto_stops_once_the_interval_is_narrow_enough() {
    // Within 0.1 % of each other: three runs are enough for a 2 % interval.
    let steady = [1000.0, 1001.0, 999.0, 1000.0, 1000.0];
    let rep = run_over(&auto(2.0, 3, 10), &steady);
    assert_eq!((rep.runs.len(), rep.converged), (3, Some(true)));
    assert!(rep.aggregate[0].stats.ci95_half_width_percent.expect("interval") <= 2.0);
    // Noisy runs never get there: max-runs, not converged.
    let noisy = [500.0, 1500.0, 700.0, 1300.0, 900.0, 1100.0];
    let rep = run_over(&auto(2.0, 3, 6), &noisy);
    assert_eq!((rep.runs.len(), rep.converged), (6, Some(false)));
    assert!(!rep.partial, "not converging is not partial");
    assert!(rep.runs_needed_for_2_percent.expect("an estimate") > 6);
}

#[test]
fn ctrl_c_during_a_run_keeps_the_runs_before_and_the_cut_one() {
    let stop = AtomicBool::new(false);
    let rep = repeat(
        "tcp",
        &fixed(5, Some(2)),
        &stop,
        |k| {
            let mut r = tcp_run(900.0 + f64::from(k));
            if k == 3 {
                stop.store(true, Ordering::Relaxed);
                r.partial = true;
            }
            Ok::<_, String>(r)
        },
        |_| Ok(()),
    )
    .expect("runs");
    assert_eq!(rep.runs.len(), 3);
    assert!(rep.partial && rep.runs[2].partial && !rep.runs[1].partial);
    assert_eq!(rep.aggregated_runs, [1, 2], "the cut run is kept, not aggregated");
    assert_eq!(rep.aggregate[0].values, [Some(901.0), Some(902.0), None]);
    assert_eq!(rep.best.as_ref().map(|b| b.runs_kept.clone()), Some(vec![1, 2]));
    assert_eq!(rep.outcome(), Outcome::Partial);
    assert!(
        rep.notes.iter().any(|n| n.contains("run 3 was cut short")),
        "{:?}",
        rep.notes
    );
}

#[test]
fn ctrl_c_in_a_pause_stops_before_the_next_run() {
    let stop = AtomicBool::new(false);
    let mut policy = fixed(3, None);
    policy.pause_seconds = 30.0;
    let started = Instant::now();
    let rep = repeat(
        "tcp",
        &policy,
        &stop,
        |_| Ok::<_, String>(tcp_run(100.0)),
        |_| {
            stop.store(true, Ordering::Relaxed);
            Ok(())
        },
    )
    .expect("runs");
    assert_eq!((rep.runs.len(), rep.partial), (1, true));
    assert!(started.elapsed() < Duration::from_secs(20), "the pause was cut");
    assert_eq!(rep.aggregated_runs, [1], "the run before the pause was whole");
}

#[test]
fn a_run_that_cannot_start() {
    let stop = AtomicBool::new(false);
    let first = repeat(
        "tcp",
        &fixed(3, None),
        &stop,
        |_| Err("refused".to_string()),
        |_| Ok(()),
    );
    assert_eq!(first, Err("refused".to_string()), "nothing ran: the error");
    let later = repeat(
        "tcp",
        &fixed(3, None),
        &stop,
        |k| {
            if k == 2 {
                Err("refused".to_string())
            } else {
                Ok(tcp_run(100.0))
            }
        },
        |_| Ok(()),
    )
    .expect("one run is kept");
    assert_eq!((later.runs.len(), later.partial), (1, true));
    assert!(later.notes.iter().any(|n| n == "run 2 did not run: refused"));
}

#[test]
fn best_ranks_by_which_way_is_better() {
    let lat = FigureStats {
        figure: "latency_p50_us".into(),
        label: "latency p50".into(),
        better: Better::Down,
        values: vec![Some(40.0), None, Some(30.0), Some(50.0)],
        stats: stats::describe(&[40.0, 30.0, 50.0], "us").expect("values"),
    };
    let b = best_of(&lat, 2).expect("two of three");
    assert_eq!((b.runs_kept, b.mean), (vec![1, 3], 35.0));
    assert_eq!(best_of(&lat, 4), None, "fewer values than K");
}

#[test]
fn policies_are_checked_before_any_run() {
    assert_eq!(fixed(0, None).validate(), Err(RepeatError::Runs(0)));
    assert_eq!(
        fixed(3, Some(4)).validate().map_err(|e| e.to_string()),
        Err("--best 4 is more than the 3 runs that are sure to be made (--repeat)".into())
    );
    assert_eq!(fixed(3, Some(0)).validate(), Err(RepeatError::BestZero));
    assert_eq!(auto(0.0, 3, 10).validate(), Err(RepeatError::Ci(0.0)));
    assert_eq!(
        auto(2.0, 5, 4).validate(),
        Err(RepeatError::MinOverMax { min: 5, max: 4 })
    );
    assert_eq!(auto(2.0, 1, 4).validate(), Err(RepeatError::MinRuns(1)));
    let mut a = auto(2.0, 3, 10);
    a.best = Some(3);
    assert_eq!(a.validate(), Ok(()));
    a.best = Some(4);
    assert!(matches!(a.validate(), Err(RepeatError::BestOverRuns { runs: 3, .. })));
    let mut p = fixed(2, None);
    p.pause_seconds = -1.0;
    assert_eq!(p.validate(), Err(RepeatError::Pause));
    assert_eq!(fixed(5, Some(3)).validate(), Ok(()));
}

#[test]
fn a_probed_tests_repeat_aggregates_its_loaded_latency() {
    use linerate_wire::result::LatencyUnderLoad;
    use linerate_wire::spec::{ProbeSpec, ProbeVia};
    let loaded = [220.0, 224.0, 222.0];
    let stop = AtomicBool::new(false);
    let rep = repeat(
        "tcp",
        &fixed(3, None),
        &stop,
        |k| {
            let mut r = tcp_run(94.0);
            if let TestSpec::Tcp(s) = &mut r.options {
                s.probe = Some(ProbeSpec::new(ProbeVia::Rr));
            }
            r.latency = Some(LatencyUnderLoad {
                loaded_ms: Some(loaded[(k - 1) as usize]),
                ..LatencyUnderLoad::default()
            });
            Ok::<_, String>(r)
        },
        |_| Ok(()),
    )
    .expect("every run starts");
    assert_eq!(rep.primary, "received_mbit_per_second", "the kind's primary figure");
    let l = rep
        .aggregate
        .iter()
        .find(|f| f.figure == "loaded_latency_p50_ms")
        .expect("aggregated");
    // Mean of 220, 224 and 222: 222 ms; lower is better.
    assert_eq!((l.stats.mean, l.stats.n, l.better), (222.0, 3, Better::Down));
    // No idle probe answered in any run: left out of the aggregate.
    assert!(rep.aggregate.iter().all(|f| f.figure != "idle_latency_p50_ms"));
}
