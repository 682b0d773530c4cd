//! Every number in a result document names its unit: the checker both test
//! targets walk documents with (tests/it/units.rs runs it over every kind, tests/timed/lab.rs over
//! a delay lab's status).

use serde_json::Value;

/// Endings that name a unit.
const UNIT_SUFFIXES: &[&str] = &[
    "_bytes",
    "_ns",
    "_us",
    "_ms",
    "_seconds",
    "_percent",
    "_per_second",
    "_mbps",
    "_hz",
    "_mhz",
    "_ppm",
    "_bits",
    "_packets",
    "_segments",
    "_datagrams",
    "_per_byte",
    "_per_core",
    "_per_gbit",
    "_cores",
    "_percent_of_host",
    "_per_transaction",
    // the server's CPU per request or TLS handshake it served
    "_per_request",
    "_per_handshake",
    // counts of packets or events the key names (an interface's or the stack's counters)
    "_dropped",
    "_drops",
    "_errors",
    "_processed",
    "_squeezed",
    "_switches",
];

/// Whether `key` ends with a unit or is one (`seconds`, `per_second`).
fn has_unit(key: &str) -> bool {
    UNIT_SUFFIXES.iter().any(|s| key.ends_with(s) || key == &s[1..])
}

/// Keys whose number is a count of what the key names (a count is its own unit), an index or
/// identifier, or a ratio without dimension. Each was reviewed: a new unitless key must be added
/// here on purpose, with its meaning in docs/results.md.
const COUNTS_AND_IDS: &[&str] = &[
    // counts of things named by the key
    "bytes",
    "ops",
    "streams",
    "datagrams",
    "retransmits",
    "users",
    "responses",
    "requests",
    "transactions",
    "errors",
    "resets",
    "other",
    "total",
    "attempted",
    "ok",
    "failed",
    "lost",
    "duplicates",
    "reordered",
    "late",
    "sent",
    "received",
    "points",
    "hosts",
    "cores",
    "workers",
    "count",
    "samples",
    "connections",
    "in_flight",
    "refused",
    "timeouts",
    "timeout",
    "closed",
    "local_limit",
    // frames the lab relay delayed or duplicated
    "delayed",
    "duplicated",
    "stale",
    "successful",
    "unsuccessful",
    "in_flight_at_end",
    "queued_late",
    // what an agent's own HTTP server counted over the window
    "connections_accepted",
    "tls_full",
    "tls_resumed",
    "tls_failed",
    "h2_connections",
    "h2_streams",
    "h2_resets",
    "h2_goaways",
    "truncated",
    "out_of_order",
    "out_of_range",
    // runs of consecutive lost datagrams; sends refused with a full queue and retried
    "range_count",
    "full_queue_retries",
    "duplicate",
    "reorder",
    "gaps",
    "peaks",
    "voluntary_context_switches",
    "involuntary_context_switches",
    "depth",
    "threads",
    "parallel",
    "limit_packets",
    "buffers",
    "batch",
    "queue",
    "queues",
    // identifiers and indices
    "stream",
    "cpu",
    "schema",
    "irq",
    "port",
    "pid",
    "index",
    "started_unix_ms",
    "size",
    // dimensionless
    "busy",
    "user",
    "system",
    "idle",
    "iowait",
    "steal",
    "softirq",
    "irq_share",
    "nice",
    "ratio",
    "r2",
    "slope",
    "intercept",
    "stddev",
    "mean",
    "min",
    "max",
    "p50",
    "p90",
    "p99",
    "p999",
    // the host's shape
    "sockets",
    "numa_nodes",
    "ifindex",
    // sequence numbers (a loss range's first and last datagram)
    "first",
    "last",
];

/// Beginnings that name what is counted (`datagrams_sent`).
const COUNT_PREFIXES: &[&str] = &[
    "bits_per_second_",
    "datagrams_",
    "frames_",
    "packets_",
    "bytes_",
    "requests_",
    "responses_",
];

/// Maps whose keys are data (an interrupt kind, an interface, a status class), not field names.
const DATA_KEYED: &[&str] = &["softirqs_per_second", "per_interface", "status", "sources", "by_status"];

/// `unit_above`: an enclosing key names the unit of everything inside (`latency_us.p99`,
/// `interrupts_per_second.total`).
fn walk(v: &Value, path: &str, parent: &str, unit_above: bool, bad: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                if let Some(n) = x.as_f64() {
                    if n == 0.0 && n.is_sign_negative() {
                        bad.push(format!("{p}: -0.0"));
                    }
                    let named = unit_above
                        || has_unit(k)
                        || COUNT_PREFIXES.iter().any(|p| k.starts_with(p))
                        || COUNTS_AND_IDS.contains(&k.as_str())
                        || DATA_KEYED.contains(&parent);
                    if !named {
                        bad.push(format!("{p} = {x}"));
                    }
                }
                walk(x, &p, k, unit_above || has_unit(k), bad);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(x, &format!("{path}[{i}]"), parent, unit_above, bad);
            }
        }
        _ => {}
    }
}

/// Fails on a number whose key names no unit, on -0.0, and on a document without `schema`.
pub fn check_units(kind: &str, v: &Value) {
    assert!(v["schema"].is_u64(), "{kind}: no schema");
    let mut bad = Vec::new();
    walk(v, kind, "", false, &mut bad);
    // One line per key, not per array element.
    let key = |l: &str| {
        l.split(" = ")
            .next()
            .unwrap_or(l)
            .replace(|c: char| c.is_ascii_digit(), "")
    };
    bad.sort_by_key(|l| key(l));
    bad.dedup_by(|a, b| key(a) == key(b));
    assert!(
        bad.is_empty(),
        "{kind}: numbers without a unit in their key:\n{}",
        bad.join("\n")
    );
}
