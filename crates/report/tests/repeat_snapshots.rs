//! The text of hand-built repeated tests, compared with reviewed snapshot files in
//! tests/snapshots/. The documents are made by the real driver (`linerate_results::repeat`) over
//! fixture runs, so the statistics in the snapshots are the driver's. After an intended change:
//! `UPDATE_SNAPSHOTS=1 cargo test -p linerate-report` rewrites them; review the diff like code.

mod common;
use common::{check, result};

use linerate_core::result::{
    AgentSummary, CpuUsage, LatencyFigures, RepeatPolicy, Repeated, RrSummary, Runs, SideSummary, Summary, TestResult,
};
use linerate_core::spec::{RrSpec, TcpSpec, TestSpec};
use linerate_report::repeat as render;
use linerate_results::repeat::repeat;
use std::sync::atomic::{AtomicBool, Ordering};

fn side(mbit: f64, cpu: f64) -> SideSummary {
    SideSummary {
        bytes: (mbit * 1e6 / 8.0 * 2.0) as u64,
        seconds: 2.0,
        bits_per_second: mbit * 1e6,
        ops: 100,
        cpu: CpuUsage {
            host_percent: Some(cpu),
            ..CpuUsage::default()
        },
        ..SideSummary::default()
    }
}

fn tcp_run(mbit: f64, cpu: f64) -> TestResult {
    let summary = Summary {
        sent: side(mbit + 5.0, cpu),
        received: side(mbit, cpu * 1.2),
        agents: vec![AgentSummary {
            agent: "10.0.0.2".into(),
            ..AgentSummary::default()
        }],
        ..Summary::default()
    };
    result(TestSpec::Tcp(TcpSpec::new()), summary)
}

fn rr_run(tps: f64, p50: f64) -> TestResult {
    let summary = Summary {
        rr: Some(RrSummary {
            transactions: 1000,
            transactions_per_second: tps,
            latency_us: Some(LatencyFigures {
                p50,
                p90: p50 * 1.2,
                p99: p50 * 2.0,
                p999: p50 * 3.0,
                ..LatencyFigures::default()
            }),
            ..RrSummary::default()
        }),
        ..Summary::default()
    };
    result(TestSpec::Rr(RrSpec::new()), summary)
}

/// Drives `policy` over `runs` (Ctrl-C during run `stop_in`), rendering as a running test does,
/// and checks that the whole document renders the same.
fn drive(kind: &str, policy: RepeatPolicy, runs: Vec<TestResult>, stop_in: Option<usize>) -> (Repeated, String) {
    let stop = AtomicBool::new(false);
    let mut shown = String::new();
    let mut rep = repeat(
        kind,
        &policy,
        &stop,
        |k| {
            let mut r = runs[k as usize - 1].clone();
            if stop_in == Some(k as usize) {
                stop.store(true, Ordering::Relaxed);
                r.partial = true;
            }
            Ok::<_, String>(r)
        },
        |rep| {
            shown += &render::progress(rep);
            Ok(())
        },
    )
    .expect("runs");
    rep.linerate = "0.1.0".into();
    shown += &render::tail(&rep);
    assert_eq!(
        shown.replace(linerate_core::VERSION, "0.1.0"),
        render::text(&rep),
        "shown run by run or at once"
    );
    let text = render::text(&rep);
    (rep, text)
}

#[test]
fn tcp_five_runs_best_three_noisy() {
    let runs = [900.0, 1000.0, 950.0, 1020.0, 800.0]
        .iter()
        .zip([20.0, 22.0, 21.0, 23.0, 30.0])
        .map(|(m, c)| tcp_run(*m, c))
        .collect();
    let policy = RepeatPolicy {
        runs: Runs::Fixed { runs: 5 },
        pause_seconds: 0.0,
        best: Some(3),
    };
    let (rep, text) = drive("tcp", policy, runs, None);
    assert_eq!(rep.best.as_ref().map(|b| b.runs_kept.clone()), Some(vec![2, 3, 4]));
    assert!(text.contains("WARNING: receiver throughput is noisy"), "{text}");
    check("repeat_tcp_best.txt", &text);
    let v: serde_json::Value = serde_json::from_str(&render::json(&rep)).expect("JSON");
    assert_eq!(v["test"], "tcp repeat");
}

#[test]
fn rr_auto_interrupted() {
    let runs = vec![rr_run(20_000.0, 45.0), rr_run(20_100.0, 44.0), rr_run(9_000.0, 40.0)];
    let policy = RepeatPolicy {
        runs: Runs::Auto {
            ci_percent: 2.0,
            min_runs: 3,
            max_runs: 10,
        },
        pause_seconds: 0.0,
        best: None,
    };
    let (rep, text) = drive("rr", policy, runs, Some(3));
    assert!(rep.partial && text.contains("PARTIAL"), "{text}");
    assert!(text.contains("stopped after 3 runs, before converging"), "{text}");
    check("repeat_rr_auto_partial.txt", &text);
}

/// A `--repeat` run's text never named the `--profile` its agents ran.
#[test]
fn issue_23_a_repeated_tests_text_names_each_agents_profile() {
    use linerate_core::result::HostRecord;
    let with_profile = |mut r: TestResult, host: &str, name: Option<&str>| {
        // The record as an agent sends it (docs/results.md, `hosts.NAME.profile`).
        let profile = name.map(|n| {
            serde_json::from_value(serde_json::json!({
                "name": n, "command": "true", "exit_status": 0, "output": "", "duration_ms": 4,
            }))
            .expect("a profile record")
        });
        r.hosts.insert(
            host.into(),
            HostRecord {
                role: "agent".into(),
                info: Default::default(),
                config: None,
                profile,
            },
        );
        r
    };
    let policy = RepeatPolicy {
        runs: Runs::Fixed { runs: 3 },
        pause_seconds: 0.0,
        best: None,
    };
    let runs = (0..3)
        .map(|k| {
            let r = with_profile(tcp_run(900.0 + k as f64, 20.0), "h2", Some("tso-off"));
            with_profile(r, "h3", (k < 2).then_some("tso-off"))
        })
        .collect();
    let (_, text) = drive("tcp", policy.clone(), runs, None);
    assert!(text.contains("agent h2: profile tso-off in every run\n"), "{text}");
    assert!(
        text.contains("agent h3: profile tso-off in runs 1, 2; no profile in run 3\n"),
        "{text}"
    );
    // Without a profile, no line.
    let plain = (0..3)
        .map(|k| with_profile(tcp_run(900.0 + k as f64, 20.0), "h2", None))
        .collect();
    let (_, text) = drive("tcp", policy, plain, None);
    assert!(!text.contains("profile"), "{text}");
}
