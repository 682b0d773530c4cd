//! The configuration difference between two results: what differs between the hosts that
//! measured A and those that measured B (MTU, offloads, driver and firmware, qdisc, rings, IRQ
//! affinity, sysctls, kernel, CPU governor, an agent's profile, and the lab's links), and nothing
//! that is the same.
//! Read from the documents alone, so two results taken on different days compare.

use linerate_wire::result::{ConfigChange, TestResult};
use serde_json::Value;
use std::collections::BTreeMap;

/// Keys that change between any two runs and say nothing of the configuration.
const VOLATILE: &[&str] = &["cpu.current_mhz", "notes", "memory_bytes"];
/// Last path parts to leave out wherever they stand (where a figure came from, not what it is).
const VOLATILE_LEAVES: &[&str] = &["sources", "operstate"];

/// What differs between A's and B's test options, hosts and labs. Hosts pair by role: the
/// client with the client, agents in the order of their names.
pub fn config_difference(a: &TestResult, b: &TestResult) -> Vec<ConfigChange> {
    let mut out = Vec::new();
    let options = |r: &TestResult| {
        let mut flat = BTreeMap::new();
        flatten("", &serde_json::to_value(&r.options).unwrap_or(Value::Null), &mut flat);
        flat
    };
    push_changes(&mut out, "options", &options(a), &options(b));
    for (host, ca, cb) in pair_hosts(a, b) {
        let (fa, fb) = (flatten_config(ca.as_ref()), flatten_config(cb.as_ref()));
        push_changes(&mut out, &host, &fa, &fb);
    }
    let lab = |r: &TestResult| {
        let mut flat = BTreeMap::new();
        for h in r.lab.iter().flat_map(|l| &l.hosts) {
            flat.insert(format!("{}.link", h.name), h.link_text.clone());
            let backends = serde_json::to_value(&h.backends).unwrap_or(Value::Null);
            flatten(&format!("{}.backends", h.name), &backends, &mut flat);
        }
        flat
    };
    push_changes(&mut out, "lab", &lab(a), &lab(b));
    out
}

fn push_changes(out: &mut Vec<ConfigChange>, host: &str, a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys {
        let (x, y) = (a.get(key), b.get(key));
        if x != y {
            out.push(ConfigChange {
                host: host.to_string(),
                key: key.clone(),
                a: x.cloned(),
                b: y.cloned(),
            });
        }
    }
}

/// (name, A's configuration, B's configuration) per host paired across the two results.
fn pair_hosts(a: &TestResult, b: &TestResult) -> Vec<(String, Option<Value>, Option<Value>)> {
    fn configs(r: &TestResult) -> (Option<Value>, Vec<(String, Option<Value>)>) {
        let mut client = None;
        let mut agents = Vec::new();
        for (name, h) in &r.hosts {
            let mut v = h.config.as_ref().and_then(|c| serde_json::to_value(c).ok());
            // An agent's profile is part of its configuration: A/B by profile.
            if let Some(p) = &h.profile
                && let Value::Object(m) = v.get_or_insert_with(|| Value::Object(Default::default()))
            {
                let undo = p.undo.as_ref().map(|u| u.command.clone());
                m.insert(
                    "profile".into(),
                    serde_json::json!({"name": p.name, "command": p.run.command, "undo": undo}),
                );
            }
            if h.role == "client" {
                client = v;
            } else {
                agents.push((name.clone(), v));
            }
        }
        (client, agents)
    }
    let (ca, aa) = configs(a);
    let (cb, ab) = configs(b);
    let mut pairs = vec![("client".to_string(), ca, cb)];
    for i in 0..aa.len().max(ab.len()) {
        let (na, va) = aa.get(i).cloned().unwrap_or_default();
        let (nb, vb) = ab.get(i).cloned().unwrap_or_default();
        let name = match (na.is_empty(), nb.is_empty()) {
            (false, false) if na == nb => na,
            (false, false) => format!("{na} / {nb}"),
            (false, true) => na,
            _ => nb,
        };
        pairs.push((name, va, vb));
    }
    pairs
}

