//! The lab a result was measured in: its hosts, the link each host's egress emulates, what
//! emulates each property, and the relay's counters. Plain data: `linerate lab` fills it from
//! its state (crates/lab), `lab status` prints it, and a result stores it under `lab`
//! (docs/results.md). Imports nothing above the result document.

use crate::units::BitRate;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One host's link: its rate limits what it sends and what it receives; every other property
/// acts on what it sends (its egress). None where the spec leaves it alone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// Bits per second the host's link carries, each way.
    pub rate_bits_per_second: Option<f64>,
    /// One-way delay added to each packet the host sends, microseconds.
    pub delay_us: Option<u64>,
    /// Spread of the delay, microseconds.
    pub jitter_us: Option<u64>,
    /// Probability a packet is dropped, percent.
    pub loss_percent: Option<f64>,
    /// Probability a packet is held back behind the next one, percent.
    pub reorder_percent: Option<f64>,
    /// Probability a packet is sent twice, percent.
    pub duplicate_percent: Option<f64>,
    /// The interface MTU, bytes.
    #[serde(rename = "mtu_bytes", alias = "mtu")]
    pub mtu: Option<u32>,
    /// Packets queued at most in the emulation (and bytes = limit x MTU in the rate limiter).
    pub limit_packets: Option<u32>,
    /// The depth of the FIFO in front of the shaped rate, as time at the link's rate
    /// (`buffer=200ms`), microseconds; absent in a record made before links took a buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_us: Option<u64>,
    /// The depth of that FIFO in frames (`buffer=300p`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_packets: Option<u32>,
    /// The queue discipline under the shaped rate instead of the FIFO: `fq_codel` or `cake`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<String>,
}

impl LinkSpec {
    /// `other`'s properties where it sets them, ours elsewhere.
    pub fn overlay(&self, other: &LinkSpec) -> LinkSpec {
        LinkSpec {
            rate_bits_per_second: other.rate_bits_per_second.or(self.rate_bits_per_second),
            delay_us: other.delay_us.or(self.delay_us),
            jitter_us: other.jitter_us.or(self.jitter_us),
            loss_percent: other.loss_percent.or(self.loss_percent),
            reorder_percent: other.reorder_percent.or(self.reorder_percent),
            duplicate_percent: other.duplicate_percent.or(self.duplicate_percent),
            mtu: other.mtu.or(self.mtu),
            limit_packets: other.limit_packets.or(self.limit_packets),
            buffer_us: other.buffer_us.or(self.buffer_us),
            buffer_packets: other.buffer_packets.or(self.buffer_packets),
            aqm: other.aqm.clone().or_else(|| self.aqm.clone()),
        }
    }

    /// True when the spec sizes or disciplines the queue of its shaped rate (buffer=, aqm=).
    pub fn sets_queue(&self) -> bool {
        self.buffer_us.is_some() || self.buffer_packets.is_some() || self.aqm.is_some()
    }

    /// True when a property needs packets held or copied: delay, jitter, reorder, duplicate.
    pub fn needs_relay(&self) -> bool {
        self.delay_us.is_some_and(|d| d > 0)
            || self.jitter_us.is_some_and(|j| j > 0)
            || self.reorder_percent.is_some_and(|p| p > 0.0)
            || self.duplicate_percent.is_some_and(|p| p > 0.0)
    }

    /// The one-way delay; zero when none is set.
    pub fn delay(&self) -> Duration {
        Duration::from_micros(self.delay_us.unwrap_or(0))
    }

