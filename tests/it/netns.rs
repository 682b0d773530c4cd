//! TCP across lab hosts: network namespaces joined by veth, the link shaped by tc.

use crate::util::*;

/// Goodput a link of `rate` bits/s allows for TCP with timestamps at `mtu`, as tbf counts bytes
/// on a veth: the Ethernet header (14 bytes) but no preamble, FCS or gap.
fn tcp_goodput(rate: f64, mtu: f64) -> f64 {
    let payload = mtu - 20.0 - 20.0 - 12.0;
    rate * payload / (mtu + 14.0)
}

#[test]
fn rate_limited_link_reports_its_goodput() {
    let Some(lab) = Lab::up(2, &["h1:rate=200mbit"]) else {
        return;
    };
    let v = lab.tcp("h1", "h2", &["-t", "4", "--warmup", "1"]);
    let got = f(&v, "/summary/received/bits_per_second");
    let want = tcp_goodput(200e6, 1500.0);
    assert!(
        (got - want).abs() / want < 0.05,
        "received {:.1} Mbit/s, the link allows {:.1}",
        got / 1e6,
        want / 1e6
    );
    assert_eq!(
        v["lab"]["hosts"][0]["backends"]["rate"], "tbf",
        "the result says what emulated the rate"
    );
}

#[test]
fn jumbo_frames_run_and_use_the_larger_mss() {
    let Some(lab) = Lab::up(2, &["mtu=9000", "h1:rate=200mbit"]) else {
        return;
    };
    let v = lab.tcp("h1", "h2", &["-t", "3", "--warmup", "1"]);
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
fn reverse_and_bidir_cross_the_lab() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    let v = lab.tcp("h1", "h2", &["-n", "50", "--bidir", "-P", "2"]);
    assert_eq!(u(&v, "/summary/directions/forward/received/bytes"), 2 * 50 * 131_072);
    assert_eq!(u(&v, "/summary/directions/reverse/received/bytes"), 2 * 50 * 131_072);
}
