//! Link specs: `rate=1gbit,delay=10ms,jitter=1ms,loss=0.5%,reorder=1%,duplicate=0.1%,mtu=9000,
//! limit=1000`, and where they apply (`--link SPEC`, `--link h2:SPEC`, `--link h1-h2:SPEC`).
//!
//! Every property is emulated at the egress of a host: a link spec on h1 shapes what h1 sends.
//! A spec for all links or for the pair h1-h2 applies to both ends' egress, so `delay=10ms`
//! gives a one-way delay of 10 ms each way and a round trip of 20 ms.

use anyhow::{Context, bail};
use linerate_core::units::BitRate;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What one host's egress does to the packets it sends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    pub rate_bits_per_second: Option<f64>,
    pub delay_us: Option<u64>,
    pub jitter_us: Option<u64>,
    /// Probability a packet is dropped, percent.
    pub loss_percent: Option<f64>,
    /// Probability a packet is held back behind the next one, percent.
    pub reorder_percent: Option<f64>,
    /// Probability a packet is sent twice, percent.
    pub duplicate_percent: Option<f64>,
    pub mtu: Option<u32>,
    /// Packets queued at most in the emulation (and bytes = limit x MTU in the rate limiter).
    pub limit_packets: Option<u32>,
}

pub fn duration_us(v: &str) -> anyhow::Result<u64> {
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len()));
    let n: f64 = num
        .parse()
        .with_context(|| format!("'{v}' is not a time (examples: 10ms, 250us, 1s)"))?;
    let mult = match unit {
        "us" => 1.0,
        "ms" | "" => 1e3,
        "s" => 1e6,
        _ => bail!("'{v}' is not a time (examples: 10ms, 250us, 1s)"),
    };
    anyhow::ensure!(
        n.is_finite() && n >= 0.0 && n * mult <= 60e6,
        "'{v}' is not a time from 0 to 60 s"
    );
    Ok((n * mult).round() as u64)
}

fn percent(v: &str) -> anyhow::Result<f64> {
    let n: f64 = v
        .trim_end_matches('%')
        .parse()
        .with_context(|| format!("'{v}' is not a percentage (example: 0.5%)"))?;
    anyhow::ensure!((0.0..=100.0).contains(&n), "'{v}' is not a percentage from 0 to 100");
    Ok(n)
}

impl LinkSpec {
    /// Parses `key=value,key=value`.
    pub fn parse(text: &str) -> anyhow::Result<LinkSpec> {
        let mut s = LinkSpec::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .with_context(|| format!("'{part}' is not key=value"))?;
            match key {
                "rate" => {
                    let r: BitRate = value.parse()?;
                    anyhow::ensure!(r.0 >= 8000.0, "rate '{value}' is below 8 kbit/s");
                    s.rate_bits_per_second = Some(r.0);
                }
                "delay" => s.delay_us = Some(duration_us(value)?),
                "jitter" => s.jitter_us = Some(duration_us(value)?),
                "loss" => s.loss_percent = Some(percent(value)?),
                "reorder" => s.reorder_percent = Some(percent(value)?),
                "duplicate" => s.duplicate_percent = Some(percent(value)?),
                "mtu" => {
                    let m: u32 = value
                        .parse()
                        .with_context(|| format!("mtu '{value}' is not a number"))?;
                    anyhow::ensure!((576..=65_535).contains(&m), "mtu {m} is not between 576 and 65535");
                    s.mtu = Some(m);
                }
                "limit" => {
                    let l: u32 = value
                        .parse()
                        .with_context(|| format!("limit '{value}' is not a packet count"))?;
                    anyhow::ensure!(l >= 1, "limit must be at least 1 packet");
                    s.limit_packets = Some(l);
                }
                _ => bail!("unknown link property '{key}' (rate, delay, jitter, loss, reorder, duplicate, mtu, limit)"),
            }
        }
        if s.jitter_us.is_some_and(|j| j > 0) && s.delay_us.is_none() {
            bail!("jitter needs a delay (delay=10ms,jitter=1ms)");
        }
        Ok(s)
    }

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
        }
    }

    /// True when a property needs packets held or copied: delay, jitter, reorder, duplicate.
    pub fn needs_relay(&self) -> bool {
        self.delay_us.is_some_and(|d| d > 0)
            || self.jitter_us.is_some_and(|j| j > 0)
            || self.reorder_percent.is_some_and(|p| p > 0.0)
            || self.duplicate_percent.is_some_and(|p| p > 0.0)
    }

    pub fn delay(&self) -> Duration {
        Duration::from_micros(self.delay_us.unwrap_or(0))
    }

    /// The spec written back in the form it is typed.
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
        if parts.is_empty() {
            "(unshaped)".into()
        } else {
            parts.join(",")
        }
    }
}

