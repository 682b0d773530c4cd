//! `linerate udp`: datagrams counted, lost, reordered and timed, on loopback and across lab links
//! with a known loss, reordering and delay.

use crate::kinds::*;
use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn every_datagram_of_a_loopback_count_is_accounted_for() {
    let agent = Agent::start(&[]);
    let v = udp_json(&[&agent.addr, "-n", "5000", "--gap", "20", "-l", "1000"]);
    assert_eq!(u(&v, "/summary/datagrams_sent"), 5000);
    assert_eq!(u(&v, "/summary/datagrams_received"), 5000);
    assert_eq!(u(&v, "/summary/lost"), 0);
    assert_eq!(u(&v, "/summary/out_of_order"), 0);
    assert_eq!(u(&v, "/summary/duplicates"), 0);
    assert_eq!(u(&v, "/summary/received/bytes"), 5000 * 1000);
    assert_eq!(v["summary"]["timestamps"], "kernel");
    assert!(f(&v, "/summary/packets_per_second") > 0.0);
    assert!(
        v["summary"]["arrival_spacing_histogram"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
    assert!(f(&v, "/summary/send_spacing_us/mean") > 15.0);
    assert!(v["summary"]["one_way_delay_us"]["p99"].is_number());
}

#[test]
fn reverse_and_bidir_on_loopback() {
    let agent = Agent::start(&[]);
    let v = udp_json(&[&agent.addr, "-n", "3000", "--gap", "10", "-R"]);
    assert_eq!(v["summary"]["received"]["counted_by"][0], "client");
    assert_eq!(u(&v, "/summary/datagrams_received") + u(&v, "/summary/lost"), 3000);
    let v = udp_json(&[&agent.addr, "-n", "2000", "--gap", "10", "--bidir"]);
    assert_eq!(u(&v, "/summary/datagrams_sent"), 4000);
    assert_eq!(
        u(&v, "/summary/directions/forward/received/ops") + u(&v, "/summary/directions/reverse/received/ops"),
        u(&v, "/summary/datagrams_received")
    );
}

#[test]
fn bad_udp_options_are_one_line_errors() {
    for args in [
        vec!["udp", "127.0.0.1:1", "-l", "16"],
        vec!["udp", "127.0.0.1:1", "--gap", "-5"],
        vec!["udp", "127.0.0.1:1", "--gap", "10", "--rate", "1G"],
    ] {
        let out = linerate(&args, Duration::from_secs(10));
        assert!(!out.status.success(), "{args:?} was accepted");
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn multicast_to_two_lab_hosts_reports_both() {
    let Some(lab) = Lab::up(3, &[]) else { return };
    let group = "239.7.7.7";
    let joined = |host: &str, addr: &str| lab.joined_agent(host, &["--bind", addr, "--port", "5400"], group);
    let _a2 = joined("h2", "10.211.0.2");
    let _a3 = joined("h3", "10.211.0.3");
    let v = lab.multicast_from_h1(group, &["10.211.0.2:5400", "10.211.0.3:5400"], "5000", LIMIT);
    assert_eq!(u(&v, "/summary/datagrams_sent"), 5000, "one sender for both receivers");
    let receivers = v["summary"]["receivers"].as_array().expect("receivers");
    assert_eq!(receivers.len(), 2, "{receivers:?}");
    for r in receivers {
        assert_eq!(r["datagrams_received"], 5000, "{r}");
        assert_eq!(r["lost"], 0, "{r}");
    }
    assert_eq!(u(&v, "/summary/datagrams_received"), 10_000);
    assert_eq!(f(&v, "/summary/received_per_receiver_mean_datagrams"), 5000.0);
}

#[test]
fn multicast_needs_an_agent_that_joined_the_group() {
    let agent = Agent::start(&[]);
    let out = linerate(
        &["udp", &agent.addr, "--multicast", "239.7.7.8", "-n", "10"],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("--join 239.7.7.8") && err.lines().count() == 1, "{err}");
}

#[test]
fn a_sweep_runs_every_size_and_gap() {
    let agent = Agent::start(&[]);
    let out = linerate(
        &[
            "udp",
            &agent.addr,
            "--sizes",
            "64,1472",
            "--gaps",
            "0:20:10",
            "-n",
            "2000",
            "--json",
        ],
        LIMIT,
    );
    let v = json_of(&out);
    assert_eq!(v["test"], "udp sweep");
    assert_eq!(v["schema"], 4);
    assert_eq!(v["partial"], false);
    let points = v["points"].as_array().expect("points");
    let got: Vec<(u64, f64)> = points
        .iter()
        .map(|p| {
            (
                p["payload_bytes"].as_u64().expect("size"),
                p["gap_us"].as_f64().expect("gap"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (64, 0.0),
            (1472, 0.0),
            (64, 10.0),
            (1472, 10.0),
            (64, 20.0),
            (1472, 20.0)
        ],
        "gaps in order, sizes within each"
    );
    for p in points {
        assert_eq!(p["result"]["test"], "udp");
        assert_eq!(p["result"]["summary"]["datagrams_sent"], 2000);
    }
    let text = linerate(
        &["udp", &agent.addr, "--sizes", "64,512", "--gaps", "5,10", "-n", "500"],
        LIMIT,
    );
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.contains("64 B: Mbit/s") && t.contains("512 B: Mbit/s"), "{t}");
    assert_eq!(
        t.lines().filter(|l| l.trim_start().starts_with(['5', '1'])).count(),
        2,
        "{t}"
    );
}

#[test]
fn issue_23_udp_text_says_what_it_knows_and_no_more() {
    let agent = Agent::start(&[]);
    let out = linerate(&["udp", &agent.addr, "-n", "2000", "--gap", "20"], LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("stream ")).collect();
    assert!(rows[0].trim_end().ends_with("mss"), "{text}");
    // A UDP socket has no MSS: the stream's row says n/a, not 0.
    assert!(rows[1].trim_end().ends_with("n/a"), "{}", rows[1]);
    let lost = text
        .lines()
        .find(|l| l.trim_start().starts_with("Lost "))
        .expect("a Lost line");
    assert!(!lost.contains("run"), "no loss lists no runs: {lost}");
}
