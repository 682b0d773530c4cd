//! The tables of one run or sweep: the test and its options, both ends' configuration (the
//! seeds' "System configuration"), the SEND SIDE / RECEIVE SIDE figures, a sweep's points.
//! The documents made of several runs build on them in `sets`.

use super::block::Table;
use crate::text::{cpu_split, grouped, interrupts};
use linerate_wire::result::{Outcome, SideSummary, TestResult};
use linerate_wire::sweep::{At, Sweep, SweepKind};

/// `2025-11-25 01:28:05 UTC`.
pub fn utc(unix_ms: u64) -> String {
    format!("{} UTC", crate::results::utc(unix_ms))
}

/// JSON values flattened to `a.b.c = value` rows, nulls and empty lists left out.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<Vec<String>>) {
    match v {
        serde_json::Value::Null => {}
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::Array(a) if a.is_empty() => {}
        serde_json::Value::String(s) => out.push(vec![prefix.to_string(), s.clone()]),
        other => out.push(vec![prefix.to_string(), other.to_string()]),
    }
}

/// `tab-test`: what was run, when, how it ended, and every option of its spec.
pub(super) fn test_table(r: &TestResult) -> Table {
    let outcome = match r.outcome() {
        Outcome::Complete => "complete",
        Outcome::Partial => "partial",
        Outcome::Failed => "failed",
    };
    let mut rows = vec![
        vec!["test".to_string(), r.test.clone()],
        vec!["started".to_string(), utc(r.started_unix_ms)],
        vec!["outcome".to_string(), outcome.to_string()],
        vec!["linerate".to_string(), format!("{} (schema {})", r.linerate, r.schema)],
    ];
    if let Some(e) = &r.error {
        rows.push(vec!["error".to_string(), e.clone()]);
    }
    let spec = serde_json::to_value(&r.options).unwrap_or_default();
    let mut options = Vec::new();
    flatten("", &spec, &mut options);
    rows.extend(options.into_iter().filter(|r| r[0] != "test").map(|mut r| {
        r[0] = format!("option {}", r[0]);
        r
    }));
    for n in &r.notes {
        rows.push(vec!["note".to_string(), n.clone()]);
    }
    Table {
        id: "tab-test".to_string(),
        caption: "Test and options".to_string(),
        head: vec!["".to_string(), "value".to_string()],
        rows,
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |p| format!("{p:.2}"))
}

/// `tab-sides`: SEND SIDE and RECEIVE SIDE (an HTTP run: client and server), NTttcp's rows.
pub(super) fn sides_table(r: &TestResult) -> Table {
    let s = &r.summary;
    let mut cols: Vec<(String, &SideSummary)> = if s.http.is_some() {
        vec![("CLIENT".to_string(), &s.received)]
    } else {
        vec![
            ("SEND SIDE".to_string(), &s.sent),
            ("RECEIVE SIDE".to_string(), &s.received),
        ]
    };
    if let Some(server) = &s.server {
        cols.push(("SERVER".to_string(), server));
    }
    let row = |label: &str, f: &dyn Fn(&SideSummary) -> String| {
        let mut r = vec![label.to_string()];
        r.extend(cols.iter().map(|(_, s)| f(s)));
        r
    };
    let rows = vec![
        row("counted by", &|s| s.counted_by.join(", ")),
        row("total bytes (MBytes, 10^6 bytes)", &|s| {
            grouped(s.bytes as f64 / 1e6, 3)
        }),
        row("time (s)", &|s| format!("{:.3}", s.seconds)),
        row("throughput (Mbit/s)", &|s| grouped(s.bits_per_second / 1e6, 3)),
        row("operations (writes, reads or transactions)", &|s| s.ops.to_string()),
        row("CPU busy, host (%)", &|s| pct(s.cpu.host_percent)),
        row("CPU, linerate (% of the host)", &|s| pct(s.cpu.process_percent_of_host)),
        row("CPU usr/sys/irq/softirq (%)", &|s| cpu_split(s, 1)),
        row("interrupts (1/s, all CPUs)", &interrupts),
        row("throughput per busy core (Gbit/s)", &|s| {
            s.efficiency.map_or("n/a".into(), |e| format!("{:.3}", e.gbit_per_core))
        }),
        row("share of line rate (%)", &|s| {
            s.line_rate
                .as_ref()
                .map_or("n/a".into(), |l| format!("{:.1}", l.percent))
        }),
    ];
    let mut head = vec!["".to_string()];
    head.extend(cols.iter().map(|(n, _)| n.clone()));
    Table {
        id: "tab-sides".to_string(),
        caption: "Send side and receive side over the measurement window".to_string(),
        head,
        rows,
    }
}