/// Where a `--link` applies.
#[derive(Clone, Debug, PartialEq)]
pub enum Scope {
    All,
    /// One host's egress.
    Host(usize),
    /// Both ends of the link between two hosts (two-host labs).
    Pair(usize, usize),
}

/// Parses `SPEC`, `hX:SPEC` or `hX-hY:SPEC`.
pub fn parse_link_arg(arg: &str, hosts: usize) -> anyhow::Result<(Scope, LinkSpec)> {
    let host = |name: &str| -> anyhow::Result<usize> {
        let n: usize = name
            .strip_prefix('h')
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("'{name}' is not a lab host (h1..h{hosts})"))?;
        anyhow::ensure!((1..=hosts).contains(&n), "'{name}' is not a lab host (h1..h{hosts})");
        Ok(n)
    };
    if let Some((scope, spec)) = arg.split_once(':')
        && !scope.contains('=')
    {
        let spec = LinkSpec::parse(spec)?;
        if let Some((a, b)) = scope.split_once('-') {
            let (a, b) = (host(a)?, host(b)?);
            anyhow::ensure!(a != b, "'{scope}' joins a host to itself");
            anyhow::ensure!(
                hosts == 2,
                "per-pair links ({scope}) need --hosts 2; with a bridge use per-host hX:SPEC"
            );
            return Ok((Scope::Pair(a, b), spec));
        }
        return Ok((Scope::Host(host(scope)?), spec));
    }
    Ok((Scope::All, LinkSpec::parse(arg)?))
}

/// Each host's egress spec after applying every `--link` in order (later ones win).
pub fn resolve(args: &[String], hosts: usize) -> anyhow::Result<Vec<LinkSpec>> {
    let mut per_host = vec![LinkSpec::default(); hosts];
    for arg in args {
        let (scope, spec) = parse_link_arg(arg, hosts).with_context(|| format!("--link {arg}"))?;
        match scope {
            Scope::All => per_host.iter_mut().for_each(|h| *h = h.overlay(&spec)),
            Scope::Host(h) => per_host[h - 1] = per_host[h - 1].overlay(&spec),
            Scope::Pair(a, b) => {
                for h in [a, b] {
                    per_host[h - 1] = per_host[h - 1].overlay(&spec);
                }
            }
        }
    }
    Ok(per_host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_property() {
        let s =
            LinkSpec::parse("rate=1gbit,delay=10ms,jitter=1ms,loss=0.5%,reorder=1%,duplicate=0.1%,mtu=9000,limit=1000")
                .expect("valid");
        assert_eq!(s.rate_bits_per_second, Some(1e9));
        assert_eq!(s.delay_us, Some(10_000));
        assert_eq!(s.jitter_us, Some(1_000));
        assert_eq!(s.loss_percent, Some(0.5));
        assert_eq!(s.reorder_percent, Some(1.0));
        assert_eq!(s.duplicate_percent, Some(0.1));
        assert_eq!(s.mtu, Some(9000));
        assert_eq!(s.limit_packets, Some(1000));
        assert!(s.needs_relay());
        assert_eq!(LinkSpec::parse("delay=250us").expect("ok").delay_us, Some(250));
        assert!(!LinkSpec::parse("rate=100mbit,loss=1%").expect("ok").needs_relay());
    }

    #[test]
    fn rejects_bad_specs_by_name() {
        for (bad, needle) in [
            ("speed=1", "unknown link property 'speed'"),
            ("loss=120%", "percentage from 0 to 100"),
            ("delay=fast", "not a time"),
            ("rate=x", "not a rate"),
            ("mtu=100", "between 576"),
            ("jitter=1ms", "jitter needs a delay"),
            ("delay", "not key=value"),
        ] {
            let e = LinkSpec::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn overrides_apply_per_host_and_pair() {
        let links = ["delay=10ms,rate=100mbit".to_string(), "h2:delay=50ms".to_string()];
        let r = resolve(&links, 3).expect("valid");
        assert_eq!(r[0].delay_us, Some(10_000));
        assert_eq!(r[1].delay_us, Some(50_000));
        assert_eq!(r[1].rate_bits_per_second, Some(100e6));
        let r = resolve(&["h1-h2:loss=1%".to_string()], 2).expect("valid");
        assert_eq!(r[0].loss_percent, Some(1.0));
        assert_eq!(r[1].loss_percent, Some(1.0));
        assert!(resolve(&["h1-h2:loss=1%".to_string()], 3).is_err());
        assert!(resolve(&["h4:loss=1%".to_string()], 3).is_err());
    }

    #[test]
    fn describes_itself_as_typed() {
        let s = LinkSpec::parse("rate=100mbit,delay=10ms,loss=1%").expect("valid");
        assert_eq!(s.describe(), "rate=100.000Mbit/s,delay=10ms,loss=1%");
    }
}
