//! tc on a host's egress: netem for every property where the kernel has it, else tbf for the
//! rate (delay and the rest then go to the relay, loss to nftables). A host in, its qdisc set and
//! its `backends` filled in for what the qdisc emulates.

use crate::LabError;
use crate::cmd::run;
use crate::state::LabHost;

/// Rate (tbf) or everything (netem) on a host's egress.
pub(crate) fn shape_egress(h: &mut LabHost, netem: bool) -> Result<(), LabError> {
    let ns = h.namespace.clone();
    let l = h.link.clone();
    let mtu = f64::from(l.mtu.unwrap_or(1500));
    if netem && (l.needs_relay() || l.loss_percent.is_some() || l.rate_bits_per_second.is_some()) {
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
        if let Some(r) = l.rate_bits_per_second {
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
    if let Some(rate) = l.rate_bits_per_second {
        // A bucket of 2 ms at the rate (at least two full frames) keeps the rate exact over any
        // window past a few ms; the queue holds 50 ms unless limit= says how many packets.
        let burst = ((rate / 8.0 * 0.002) as u64).max((2.0 * (mtu + 14.0)) as u64);
        let mut args = vec![
            "tc".to_string(),
            "-n".into(),
            ns,
            "qdisc".into(),
            "add".into(),
            "dev".into(),
            "eth0".into(),
            "root".into(),
            "tbf".into(),
        ];
        args.extend([
            "rate".into(),
            format!("{}bit", rate as u64),
            "burst".into(),
            burst.to_string(),
        ]);
        match l.limit_packets {
            Some(p) => args.extend(["limit".into(), (u64::from(p) * (mtu as u64 + 14)).to_string()]),
            None => args.extend(["latency".into(), "50ms".into()]),
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&a)?;
        h.backends.rate = Some("tbf".into());
    }
    Ok(())
}
