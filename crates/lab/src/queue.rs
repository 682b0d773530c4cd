//! The queue in front of a link's shaped rate: tbf's FIFO at the depth the link spec gives
//! (`buffer=` as time at the rate or as frames, `limit=` as frames, else 50 ms), or an AQM
//! (`aqm=fq_codel`, `aqm=cake`) as tbf's child; and the record of each ([`LinkQueue`]). Also
//! whether the kernel has a qdisc at all, asked before a lab is made. A spec and a rate in,
//! tc run and a record out.

use crate::LabError;
use crate::cmd::run;
use crate::link::{AQMS, LinkError, LinkSpec};
use linerate_core::result::lab::LinkQueue;

/// The depth of tbf's FIFO where the spec gives none (`tc ... tbf latency 50ms`).
const DEFAULT_LATENCY_MS: u64 = 50;

/// The tc arguments of one shaped queue and its record (its `way` and `at` left for the caller).
#[derive(Debug)]
struct Plan {
    /// After `tbf`: rate, burst and the FIFO's size.
    tbf: Vec<String>,
    /// The AQM as tbf's child, after `qdisc add dev D parent 1:1 handle 10:`.
    child: Option<Vec<String>>,
    record: LinkQueue,
}

/// The queue `spec` asks for on a tbf of `rate` bits/s whose largest frame is `mtu` + 14. A
/// bucket of 2 ms at the rate (at least two frames) keeps the rate exact over any window past a
/// few ms. A buffer in time is that many bytes at the rate (tbf's `limit`, at least one frame);
/// in frames, that many full frames.
fn plan(spec: &LinkSpec, rate: f64, mtu: u32) -> Plan {
    let frame = u64::from(mtu) + 14;
    let burst = ((rate / 8.0 * 0.002) as u64).max(2 * frame);
    let at_rate = |us: u64| ((rate / 8.0 * us as f64 / 1e6).round() as u64).max(frame);
    let packets = spec.buffer_packets.or(spec.limit_packets);
    let bytes = match (spec.buffer_us, packets) {
        (Some(us), _) => Some(at_rate(us)),
        (None, Some(p)) => Some(u64::from(p) * frame),
        (None, None) => None,
    };
    let mut tbf = vec![
        "rate".to_string(),
        format!("{}bit", rate as u64),
        "burst".into(),
        burst.to_string(),
    ];
    let mut record = LinkQueue {
        way: String::new(),
        at: String::new(),
        shaper: "tbf".into(),
        kind: "fifo".into(),
        rate_bits_per_second: rate,
        depth_ms: spec.buffer_us.map(|us| us as f64 / 1000.0),
        depth_bytes: bytes,
        depth_packets: packets,
        default_depth: false,
        text: String::new(),
    };
    let Some(aqm) = &spec.aqm else {
        match bytes {
            Some(b) => tbf.extend(["limit".into(), b.to_string()]),
            None => {
                tbf.extend(["latency".into(), format!("{DEFAULT_LATENCY_MS}ms")]);
                // tc sizes the FIFO as the rate times the latency plus the bucket (q_tbf.c).
                record.depth_ms = Some(DEFAULT_LATENCY_MS as f64);
                record.depth_bytes = Some(at_rate(DEFAULT_LATENCY_MS * 1000) + burst);
                record.default_depth = true;
            }
        }
        record.text = match (record.depth_ms, record.depth_packets) {
            (Some(ms), _) if record.default_depth => {
                format!("tbf fifo {ms} ms (default; {} bytes)", record.depth_bytes.unwrap_or(0))
            }
            (Some(ms), _) => format!("tbf fifo {ms} ms ({} bytes)", record.depth_bytes.unwrap_or(0)),
            (None, Some(p)) => format!("tbf fifo {p} packets ({} bytes)", record.depth_bytes.unwrap_or(0)),
            (None, None) => "tbf fifo".into(),
        };
        return Plan {
            tbf,
            child: None,
            record,
        };
    };
    // The child holds the packets; tbf's own FIFO goes unused.
    tbf.extend(["latency".into(), format!("{DEFAULT_LATENCY_MS}ms")]);
    let mut child = vec![aqm.clone()];
    record.kind = aqm.clone();
    record.text = format!("tbf + {aqm}");
    match (aqm.as_str(), spec.buffer_packets.or(spec.limit_packets), bytes) {
        ("fq_codel", Some(p), _) => {
            child.extend(["limit".into(), p.to_string()]);
            record.depth_bytes = None;
            record.text += &format!(", limit {p} packets");
        }
        (_, _, Some(b)) => {
            let key = if aqm == "cake" { "memlimit" } else { "memory_limit" };
            child.extend([key.into(), b.to_string()]);
            record.text += &format!(", memory {b} bytes");
        }
        _ => {}
    }
    Plan {
        tbf,
        child: Some(child),
        record,
    }
}

