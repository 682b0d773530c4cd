//! linerate's client against Debian's `iperf3 -s`, timed: counts that agree within a
//! share, a UDP rate, and a 200 Mbit/s lab link both tools meet.

use crate::iperf3::*;
use crate::util::*;
use macro_rules_attribute::apply;
use std::time::Duration;

#[apply(timed!)]
fn issue_26_tcp_forward_reverse_bidir_and_four_streams_agree_with_iperf3s_own_json() {
    if !can_run(&[IPERF3]) {
        return;
    }
    // Each count is checked against the same count at iperf3's end. What one end sent and the
    // other received differ by what a 1 s loopback run leaves unread when iperf3 stops reading at
    // TEST_END, and by the two ends' timers: 11 MB of 385 MB (3 %) on a quiet machine here, a
    // property of the socket buffers and the run's length, not of either tool: the receiver
    // counts no more than was sent.
    // Forward: this end sends, iperf3 receives.
    let (doc, theirs) = against_iperf3("tcp", &["-t", "1"]);
    let received = u(&theirs, "/end/sum_received/bytes");
    received_at_most_sent(u(&doc, "/summary/sent/bytes"), received, "forward");
    unread_is_noted(&doc, u(&doc, "/summary/sent/bytes"), received);
    assert_eq!(
        far_end_bytes(&doc, "receive"),
        received,
        "the far end's own count, kept as it said it"
    );
    assert_eq!(
        doc["summary"]["received"]["counted_by"][0],
        doc["summary"]["agents"][0]["agent"]
    );
    assert!(doc["partial"] == false && doc["error"].is_null(), "{}", doc["notes"]);

    // -R: iperf3 sends, this end receives.
    let (doc, theirs) = against_iperf3("tcp", &["-t", "1", "-R"]);
    let sent = u(&theirs, "/end/sum_sent/bytes");
    received_at_most_sent(sent, u(&doc, "/summary/received/bytes"), "reverse");
    assert_eq!(far_end_bytes(&doc, "send"), sent);

    // --bidir: each direction against iperf3's count of it.
    let (doc, theirs) = against_iperf3("tcp", &["-t", "1", "--bidir"]);
    let (sent, received) = (
        u(&doc, "/summary/directions/forward/sent/bytes"),
        u(&theirs, "/end/sum_received/bytes"),
    );
    received_at_most_sent(sent, received, "bidir forward");
    // Equal to the byte, or a note naming the difference and its cause.
    unread_is_noted(&doc, sent, received);
    received_at_most_sent(
        u(&theirs, "/end/sum_sent_bidir_reverse/bytes"),
        u(&doc, "/summary/directions/reverse/received/bytes"),
        "bidir reverse",
    );
    assert_eq!(
        far_end_bytes(&doc, "receive") + far_end_bytes(&doc, "send"),
        u(&theirs, "/end/sum_received/bytes") + u(&theirs, "/end/sum_sent_bidir_reverse/bytes"),
        "the far end's own counts, kept as it said them"
    );

    // -P 4: four streams, each iperf3's id kept beside linerate's number.
    let (doc, theirs) = against_iperf3("tcp", &["-t", "1", "-P", "4"]);
    received_at_most_sent(
        u(&doc, "/summary/sent/bytes"),
        u(&theirs, "/end/sum_received/bytes"),
        "four streams",
    );
    let ids: Vec<u64> = doc["iperf3"]["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .map(|s| s["id"].as_u64().expect("id"))
        .collect();
    assert_eq!(ids, [1, 3, 4, 5], "iperf3 numbers its streams 1, 3, 4, 5");
}

#[apply(timed!)]
fn issue_26_udp_forward_and_reverse_at_a_rate_agree_and_keep_iperf3s_loss_and_jitter() {
    if !can_run(&[IPERF3]) {
        return;
    }
    // Unpaced loopback traffic fills both cores: not beside a test timed on a shaped link.
    let (doc, theirs) = against_iperf3("udp", &["-t", "1", "-b", "20m"]);
    let received = u(&theirs, "/end/sum_received/bytes");
    agree_within(u(&doc, "/summary/sent/bytes"), received, 2.0, "udp forward");
    assert_eq!(far_end_bytes(&doc, "receive"), received);
    let s = &doc["iperf3"]["streams"][0];
    assert!(s["jitter_ms"].as_f64().is_some() && s["lost"].as_u64().is_some(), "{s}");
    assert_eq!(s["lost"].as_u64(), theirs["end"]["sum"]["lost_packets"].as_u64());
    let jitter = theirs["end"]["sum"]["jitter_ms"].as_f64().expect("iperf3's jitter");
    assert!(
        (s["jitter_ms"].as_f64().expect("jitter") - jitter).abs() < 1e-6,
        "{s} vs {jitter}"
    );
    // 20 Mbit/s for 1 s, as iperf3 received it.
    let mbps = received as f64 * 8.0 / 1e6;
    assert!((18.0..=22.0).contains(&mbps), "{mbps} Mbit in 1 s at 20 Mbit/s");

    let (doc, theirs) = against_iperf3("udp", &["-t", "1", "-b", "20m", "-R"]);
    let sent = u(&theirs, "/end/sum_sent/bytes");
    agree_within(u(&doc, "/summary/received/bytes"), sent, 2.0, "udp reverse");
    assert_eq!(far_end_bytes(&doc, "send"), sent);
    assert!(
        doc["summary"]["lost"].as_u64().is_some(),
        "this end's loss, from iperf3's sequence numbers: {}",
        doc["summary"]
    );
    assert!(
        doc["partial"] == false,
        "the stop at TEST_END is the end, not a cut: {}",
        doc["notes"]
    );
}

#[apply(timed!)]
fn issue_26_on_a_200_mbit_lab_link_linerate_against_iperf3_meets_the_link_and_agrees() {
    if !can_run(&[IPERF3]) {
        return;
    }
    let Some(lab) = Lab::up(2, &["rate=200mbit"]) else {
        return;
    };
    let h2 = lab.status["hosts"][1]["address"]
        .as_str()
        .expect("h2's address")
        .to_string();
    // No warm-up: with one, the sender's window and the receiver's omit would differ by what
    // sits in the send queue at the window's start (written before it, received after).
    for args in [vec!["-t", "3"], vec!["-t", "3", "-R"]] {
        // Not 5301: the lab's agent listens there.
        let server = Iperf3Server::start(Some(&lab.namespace("h2")), 5211);
        let target = format!("iperf3://{h2}:{}", server.port);
        let mut cmd = vec!["linerate", "tcp", target.as_str(), "--json", "--no-store"];
        cmd.extend_from_slice(&args);
        let doc = json_of(&lab.exec("h1", &cmd, Duration::from_secs(60)));
        let theirs = server.json();
        let reverse = args.contains(&"-R");
        let (ours, their) = if reverse {
            (u(&doc, "/summary/received/bytes"), u(&theirs, "/end/sum_sent/bytes"))
        } else {
            (u(&doc, "/summary/sent/bytes"), u(&theirs, "/end/sum_received/bytes"))
        };
        agree_within(ours, their, 2.0, if reverse { "lab reverse" } else { "lab forward" });
        let mbps = crate::util::f(&doc, "/summary/received/bits_per_second") / 1e6;
        assert!(
            (170.0..=200.0).contains(&mbps),
            "{mbps:.1} Mbit/s over a 200 Mbit/s link ({args:?})"
        );
        assert!(doc["lab"]["name"].is_string(), "the lab is recorded");
    }
    // The rest of the issue's cases on the same link: --bidir (each direction its own 200
    // Mbit/s), four streams sharing it, and UDP at 150 Mbit/s each way.
    let run = |kind: &str, args: &[&str]| {
        let server = Iperf3Server::start(Some(&lab.namespace("h2")), 5211);
        let target = format!("iperf3://{h2}:{}", server.port);
        let mut cmd = vec!["linerate", kind, target.as_str(), "--json", "--no-store"];
        cmd.extend_from_slice(args);
        let doc = json_of(&lab.exec("h1", &cmd, Duration::from_secs(60)));
        (doc, server.json())
    };
    let (doc, theirs) = run("tcp", &["-t", "3", "--bidir"]);
    agree_within(
        u(&doc, "/summary/directions/forward/sent/bytes"),
        u(&theirs, "/end/sum_received/bytes"),
        2.0,
        "lab bidir forward",
    );
    agree_within(
        u(&doc, "/summary/directions/reverse/received/bytes"),
        u(&theirs, "/end/sum_sent_bidir_reverse/bytes"),
        2.0,
        "lab bidir reverse",
    );
    let (doc, theirs) = run("tcp", &["-t", "3", "-P", "4"]);
    agree_within(
        u(&doc, "/summary/sent/bytes"),
        u(&theirs, "/end/sum_received/bytes"),
        2.0,
        "lab four streams",
    );
    let mbps = crate::util::f(&doc, "/summary/received/bits_per_second") / 1e6;
    assert!(
        (170.0..=200.0).contains(&mbps),
        "{mbps:.1} Mbit/s, four streams on one 200 Mbit/s link"
    );
    // UDP: each count is checked against the same count at iperf3's end, the loss against
    // iperf3's, and what arrived against what was sent.
    let (doc, theirs) = run("udp", &["-t", "3", "--rate", "150m"]);
    let s = &doc["summary"];
    assert_eq!(
        u(&doc, "/summary/received/bytes"),
        u(&theirs, "/end/sum_received/bytes"),
        "lab udp forward: what iperf3 received, as linerate reports it"
    );
    assert_eq!(
        s["lost"].as_u64(),
        theirs["end"]["sum_received"]["lost_packets"].as_u64(),
        "lab udp forward: the loss iperf3 counted, as linerate reports it"
    );
    let sent = crate::util::f(&doc, "/summary/sent_bits_per_second") / 1e6;
    assert!((140.0..=155.0).contains(&sent), "{sent:.1} Mbit/s sent at 150 Mbit/s");
    // Where nothing else runs the link drops next to nothing at 150 of 200 Mbit/s: what
    // linerate sent and what iperf3 received agree within 2 %.
    agree_within(
        u(&doc, "/summary/sent/bytes"),
        u(&theirs, "/end/sum_received/bytes"),
        2.0,
        "lab udp forward",
    );
    let (doc, theirs) = run("udp", &["-t", "3", "--rate", "150m", "-R"]);
    let s = &doc["summary"];
    assert_eq!(
        u(&doc, "/summary/sent/bytes"),
        u(&theirs, "/end/sum_sent/bytes"),
        "lab udp reverse: what iperf3 sent, as linerate reports it"
    );
    let (sent, received, lost) = (
        u(&doc, "/summary/datagrams_sent"),
        u(&doc, "/summary/datagrams_received"),
        u(&doc, "/summary/lost"),
    );
    assert_eq!(sent, u(&theirs, "/end/sum_sent/packets"), "lab udp reverse: {s}");
    assert!(
        received > 0 && received + lost <= sent,
        "lab udp reverse: {received} received and {lost} lost of {sent} sent"
    );
    agree_within(
        u(&doc, "/summary/received/bytes"),
        u(&theirs, "/end/sum_sent/bytes"),
        2.0,
        "lab udp reverse",
    );
    let mbps = crate::util::f(&doc, "/summary/received/bits_per_second") / 1e6;
    assert!(
        (135.0..=155.0).contains(&mbps),
        "{mbps:.1} Mbit/s received at 150 Mbit/s ({lost} of {sent} datagrams lost)"
    );
}

/// What one end sent against what the other received: something of each, and no more received.
fn received_at_most_sent(sent: u64, received: u64, what: &str) {
    assert!(
        received > 0 && received <= sent,
        "{what}: received {received} bytes of {sent} sent"
    );
}

/// Where iperf3's server counted fewer bytes than linerate sent it, the document says
/// so in a note with the exact difference and its cause; where the two agree, it says nothing.
fn unread_is_noted(doc: &serde_json::Value, sent: u64, received: u64) {
    let notes = doc["notes"].to_string();
    if received < sent {
        let want = format!(
            "iperf3's server counted {} bytes fewer than this client sent it",
            sent - received
        );
        assert!(notes.contains(&want), "{want:?} not in {notes}");
        assert!(notes.contains("stops counting at TEST_END"), "{notes}");
    } else {
        assert!(!notes.contains("bytes fewer than this client sent"), "{notes}");
    }
}