fn flatten_config(config: Option<&Value>) -> BTreeMap<String, String> {
    let mut flat = BTreeMap::new();
    if let Some(v) = config {
        flatten("", v, &mut flat);
    }
    flat.retain(|k, _| {
        !VOLATILE.iter().any(|v| k == v || k.starts_with(&format!("{v}.")))
            && !VOLATILE_LEAVES.iter().any(|l| k.split('.').any(|part| part == *l))
    });
    if let Some(Value::Array(interfaces)) = config.and_then(|c| c.get("interfaces")) {
        for (i, interface) in interfaces.iter().enumerate() {
            let Some(Value::Array(lines)) = interface.get("qdiscs") else {
                continue;
            };
            let name = interface
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| i.to_string());
            let lines: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
            if !lines.is_empty() {
                flat.insert(
                    format!("interfaces.{name}.qdiscs"),
                    qdiscs_without_handles(&lines).join(","),
                );
            }
        }
    }
    flat
}

/// `tc qdisc show`'s lines (`tbf 802b: root rate 1Gbit ...`, `netem 802c: parent 802b:1 ...`)
/// without the handles the kernel assigned: a handle is the qdisc's identity, a new
/// one each time the qdisc is made (`qdisc_alloc_handle` in net/sched/sch_api.c counts up from
/// 8000: on one counter for the whole kernel), not its configuration. Each qdisc is its kind and parameters; a
/// parent is named by its kind (`parent tbf:1`), `root`, `ingress` and `ffff:` as they are.
fn qdiscs_without_handles(lines: &[&str]) -> Vec<String> {
    let kinds: BTreeMap<&str, &str> = lines
        .iter()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let kind = w.next()?;
            let handle = w.next().filter(|h| h.ends_with(':'))?;
            Some((handle.trim_end_matches(':'), kind))
        })
        .collect();
    lines
        .iter()
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let mut out: Vec<String> = Vec::with_capacity(words.len());
            for (i, w) in words.iter().enumerate() {
                if i == 1 && w.ends_with(':') {
                    continue;
                }
                let parent = i > 0 && words[i - 1] == "parent";
                match w.split_once(':') {
                    Some((major, minor)) if parent && kinds.contains_key(major) => {
                        out.push(format!("{}:{minor}", kinds[major]));
                    }
                    _ => out.push(w.to_string()),
                }
            }
            out.join(" ")
        })
        .collect()
}

