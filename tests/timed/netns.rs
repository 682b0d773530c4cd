//! TCP across lab hosts whose link tc shapes: the goodput read against the link's.

use crate::util::*;
use linerate_core::goodput::{LinkKind, Transport, goodput};
use macro_rules_attribute::apply;

/// Goodput a link of `rate` bits/s allows for TCP with timestamps at `mtu`, as tbf counts bytes
/// on a veth: the Ethernet header (14 bytes) but no preamble, FCS or gap (linerate's one model).
fn tcp_goodput(rate: f64, mtu: u32) -> f64 {
    goodput(rate, mtu, Transport::Tcp, false, LinkKind::Tbf)
        .expect("fits")
        .bits_per_second
}

#[apply(timed!)]
fn rate_limited_link_reports_its_goodput() {
    let Some(lab) = Lab::up(2, &["h1:rate=200mbit"]) else {
        return;
    };
    let v = lab.tcp("h1", "h2", &["-t", "4", "--warmup", "1"]);
    let got = f(&v, "/summary/received/bits_per_second");
    let want = tcp_goodput(200e6, 1500);
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

#[apply(timed!)]
fn jumbo_frames_run_and_use_the_larger_mss() {
    let Some(lab) = Lab::up(2, &["mtu=9000", "h1:rate=200mbit"]) else {
        return;
    };
    let v = lab.tcp("h1", "h2", &["-t", "3", "--warmup", "1"]);
    let mss = v["summary"]["streams"][0]["tcp"]["mss_bytes"].as_u64().expect("mss");
    assert!(mss > 8000, "MSS {mss} at MTU 9000");
    let got = f(&v, "/summary/received/bits_per_second");
    let want = tcp_goodput(200e6, 9000);
    assert!(
        (got - want).abs() / want < 0.05,
        "received {:.1} Mbit/s, the link allows {:.1}",
        got / 1e6,
        want / 1e6
    );
}

#[apply(timed!)]
fn issue_23_a_tbf_link_is_rated_as_tbf_counts_and_never_beaten() {
    let Some(lab) = Lab::up(2, &["h1:rate=200mbit"]) else {
        return;
    };
    let v = lab.tcp(
        "h1",
        "h2",
        &["-t", "4", "--warmup", "1", "--link-speed", "200M", "--mtu", "1500"],
    );
    let got = f(&v, "/summary/received/bits_per_second");
    let seconds = f(&v, "/summary/received/seconds");
    let ceiling = tcp_goodput(200e6, 1500);
    // tbf lets a burst through at once (docs/lab.md: 2 ms at the rate, at least two frames),
    // and nothing more: over the window the measured goodput exceeds the ceiling by that burst
    // at most (and by 0.5 % of clocks' and window edges' slack).
    let burst_bits = (200e6_f64 * 0.002).max(2.0 * 1514.0 * 8.0);
    assert!(
        got <= ceiling * 1.005 + burst_bits / seconds,
        "received {:.2} Mbit/s over {seconds:.3} s, the tbf ceiling is {:.2}",
        got / 1e6,
        ceiling / 1e6
    );
    let l = &v["summary"]["received"]["line_rate"];
    assert_eq!(l["link_kind"], "tbf", "{l}");
    let limit = l["limit_bits_per_second"].as_f64().expect("limit");
    assert!(
        (limit - ceiling).abs() < 1.0,
        "the share is taken against {limit}, not {ceiling}"
    );
    let percent = l["percent"].as_f64().expect("percent");
    assert!((percent - 100.0 * got / ceiling).abs() < 1e-6, "{l}");
}