/// A tbf of `rate` on `dev` in namespace `ns` with the queue `spec` asks for; its record.
pub(crate) fn tbf(ns: &str, dev: &str, rate: f64, mtu: u32, spec: &LinkSpec) -> Result<LinkQueue, LabError> {
    let plan = plan(spec, rate, mtu);
    let mut args: Vec<&str> = vec![
        "tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
    ];
    args.extend(plan.tbf.iter().map(String::as_str));
    run(&args)?;
    if let Some(child) = &plan.child {
        let mut args: Vec<&str> = vec![
            "tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:",
        ];
        args.extend(child.iter().map(String::as_str));
        run(&args)?;
    }
    Ok(plan.record)
}

/// Whether the kernel takes qdisc `args` (`netem delay 1ms`, `fq_codel`): tried as the root of
/// the loopback of a throwaway namespace `{name}-probe`, removed again.
pub(crate) fn kernel_has_qdisc(name: &str, args: &[&str]) -> bool {
    let probe = format!("{name}-probe");
    if run(&["ip", "netns", "add", &probe]).is_err() {
        return false;
    }
    let mut add = vec!["tc", "-n", &probe, "qdisc", "add", "dev", "lo", "root"];
    add.extend_from_slice(args);
    let ok = run(&["ip", "-n", &probe, "link", "set", "lo", "up"]).is_ok() && run(&add).is_ok();
    let _ = run(&["ip", "netns", "del", &probe]);
    ok
}

/// Refuses, before anything is made, an `aqm=` whose qdisc this kernel lacks, naming the
/// `--link` that asked for it and the module. Asked once per AQM.
pub(crate) fn check_aqms(name: &str, links: &[String], specs: &[LinkSpec]) -> Result<(), LabError> {
    for (aqm, module) in AQMS {
        if !specs.iter().any(|s| s.aqm.as_deref() == Some(aqm)) || kernel_has_qdisc(name, &[aqm]) {
            continue;
        }
        let arg = links
            .iter()
            .rev()
            .find(|l| l.contains(&format!("aqm={aqm}")))
            .cloned()
            .unwrap_or_else(|| format!("aqm={aqm}"));
        return Err(LabError::Link {
            arg,
            source: LinkError::NoQdisc {
                aqm: aqm.into(),
                module: module.into(),
            },
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::parse;

    fn queue(spec: &str, rate: f64) -> Plan {
        plan(&parse(spec).expect("valid"), rate, 1500)
    }

    #[test]
    fn a_buffer_in_time_is_that_many_bytes_at_the_rate() {
        let p = queue("buffer=200ms", 100e6);
        assert_eq!(p.tbf, ["rate", "100000000bit", "burst", "25000", "limit", "2500000"]);
        assert!(p.child.is_none());
        assert_eq!(p.record.depth_ms, Some(200.0));
        assert_eq!(p.record.depth_bytes, Some(2_500_000));
        assert_eq!(p.record.text, "tbf fifo 200 ms (2500000 bytes)");
        let p = queue("buffer=5ms", 100e6);
        assert_eq!(p.record.depth_bytes, Some(62_500));
        // Never less than one frame, or nothing would pass.
        assert_eq!(queue("buffer=1ms", 1e6).record.depth_bytes, Some(1514));
    }

    #[test]
    fn a_buffer_in_packets_is_that_many_full_frames() {
        let p = queue("buffer=300p", 100e6);
        assert_eq!(p.tbf[4..], ["limit", "454200"]);
        assert_eq!((p.record.depth_packets, p.record.depth_ms), (Some(300), None));
        assert_eq!(p.record.text, "tbf fifo 300 packets (454200 bytes)");
        // limit= sizes the same FIFO, as before buffer= existed.
        assert_eq!(queue("limit=300", 100e6).tbf, p.tbf);
    }

    #[test]
    fn without_a_buffer_the_fifo_is_50ms_and_says_it_is_the_default() {
        let p = queue("", 100e6);
        assert_eq!(p.tbf[4..], ["latency", "50ms"]);
        assert!(p.record.default_depth);
        // 50 ms at 100 Mbit/s plus the 25000-byte bucket, as tc sizes it.
        assert_eq!(p.record.depth_bytes, Some(650_000));
        assert_eq!(p.record.text, "tbf fifo 50 ms (default; 650000 bytes)");
    }

    #[test]
    fn an_aqm_is_tbfs_child_and_takes_the_buffer_as_its_limit() {
        let p = queue("aqm=fq_codel", 100e6);
        assert_eq!(p.child.as_deref(), Some(&["fq_codel".to_string()][..]));
        assert_eq!(
            (p.record.kind.as_str(), p.record.text.as_str()),
            ("fq_codel", "tbf + fq_codel")
        );
        assert_eq!(p.record.depth_bytes, None);
        let p = queue("aqm=fq_codel,buffer=300p", 100e6);
        assert_eq!(p.child.expect("child"), ["fq_codel", "limit", "300"]);
        let p = queue("aqm=cake,buffer=200ms", 100e6);
        assert_eq!(p.child.expect("child"), ["cake", "memlimit", "2500000"]);
        assert_eq!(p.record.text, "tbf + cake, memory 2500000 bytes");
    }
}
