//! `linerate lab status` (and `lab up`) as text: a [`LabRecord`] in, one line for the lab, one
//! per host, and the relay's counters out.

use linerate_wire::result::lab::LabRecord;
use std::fmt::Write;

/// The lab's hosts, links, what emulates them and its agents; `subnet` is the lab's /24
/// (`10.211.0`).
pub fn status_text(lab: &LabRecord, subnet: &str) -> String {
    let mut out = format!(
        "lab {}: {} ({}), addresses {subnet}.0/24\n",
        lab.name,
        lab.topology,
        if lab.netem {
            "kernel has netem"
        } else {
            "no netem: tbf, nftables and the linerate relay"
        }
    );
    let _ = writeln!(
        out,
        "{:<5} {:<14} {:<19} {:<8} {:<6} {:<44} emulated by",
        "host", "address", "agent", "running", "http", "link"
    );
    for h in &lab.hosts {
        let backends: Vec<String> = h.backends.used().iter().map(|(k, b)| format!("{k}:{b}")).collect();
        let _ = writeln!(
            out,
            "{:<5} {:<14} {:<19} {:<8} {:<6} {:<44} {}",
            h.name,
            h.address,
            h.agent,
            if h.agent_running { "yes" } else { "NO" },
            http_port(h.http.as_deref()),
            h.link_text,
            backends.join(" "),
        );
        if let Some(d) = h.loss_drops {
            let _ = writeln!(out, "      loss: {d} packets from {} dropped by nftables", h.name);
        }
    }
    // The agents' HTTP servers, and how to reach one (hosts name each other h1..hN).
    if let Some(h) = lab.hosts.iter().find(|h| h.http.is_some()) {
        let _ = writeln!(
            out,
            "http: each agent serves HTTP on {} (GET /bytes/N): linerate http http://{}{}/bytes/1M",
            http_port(h.http.as_deref()),
            h.name,
            http_port(h.http.as_deref())
        );
    }
    if let Some(relay) = &lab.relay
        && let Some(ports) = &relay.ports
    {
        let _ = writeln!(
            out,
            "relay pid {} ({})",
            relay.pid,
            if relay.running { "running" } else { "NOT running" }
        );
        for p in ports {
            let _ = writeln!(
                out,
                "  {}: in {} frames, out {}, delayed {}, reordered {}, duplicated {}, queue drops {}, send errors {}",
                p.port, p.frames_in, p.frames_out, p.delayed, p.reordered, p.duplicated, p.queue_drops, p.send_errors
            );
        }
    }
    out
}

/// `:8080` of `10.211.0.1:8080`; `-` without a server.
fn http_port(http: Option<&str>) -> &str {
    http.and_then(|a| a.rfind(':').map(|i| &a[i..])).unwrap_or("-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::result::lab::{Backends, LabHostRecord, LinkSpec, PortStats, RelayRecord};

    fn host(name: &str, x: u8, link: LinkSpec, backends: Backends, loss_drops: Option<u64>) -> LabHostRecord {
        LabHostRecord {
            name: name.into(),
            namespace: format!("t-{name}"),
            address: format!("10.211.0.{x}"),
            agent: format!("10.211.0.{x}:5301"),
            agent_running: x == 1,
            link_text: link.describe(),
            link,
            backends,
            http: (x == 1).then(|| format!("10.211.0.{x}:8080")),
            loss_drops,
            queues: Vec::new(),
        }
    }

    /// `lab status` did not show the agents' HTTP servers (`:8080`).
    #[test]
    fn status_renders_hosts_backends_and_relay() {
        let link = LinkSpec {
            rate_bits_per_second: Some(100e6),
            delay_us: Some(10_000),
            loss_percent: Some(1.0),
            ..LinkSpec::default()
        };
        let backends = Backends {
            rate: Some("tbf".into()),
            delay: Some("linerate relay".into()),
            loss: Some("nftables".into()),
            ..Backends::default()
        };
        let lab = LabRecord {
            schema: 3,
            name: "t".into(),
            topology: "relay".into(),
            netem: false,
            hosts: vec![
                host("h1", 1, link, backends, Some(7)),
                host("h2", 2, LinkSpec::default(), Backends::default(), None),
            ],
            relay: Some(RelayRecord {
                pid: 42,
                running: true,
                ports: Some(vec![PortStats {
                    port: "p1".into(),
                    frames_in: 10,
                    frames_out: 9,
                    delayed: 9,
                    queue_drops: 1,
                    ..PortStats::default()
                }]),
            }),
        };
        let expected = "\
lab t: relay (no netem: tbf, nftables and the linerate relay), addresses 10.211.0.0/24
host  address        agent               running  http   link                                         emulated by
h1    10.211.0.1     10.211.0.1:5301     yes      :8080  rate=100.000Mbit/s,delay=10ms,loss=1%        delay:linerate relay loss:nftables rate:tbf
      loss: 7 packets from h1 dropped by nftables
h2    10.211.0.2     10.211.0.2:5301     NO       -      (unshaped)                                   
http: each agent serves HTTP on :8080 (GET /bytes/N): linerate http http://h1:8080/bytes/1M
relay pid 42 (running)
  p1: in 10 frames, out 9, delayed 9, reordered 0, duplicated 0, queue drops 1, send errors 0
";
        assert_eq!(status_text(&lab, "10.211.0"), expected);
    }
}
