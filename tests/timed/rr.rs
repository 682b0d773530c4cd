//! `linerate rr` timed: round trips across lab links of a known delay and loss, an open loop's
//! rate, and latency rising with size (the rest is in tests/it/rr.rs).

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[apply(timed!)]
fn a_count_over_several_streams_and_an_open_loop_rate() {
    let agent = Agent::start(&[]);
    let v = rr_json(&[&agent.addr, "-P", "3", "-n", "500"]);
    assert_eq!(u(&v, "/summary/transactions"), 1500);
    // Open loop: 2000 transactions/s asked for 1 s, each timed from its scheduled start.
    let v = rr_json(&[&agent.addr, "--proto", "udp", "--rate", "2000", "-t", "1"]);
    let rate = &v["summary"]["rate"];
    assert_eq!(rate["requested_per_second"], 2000.0);
    let achieved = rate["achieved_per_second"].as_f64().expect("achieved rate");
    assert!((1800.0..=2100.0).contains(&achieved), "achieved {achieved}/s of 2000");
    check_latency(&v);
}

#[apply(timed!)]
fn a_loopback_sweep_rises_with_size_and_fits_a_line() {
    let agent = Agent::start(&[]);
    // Both ends on one CPU: no cross-CPU wake-up in the round trip, so the copies show.
    let out = linerate(
        &[
            "rr",
            &agent.addr,
            "--json",
            "--sizes",
            "1K,256K,512K,1M",
            "--sweep",
            "both",
            "-t",
            "0.5",
            "--cpus",
            "0",
            "--peer-cpus",
            "0",
        ],
        LIMIT,
    );
    let v = json_of(&out);
    assert_eq!(v["test"], "rr sweep");
    let points = v["points"].as_array().expect("points");
    let sizes: Vec<u64> = points
        .iter()
        .map(|p| p["request_bytes"].as_u64().expect("size"))
        .collect();
    assert_eq!(sizes, [1024, 262_144, 524_288, 1_048_576], "in the order given");
    for p in points {
        assert_eq!(p["request_bytes"], p["response_bytes"]);
        check_document(&p["result"]);
    }
    let fit = &v["summary"]["fit"];
    let slope = fit["slope_us_per_byte"].as_f64().expect("slope");
    let r2 = fit["r2"].as_f64().expect("r2");
    assert!(slope > 0.0, "latency grows with size: {fit}");
    assert!((0.0..=1.0).contains(&r2), "{fit}");
    assert_eq!(fit["points"], 4);
    // No link speed on loopback: nothing to expect unless told.
    assert!(v["summary"]["expected_slope_us_per_byte"].is_null());
}

#[apply(timed!)]
fn a_lab_link_with_2ms_each_way_gives_a_4ms_round_trip() {
    let Some(lab) = Lab::up(2, &["delay=2ms"]) else { return };
    for proto in ["tcp", "udp"] {
        let v = lab_rr(&lab, "h1", "h2", &["--proto", proto, "-t", "3"]);
        check_document(&v);
        // The fastest transaction shows the link's floor; the median sits within 0.6 ms of it
        // where nothing runs beside the test (docs/lab.md: the relay's median is +0.1-0.2 ms).
        let min = f(&v, "/summary/latency_us/min");
        assert!(
            (4000.0..=4600.0).contains(&min),
            "{proto}: fastest round trip {min} us, want 4.0 to 4.6 ms"
        );
        let p50 = f(&v, "/summary/latency_us/p50");
        assert!(
            (4000.0..=4600.0).contains(&p50),
            "{proto}: p50 round trip {p50} us, want 4.0 to 4.6 ms"
        );
        assert!(u(&v, "/summary/transactions") > 300, "{proto}: about 240 a second");
    }
}

