//! `linerate serve --iperf3-port` against Debian's `iperf3 -c`, timed: what the
//! receiver counted of what was sent on loopback (TCP and UDP), and beside `iperf3 -s` on a
//! 200 Mbit/s lab link.

use crate::iperf3::*;
use crate::util::*;
use macro_rules_attribute::apply;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

#[apply(timed!)]
fn issue_26_on_a_200mbit_link_serve_gives_what_iperf3_s_gives_and_is_loopback_only_unless_allowed() {
    if !have_iperf3() {
        return;
    }
    let Some(lab) = Lab::up(2, &["rate=200mbit"]) else {
        return;
    };
    let hosts = lab.status["hosts"].as_array().expect("hosts");
    let h1 = hosts[0]["address"].as_str().expect("h1's address").to_string();
    let h2 = hosts[1]["address"].as_str().expect("h2's address").to_string();
    let (ns1, ns2) = (lab.namespace("h1"), lab.namespace("h2"));
    let in_h1 = ["ip", "netns", "exec", ns1.as_str()];
    let in_h2 = ["ip", "netns", "exec", ns2.as_str()];
    // Without --iperf3-allow the port is loopback only: h1 cannot reach it.
    let closed_port = Server::start(&in_h2, &["--bind", &h2, "--no-auth"]);
    assert!(closed_port.iperf3.starts_with("127.0.0.1:"), "{}", closed_port.iperf3);
    let (ok, v) = iperf3_in(&in_h1, &h2, closed_port.port, &["-t", "1"]);
    assert!(!ok, "{v}");
    drop(closed_port);
    // With it, h1 is let in and h2's own address (outside the block) is closed at accept.
    let allow = format!("{h1}/32");
    let server = Server::start(&in_h2, &["--bind", &h2, "--no-auth", "--iperf3-allow", &allow]);
    assert_eq!(server.iperf3, format!("{h2}:{}", server.port));
    let (ok, v) = iperf3_in(&in_h2, &h2, server.port, &["-t", "1"]);
    assert!(!ok, "{v}");
    poll_until(Duration::from_secs(10), "the refusal's line", || {
        server
            .stderr()
            .iter()
            .any(|l| l.contains("outside every --iperf3-allow block"))
    });
    // iperf3 -s on the same link: a port free in h2's fresh namespace.
    let reference = in_netns(&ns2, || {
        std::net::TcpListener::bind((h2.as_str(), 0))
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port()
    });
    let runs: [&[&str]; 5] = [
        &["-t", "2"],
        &["-t", "2", "-R", "-P", "4"],
        &["-t", "2", "--bidir"],
        &["-t", "2", "-u", "-b", "150M"],
        &["-t", "2", "-u", "-b", "150M", "-R"],
    ];
    for (n, args) in runs.iter().enumerate() {
        let reference_port = reference.to_string();
        let mut iperf3_s = Command::new("ip")
            .args(["netns", "exec", &ns2, "iperf3", "-s", "-1", "-p", &reference_port])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start iperf3 -s");
        let (ok, theirs) = (0..50)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(100));
                iperf3_in(&in_h1, &h2, reference, args)
            })
            .find(|(ok, _)| *ok)
            .unwrap_or((false, Value::Null));
        let _ = iperf3_s.kill();
        let _ = iperf3_s.wait();
        assert!(ok, "iperf3 -c against iperf3 -s {args:?}: {theirs}");
        let (ok, ours) = iperf3_in(&in_h1, &h2, server.port, args);
        assert!(
            ok,
            "iperf3 -c against linerate serve {args:?}: {ours}; {:?}",
            server.stderr()
        );
        let rate = |v: &Value| f(v, "/end/sum_received/bits_per_second");
        // Under --bidir each direction's data shares the shaped link with the other's ACKs:
        // here the two servers' runs came 0.2-2.7 % apart; one-way runs stay within 0.2 %.
        near(
            rate(&ours),
            rate(&theirs),
            0.05,
            &format!("{args:?}: received, linerate serve against iperf3 -s"),
        );
        let expected = if args.contains(&"-u") { 150e6 } else { 200e6 };
        near(
            rate(&ours),
            expected,
            0.1,
            &format!("{args:?}: the rate asked or the link's"),
        );
        agree(&server, n + 1, args, &ours);
    }
}

#[apply(timed!)]
fn issue_26_iperf3_tcp_one_way_against_serve_agrees_with_the_stored_document() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    for (n, args) in [&["-t", "1"][..], &["-t", "1", "-R"], &["-t", "1", "-P", "4"]]
        .iter()
        .enumerate()
    {
        let v = iperf3(&server, args);
        let doc = agree(&server, n + 1, args, &v);
        // On loopback a 1 s run's sender holds a few MB at TEST_END of the GB it sent.
        received_of_sent(&doc, 0.1, &format!("{args:?}"));
        let streams = doc["iperf3"]["streams"].as_array().expect("streams").len();
        assert_eq!(streams, if args.contains(&"-P") { 4 } else { 1 }, "{args:?}");
    }
}

#[apply(timed!)]
fn issue_26_iperf3_udp_against_serve_agrees_on_bytes_loss_and_jitter() {
    if !have_iperf3() {
        return;
    }
    let server = Server::local();
    let runs: [&[&str]; 2] = [&["-u", "-b", "20M", "-t", "1"], &["-u", "-b", "20M", "-t", "1", "-R"]];
    for (n, args) in runs.iter().enumerate() {
        let v = iperf3(&server, args);
        let doc = agree(&server, n + 1, args, &v);
        // 20 Mbit/s on loopback loses nothing to speak of on a machine where nothing else runs.
        received_of_sent(&doc, 0.1, &format!("{args:?}"));
        let sum = &v["end"]["sum"];
        // The loss the receiver counted: iperf3's, as the document keeps it per stream, and the
        // summary's (which also counts the datagrams this end sent after the client stopped
        // reading, at its TEST_END: at most a datagram or two).
        let per_stream: u64 = doc["iperf3"]["streams"]
            .as_array()
            .expect("streams")
            .iter()
            .filter_map(|s| s["lost"].as_u64())
            .sum();
        let (lost, packets) = (u(sum, "/lost_packets"), u(sum, "/packets"));
        if args.contains(&"-R") {
            assert_eq!(per_stream, lost, "{args:?}");
        }
        let summary_lost = u(&doc, "/summary/lost");
        assert!(
            summary_lost.abs_diff(lost) <= (packets / 50).max(2),
            "{args:?}: {summary_lost} lost against iperf3's {lost} of {packets}"
        );
        let (ours, theirs) = (f(&doc, "/summary/jitter_us"), f(sum, "/jitter_ms") * 1e3);
        assert!(
            (ours - theirs).abs() <= theirs * 0.02 + 0.5,
            "{args:?}: jitter {ours} us against iperf3's {theirs} us"
        );
        assert_eq!(
            doc["options"]["gap_ns"].as_u64().map(|g| g > 0),
            Some(true),
            "-b paces: {}",
            doc["options"]
        );
    }
}
