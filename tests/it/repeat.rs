//! `--repeat`: every run's whole document and the statistics of each headline figure
//! over them, checked against the runs in the same document; `--repeat auto` across a shaped lab
//! link; Ctrl-C in the middle of a repeated test; every test kind once.

use crate::kinds::*;
use crate::util::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

/// t(0.975, 4): the two-sided 95 % critical value for five runs (any t table).
const T_0975_DF4: f64 = 2.776_445;

/// `linerate ARGS --json` of a repeated test that must end complete, each run's document checked.
fn repeated(args: &[&str], limit: Duration) -> Value {
    let mut full = args.to_vec();
    full.push("--json");
    let v = json_of(&linerate(&full, limit));
    check_repeated(&v);
    v
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn issue_15_best_3_of_5_and_the_interval_follow_from_the_runs() {
    let agent = Agent::start(&[]);
    let v = repeated(
        &[
            "tcp",
            &agent.addr,
            "--repeat",
            "5",
            "--best",
            "3",
            "-t",
            "1",
            "-i",
            "0",
            "--pause",
            "0",
        ],
        LIMIT,
    );
    assert_eq!(v["partial"], false);
    assert_eq!(v["policy"]["mode"], "fixed");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 5);
    // Each run's receiver throughput, from its own document.
    let mbit: Vec<f64> = runs
        .iter()
        .map(|r| f(r, "/summary/received/bits_per_second") / 1e6)
        .collect();
    assert!(mbit.iter().all(|m| *m > 0.0), "{mbit:?}");
    let recv = figure(&v, "received_mbit_per_second");
    assert_eq!(v["aggregate"][0]["figure"], "received_mbit_per_second", "primary first");
    assert_eq!(v["primary"], "received_mbit_per_second");
    assert_eq!(recv["unit"], "Mbit/s");
    for (i, m) in mbit.iter().enumerate() {
        assert!(close(f(recv, &format!("/values/{i}")), *m), "run {}", i + 1);
    }
    // Best 3: the three highest, by value, and their mean.
    let mut order: Vec<usize> = (0..5).collect();
    order.sort_by(|a, b| mbit[*b].total_cmp(&mbit[*a]));
    let mut kept: Vec<u64> = order[..3].iter().map(|i| *i as u64 + 1).collect();
    kept.sort_unstable();
    let best_mean = order[..3].iter().map(|i| mbit[*i]).sum::<f64>() / 3.0;
    assert_eq!(v["best"]["k"], 3);
    assert_eq!(v["best"]["figure"], "received_mbit_per_second");
    assert!(close(f(&v, "/best/mean"), best_mean), "{} vs {best_mean}", v["best"]);
    let got: Vec<u64> = v["best"]["runs_kept"]
        .as_array()
        .expect("runs kept")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(got, kept);
    // Mean, sample stddev and the Student t interval, computed here from the runs.
    let mean = mbit.iter().sum::<f64>() / 5.0;
    let sd = (mbit.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    let half = T_0975_DF4 * sd / 5f64.sqrt();
    assert!(close(f(recv, "/mean"), mean));
    assert!(close(f(recv, "/stddev"), sd));
    assert!((f(recv, "/ci95_low") - (mean - half)).abs() <= 1e-5 * mean, "{recv}");
    assert!((f(recv, "/ci95_high") - (mean + half)).abs() <= 1e-5 * mean, "{recv}");
    assert!((f(recv, "/cv_percent") - sd / mean * 100.0).abs() <= 1e-9 * 100.0);
    assert_eq!(u(recv, "/n"), 5);
    let max = mbit.iter().copied().fold(f64::MIN, f64::max);
    assert!(close(f(recv, "/max"), max));
    assert_eq!(figure(&v, "sender_cpu_percent")["better"], "down");
}

#[test]
fn issue_15_ctrl_c_in_run_3_of_5_keeps_runs_1_and_2_and_the_cut_third() {
    let agent = Agent::start(&[]);
    let mut child = Command::new(BIN)
        .args([
            "tcp",
            &agent.addr,
            "--repeat",
            "5",
            "-t",
            "4",
            "-i",
            "0",
            "--pause",
            "0",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    // With --json each run's line goes to stderr as it ends: run 3 starts after run 2's.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let until = Instant::now() + LIMIT;
    loop {
        let line = rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .expect("run 2's line on stderr");
        if line.starts_with("run 2 of 5") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(2000));
    // SAFETY: kill(2) on a pid of a child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("did not stop after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().expect("stdout");
    assert_eq!(status.code(), Some(3), "partial");
    let v: Value = serde_json::from_slice(&stdout).expect("the document");
    check_repeated(&v);
    assert_eq!(v["partial"], true);
    let runs = v["runs"].as_array().expect("runs");
    let partial: Vec<bool> = runs.iter().map(|r| r["partial"] == true).collect();
    assert_eq!(partial, [false, false, true], "runs 1-2 whole, the third cut");
    assert!(u(&runs[2], "/summary/received/bytes") > 0, "the cut run measured");
    assert_eq!(v["aggregated_runs"], serde_json::json!([1, 2]));
    let values = &figure(&v, "received_mbit_per_second")["values"];
    assert!(
        values[0].is_number() && values[1].is_number() && values[2].is_null(),
        "{values}"
    );
}

#[test]
fn issue_15_rr_udp_and_http_repeat_too() {
    let agent = Agent::start(&["--http-port", "0"]);
    let rr = repeated(
        &["rr", &agent.addr, "--repeat", "2", "-t", "1", "-i", "0", "--pause", "0"],
        LIMIT,
    );
    assert_eq!(rr["test"], "rr repeat");
    let tps = figure(&rr, "transactions_per_second");
    assert_eq!(u(tps, "/n"), 2);
    assert!(f(tps, "/mean") > 0.0);
    assert!(f(figure(&rr, "latency_p99_us"), "/mean") >= f(figure(&rr, "latency_p50_us"), "/mean"));

    let udp = repeated(
        &[
            "udp",
            &agent.addr,
            "--repeat",
            "2",
            "-t",
            "1",
            "-b",
            "20M",
            "-i",
            "0",
            "--pause",
            "0",
        ],
        LIMIT,
    );
    assert_eq!(udp["test"], "udp repeat");
    assert_eq!(u(figure(&udp, "received_mbit_per_second"), "/n"), 2);
    assert_eq!(figure(&udp, "loss_percent")["better"], "down");
    let lost: u64 = udp["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| u(r, "/summary/lost"))
        .sum();
    assert!(close(f(figure(&udp, "datagrams_lost"), "/mean") * 2.0, lost as f64));

    let url = agent.http_url("/bytes/1000");
    let http = repeated(
        &[
            "http",
            &url,
            "--users",
            "4",
            "-d",
            "1s",
            "--agent",
            &agent.addr,
            "--repeat",
            "2",
            "--pause",
            "0",
        ],
        LIMIT,
    );
    assert_eq!(http["test"], "http repeat");
    let rps = figure(&http, "responses_per_second");
    assert_eq!(u(rps, "/n"), 2);
    assert!(f(rps, "/mean") > 0.0);
}

#[test]
fn issue_15_repeat_flags_are_checked_in_one_line() {
    for (args, want) in [
        (
            vec!["tcp", "127.0.0.1", "--repeat", "3", "--best", "4"],
            "--best 4 is more than",
        ),
        (
            vec!["tcp", "127.0.0.1", "--repeat", "3", "--ci", "2%"],
            "--ci goes with --repeat auto",
        ),
        (vec!["rr", "127.0.0.1", "--best", "2"], "--best needs --repeat"),
        (
            vec![
                "udp",
                "127.0.0.1",
                "--repeat",
                "auto",
                "--min-runs",
                "5",
                "--max-runs",
                "4",
            ],
            "--min-runs 5 is more than --max-runs 4",
        ),
        (
            vec!["udp", "127.0.0.1", "--repeat", "2", "--sizes", "64,128"],
            "does not combine with a sweep",
        ),
        (
            vec!["tcp", "127.0.0.1", "--repeat", "often"],
            "neither a number of runs nor auto",
        ),
        (
            vec!["tcp", "127.0.0.1", "--repeat", "auto", "--ci", "150%"],
            "below 100 %",
        ),
    ] {
        let out = linerate(&args, Duration::from_secs(30));
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
