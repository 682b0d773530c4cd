//! The lab's wires: each host's namespace joined to the others by veth, point to point or
//! through the switch namespace (a kernel bridge, or bare promiscuous ports for the relay), and
//! each host's `eth0` given its MAC, MTU and address. Hosts in, interfaces made; shaping is
//! `shape`'s, loss `loss`'s.

use crate::LabError;
use crate::cmd::run;
use crate::state::LabHost;

/// A veth pair: `eth0` in the host namespace `host`, its peer `peer` in namespace `other`.
fn veth(host: &str, peer: &str, other: &str) -> Result<(), LabError> {
    run(&[
        "ip", "link", "add", "eth0", "netns", host, "type", "veth", "peer", "name", peer, "netns", other,
    ])
    .map(drop)
}

/// Joins the hosts' namespaces (already made) as `topology` says. With a switch, `made_switch`
/// hears its name as soon as it exists, so that a failure later still removes it.
pub(crate) fn join_hosts(
    name: &str,
    topology: &str,
    hosts: &[LabHost],
    max_mtu: Option<u32>,
    mut made_switch: impl FnMut(&str) -> Result<(), LabError>,
) -> Result<(), LabError> {
    if topology == "point-to-point" {
        veth(&hosts[0].namespace, "eth0", &hosts[1].namespace)?;
    } else {
        let sw = format!("{name}-sw");
        run(&["ip", "netns", "add", &sw])?;
        made_switch(&sw)?;
        // The switch forwards frames and nothing else: no addresses, no IPv6 chatter.
        run(&[
            "ip",
            "netns",
            "exec",
            &sw,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ])?;
        if topology == "bridge" {
            run(&["ip", "-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        }
        for (i, h) in hosts.iter().enumerate() {
            let port = format!("p{}", i + 1);
            veth(&h.namespace, &port, &sw)?;
            if let Some(m) = max_mtu {
                run(&["ip", "-n", &sw, "link", "set", &port, "mtu", &m.to_string()])?;
            }
            if topology == "bridge" {
                run(&["ip", "-n", &sw, "link", "set", &port, "master", "br0"])?;
            } else {
                run(&["ip", "-n", &sw, "link", "set", &port, "promisc", "on"])?;
            }
            run(&["ip", "-n", &sw, "link", "set", &port, "up"])?;
        }
        if topology == "bridge" {
            if let Some(m) = max_mtu {
                run(&["ip", "-n", &sw, "link", "set", "br0", "mtu", &m.to_string()])?;
            }
            run(&["ip", "-n", &sw, "link", "set", "br0", "up"])?;
        }
    }
    Ok(())
}

/// A host's `eth0`: its MAC, MTU, offload limit under nftables loss, address, and up.
pub(crate) fn configure_eth0(h: &mut LabHost, netem: bool) -> Result<(), LabError> {
    let ns = h.namespace.clone();
    run(&["ip", "-n", &ns, "link", "set", "eth0", "address", &h.mac])?;
    if let Some(m) = h.link.mtu {
        run(&["ip", "-n", &ns, "link", "set", "eth0", "mtu", &m.to_string()])?;
        h.backends.mtu = Some("ip link".into());
    }
    if !netem && h.link.loss_percent.is_some_and(|p| p > 0.0) {
        // One wire packet per skb, so that loss drops packets, not 64 KiB offload bursts.
        run(&["ip", "-n", &ns, "link", "set", "eth0", "gso_max_segs", "1"])?;
    }
    run(&[
        "ip",
        "-n",
        &ns,
        "addr",
        "add",
        &format!("{}/24", h.address),
        "dev",
        "eth0",
    ])?;
    run(&["ip", "-n", &ns, "link", "set", "eth0", "up"])?;
    Ok(())
}
