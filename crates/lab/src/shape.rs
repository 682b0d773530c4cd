//! tc on a host's link. Its egress: netem for every property where the kernel has it, else tbf
//! for the rate (delay and the rest then go to the relay, loss to nftables). Its receive side:
//! the rate alone, as tbf on the switch's port toward the host (bridge and relay labs: where a
//! real switch queues an incast), or, point to point, at the one sender's egress. A two-host
//! lab whose link sets its queue (`buffer=`, `aqm=`) holds both ways on the switch's ports
//! instead: a queue on the sender's own eth0 is kept short by TCP small queues (the sending
//! socket waits for the qdisc to drain), so only a queue past the host fills as a router's
//! does. Hosts in, their qdiscs set and their `backends` and `queues` filled in.

use crate::LabError;
use crate::cmd::run;
use crate::queue::tbf;
use crate::state::LabHost;
use linerate_core::result::lab::LinkQueue;

/// The rate each host's `eth0` sends at: its own rate; point to point, also no more than the
/// peer's, whose only way in is this end's egress. None: unshaped.
/// With `on_switch` (a two-host lab whose switch ports hold both ways), none.
pub(crate) fn egress_rates(hosts: &[LabHost], topology: &str, on_switch: bool) -> Vec<Option<f64>> {
    let own: Vec<Option<f64>> = hosts.iter().map(|h| h.link.rate_bits_per_second).collect();
    if on_switch {
        return vec![None; own.len()];
    }
    if topology != "point-to-point" {
        return own;
    }
    (0..own.len()).map(|i| slower(own[i], own[1 - i])).collect()
}

