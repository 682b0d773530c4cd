//! TCP tests on loopback against a real agent: every direction, stream count and limit mode.

use crate::kinds::*;
use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Count mode: every byte asked for is sent and received, exactly.
fn count_case(direction: &[&str], streams: u32) {
    let v = tcp_on_loopback(direction, streams, &["-n", "40"]);
    let expect = u64::from(streams) * 40 * 65_536;
    for d in directions_of(direction) {
        assert_eq!(stream_bytes(&v, d, "sent"), expect, "{d} sent");
        assert_eq!(stream_bytes(&v, d, "received"), expect, "{d} received");
    }
    let per_dir = if direction == ["--bidir"] { 2 } else { 1 };
    assert_eq!(
        v["summary"]["streams"].as_array().map(Vec::len),
        Some(streams as usize * per_dir)
    );
    assert_eq!(u(&v, "/summary/received/bytes"), expect * per_dir as u64);
    if direction == ["--bidir"] {
        let d = &v["summary"]["directions"];
        assert_eq!(u(d, "/forward/received/bytes"), expect);
        assert_eq!(u(d, "/reverse/received/bytes"), expect);
        assert_eq!(d["forward"]["sent"]["counted_by"][0], "client");
        assert_eq!(d["reverse"]["received"]["counted_by"][0], "client");
    }
}

macro_rules! matrix {
    ($($name:ident: $kind:ident, $dir:expr, $streams:expr;)*) => {$(
        #[test]
        fn $name() {
            $kind(&$dir, $streams);
        }
    )*};
}

matrix! {
    send_one_stream_count: count_case, [], 1;
    send_three_streams_count: count_case, [], 3;
    reverse_one_stream_count: count_case, ["--reverse"], 1;
    reverse_three_streams_count: count_case, ["--reverse"], 3;
    bidir_one_stream_count: count_case, ["--bidir"], 1;
    bidir_three_streams_count: count_case, ["--bidir"], 3;
}

#[test]
fn streams_share_threads_and_pin_to_cpus() {
    let agent = Agent::start(&[]);
    let v = tcp_json(
        &[
            &agent.addr,
            "-P",
            "4",
            "--threads",
            "2",
            "--cpus",
            "0",
            "--peer-cpus",
            "0",
            "-n",
            "20",
        ],
        LIMIT,
    );
    assert_eq!(u(&v, "/summary/received/bytes"), 4 * 20 * 131_072);
    assert_eq!(v["options"]["threads"], 2);
    assert_eq!(v["options"]["cpus"][0], 0);
}

#[test]
fn pre_posted_buffers_through_io_uring() {
    if !can_run(&[Need::IoUring]) {
        return;
    }
    let agent = Agent::start(&[]);
    for dir in [&[][..], &["--reverse"][..]] {
        let mut args = vec![
            agent.addr.as_str(),
            "--depth",
            "4",
            "-l",
            "100000",
            "-n",
            "64",
            "-P",
            "2",
        ];
        args.extend_from_slice(dir);
        let v = tcp_json(&args, LIMIT);
        assert_eq!(u(&v, "/summary/received/bytes"), 2 * 64 * 100_000, "{dir:?}");
        assert_eq!(u(&v, "/summary/sent/bytes"), 2 * 64 * 100_000, "{dir:?}");
        assert_eq!(v["summary"]["sent"]["ops"], 128, "whole buffers only");
        let notes = v["notes"].to_string();
        assert!(!notes.contains("io_uring unavailable"), "{notes}");
    }
    let v = tcp_json(&[&agent.addr, "--depth", "8", "-t", "1", "--bidir"], LIMIT);
    assert_eq!(v["partial"], false);
    assert!(u(&v, "/summary/directions/forward/received/bytes") > 0);
    assert!(u(&v, "/summary/directions/reverse/received/bytes") > 0);
}

#[test]
fn socket_options_are_applied_and_read_back() {
    // A user may set only the algorithms in net.ipv4.tcp_allowed_congestion_control, and buffers
    // up to net.core.rmem_max and wmem_max (socket(7)).
    if !can_run(&[Need::Root {
        why: "to choose cubic and buffers past the sysctl limits",
    }]) {
        return;
    }
    let agent = Agent::start(&[]);
    let v = tcp_json(
        &[
            &agent.addr,
            "-n",
            "20",
            "--window",
            "256K",
            "--sndbuf",
            "512K",
            "--mss",
            "1200",
            "-C",
            "cubic",
            "--nodelay",
        ],
        LIMIT,
    );
    let s = &v["summary"]["streams"][0];
    // Linux doubles SO_RCVBUF/SO_SNDBUF for bookkeeping (socket(7)).
    assert_eq!(s["receiver_socket"]["rcvbuf_bytes"], 524_288, "{s}");
    assert_eq!(s["sender_socket"]["sndbuf_bytes"], 1_048_576, "{s}");
    assert_eq!(s["sender_socket"]["congestion"], "cubic");
    assert_eq!(s["receiver_socket"]["congestion"], "cubic");
    assert_eq!(s["sender_socket"]["nodelay"], true);
    let mss = s["tcp"]["mss_bytes"].as_u64().expect("mss");
    assert!((1100..=1200).contains(&mss), "MSS {mss} follows --mss 1200");
}

