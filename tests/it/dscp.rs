//! `--dscp` on loopback and in a namespace of its own: each stream's class as both ends' sockets
//! hold it (the grants in the document), and on the packets themselves (nftables counters
//! matching `ip dscp`, real traffic).

use crate::util::*;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Every stream of the document with its two grants' classes: (direction, stream, sender's,
/// receiver's).
fn classes(v: &Value) -> Vec<(String, u64, Value, Value)> {
    let streams = v["summary"]["streams"].as_array().expect("streams");
    streams
        .iter()
        .map(|s| {
            (
                s["direction"].as_str().unwrap_or_default().to_string(),
                s["stream"].as_u64().expect("stream"),
                s["sender_socket"]["dscp"].clone(),
                s["receiver_socket"]["dscp"].clone(),
            )
        })
        .collect()
}

#[test]
fn each_direction_takes_the_classes_in_turn_on_both_ends() {
    let agent = Agent::start(&[]);
    let v = tcp_json(
        &[&agent.addr, "-P", "2", "--bidir", "--dscp", "EF,cs5", "-n", "20"],
        LIMIT,
    );
    assert_eq!(v["options"]["dscp"], serde_json::json!([46, 40]));
    let got = classes(&v);
    assert_eq!(got.len(), 4, "{got:?}");
    for (direction, stream, sender, receiver) in got {
        let want = if stream % 2 == 0 { 46 } else { 40 };
        assert_eq!(
            (&sender, &receiver),
            (&Value::from(want), &Value::from(want)),
            "{direction} {stream}"
        );
    }
    // Without --dscp no grant names a class and the options have no key.
    let v = tcp_json(&[&agent.addr, "-n", "5"], LIMIT);
    assert!(v["options"].get("dscp").is_none(), "{}", v["options"]);
    assert!(classes(&v).iter().all(|c| c.2.is_null() && c.3.is_null()));
}

#[test]
fn udp_and_rr_streams_are_marked_too() {
    let agent = Agent::start(&[]);
    let out = linerate(&["udp", &agent.addr, "--dscp", "AF41", "-n", "200", "--json"], LIMIT);
    let v = json_of(&out);
    assert_eq!(v["options"]["dscp"], serde_json::json!([34]));
    let c = classes(&v);
    assert!(!c.is_empty());
    assert!(c.iter().all(|c| c.2 == 34 && c.3 == 34), "{c:?}");
    let out = linerate(
        &[
            "rr",
            &agent.addr,
            "--proto",
            "udp",
            "--dscp",
            "EF",
            "-n",
            "50",
            "--json",
        ],
        LIMIT,
    );
    let v = json_of(&out);
    assert_eq!(v["options"]["dscp"], serde_json::json!([46]));
    let c = classes(&v);
    assert!(!c.is_empty() && c.iter().all(|c| c.2 == 46 && c.3 == 46), "{c:?}");
    // rr over TCP: the client's connection and the agent's accepted one.
    let out = linerate(&["rr", &agent.addr, "--dscp", "CS5", "-n", "50", "--json"], LIMIT);
    let c = classes(&json_of(&out));
    assert!(!c.is_empty() && c.iter().all(|c| c.2 == 40 && c.3 == 40), "{c:?}");
}

#[test]
fn bad_classes_are_one_line_and_exit_2() {
    for bad in ["XX", "64", "EF,"] {
        let out = linerate(&["tcp", "127.0.0.1", "--dscp", bad], LIMIT);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{bad}: {}", stderr(&out));
    }
    let out = linerate(&["rr", "127.0.0.1", "--connect", "--dscp", "EF"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--dscp"), "{}", stderr(&out));
}

/// A namespace of its own (removed on drop) with an nftables table counting its packets by class.
struct CountedNamespace {
    name: String,
}

impl CountedNamespace {
    fn up() -> Option<CountedNamespace> {
        if !can_run(&[
            Need::Root { why: NAMESPACES },
            Need::Program {
                name: "nft",
                package: "nftables",
            },
        ]) {
            return None;
        }
        let name = format!("lr-dscp-{}", std::process::id());
        let ns = CountedNamespace { name };
        ns.ip(&["netns", "add", &ns.name]);
        ns.ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        let rules = "table ip dscp_count {\n chain out {\n  type filter hook output priority 0;\n  \
ip dscp ef counter\n  ip dscp cs5 counter\n  ip dscp cs1 counter\n  ip dscp cs0 counter\n }\n}\n";
        let file = std::env::temp_dir().join(format!("{}.nft", ns.name));
        std::fs::write(&file, rules).expect("rules file");
        let file = file.to_string_lossy().to_string();
        ns.exec(&["nft", "-f", &file]);
        let _ = std::fs::remove_file(&file);
        Some(ns)
    }

    fn ip(&self, args: &[&str]) {
        let out = run_bounded(Command::new("ip").args(args), LIMIT);
        assert!(out.status.success(), "ip {args:?}: {}", stderr(&out));
    }

    fn exec(&self, cmd: &[&str]) -> std::process::Output {
        let out = run_bounded(Command::new("ip").args(["netns", "exec", &self.name]).args(cmd), LIMIT);
        assert!(out.status.success(), "{cmd:?}: {}", stderr(&out));
        out
    }

    /// Packets counted per class, in the rules' order: EF, CS5, CS1, CS0.
    fn counts(&self) -> Vec<u64> {
        let out = self.exec(&["nft", "list", "table", "ip", "dscp_count"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.lines()
            .filter_map(|l| l.split("counter packets ").nth(1))
            .map(|rest| {
                rest.split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("count")
            })
            .collect()
    }
}

impl Drop for CountedNamespace {
    fn drop(&mut self) {
        let _ = run_bounded(Command::new("ip").args(["netns", "del", &self.name]), LIMIT);
    }
}

#[test]
fn the_packets_carry_the_class_both_ways() {
    let Some(ns) = CountedNamespace::up() else { return };
    let agent = Agent::start_with(
        &["ip", "netns", "exec", &ns.name],
        &["--bind", "127.0.0.1", "--port", "0"],
        &[],
        &[],
    );
    let before = ns.counts();
    assert_eq!(before.len(), 4, "{before:?}");
    // Two streams each way: EF and CS5 (BK and BE unused), 40 writes of 128 KiB each.
    let out = ns.exec(&[
        crate::util::bin_for_anyone().to_str().expect("path"),
        "tcp",
        &agent.addr,
        "-P",
        "2",
        "--bidir",
        "--dscp",
        "EF,CS5",
        "-n",
        "40",
        "--json",
        "--no-store",
    ]);
    let v = json_of(&out);
    assert_eq!(u(&v, "/summary/received/bytes"), 4 * 40 * 131_072);
    let after = ns.counts();
    let added: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    // Each class carried two streams of 5 MiB one way and their ACKs the other: at least one
    // packet per 64 KiB segment (loopback's MTU) of its data.
    let least = 2 * 40 * 131_072 / 65_536;
    assert!(added[0] >= least && added[1] >= least, "EF, CS5, BK, BE: {added:?}");
    assert_eq!(added[2], 0, "no stream asked for BK: {added:?}");
}
