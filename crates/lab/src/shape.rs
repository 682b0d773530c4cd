//! tc on a host's link. Its egress: netem for every property where the kernel has it, else tbf
//! for the rate (delay and the rest then go to the relay, loss to nftables). Its receive side:
//! the rate alone, as tbf on the switch's port toward the host (bridge and relay labs: where a
//! real switch queues an incast), or, point to point, at the one sender's egress. Hosts in,
//! their qdiscs set and their `backends` filled in for what the qdiscs emulate.

use crate::LabError;
use crate::cmd::run;
use crate::state::LabHost;

/// A tbf of `rate` on `dev` in namespace `ns`. A bucket of 2 ms at the rate (at least two frames
/// of `mtu`) keeps the rate exact over any window past a few ms; the queue holds 50 ms unless
/// `limit` says how many packets.
fn tbf(ns: &str, dev: &str, rate: f64, mtu: u32, limit: Option<u32>) -> Result<(), LabError> {
    let frame = u64::from(mtu) + 14;
    let burst = ((rate / 8.0 * 0.002) as u64).max(2 * frame);
    let (rate, burst) = (format!("{}bit", rate as u64), burst.to_string());
    let queue = limit.map(|p| (u64::from(p) * frame).to_string());
    let mut args = vec![
        "tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst", &burst,
    ];
    match &queue {
        Some(bytes) => args.extend(["limit", bytes.as_str()]),
        None => args.extend(["latency", "50ms"]),
    }
    run(&args).map(drop)
}

/// The rate each host's `eth0` sends at: its own rate; point to point, also no more than the
/// peer's, whose only way in is this end's egress. None: unshaped.
pub(crate) fn egress_rates(hosts: &[LabHost], topology: &str) -> Vec<Option<f64>> {
    let own: Vec<Option<f64>> = hosts.iter().map(|h| h.link.rate_bits_per_second).collect();
    if topology != "point-to-point" {
        return own;
    }
    (0..own.len())
        .map(|i| match (own[i], own[1 - i]) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
        .collect()
}

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
        tbf(&ns, "eth0", rate, l.mtu.unwrap_or(1500), l.limit_packets)?;
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
/// the lab: the largest frame a port carries.
pub(crate) fn shape_ingress(
    hosts: &mut [LabHost],
    switch: Option<&str>,
    netem: bool,
    max_mtu: Option<u32>,
) -> Result<(), LabError> {
    let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    for (i, h) in hosts.iter_mut().enumerate() {
        let Some(rate) = h.link.rate_bits_per_second else {
            continue;
        };
        h.backends.rate_in = Some(match switch {
            Some(sw) => {
                let port = format!("p{}", i + 1);
                tbf(sw, &port, rate, max_mtu.unwrap_or(1500).max(1500), h.link.limit_packets)?;
                format!("tbf on switch port {port}")
            }
            None => format!("{} on {}'s eth0", if netem { "netem" } else { "tbf" }, names[1 - i]),
        });
    }
    Ok(())
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
        }
    }

    /// Point to point, each end sends no faster than the other end may receive.
    #[test]
    fn issue_24_point_to_point_sends_at_the_slower_ends_rate() {
        let pair = |a, b| egress_rates(&[host(a), host(b)], "point-to-point");
        assert_eq!(pair(Some(100e6), Some(50e6)), [Some(50e6), Some(50e6)]);
        assert_eq!(pair(None, Some(50e6)), [Some(50e6), Some(50e6)]);
        assert_eq!(pair(None, None), [None, None]);
        // Through a switch each host sends at its own rate; the switch's port holds the rest.
        let hosts = [host(Some(100e6)), host(Some(50e6)), host(None)];
        assert_eq!(egress_rates(&hosts, "bridge"), [Some(100e6), Some(50e6), None]);
    }
}