#[test]
fn one_client_runs_several_agents_at_once() {
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let v = tcp_json(&[&a.addr, &b.addr, "-P", "2", "-n", "30"], LIMIT);
    let agents = v["summary"]["agents"].as_array().expect("agents");
    assert_eq!(agents.len(), 2);
    for (agent, name) in agents.iter().zip([&a.addr, &b.addr]) {
        assert_eq!(&agent["agent"], name.as_str());
        assert_eq!(u(agent, "/received/bytes"), 2 * 30 * 131_072);
        assert_eq!(agent["received"]["counted_by"][0], name.as_str());
    }
    assert_eq!(u(&v, "/summary/received/bytes"), 4 * 30 * 131_072);
    assert_eq!(v["summary"]["received"]["counted_by"].as_array().map(Vec::len), Some(2));
    // The text summary gives each agent a column and a total.
    let out = linerate(&["tcp", &a.addr, &b.addr, "-n", "10"], LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("SEND SIDE") && text.contains("RECEIVE SIDE"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains(&a.addr) && l.contains(&b.addr) && l.contains("total")),
        "{text}"
    );
}

#[test]
fn text_summary_has_the_seed_report_rows() {
    let agent = Agent::start(&[]);
    let out = linerate(&["tcp", &agent.addr, "-t", "1", "-i", "0.5"], LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for row in [
        "SEND SIDE",
        "RECEIVE SIDE",
        "Total bytes transferred (MBytes)",
        "Time (seconds)",
        "Throughput (Mbit/s)",
        "Average CPU utilisation, host",
        "TCP retransmits",
    ] {
        assert!(text.contains(row), "missing {row:?} in\n{text}");
    }
    assert!(
        text.lines()
            .filter(|l| l.starts_with('[') && l.contains("Mbit/s"))
            .count()
            >= 2,
        "live lines\n{text}"
    );
}

/// `--zerocopy`: every path, in every direction, moves exactly the bytes the receivers
/// count, and the result says which path each sending socket took.
#[test]
fn issue_28_zerocopy_moves_every_byte_and_records_its_path() {
    let agent = Agent::start(&[]);
    let cases: [(&str, &[&str]); 4] = [
        ("sendfile", &[]),
        ("msg", &[]),
        ("sendfile", &["--reverse"]),
        ("msg", &["--bidir"]),
    ];
    for (path, dir) in cases {
        let flag = format!("--zerocopy={path}");
        let mut args = vec![agent.addr.as_str(), "-n", "300", "-l", "100000", "-P", "2", &flag];
        args.extend_from_slice(dir);
        let v = tcp_json(&args, LIMIT);
        check_document(&v);
        assert_eq!(v["partial"], false, "{path} {dir:?}: {}", v["notes"]);
        assert_eq!(v["options"]["zerocopy"], path);
        for d in directions_of(dir) {
            assert_eq!(stream_bytes(&v, d, "sent"), 2 * 300 * 100_000, "{path} {d} sent");
            assert_eq!(
                stream_bytes(&v, d, "received"),
                2 * 300 * 100_000,
                "{path} {d} received"
            );
        }
        for s in v["summary"]["streams"].as_array().expect("streams") {
            assert_eq!(s["sender_socket"]["zerocopy"], path, "{path} {dir:?}: {s}");
            assert!(s["receiver_socket"]["zerocopy"].is_null(), "receives copy: {s}");
        }
        let notes = v["notes"].to_string();
        if path == "msg" {
            // Over loopback the kernel copies MSG_ZEROCOPY sends and says so in each completion.
            assert!(notes.contains("MSG_ZEROCOPY"), "{notes}");
        }
    }
    // Time mode: what was sent until the deadline is what was received.
    let v = tcp_json(&[&agent.addr, "-t", "0.5", "-i", "0", "--zerocopy"], LIMIT);
    assert_eq!(v["options"]["zerocopy"], "sendfile", "bare --zerocopy is sendfile");
    assert_eq!(
        stream_bytes(&v, "forward", "sent"),
        stream_bytes(&v, "forward", "received")
    );
    assert!(stream_bytes(&v, "forward", "sent") > 0);
}

/// Where zero-copy cannot apply (`--depth` above 1 runs io_uring), the writes copy, the grant
/// says so (no path) and a note says why.
#[test]
fn issue_28_zerocopy_under_io_uring_falls_back_with_a_note() {
    if !can_run(&[Need::IoUring]) {
        return;
    }
    let agent = Agent::start(&[]);
    let v = tcp_json(
        &[&agent.addr, "-n", "50", "-l", "64K", "--depth", "4", "--zerocopy=msg"],
        LIMIT,
    );
    assert_eq!(u(&v, "/summary/received/bytes"), 50 * 65_536);
    let s = &v["summary"]["streams"][0];
    assert!(s["sender_socket"]["zerocopy"].is_null(), "{s}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("--zerocopy msg does not apply with --depth above 1"),
        "{notes}"
    );
}

/// A bad `--zerocopy` value, or one with --mix, is a usage error: exit 2, one line.
#[test]
fn issue_28_bad_zerocopy_values_exit_2_with_one_line() {
    for (args, needle) in [
        (&["tcp", "127.0.0.1", "--zerocopy=splice"][..], "splice"),
        (&["tcp", "127.0.0.1", "--zerocopy", "--mix", "70:30"][..], "--zerocopy"),
    ] {
        fails_with(args, needle, LIMIT);
        assert_eq!(linerate(args, LIMIT).status.code(), Some(2), "{args:?}");
    }
}
