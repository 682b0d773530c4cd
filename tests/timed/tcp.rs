//! TCP on loopback against a real agent, timed: a run lasts as long as asked in every direction
//! and stream count (the count cases are in tests/it/tcp.rs), and warm-up and cool-down shrink
//! the window.

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Time mode: the run lasts as long as asked, and the receivers count all that was sent.
fn time_case(direction: &[&str], streams: u32) {
    let v = tcp_on_loopback(direction, streams, &["-t", "1"]);
    for d in directions_of(direction) {
        let (sent, received) = (stream_bytes(&v, d, "sent"), stream_bytes(&v, d, "received"));
        assert!(received > 0, "{d}: nothing received");
        assert_eq!(sent, received, "{d}: a graceful close delivers every byte sent");
    }
    let secs = f(&v, "/summary/received/seconds");
    assert!((0.9..2.0).contains(&secs), "received over {secs} s of a 1 s test");
    assert!(f(&v, "/summary/received/bits_per_second") > 0.0);
    // Interval samples from both ends, adding up to the totals each end counted over the run.
    let intervals = v["intervals"].as_array().expect("intervals");
    assert!(intervals.iter().any(|i| i["counted_by"] == "client"));
    assert!(intervals.iter().any(|i| i["counted_by"] == "agent"));
    let received_in_intervals: u64 = intervals
        .iter()
        .filter(|i| i["side"] == "received")
        .map(|i| i["bytes"].as_u64().expect("bytes"))
        .sum();
    assert_eq!(received_in_intervals, u(&v, "/summary/received/bytes"));
    // The sender's TCP_INFO is reported.
    let s0 = &v["summary"]["streams"][0];
    assert!(s0["tcp"]["rtt_us"].as_u64().is_some_and(|r| r > 0), "{s0}");
    assert!(v["summary"]["sent"]["tcp"]["retransmits"].is_u64());
    assert!(
        v["summary"]["sent"]["cpu"]["host_percent"]
            .as_f64()
            .is_some_and(|p| p > 0.0 && p <= 100.0)
    );
    assert!(
        v["summary"]["received"]["cpu"]["process_percent_of_host"]
            .as_f64()
            .is_some_and(|p| p > 0.0)
    );
}

#[apply(timed!)]
fn warmup_and_cooldown_shrink_the_window() {
    let agent = Agent::start(&[]);
    let v = tcp_json(&[&agent.addr, "-t", "2", "--warmup", "0.5", "--cooldown", "0.5"], LIMIT);
    let secs = f(&v, "/summary/sent/seconds");
    assert!(
        (0.9..1.3).contains(&secs),
        "a 2 s run less 1 s of warm-up and cool-down measured {secs} s"
    );
    let total: u64 = v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter(|i| i["side"] == "sent")
        .map(|i| i["bytes"].as_u64().expect("bytes"))
        .sum();
    assert!(
        u(&v, "/summary/sent/bytes") < total,
        "the window leaves out part of the run"
    );
}

macro_rules! time_cases {
    ($($name:ident: $dir:expr, $streams:expr;)*) => {$(
        #[apply(timed!)]
        fn $name() {
            time_case(&$dir, $streams);
        }
    )*};
}

time_cases! {
    send_one_stream_time: [], 1;
    send_three_streams_time: [], 3;
    reverse_one_stream_time: ["--reverse"], 1;
    reverse_three_streams_time: ["--reverse"], 3;
    bidir_one_stream_time: ["--bidir"], 1;
    bidir_three_streams_time: ["--bidir"], 3;
}
