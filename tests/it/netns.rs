//! TCP across two network namespaces joined by a veth pair, with the link shaped by tc.

use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
const SECRET: &str = "netns-test-secret";

/// Runs an agent in `b` (bound to its veth address, with a secret) and a client in `a`.
fn tcp_across(pair: &NsPair, args: &[&str]) -> serde_json::Value {
    let agent = Agent::start_with(
        &["ip", "netns", "exec", &pair.b],
        &["--bind", &pair.addr_b, "--port", "0"],
        &[],
        &[("LINERATE_SECRET", SECRET)],
    );
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", &pair.a, BIN, "tcp", "--json", &agent.addr])
        .args(args)
        .env("LINERATE_SECRET", SECRET);
    let v = json_of(&run_bounded(&mut cmd, LIMIT));
    check_document(&v);
    v
}

/// Goodput a link of `rate` bits/s allows for TCP with timestamps at `mtu`, as tbf counts bytes
/// on a veth: the Ethernet header (14 bytes) but no preamble, FCS or gap.
fn tcp_goodput(rate: f64, mtu: f64) -> f64 {
    let payload = mtu - 20.0 - 20.0 - 12.0;
    rate * payload / (mtu + 14.0)
}

#[test]
fn rate_limited_link_reports_its_goodput() {
    let pair = NsPair::new();
    pair.limit_a_to_b("200mbit");
    let v = tcp_across(&pair, &["-t", "4", "--warmup", "1"]);
    let got = f(&v, "/summary/received/bits_per_second");
    let want = tcp_goodput(200e6, 1500.0);
    assert!(
        (got - want).abs() / want < 0.05,
        "received {:.1} Mbit/s, the link allows {:.1}",
        got / 1e6,
        want / 1e6
    );
}

#[test]
fn jumbo_frames_run_and_use_the_larger_mss() {
    let pair = NsPair::new();
    pair.set_mtu(9000);
    pair.limit_a_to_b("200mbit");
    let v = tcp_across(&pair, &["-t", "3", "--warmup", "1"]);
    let mss = v["summary"]["streams"][0]["tcp"]["mss_bytes"].as_u64().expect("mss");
    assert!(mss > 8000, "MSS {mss} at MTU 9000");
    let got = f(&v, "/summary/received/bits_per_second");
    let want = tcp_goodput(200e6, 9000.0);
    assert!(
        (got - want).abs() / want < 0.05,
        "received {:.1} Mbit/s, the link allows {:.1}",
        got / 1e6,
        want / 1e6
    );
}

#[test]
fn reverse_and_bidir_cross_the_namespaces() {
    let pair = NsPair::new();
    let v = tcp_across(&pair, &["-n", "50", "--bidir", "-P", "2"]);
    assert_eq!(u(&v, "/summary/directions/forward/received/bytes"), 2 * 50 * 131_072);
    assert_eq!(u(&v, "/summary/directions/reverse/received/bytes"), 2 * 50 * 131_072);
}