/// `--tps` above one transaction per round trip is an open loop. Over a 4 ms round trip
/// 1000 requests a second per stream leave on schedule (four and more in flight; one at a time
/// managed 240 a second and timed a growing queue, 0.79 s mean), every request is answered or
/// lost, and the round trips stay near the link's, from the scheduled moment and from the send.
#[apply(timed!)]
fn issue_23_tps_above_one_per_round_trip_is_an_open_loop() {
    let Some(lab) = Lab::up(2, &["delay=2ms"]) else { return };
    for proto in ["tcp", "udp"] {
        // 8-byte frames carry the whole request number (shorter UDP ones bound the flight).
        let args = [
            "--proto",
            proto,
            "--tps",
            "1000",
            "-t",
            "2",
            "--request",
            "8",
            "--response",
            "8",
            "--timeout",
            "1s",
        ];
        let v = lab_rr(&lab, "h1", "h2", &args);
        check_document(&v);
        let o = &v["summary"]["open_loop"];
        let at = |k: &str| o[k].as_u64().unwrap_or_else(|| panic!("{proto}: open_loop.{k} in {o}"));
        let (sent, not_sent) = (at("requests_sent"), at("requests_not_sent"));
        // The schedule is absolute (request i due at i ms, the last before 2 s): its places are
        // 2000 on any machine, and none is skipped with 1024 allowed in flight.
        assert_eq!(sent + not_sent, 2000, "{proto}: {o}");
        assert_eq!(not_sent, 0, "{proto}: {o}");
        assert_eq!(at("max_outstanding"), 1024);
        let (done, lost) = (u(&v, "/summary/transactions"), u(&v, "/summary/lost"));
        assert_eq!(done + lost, sent, "{proto}: every request answered in time or lost");
        assert!(lost <= 20, "{proto}: {lost} lost of {sent} on a link without loss");
        let rate = f(&v, "/summary/rate/achieved_per_second");
        assert!((900.0..=1100.0).contains(&rate), "{proto}: {rate} requests/s of 1000");
        // Near the link's 4 ms (a queue behind one transaction at a time reached a 0.79 s mean,
        // growing with the run).
        for key in ["latency_us", "open_loop/latency_from_send_us"] {
            let p50 = f(&v, &format!("/summary/{key}/p50"));
            assert!(
                (4000.0..=8000.0).contains(&p50),
                "{proto}: {key} p50 {p50} us, want 4 to 8 ms, near the 4 ms round trip"
            );
        }
        let mean = f(&v, "/summary/latency_us/mean");
        assert!(
            mean < 40_000.0,
            "{proto}: mean round trip {mean} us, want under 40 ms: it grew with a queue"
        );
    }
}

#[apply(timed!)]
fn udp_round_trips_over_a_lossy_link_finish_with_the_losses_counted() {
    let Some(lab) = Lab::up(2, &["loss=5%"]) else { return };
    let before: u64 = (0..2)
        .map(|h| lab.status()["hosts"][h]["loss_drops"].as_u64().unwrap_or(0))
        .sum();
    let v = lab_rr(&lab, "h1", "h2", &["--proto", "udp", "-n", "2000", "--timeout", "20ms"]);
    check_document(&v);
    let drops: u64 = (0..2)
        .map(|h| lab.status()["hosts"][h]["loss_drops"].as_u64().unwrap_or(0))
        .sum::<u64>()
        - before;
    let (done, lost) = (u(&v, "/summary/transactions"), u(&v, "/summary/lost"));
    assert_eq!(done + lost, 2000);
    // 5 % each way loses about 10 % of the transactions; each lost one is a dropped request or
    // a dropped answer (the firewall also counts control-connection segments it dropped).
    assert!((100..=320).contains(&lost), "{lost} lost of 2000 at 5 % each way");
    // An answer later than --timeout is lost too, and counted as stale when it comes.
    let stale = u(&v, "/summary/stale");
    assert!(
        lost <= drops + stale,
        "lost {lost}, the firewall dropped {drops}, {stale} came late"
    );
    assert_eq!(v["partial"], false);
}

/// `linerate rr --json TO ARGS` run in lab host `from`.
fn lab_rr(lab: &Lab, from: &str, to: &str, args: &[&str]) -> Value {
    let mut cmd = vec!["linerate", "rr", "--json", to];
    cmd.extend_from_slice(args);
    json_of(&lab.exec(from, &cmd, LIMIT))
}