    /// The spec written back in the form it is typed (`rate=100.000Mbit/s,delay=10ms,loss=1%`),
    /// or `(unshaped)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.rate_bits_per_second {
            parts.push(format!("rate={}", BitRate(r)).replace(' ', ""));
        }
        if let Some(d) = self.delay_us {
            parts.push(format!("delay={}ms", d as f64 / 1000.0));
        }
        if let Some(j) = self.jitter_us {
            parts.push(format!("jitter={}ms", j as f64 / 1000.0));
        }
        for (name, v) in [
            ("loss", self.loss_percent),
            ("reorder", self.reorder_percent),
            ("duplicate", self.duplicate_percent),
        ] {
            if let Some(p) = v {
                parts.push(format!("{name}={p}%"));
            }
        }
        if let Some(m) = self.mtu {
            parts.push(format!("mtu={m}"));
        }
        if let Some(l) = self.limit_packets {
            parts.push(format!("limit={l}"));
        }
        if let Some(b) = self.buffer_us {
            parts.push(format!("buffer={}ms", b as f64 / 1000.0));
        }
        if let Some(p) = self.buffer_packets {
            parts.push(format!("buffer={p}p"));
        }
        if let Some(a) = &self.aqm {
            parts.push(format!("aqm={a}"));
        }
        if parts.is_empty() {
            "(unshaped)".into()
        } else {
            parts.join(",")
        }
    }
}

/// Which mechanism emulates each property of a host's egress (`tbf`, `netem`, `nftables`,
/// `linerate relay`, `ip link`), and the rate of what it receives (`rate_in`); None where the
/// property is not set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Backends {
    pub rate: Option<String>,
    /// What holds what the host receives to its rate: `tbf on switch port pX` (bridge and relay
    /// labs), or point to point the peer's egress (`tbf on h1's eth0`). None in a record made
    /// when a host's rate shaped its egress alone.
    #[serde(default)]
    pub rate_in: Option<String>,
    pub delay: Option<String>,
    pub jitter: Option<String>,
    pub loss: Option<String>,
    pub reorder: Option<String>,
    pub duplicate: Option<String>,
    pub mtu: Option<String>,
    /// The queues in front of the rate, each way, and where they are (`out: tbf fifo 200 ms
    /// (2500000 bytes) on switch port p2; in: ...`); absent in a record made before labs named
    /// their queues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

impl Backends {
    /// (property, mechanism) for each property set, in the order of the property's name.
    pub fn used(&self) -> Vec<(&'static str, &str)> {
        [
            ("delay", &self.delay),
            ("duplicate", &self.duplicate),
            ("jitter", &self.jitter),
            ("loss", &self.loss),
            ("mtu", &self.mtu),
            ("queue", &self.queue),
            ("rate", &self.rate),
            ("rate_in", &self.rate_in),
            ("reorder", &self.reorder),
        ]
        .into_iter()
        .filter_map(|(name, by)| by.as_deref().map(|by| (name, by)))
        .collect()
    }
}

/// One queue on a host's link: the qdisc that holds one direction of it to its rate, and what
/// builds there when more arrives than the rate carries (so under a saturating load its depth
/// is the round trip added).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkQueue {
    /// Which way of the host's link it holds: `out` (what the host sends) or `in` (what it
    /// receives).
    pub way: String,
    /// Where the qdisc is: `switch port p2`, `h1's eth0`.
    pub at: String,
    /// The qdisc that holds the rate: `tbf`, or `netem`.
    pub shaper: String,
    /// The queue's discipline: `fifo` (tail drop), `fq_codel` or `cake`.
    pub kind: String,
    /// The rate the queue drains at, bits per second.
    pub rate_bits_per_second: f64,
    /// The FIFO's depth as time at that rate, ms; None for a depth given in packets and for an
    /// AQM without buffer=.
    pub depth_ms: Option<f64>,
    /// The FIFO's depth in bytes as the shaper holds it (tbf's `limit`); for an AQM, its memory
    /// limit; None where the depth is in packets alone.
    pub depth_bytes: Option<u64>,
    /// The depth in frames, where given in packets (`buffer=300p`, `limit=300`, netem's).
    pub depth_packets: Option<u32>,
    /// Whether the depth is the lab's default (tbf `latency 50ms`, netem's 1000 packets)
    /// rather than one the link spec gave.
    pub default_depth: bool,
    /// One line: `tbf fifo 200 ms (2500000 bytes)`, `tbf + fq_codel`.
    pub text: String,
}

/// Counters of one relay port (the frames its host sent), as the relay counted them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PortStats {
    pub port: String,
    pub frames_in: u64,
    pub bytes_in: u64,
    pub frames_out: u64,
    pub delayed: u64,
    pub reordered: u64,
    pub duplicated: u64,
    /// Frames dropped because the queue (limit=, or its byte ring) was full.
    pub queue_drops: u64,
    pub send_errors: u64,
}