/// Paths to scalar values. Arrays of scalars are one value (`0,1`); arrays of objects are keyed
/// by the element's `name` (interfaces), `irq` (IRQs) or position.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&join(k), v, out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            if !items.is_empty() {
                let text: Vec<String> = items.iter().map(scalar).collect();
                out.insert(prefix.to_string(), text.join(","));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let key = item
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| item.get("irq").map(|n| format!("irq{}", scalar(n))))
                    .unwrap_or_else(|| i.to_string());
                flatten(&join(&key), item, out);
            }
        }
        Value::Null => {}
        other => {
            out.insert(prefix.to_string(), scalar(other));
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_of_objects_are_keyed_by_name_and_scalars_joined() {
        let v = serde_json::json!({
            "kernel": "6.1",
            "cpu": {"online": [0, 1], "current_mhz": 2000.0, "governor": null},
            "interfaces": [{"name": "eth0", "mtu_bytes": 9000, "irqs": [{"irq": 40, "cpus": [1]}]}],
            "notes": ["x"],
        });
        let flat = flatten_config(Some(&v));
        let keys: Vec<&str> = flat.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "cpu.online",
                "interfaces.eth0.irqs.irq40.cpus",
                "interfaces.eth0.irqs.irq40.irq",
                "interfaces.eth0.mtu_bytes",
                "interfaces.eth0.name",
                "kernel"
            ]
        );
        assert_eq!(flat["cpu.online"], "0,1");
        assert_eq!(flat["interfaces.eth0.mtu_bytes"], "9000");
    }

    #[test]
    fn issue_16_an_agents_profile_is_part_of_its_configuration() {
        use linerate_core::metrics::host::ReadHostInfo;
        use linerate_wire::result::{CommandRecord, HostRecord, ProfileRecord};
        let with = |name: Option<&str>| {
            let mut r = linerate_core::sweep::stub_result(
                linerate_wire::spec::TestSpec::Tcp(linerate_wire::spec::TcpSpec::new()),
                Default::default(),
            );
            let profile = name.map(|n| ProfileRecord {
                name: n.into(),
                run: CommandRecord {
                    command: format!("ethtool -K eth0 tso {n}"),
                    exit_status: Some(0),
                    timed_out: false,
                    output: String::new(),
                    duration_ms: 3,
                },
                undo: None,
            });
            r.hosts.insert(
                "h2".into(),
                HostRecord {
                    role: "agent".into(),
                    info: linerate_core::metrics::host::HostInfo::read(),
                    config: None,
                    profile,
                },
            );
            r
        };
        let keys = |a, b| -> Vec<String> {
            config_difference(&with(a), &with(b))
                .iter()
                .map(|c| format!("{} {} {:?} {:?}", c.host, c.key, c.a, c.b))
                .collect()
        };
        assert_eq!(
            keys(Some("off"), Some("on")),
            [
                "h2 profile.command Some(\"ethtool -K eth0 tso off\") Some(\"ethtool -K eth0 tso on\")",
                "h2 profile.name Some(\"off\") Some(\"on\")"
            ]
        );
        assert_eq!(keys(None, Some("on")).len(), 2, "{:?}", keys(None, Some("on")));
        assert!(keys(Some("on"), Some("on")).is_empty());
    }

    /// Two labs of the same link listed `tbf 802b:` against `tbf 802e:` as a change.
    #[test]
    fn issue_23_qdisc_handles_are_not_configuration() {
        let config = |tbf: &str, netem: &str, rate: &str| {
            serde_json::json!({"interfaces": [{"name": "veth1", "qdiscs": [
                format!("tbf {tbf}: root rate {rate} burst 125000b lat 50ms"),
                format!("netem {netem}: parent {tbf}:1 limit 1000 delay 1ms"),
            ]}]})
        };
        let a = flatten_config(Some(&config("802b", "802c", "1Gbit")));
        let b = flatten_config(Some(&config("802e", "802f", "1Gbit")));
        assert_eq!(
            a["interfaces.veth1.qdiscs"],
            "tbf root rate 1Gbit burst 125000b lat 50ms,netem parent tbf:1 limit 1000 delay 1ms"
        );
        let mut out = Vec::new();
        push_changes(&mut out, "h1", &a, &b);
        assert!(out.is_empty(), "{out:?}");
        // A parameter that differs still does.
        let c = flatten_config(Some(&config("8030", "8031", "100Mbit")));
        push_changes(&mut out, "h1", &a, &c);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0]
                .b
                .as_deref()
                .is_some_and(|b| b.starts_with("tbf root rate 100Mbit")),
            "{out:?}"
        );
    }

    #[test]
    fn only_what_differs_is_listed() {
        let a = flatten_config(Some(
            &serde_json::json!({"kernel": "6.1", "interfaces": [{"name": "eth0", "mtu_bytes": 1500}]}),
        ));
        let b = flatten_config(Some(
            &serde_json::json!({"kernel": "6.1", "interfaces": [{"name": "eth0", "mtu_bytes": 9000, "qdisc": "fq"}]}),
        ));
        let mut out = Vec::new();
        push_changes(&mut out, "agent", &a, &b);
        let lines: Vec<String> = out.iter().map(|c| format!("{} {:?} {:?}", c.key, c.a, c.b)).collect();
        assert_eq!(
            lines,
            [
                "interfaces.eth0.mtu_bytes Some(\"1500\") Some(\"9000\")",
                "interfaces.eth0.qdisc None Some(\"fq\")"
            ]
        );
    }
}