/// The slower of two ends' rates, either where only one has one.
fn slower(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A queue's record for one way of a host's link.
fn placed(q: &LinkQueue, way: &str, at: &str) -> LinkQueue {
    LinkQueue {
        way: way.into(),
        at: at.into(),
        ..q.clone()
    }
}

/// netem's queue where its spec gives no limit, packets (tc-netem(8)).
const NETEM_LIMIT: u32 = 1000;

/// Rate (tbf) or everything (netem) on a host's egress; `rate` is what [`egress_rates`] gives.
pub(crate) fn shape_egress(h: &mut LabHost, netem: bool, rate: Option<f64>) -> Result<(), LabError> {
    let ns = h.namespace.clone();
    let l = h.link.clone();
    if netem && (l.needs_relay() || l.loss_percent.is_some() || rate.is_some()) {
        let mut args: Vec<String> = ["tc", "-n", &ns, "qdisc", "add", "dev", "eth0", "root", "netem"]
            .map(String::from)
            .to_vec();
        if let Some(d) = l.delay_us {
            args.extend(["delay".into(), format!("{d}us")]);
            if let Some(j) = l.jitter_us {
                args.push(format!("{j}us"));
            }
        }
        for (key, v) in [
            ("loss", l.loss_percent),
            ("reorder", l.reorder_percent),
            ("duplicate", l.duplicate_percent),
        ] {
            if let Some(p) = v {
                args.extend([key.into(), format!("{p}%")]);
            }
        }
        if let Some(r) = rate {
            args.extend(["rate".into(), format!("{}bit", r as u64)]);
        }
        if let Some(lim) = l.limit_packets {
            args.extend(["limit".into(), lim.to_string()]);
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&a)?;
        if let Some(r) = rate {
            let packets = l.limit_packets.unwrap_or(NETEM_LIMIT);
            h.queues.push(LinkQueue {
                way: "out".into(),
                at: format!("{}'s eth0", h.name),
                shaper: "netem".into(),
                kind: "fifo".into(),
                rate_bits_per_second: r,
                depth_ms: None,
                depth_bytes: None,
                depth_packets: Some(packets),
                default_depth: l.limit_packets.is_none(),
                text: format!(
                    "netem fifo {packets} packets{}",
                    if l.limit_packets.is_none() { " (default)" } else { "" }
                ),
            });
        }
        let b = &mut h.backends;
        let netem = Some("netem".to_string());
        b.delay = l.delay_us.and(netem.clone());
        b.jitter = l.jitter_us.and(netem.clone());
        b.loss = l.loss_percent.and(netem.clone());
        b.reorder = l.reorder_percent.and(netem.clone());
        b.duplicate = l.duplicate_percent.and(netem.clone());
        b.rate = l.rate_bits_per_second.and(netem);
        return Ok(());
    }
    if let Some(rate) = rate {
        let q = tbf(&ns, "eth0", rate, l.mtu.unwrap_or(1500), &l)?;
        h.queues.push(placed(&q, "out", &format!("{}'s eth0", h.name)));
        if l.rate_bits_per_second.is_some() {
            h.backends.rate = Some("tbf".into());
        }
    }
    Ok(())
}

/// The receive side of each host's rate: tbf on the switch's port toward the host (`switch`
/// names the switch namespace; frames the bridge forwards and frames the relay writes with
/// sendmmsg both leave through that port's qdisc), so that what several hosts send to one
/// meets its rate as one queue. Point to point the peer's egress already carries no more than
/// the host's rate ([`egress_rates`]), and that is recorded. `max_mtu` is the largest MTU in
/// the lab: the largest frame a port carries. With `on_switch` (two hosts), the port toward a
/// host also holds what the other sends: at the slower end's rate, in the sender's queue (the
/// receiver's where the sender's spec sets none).
pub(crate) fn shape_ingress(
    hosts: &mut [LabHost],
    switch: Option<&str>,
    netem: bool,
    max_mtu: Option<u32>,
    on_switch: bool,
) -> Result<(), LabError> {
    let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    let specs: Vec<_> = hosts.iter().map(|h| h.link.clone()).collect();
    for i in 0..hosts.len() {
        let own = specs[i].rate_bits_per_second;
        let (rate, spec) = if on_switch {
            let from = 1 - i;
            let spec = if specs[from].sets_queue() {
                &specs[from]
            } else {
                &specs[i]
            };
            (slower(own, specs[from].rate_bits_per_second), spec)
        } else {
            (own, &specs[i])
        };
        let Some(rate) = rate else {
            continue;
        };
        let Some(sw) = switch else {
            // Point to point: the peer's egress queue is this host's way in.
            let peer = &hosts[1 - i];
            let out = peer.queues.iter().find(|q| q.way == "out").cloned();
            let via = format!("{} on {}'s eth0", if netem { "netem" } else { "tbf" }, names[1 - i]);
            let h = &mut hosts[i];
            if own.is_some() {
                h.backends.rate_in = Some(via);
            }
            h.queues.extend(out.map(|q| LinkQueue { way: "in".into(), ..q }));
            continue;
        };
        let port = format!("p{}", i + 1);
        let q = tbf(sw, &port, rate, max_mtu.unwrap_or(1500).max(1500), spec)?;
        let at = format!("switch port {port}");
        if on_switch {
            let from = &mut hosts[1 - i];
            from.queues.push(placed(&q, "out", &at));
            if from.link.rate_bits_per_second.is_some() {
                from.backends.rate = Some(format!("tbf on {at}"));
            }
        }
        let h = &mut hosts[i];
        h.queues.push(placed(&q, "in", &at));
        if own.is_some() {
            h.backends.rate_in = Some(format!("tbf on {at}"));
        }
    }
    for h in hosts.iter_mut() {
        h.queues.sort_by(|a, b| b.way.cmp(&a.way));
        h.backends.queue = queue_text(&h.queues);
    }
    Ok(())
}

/// The queues of a host's link in one line: `tbf fifo 200 ms (2500000 bytes), out on switch
/// port p2, in on switch port p1`, or each way on its own where they differ.
fn queue_text(queues: &[LinkQueue]) -> Option<String> {
    let first = queues.first()?;
    let places = |q: &LinkQueue| format!("{} on {}", q.way, q.at);
    Some(if queues.iter().all(|q| q.text == first.text) {
        let at: Vec<String> = queues.iter().map(places).collect();
        format!("{}, {}", first.text, at.join(", "))
    } else {
        let each: Vec<String> = queues.iter().map(|q| format!("{} {}", places(q), q.text)).collect();
        each.join("; ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_core::result::lab::{Backends, LinkSpec};

    fn host(rate: Option<f64>) -> LabHost {
        LabHost {
            name: "h".into(),
            namespace: "t-h".into(),
            address: "10.211.0.1".into(),
            mac: "02:4c:52:00:00:01".into(),
            link: LinkSpec {
                rate_bits_per_second: rate,
                ..LinkSpec::default()
            },
            backends: Backends::default(),
            agent: "10.211.0.1:5301".into(),
            agent_pid: None,
            http: None,
            queues: Vec::new(),
        }
    }

    /// Point to point, each end sends no faster than the other end may receive.
    #[test]
    fn issue_24_point_to_point_sends_at_the_slower_ends_rate() {
        let pair = |a, b| egress_rates(&[host(a), host(b)], "point-to-point", false);
        assert_eq!(pair(Some(100e6), Some(50e6)), [Some(50e6), Some(50e6)]);
        assert_eq!(pair(None, Some(50e6)), [Some(50e6), Some(50e6)]);
        assert_eq!(pair(None, None), [None, None]);
        // Through a switch each host sends at its own rate; the switch's port holds the rest.
        let hosts = [host(Some(100e6)), host(Some(50e6)), host(None)];
        assert_eq!(egress_rates(&hosts, "bridge", false), [Some(100e6), Some(50e6), None]);
        // A two-host lab whose switch holds its queue sends unshaped into it.
        assert_eq!(egress_rates(&hosts[..2], "relay", true), [None, None]);
    }
}
