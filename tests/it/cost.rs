//! The cost of a run: both hosts' samplers and configuration in the result, checked against what
//! the kernel counted on a lab link.

use crate::kinds::*;
use crate::util::*;
use serde_json::Value;

#[test]
fn both_hosts_report_cpu_interrupts_interfaces_configuration_and_efficiency() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    let v = lab.tcp("h1", "h2", &["-t", "2"]);
    for side in ["sent", "received"] {
        let s = &v["summary"][side];
        let per_cpu = s["cpu"]["per_cpu"].as_array().expect("per-CPU split");
        assert!(!per_cpu.is_empty(), "{side}: per-CPU figures");
        for c in per_cpu {
            let sum: f64 = ["user", "system", "irq", "softirq", "iowait", "steal", "idle"]
                .iter()
                .map(|k| c[k].as_f64().expect("split"))
                .sum();
            assert!(
                (sum - 100.0).abs() < 0.01,
                "{side}: a CPU's split adds up to 100 %: {c}"
            );
        }
        assert!(s["interrupts_per_second"]["total"].as_f64().expect("interrupts") > 0.0);
        assert!(
            s["interrupts_per_second"]["per_cpu"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        );
        assert!(s["interrupts_per_second"]["per_irq"].is_array());
        let eth0 = interface(s, "eth0");
        assert!(eth0["rx_bytes"].as_u64().unwrap_or(0) + eth0["tx_bytes"].as_u64().unwrap_or(0) > 0);
        let e = &s["efficiency"];
        assert!(
            e["gbit_per_core"].as_f64().expect("Gbit/s per core") > 0.0,
            "{side}: {e}"
        );
        assert!(e["cpu_percent_per_gbit"].as_f64().expect("CPU per Gbit/s") > 0.0);
        assert!(e["cycles_per_byte"].as_f64().expect("cycles per byte") > 0.0);
        assert!(s["stack"]["tcp_retransmitted_segments"].is_u64());
    }
    for host in ["client", "h2"] {
        let c = &v["hosts"][host]["config"];
        assert!(c.is_object(), "hosts.{host}.config: {:#}", v["hosts"][host]);
        let ifaces = c["interfaces"].as_array().expect("the test's interfaces");
        assert!(
            ifaces.iter().any(|i| i["name"] == "eth0" && i["driver"] == "veth"),
            "{host}: {c:#}"
        );
        assert!(c["sysctls"]["net.core.rmem_max"].is_string(), "{host}: sysctls");
    }
    let timeline: Vec<&Value> = v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter(|i| i["kind"] == "host")
        .collect();
    assert!(timeline.iter().any(|i| i["host"] == "client"));
    assert!(timeline.iter().any(|i| i["host"] == "h2"));
    assert!(timeline.iter().all(|i| i["interrupts_per_second"]["total"].is_number()));
}

#[test]
fn line_rate_against_a_given_link_speed() {
    let agent = Agent::start(&[]);
    let v = tcp_json(
        &[&agent.addr, "-n", "2000", "--link-speed", "100G", "--mtu", "9000"],
        std::time::Duration::from_secs(60),
    );
    let l = &v["summary"]["received"]["line_rate"];
    assert_eq!(l["source"], "given");
    let limit = l["limit_bits_per_second"].as_f64().expect("limit");
    assert!((limit - 100e9 * 8948.0 / 9038.0).abs() < 1.0, "{l}");
    let want = 100.0 * f(&v, "/summary/received/bits_per_second") / limit;
    assert!((l["percent"].as_f64().expect("percent") - want).abs() < 1e-6);
}

#[test]
fn calc_goodput_prints_the_textbook_figures() {
    let out = linerate(
        &["calc", "goodput", "--link", "10G", "--mtu", "9000"],
        std::time::Duration::from_secs(10),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("9.900 Gbit/s for TCP with timestamps"), "{text}");
    assert!(text.contains("8948 payload bytes per 9038 on the wire"), "{text}");
    let out = linerate(
        &["calc", "goodput", "--link", "10G", "--mtu", "1500"],
        std::time::Duration::from_secs(10),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("9.415 Gbit/s for TCP"));
    let bad = linerate(
        &["calc", "goodput", "--link", "10G", "--mtu", "20"],
        std::time::Duration::from_secs(10),
    );
    assert!(
        !bad.status.success() && stderr(&bad).lines().count() == 1,
        "{}",
        stderr(&bad)
    );
}

#[test]
fn sys_prints_a_line_per_interval_and_json_documents() {
    let out = linerate(&["sys", "-i", "0.2", "-n", "3"], std::time::Duration::from_secs(10));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines().all(|l| l.contains("intr") && l.contains("NET_RX")),
        "{text}"
    );
    let out = linerate(
        &["sys", "-i", "0.2", "-n", "2", "--json"],
        std::time::Duration::from_secs(10),
    );
    let docs: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect();
    assert_eq!(docs.len(), 2);
    assert!(
        docs.iter().all(|d| d["schema"].is_u64()),
        "every line carries the schema"
    );
    assert!(docs[1]["start_ns"].as_u64() == docs[0]["end_ns"].as_u64());
    assert!(docs[0]["per_cpu"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn sys_config_describes_this_host() {
    let out = linerate(
        &["sys", "--config", "--json", "--iface", "lo"],
        std::time::Duration::from_secs(20),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let c = json_of(&out);
    assert!(c["schema"].is_u64());
    assert!(c["cpu"]["threads"].as_u64().is_some_and(|t| t >= 1), "{c:#}");
    assert!(c["memory_bytes"].as_u64().is_some_and(|m| m > 0));
    assert_eq!(c["interfaces"][0]["name"], "lo");
    assert_eq!(c["interfaces"][0]["loopback"], true);
    assert!(c["sysctls"]["net.ipv4.tcp_congestion_control"].is_string());
}

#[test]
fn doctor_checks_buffers_against_the_bandwidth_delay_product() {
    // 100 Gbit/s x 200 ms = 2.5 GB: past what any default allows, so the buffer checks fire.
    let out = linerate(
        &["doctor", "--rtt", "200ms", "--rate", "100G", "--iface", "lo", "--json"],
        std::time::Duration::from_secs(20),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert!(doc["schema"].is_u64());
    let findings = &doc["findings"];
    let rmem = findings
        .as_array()
        .and_then(|a| a.iter().find(|f| f["check"] == "rmem_max"))
        .unwrap_or_else(|| panic!("no rmem_max finding: {findings:#}"));
    assert_eq!(rmem["severity"], "warn", "{rmem}");
    assert!(
        rmem["fix"]
            .as_str()
            .is_some_and(|f| f.starts_with("sysctl -w net.core.rmem_max="))
    );
    let text = linerate(&["doctor", "--iface", "lo"], std::time::Duration::from_secs(20));
    assert!(String::from_utf8_lossy(&text.stdout).contains("nothing was changed"));
    let bad = linerate(
        &["doctor", "--iface", "no-such-if0"],
        std::time::Duration::from_secs(20),
    );
    assert!(!bad.status.success());
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
}