/// One lab host as it stood when the record was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabHostRecord {
    /// h1 .. hN
    pub name: String,
    pub namespace: String,
    pub address: String,
    /// HOST:PORT of its agent.
    pub agent: String,
    pub agent_running: bool,
    /// This host's link: its rate both ways, the rest on what it sends.
    pub link: LinkSpec,
    /// The link as it is typed (`rate=100.000Mbit/s,delay=10ms`), or `(unshaped)`.
    pub link_text: String,
    pub backends: Backends,
    /// HOST:PORT of the HTTP server its agent runs (`serve --http-port`, for `linerate http`
    /// in the lab); None for a lab made by a build whose agents ran none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// Packets from this host that nftables dropped for its loss= (summed over the receiving
    /// hosts); None where loss is not emulated by nftables.
    pub loss_drops: Option<u64>,
    /// The queues in front of this host's shaped rate, each way that has one; empty where the
    /// host's link has no rate, and absent in a record made before labs named their queues.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<LinkQueue>,
}

/// The user-space link relay of a lab without netem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelayRecord {
    pub pid: u32,
    pub running: bool,
    /// One per port; None when the relay has not written its counters.
    pub ports: Option<Vec<PortStats>>,
}

/// A lab as `linerate lab status` shows it and a result measured in it records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabRecord {
    /// The document's layout version, [`crate::result::SCHEMA`] (`lab status --json` is a
    /// document of its own); 0 when read from a record that had none.
    #[serde(default)]
    pub schema: u32,
    pub name: String,
    /// "point-to-point", "bridge" or "relay".
    pub topology: String,
    /// Whether the kernel's sch_netem emulates the links.
    pub netem: bool,
    pub hosts: Vec<LabHostRecord>,
    /// None when no relay runs.
    pub relay: Option<RelayRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The record keeps the shape the untyped status had (docs/results.md, `lab`).
    #[test]
    fn lab_record_serializes_as_the_status_did() {
        let link = LinkSpec {
            rate_bits_per_second: Some(1e8),
            delay_us: Some(250),
            ..LinkSpec::default()
        };
        let record = LabRecord {
            schema: crate::result::SCHEMA,
            name: "t".into(),
            topology: "relay".into(),
            netem: false,
            hosts: vec![LabHostRecord {
                name: "h1".into(),
                namespace: "t-h1".into(),
                address: "10.211.0.1".into(),
                agent: "10.211.0.1:5301".into(),
                agent_running: true,
                link_text: link.describe(),
                link,
                backends: Backends {
                    rate: Some("tbf".into()),
                    delay: Some("linerate relay".into()),
                    ..Backends::default()
                },
                http: None,
                loss_drops: None,
                queues: Vec::new(),
            }],
            relay: Some(RelayRecord {
                pid: 7,
                running: false,
                ports: None,
            }),
        };
        let v = serde_json::to_value(&record).expect("serializes");
        let want = json!({
            "schema": crate::result::SCHEMA, "name": "t", "topology": "relay", "netem": false,
            "hosts": [{
                "name": "h1", "namespace": "t-h1", "address": "10.211.0.1", "agent": "10.211.0.1:5301",
                "agent_running": true,
                "link": {
                    "rate_bits_per_second": 1e8, "delay_us": 250, "jitter_us": null, "loss_percent": null,
                    "reorder_percent": null, "duplicate_percent": null, "mtu_bytes": null, "limit_packets": null
                },
                "link_text": "rate=100.000Mbit/s,delay=0.25ms",
                "backends": {
                    "rate": "tbf", "rate_in": null, "delay": "linerate relay", "jitter": null, "loss": null,
                    "reorder": null, "duplicate": null, "mtu": null
                },
                "loss_drops": null
            }],
            "relay": {"pid": 7, "running": false, "ports": null}
        });
        assert_eq!(v, want);
        let back: LabRecord = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, record);
        assert_eq!(
            back.hosts[0].backends.used(),
            [("delay", "linerate relay"), ("rate", "tbf")]
        );
    }
}