/// `tab-config`: each end's system configuration, one column per host.
pub(super) fn config_table(r: &TestResult) -> Option<Table> {
    let hosts: Vec<(&String, &linerate_wire::metrics::host::HostConfig)> = r
        .hosts
        .iter()
        .filter_map(|(n, h)| Some((n, h.config.as_ref()?)))
        .collect();
    if hosts.is_empty() {
        return None;
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "n/a".to_string());
    type Get = fn(&linerate_wire::metrics::host::HostConfig) -> Option<String>;
    let fields: [(&str, Get); 10] = [
        ("hostname", |c| c.hostname.clone()),
        ("kernel", |c| c.kernel.clone()),
        ("distribution", |c| c.distribution.clone()),
        ("CPU", |c| c.cpu.model.clone()),
        ("sockets / cores / threads", |c| {
            let n = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
            Some(format!(
                "{} / {} / {}",
                n(c.cpu.sockets),
                n(c.cpu.cores),
                n(c.cpu.threads)
            ))
        }),
        ("clock (MHz, current / max)", |c| {
            let n = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.0}"));
            Some(format!("{} / {}", n(c.cpu.current_mhz), n(c.cpu.max_mhz)))
        }),
        ("governor", |c| c.cpu.governor.clone()),
        ("memory (GiB)", |c| {
            c.memory_bytes.map(|b| format!("{:.1}", b as f64 / (1u64 << 30) as f64))
        }),
        ("NUMA nodes", |c| c.numa_nodes.map(|n| n.to_string())),
        ("irqbalance running", |c| c.irqbalance_running.map(|b| b.to_string())),
    ];
    let mut rows: Vec<Vec<String>> = fields
        .iter()
        .map(|(label, get)| {
            let mut row = vec![label.to_string()];
            row.extend(hosts.iter().map(|(_, c)| opt(get(c))));
            row
        })
        .collect();
    let mut names: Vec<&str> = hosts
        .iter()
        .flat_map(|(_, c)| c.interfaces.iter().map(|i| i.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let mut row = vec![format!("interface {name}")];
        row.extend(hosts.iter().map(|(_, c)| {
            c.interfaces
                .iter()
                .find(|i| i.name == name)
                .map_or("-".to_string(), |i| {
                    let on: Vec<&str> = i
                        .offloads
                        .iter()
                        .filter(|(_, on)| **on)
                        .map(|(k, _)| k.as_str())
                        .collect();
                    format!(
                        "driver {}, {}, MTU {}, qdisc {}, offloads on: {}",
                        i.driver.as_deref().unwrap_or("n/a"),
                        i.speed_mbit_per_second
                            .map_or("speed n/a".to_string(), |s| format!("{s} Mbit/s")),
                        i.mtu_bytes.map_or("n/a".to_string(), |m| m.to_string()),
                        i.qdisc.as_deref().unwrap_or("n/a"),
                        if on.is_empty() {
                            "none".to_string()
                        } else {
                            on.join(" ")
                        }
                    )
                })
        }));
        rows.push(row);
    }
    let mut keys: Vec<&String> = hosts.iter().flat_map(|(_, c)| c.sysctls.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        let mut row = vec![k.clone()];
        row.extend(
            hosts
                .iter()
                .map(|(_, c)| c.sysctls.get(k).cloned().unwrap_or_else(|| "-".into())),
        );
        rows.push(row);
    }
    let mut head = vec!["".to_string()];
    head.extend(hosts.iter().map(|(n, _)| n.to_string()));
    Some(Table {
        id: "tab-config".to_string(),
        caption: "System configuration of each end".to_string(),
        head,
        rows,
    })
}

/// `tab-points`: a sweep's points, where each lies and its headline figures.
pub(super) fn points_table(s: &Sweep) -> Table {
    let mut rows = Vec::new();
    for p in &s.points {
        let at = match p.at {
            At::Udp { payload_bytes, gap_us } => format!("{payload_bytes} bytes, gap {gap_us} µs"),
            At::Rr {
                request_bytes,
                response_bytes,
            } => format!("{request_bytes} / {response_bytes} bytes"),
            At::Http { users } => format!("{users} users"),
            At::Tcp { buffer_bytes } => format!("{buffer_bytes} bytes per write"),
        };
        let (figure, cpu) = match &p.result {
            Some(r) => (headline(r), pct(r.summary.received.cpu.host_percent)),
            None => ("n/a".to_string(), "n/a".to_string()),
        };
        let note = [p.note.as_str(), p.error.as_deref().unwrap_or("")]
            .iter()
            .filter(|t| !t.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("; ");
        let mut row = vec![at, figure, cpu];
        // A tcp size sweep: its transfers/s (under --mix) and each end's efficiency, as the
        // text table and the figures show them.
        if let (SweepKind::Tcp(t), At::Tcp { buffer_bytes }) = (&s.kind, &p.at) {
            let f = t.figures.iter().find(|f| f.buffer_bytes == *buffer_bytes);
            let cell = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"));
            row.push(cell(f.and_then(|f| f.transfers_per_second)));
            row.push(cell(f.and_then(|f| f.client_mbit_per_second_per_cpu_percent)));
            row.push(cell(f.and_then(|f| f.agent_mbit_per_second_per_cpu_percent)));
        }
        row.push(note);
        rows.push(row);
    }
    let mut head = vec![
        "point".to_string(),
        "figure".to_string(),
        "receiving host CPU (%)".to_string(),
    ];
    if matches!(s.kind, SweepKind::Tcp(_)) {
        head.extend([
            "transfers/s".to_string(),
            "Mbit/s per % of host CPU, client".to_string(),
            "Mbit/s per % of host CPU, agent".to_string(),
        ]);
    }
    head.push("note".to_string());
    Table {
        id: "tab-points".to_string(),
        caption: format!("Points{}", if s.partial { " (partial sweep)" } else { "" }),
        head,
        rows,
    }
}

/// A point's headline: received Mbit/s and loss, p50 latency, or responses/s.
fn headline(r: &TestResult) -> String {
    let s = &r.summary;
    if let Some(h) = &s.http {
        format!(
            "{:.1} responses/s, {:.1} Mbit/s in",
            h.responses_per_second,
            h.bits_per_second_in / 1e6
        )
    } else if let Some(l) = s.rr.as_ref().and_then(|rr| rr.latency_us) {
        format!("p50 {:.2} µs, p99 {:.2} µs", l.p50, l.p99)
    } else if let Some(u) = &s.udp {
        format!(
            "{:.3} Mbit/s received, {:.3} % lost",
            u.received_bits_per_second.unwrap_or(s.received.bits_per_second) / 1e6,
            u.loss_percent
        )
    } else {
        format!("{:.3} Mbit/s", s.received.bits_per_second / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_764_034_085_000), "2025-11-25 01:28:05 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }
}
