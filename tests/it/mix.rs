//! `tcp --mix R:W` (the TOE workload) and `tcp --sizes` on loopback against a real agent: the
//! read share of bytes, byte counts exact against the agent's, usage errors, and the size sweep's
//! figures.

use crate::kinds::*;
use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn mix_70_30_reads_70_percent_of_the_bytes_with_counts_exact_against_the_agent() {
    let v = mixed(&["--mix", "70:30", "-n", "2000"]);
    let m = &v["summary"]["mix"];
    assert_eq!((u(m, "/read_percent"), u(m, "/write_percent")), (70, 30));
    // The pattern is exact over every 10 transfers: 1400 reads and 600 writes of 2000.
    assert_eq!(u(m, "/read/transfers"), 1400);
    assert_eq!(u(m, "/write/transfers"), 600);
    assert_eq!(u(m, "/transfers"), 2000);
    assert_eq!(
        u(m, "/read/bytes"),
        1400 * MIX_LENGTH,
        "client's received = transfers x -l"
    );
    assert_eq!(
        u(m, "/write/bytes"),
        600 * MIX_LENGTH,
        "agent's received = transfers x -l"
    );
    assert_eq!(
        u(m, "/read/sent_bytes"),
        u(m, "/read/bytes"),
        "agent sent = client received"
    );
    assert_eq!(
        u(m, "/write/sent_bytes"),
        u(m, "/write/bytes"),
        "client sent = agent received"
    );
    let share = f(m, "/read_share_percent");
    assert!((share - 70.0).abs() <= 1.0, "read share {share} %");
    // The same from the per-stream counts the summary keeps, stream 0 forward, 1 reverse.
    let d = &v["summary"]["directions"];
    let (r, w) = (u(d, "/reverse/received/bytes"), u(d, "/forward/received/bytes"));
    assert!((100.0 * r as f64 / (r + w) as f64 - 70.0).abs() <= 1.0);
    assert_eq!(d["reverse"]["received"]["counted_by"][0], "client");
    assert_exact_per_stream(&v);
    let secs = f(m, "/seconds");
    assert!(secs > 0.0);
    assert!((f(m, "/transfers_per_second") - 2000.0 / secs).abs() < 1e-6 * 2000.0 / secs);
    assert_efficiency(m, false);
    assert_eq!(v["options"]["mix"]["read_percent"], 70, "the spec carries the mix");
}

#[test]
fn mix_0_100_is_all_writes() {
    let v = mixed(&["--mix", "0:100", "-n", "300"]);
    let m = &v["summary"]["mix"];
    assert_eq!(u(m, "/read/bytes"), 0);
    assert_eq!(u(m, "/read/transfers"), 0);
    assert_eq!(u(m, "/write/transfers"), 300);
    assert_eq!(u(m, "/write/bytes"), 300 * MIX_LENGTH);
    assert_eq!(f(m, "/read_share_percent"), 0.0);
    assert_exact_per_stream(&v);
}

#[test]
fn mix_with_two_streams_counts_each_stream_both_ways() {
    // A worker per stream (blocking calls), and both streams on one worker (its epoll loop).
    for threads in [&[][..], &["--threads", "1"][..]] {
        let mut args = vec!["--mix", "50:50", "-n", "200", "-P", "2"];
        args.extend_from_slice(threads);
        let v = mixed(&args);
        let streams = v["summary"]["streams"].as_array().expect("streams");
        assert_eq!(streams.len(), 4, "two connections, each a forward and a reverse stream");
        for s in streams {
            assert_eq!(
                u(s, "/received/bytes"),
                100 * MIX_LENGTH,
                "{threads:?} stream {}",
                s["stream"]
            );
        }
        assert_eq!(u(&v, "/summary/mix/transfers"), 400);
        assert_exact_per_stream(&v);
    }
}

#[test]
fn a_mix_that_is_not_r_colon_w_adding_to_100_is_a_usage_error() {
    for bad in ["50:60", "70"] {
        let out = linerate(&["tcp", "127.0.0.1", "--mix", bad], LIMIT);
        assert_eq!(out.status.code(), Some(2), "--mix {bad}");
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains("--mix") && err.contains(bad), "{err}");
    }
    let out = linerate(&["tcp", "127.0.0.1", "--mix", "70:30", "-R"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "--mix with -R: {}", stderr(&out));
}

/// `tcp --sizes` with and without `--mix`: a point per size, each with throughput and the
/// efficiency of both ends as throughput over that end's CPU.
#[test]
fn size_sweep_gives_throughput_cpu_and_efficiency_per_size() {
    let agent = Agent::start(&[]);
    for mix in [&[][..], &["--mix", "70:30"][..]] {
        let mut args = vec![agent.addr.as_str(), "--sizes", "4K,64K,256K", "-t", "0.5"];
        args.extend_from_slice(mix);
        let v = tcp_json(&args, LIMIT);
        assert_eq!(v["test"], "tcp sweep");
        assert_eq!(v["partial"], false);
        let points = v["points"].as_array().expect("points");
        let figures = v["figures"].as_array().expect("figures");
        assert_eq!((points.len(), figures.len()), (3, 3), "{mix:?}");
        for (i, (p, fig)) in points.iter().zip(figures).enumerate() {
            let size = [4096, 65_536, 262_144][i];
            assert_eq!(u(p, "/buffer_bytes"), size);
            assert_eq!(u(fig, "/buffer_bytes"), size);
            assert_eq!(u(p, "/result/options/buffer_bytes"), size);
            let r = &p["result"];
            check_document(r);
            let bps = f(fig, "/bits_per_second");
            assert!(bps > 0.0, "{mix:?} {size}: throughput");
            let from_result = if mix.is_empty() {
                f(r, "/summary/received/bits_per_second")
            } else {
                f(r, "/summary/mix/bits_per_second")
            };
            assert_eq!(bps, from_result);
            for end in ["client", "agent"] {
                let cpu = f(fig, &format!("/{end}_cpu_percent"));
                let eff = f(fig, &format!("/{end}_mbit_per_second_per_cpu_percent"));
                let want = bps / 1e6 / cpu;
                assert!(
                    (eff - want).abs() <= 1e-9 * want,
                    "{mix:?} {size} {end}: {eff} vs {want}"
                );
            }
            assert_eq!(fig["transfers_per_second"].is_number(), !mix.is_empty());
        }
    }
}
