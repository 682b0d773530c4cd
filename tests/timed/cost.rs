//! The cost of a run checked against what the kernel counted on a lab link: the veth's bytes
//! against the receiver's, NET_RX softirqs counted.

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;

#[apply(timed!)]
fn veth_bytes_match_the_receiver_and_net_rx_is_counted() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    // The test's own readings, over a window that holds the run's.
    let (softirqs_before, packets_before) = (net_rx_softirqs(), eth0_rx_packets(&lab, "h2"));
    let v = lab.tcp("h1", "h2", &["-t", "3"]);
    let (softirqs_after, packets_after) = (net_rx_softirqs(), eth0_rx_packets(&lab, "h2"));
    let received = u(&v, "/summary/received/bytes");
    let side = &v["summary"]["received"];
    assert_eq!(side["counted_by"][0], "h2", "the agent in h2 received");
    let eth0 = interface(side, "eth0");
    let rx_bytes = eth0["rx_bytes"].as_u64().expect("rx_bytes");
    let rx_packets = eth0["rx_packets"].as_u64().expect("rx_packets");
    // The veth counts each packet (a GSO train counts once) with its Ethernet (14), IP (20) and
    // TCP header with timestamps (32).
    let payload = rx_bytes.saturating_sub(rx_packets * 66);
    let error = (payload as f64 - received as f64).abs() / received as f64;
    // The interface's counters are read at sample edges, the receiver counts its own window:
    // the two differ by the sampler's looks, well under 2 % of a run where nothing else runs;
    // double counting or a wrong interface is 50 % or more.
    assert!(
        error < 0.02,
        "veth counted {rx_bytes} bytes in {rx_packets} packets = {payload} of payload; linerate received {received} ({:.2} % apart)",
        100.0 * error
    );
    let pps = eth0["rx_packets_per_second"].as_f64().expect("pps");
    assert!(pps > 0.0, "eth0 received {pps} packets/s");
    // linerate's packet count lies within the test's own, taken around the run.
    let own_packets = packets_after - packets_before;
    assert!(
        rx_packets <= own_packets && rx_packets * 10 >= own_packets * 9,
        "linerate counted {rx_packets} packets on h2's eth0, /proc/net/dev {own_packets} around the run"
    );
    // Every received packet went through a NET_RX softirq, and one softirq handles at most
    // netdev_budget packets (plus one poll's dev_weight of 64 past it; net_rx_action in
    // net/core/dev.c), so the packets set a floor under the softirq rate.
    let budget: f64 = std::fs::read_to_string("/proc/sys/net/core/netdev_budget")
        .ok()
        .and_then(|b| b.trim().parse().ok())
        .unwrap_or(300.0);
    let net_rx = &v["summary"]["received"]["softirqs_per_second"]["NET_RX"];
    let total = net_rx["total"].as_f64().expect("NET_RX total");
    let floor = pps / (budget + 64.0);
    assert!(
        total >= floor,
        "{total:.0} NET_RX softirqs/s for {pps:.0} packets/s (floor {floor:.0})"
    );
    // ... and no more than the test itself saw run around the whole test.
    let seconds = f(&v, "/summary/received/seconds");
    let own = (softirqs_after - softirqs_before) as f64;
    assert!(
        total * seconds <= own * 1.02 + 100.0,
        "{total:.0}/s over {seconds:.2} s, but /proc/softirqs counted {own} around the run"
    );
    // The per-CPU split adds up to the total.
    let per_cpu = net_rx["per_cpu"].as_array().expect("per-CPU NET_RX");
    let sum: f64 = per_cpu
        .iter()
        .map(|c| c["per_second"].as_f64().expect("per_second"))
        .sum();
    assert!(per_cpu.iter().all(|c| c["per_second"].as_f64() >= Some(0.0)));
    assert!(
        (sum - total).abs() <= 1e-6 * total.max(1.0) + 1.0,
        "per-CPU {sum} vs total {total}"
    );
    // Moving the data took CPU time on the receiving host.
    assert!(f(&v, "/summary/received/cpu/host_percent") > 0.0);
}

/// NET_RX softirqs run so far, summed over CPUs (/proc/softirqs is the same in every namespace).
fn net_rx_softirqs() -> u64 {
    let text = std::fs::read_to_string("/proc/softirqs").expect("/proc/softirqs");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("NET_RX:"))
        .expect("a NET_RX line");
    line.split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse::<u64>().ok())
        .sum()
}

/// Packets eth0 of lab host `host` received, from its namespace's /proc/net/dev.
fn eth0_rx_packets(lab: &Lab, host: &str) -> u64 {
    let out = lab.exec(host, &["cat", "/proc/net/dev"], std::time::Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("eth0:"))
        .unwrap_or_else(|| panic!("no eth0 in {text}"));
    // eth0: rx_bytes rx_packets ...
    line.split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .expect("rx packets")
}
