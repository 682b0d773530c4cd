//! Random loss without netem: nftables rules at every other host's ingress drop a share of each
//! lossy host's frames (so the sender sees no error), with a counter per sending host that
//! [`loss_drops`] reads back.

use crate::LabError;
use crate::cmd::{run, run_stdin};
use crate::state::{LabHost, LabState};
use serde::Deserialize;

/// Random loss of each host's egress, dropped by nftables at every other host's ingress, with a
/// counter per sending host.
pub(crate) fn drop_in_kernel(hosts: &mut [LabHost]) -> Result<(), LabError> {
    let lossy: Vec<(String, String, f64)> = hosts
        .iter()
        .filter_map(|h| {
            h.link
                .loss_percent
                .filter(|p| *p > 0.0)
                .map(|p| (h.name.clone(), h.mac.clone(), p))
        })
        .collect();
    if lossy.is_empty() {
        return Ok(());
    }
    for h in hosts.iter_mut() {
        let mut rules = String::new();
        for (from, mac, p) in &lossy {
            if *from == h.name {
                continue;
            }
            let threshold = (p / 100.0 * 1_000_000.0).round() as u64;
            rules += &format!(
                "    ether saddr {mac} numgen random mod 1000000 < {threshold} counter drop comment \"loss-from-{from}\"\n"
            );
        }
        let script = format!(
            "table netdev linerate {{\n  chain ingress {{\n    type filter hook ingress device \"eth0\" priority -500;\n{rules}  }}\n}}\n"
        );
        run_stdin(&["ip", "netns", "exec", &h.namespace, "nft", "-f", "-"], &script)?;
    }
    for h in hosts.iter_mut() {
        if h.link.loss_percent.is_some_and(|p| p > 0.0) {
            h.backends.loss = Some("nftables".into());
        }
    }
    Ok(())
}

/// The parts of `nft -j list table` read here: each rule's comment and its counter.
#[derive(Deserialize)]
struct NftListing {
    nftables: Vec<NftItem>,
}

#[derive(Deserialize)]
struct NftItem {
    rule: Option<NftRule>,
}

#[derive(Deserialize)]
struct NftRule {
    comment: Option<String>,
    #[serde(default)]
    expr: Vec<serde_json::Value>,
}

/// Packets the kernel dropped for `from`'s loss, summed over every receiving host.
pub fn loss_drops(state: &LabState, from: &str) -> u64 {
    let tag = format!("loss-from-{from}");
    state
        .hosts
        .iter()
        .filter(|h| h.name != from)
        .filter_map(|h| {
            run(&[
                "ip",
                "netns",
                "exec",
                &h.namespace,
                "nft",
                "-j",
                "list",
                "table",
                "netdev",
                "linerate",
            ])
            .ok()
        })
        .filter_map(|text| serde_json::from_str::<NftListing>(&text).ok())
        .flat_map(|listing| listing.nftables)
        .filter_map(|item| item.rule)
        .filter(|rule| rule.comment.as_deref() == Some(tag.as_str()))
        .filter_map(|rule| rule.expr.iter().find_map(|x| x["counter"]["packets"].as_u64()))
        .sum()
}
