//! Link specs: `rate=1gbit,delay=10ms,jitter=1ms,loss=0.5%,reorder=1%,duplicate=0.1%,mtu=9000,
//! limit=1000,buffer=200ms,aqm=fq_codel`, and where they apply (`--link SPEC`, `--link h2:SPEC`, `--link h1-h2:SPEC`).
//! Text in, [`LinkSpec`] per host out (the type is the result document's, so a result records
//! the spec as parsed); what emulates it is the set-up's business.
//!
//! A host's rate limits its link both ways: what it sends and what it receives. Every other
//! property is emulated at the egress of a host: a link spec on h1 delays, drops, reorders and
//! duplicates what h1 sends. A spec for all links or for the pair h1-h2 applies to both ends,
//! so `delay=10ms` gives a one-way delay of 10 ms each way and a round trip of 20 ms. Times follow the one rule
//! of [`TimeSpan`]: a bare number is seconds (`delay=0.01`), so write the unit (`delay=10ms`).

pub use linerate_core::result::lab::LinkSpec;
use linerate_core::units::{BitRate, TimeSpan, UnitError};

/// A `--link` that cannot be applied, named by what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("'{0}' is not key=value")]
    NotKeyValue(String),
    #[error("unknown link property '{0}' (rate, delay, jitter, loss, reorder, duplicate, mtu, limit, buffer, aqm)")]
    Unknown(String),
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error("rate '{0}' is below 8 kbit/s")]
    RateTooLow(String),
    #[error("'{0}' is not a time from 0 to 60 s")]
    TimeRange(String),
    #[error("'{0}' is not a percentage (example: 0.5%)")]
    Percent(String),
    #[error("'{0}' is not a percentage from 0 to 100")]
    PercentRange(String),
    #[error("mtu '{0}' is not a number")]
    Mtu(String),
    #[error("mtu {0} is not between 576 and 65535")]
    MtuRange(u32),
    #[error("limit '{0}' is not a packet count")]
    Limit(String),
    #[error("limit must be at least 1 packet")]
    LimitZero,
    #[error("buffer '{0}' is not a time (buffer=200ms) or a packet count (buffer=300p)")]
    Buffer(String),
    #[error("buffer '{0}' is empty: a queue holds at least 1 packet or more than 0 s")]
    BufferZero(String),
    #[error("buffer '{0}' is over 60 s or 1000000 packets")]
    BufferRange(String),
    #[error("aqm '{0}' is not fq_codel or cake")]
    Aqm(String),
    #[error("buffer and limit both size the queue: give one")]
    BufferAndLimit,
    #[error("{0} needs a rate, whose queue it is (rate=100mbit,{0}=...)")]
    QueueWithoutRate(&'static str),
    #[error("aqm={aqm} needs the kernel's {module}, which this kernel does not have")]
    NoQdisc { aqm: String, module: String },
    #[error("jitter needs a delay (delay=10ms,jitter=1ms)")]
    JitterWithoutDelay,
    #[error("'{name}' is not a lab host (h1..h{hosts})")]
    NoHost { name: String, hosts: usize },
    #[error("'{0}' joins a host to itself")]
    SamePair(String),
    #[error("per-pair links ({0}) need --hosts 2; with a bridge use per-host hX:SPEC")]
    PairNeedsTwoHosts(String),
}

/// A delay or jitter in microseconds: a [`TimeSpan`] (`10ms`, `250us`, `0.01`) up to 60 s.
pub fn duration_us(v: &str) -> Result<u64, LinkError> {
    let t: TimeSpan = v.parse()?;
    if t.0 > std::time::Duration::from_secs(60) {
        return Err(LinkError::TimeRange(v.to_string()));
    }
    // At most 60 s, so the microseconds fit; rounded to the nearest, as tc rounds.
    Ok(((t.0.as_nanos() + 500) / 1000) as u64)
}

fn percent(v: &str) -> Result<f64, LinkError> {
    let n: f64 = v
        .trim_end_matches('%')
        .parse()
        .map_err(|_| LinkError::Percent(v.to_string()))?;
    if !(0.0..=100.0).contains(&n) {
        return Err(LinkError::PercentRange(v.to_string()));
    }
    Ok(n)
}

/// Most frames a queue may be given, and most time: a depth past these is no queue a link has.
const MAX_BUFFER_PACKETS: u32 = 1_000_000;

/// A queue depth: a time at the link's rate (`200ms`, as [`duration_us`] reads it, bare number
/// seconds) or a count of frames (`300p`). Out: (microseconds, packets), one of them set.
fn buffer(v: &str) -> Result<(Option<u64>, Option<u32>), LinkError> {
    if let Some(n) = v.strip_suffix('p') {
        let p: u32 = n.parse().map_err(|_| LinkError::Buffer(v.to_string()))?;
        return match p {
            0 => Err(LinkError::BufferZero(v.to_string())),
            p if p > MAX_BUFFER_PACKETS => Err(LinkError::BufferRange(v.to_string())),
            p => Ok((None, Some(p))),
        };
    }
    let us = match duration_us(v) {
        Ok(us) => us,
        Err(LinkError::TimeRange(_)) => return Err(LinkError::BufferRange(v.to_string())),
        Err(_) => return Err(LinkError::Buffer(v.to_string())),
    };
    if us == 0 {
        return Err(LinkError::BufferZero(v.to_string()));
    }
    Ok((Some(us), None))
}

/// The kernel module of each queue discipline `aqm=` takes.
pub const AQMS: [(&str, &str); 2] = [("fq_codel", "sch_fq_codel"), ("cake", "sch_cake")];

/// Parses `key=value,key=value`.
pub fn parse(text: &str) -> Result<LinkSpec, LinkError> {
    let mut s = LinkSpec::default();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| LinkError::NotKeyValue(part.to_string()))?;
        match key {
            "rate" => {
                let r: BitRate = value.parse()?;
                if r.0 < 8000.0 {
                    return Err(LinkError::RateTooLow(value.to_string()));
                }
                s.rate_bits_per_second = Some(r.0);
            }
            "delay" => s.delay_us = Some(duration_us(value)?),
            "jitter" => s.jitter_us = Some(duration_us(value)?),
            "loss" => s.loss_percent = Some(percent(value)?),
            "reorder" => s.reorder_percent = Some(percent(value)?),
            "duplicate" => s.duplicate_percent = Some(percent(value)?),
            "mtu" => {
                let m: u32 = value.parse().map_err(|_| LinkError::Mtu(value.to_string()))?;
                if !(576..=65_535).contains(&m) {
                    return Err(LinkError::MtuRange(m));
                }
                s.mtu = Some(m);
            }
            "limit" => {
                let l: u32 = value.parse().map_err(|_| LinkError::Limit(value.to_string()))?;
                if l < 1 {
                    return Err(LinkError::LimitZero);
                }
                s.limit_packets = Some(l);
            }
            "buffer" => (s.buffer_us, s.buffer_packets) = buffer(value)?,
            "aqm" => {
                if !AQMS.iter().any(|(a, _)| *a == value) {
                    return Err(LinkError::Aqm(value.to_string()));
                }
                s.aqm = Some(value.to_string());
            }
            _ => return Err(LinkError::Unknown(key.to_string())),
        }
    }
    Ok(s)
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
pub fn parse_link_arg(arg: &str, hosts: usize) -> Result<(Scope, LinkSpec), LinkError> {
    let host = |name: &str| -> Result<usize, LinkError> {
        name.strip_prefix('h')
            .and_then(|n| n.parse().ok())
            .filter(|n| (1..=hosts).contains(n))
            .ok_or_else(|| LinkError::NoHost {
                name: name.to_string(),
                hosts,
            })
    };
    if let Some((scope, spec)) = arg.split_once(':')
        && !scope.contains('=')
    {
        let spec = parse(spec)?;
        if let Some((a, b)) = scope.split_once('-') {
            let (a, b) = (host(a)?, host(b)?);
            if a == b {
                return Err(LinkError::SamePair(scope.to_string()));
            }
            if hosts != 2 {
                return Err(LinkError::PairNeedsTwoHosts(scope.to_string()));
            }
            return Ok((Scope::Pair(a, b), spec));
        }
        return Ok((Scope::Host(host(scope)?), spec));
    }
    Ok((Scope::All, parse(arg)?))
}

/// Each host's spec after applying every `--link` in order, each merged over the ones before
/// it property by property (later ones win); an error names the `--link` it came from. A jitter
/// needs a delay from the same `--link` or an earlier one (`--link delay=10ms --link
/// h2:jitter=1ms`).
pub fn resolve(args: &[String], hosts: usize) -> Result<Vec<LinkSpec>, crate::LabError> {
    let mut per_host = vec![LinkSpec::default(); hosts];
    let fail = |arg: &String, source| crate::LabError::Link {
        arg: arg.clone(),
        source,
    };
    for arg in args {
        let (scope, spec) = parse_link_arg(arg, hosts).map_err(|e| fail(arg, e))?;
        let touched: Vec<usize> = match scope {
            Scope::All => (0..hosts).collect(),
            Scope::Host(h) => vec![h - 1],
            Scope::Pair(a, b) => vec![a - 1, b - 1],
        };
        for h in touched {
            per_host[h] = per_host[h].overlay(&spec);
            let s = &per_host[h];
            if s.jitter_us.is_some_and(|j| j > 0) && s.delay_us.is_none() {
                return Err(fail(arg, LinkError::JitterWithoutDelay));
            }
            if s.limit_packets.is_some() && (s.buffer_us.is_some() || s.buffer_packets.is_some()) {
                return Err(fail(arg, LinkError::BufferAndLimit));
            }
        }
    }
    // A queue is the rate's: checked once every --link has had its say, as a rate may come
    // later (--link h1:buffer=200ms --link rate=100mbit).
    for (h, s) in per_host.iter().enumerate() {
        let key = if s.aqm.is_some() { "aqm" } else { "buffer" };
        if s.sets_queue() && s.rate_bits_per_second.is_none() {
            let arg = args
                .iter()
                .rev()
                .find(|a| {
                    parse_link_arg(a, hosts).is_ok_and(|(scope, spec)| {
                        spec.sets_queue()
                            && match scope {
                                Scope::All => true,
                                Scope::Host(x) => x == h + 1,
                                Scope::Pair(a, b) => a == h + 1 || b == h + 1,
                            }
                    })
                })
                .cloned()
                .unwrap_or_default();
            return Err(fail(&arg, LinkError::QueueWithoutRate(key)));
        }
    }
    Ok(per_host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_property() {
        let s = parse("rate=1gbit,delay=10ms,jitter=1ms,loss=0.5%,reorder=1%,duplicate=0.1%,mtu=9000,limit=1000")
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
        assert_eq!(parse("delay=250us").expect("ok").delay_us, Some(250));
        assert!(!parse("rate=100mbit,loss=1%").expect("ok").needs_relay());
        assert_eq!(parse("delay=32.5ms").expect("ok").delay_us, Some(32_500));
        assert_eq!(parse("delay=100µs").expect("ok").delay_us, Some(100));
    }

    #[test]
    fn a_bare_delay_is_seconds() {
        // A bare number here once meant milliseconds; now it is seconds, as everywhere.
        assert_eq!(parse("delay=0.01").expect("ok").delay_us, Some(10_000));
        assert_eq!(parse("delay=2,jitter=0.5").expect("ok").jitter_us, Some(500_000));
        let e = parse("delay=61").expect_err("over 60 s").to_string();
        assert!(e.contains("from 0 to 60 s"), "{e}");
        assert_eq!(parse("delay=60").expect("60 s is the limit").delay_us, Some(60_000_000));
    }

    #[test]
    fn rejects_bad_specs_by_name() {
        for (bad, needle) in [
            ("speed=1", "unknown link property 'speed'"),
            ("loss=120%", "percentage from 0 to 100"),
            ("delay=fast", "not a time"),
            ("rate=x", "not a rate"),
            ("mtu=100", "between 576"),
            ("delay", "not key=value"),
            ("delay=-1ms", "not a time"),
            ("limit=0", "at least 1 packet"),
        ] {
            let e = parse(bad).expect_err(bad).to_string();
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
        let e = resolve(&["h4:loss=1%".to_string()], 3).expect_err("no h4");
        assert_eq!(e.to_string(), "--link h4:loss=1%");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("'h4' is not a lab host")));
        let e = resolve(&["h2:delay=1ms".to_string(), "jitter=1ms".to_string()], 3).expect_err("h1 has no delay");
        assert_eq!(e.to_string(), "--link jitter=1ms");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("jitter needs a delay")));
    }

    /// `--link SPEC --link h5:SPEC` gives h5 the second spec merged over the first,
    /// property by property, and leaves every other host with the first.
    #[test]
    fn issue_24_a_hosts_spec_merges_over_the_global_one_for_every_property() {
        let global = "rate=100mbit,delay=1ms,jitter=0.1ms,loss=1%,reorder=1%,duplicate=1%,mtu=1500,limit=100";
        let base = parse(global).expect("valid");
        for (one, read) in [
            (
                "rate=50mbit",
                (|s: &LinkSpec| s.rate_bits_per_second == Some(50e6)) as fn(&LinkSpec) -> bool,
            ),
            ("delay=5ms", |s| s.delay_us == Some(5_000)),
            ("jitter=2ms", |s| s.jitter_us == Some(2_000)),
            ("loss=2%", |s| s.loss_percent == Some(2.0)),
            ("reorder=2%", |s| s.reorder_percent == Some(2.0)),
            ("duplicate=2%", |s| s.duplicate_percent == Some(2.0)),
            ("mtu=9000", |s| s.mtu == Some(9000)),
            ("limit=7", |s| s.limit_packets == Some(7)),
        ] {
            let r = resolve(&[global.to_string(), format!("h5:{one}")], 6).expect(one);
            for (i, spec) in r.iter().enumerate() {
                if i == 4 {
                    assert!(read(spec), "h5 takes {one}: {spec:?}");
                    // Everything else stays as the global spec has it.
                    let (a, b) = (
                        serde_json::to_value(spec).expect("json"),
                        serde_json::to_value(&base).expect("json"),
                    );
                    let changed = a
                        .as_object()
                        .expect("object")
                        .iter()
                        .filter(|(k, v)| b[k.as_str()] != **v)
                        .count();
                    assert_eq!(changed, 1, "h5 merges {one} over the rest: {spec:?}");
                } else {
                    assert_eq!(*spec, base, "h{} keeps the global spec under h5:{one}", i + 1);
                }
            }
        }
    }

    #[test]
    fn a_buffer_is_a_time_or_a_packet_count() {
        let s = parse("rate=100mbit,delay=10ms,buffer=200ms").expect("valid");
        assert_eq!((s.buffer_us, s.buffer_packets), (Some(200_000), None));
        let s = parse("rate=100mbit,buffer=300p").expect("valid");
        assert_eq!((s.buffer_us, s.buffer_packets), (None, Some(300)));
        assert_eq!(parse("buffer=250us").expect("ok").buffer_us, Some(250));
        // A bare number is seconds, as for every time.
        assert_eq!(parse("buffer=0.2").expect("ok").buffer_us, Some(200_000));
        let s = parse("rate=1gbit,aqm=fq_codel").expect("valid");
        assert_eq!(s.aqm.as_deref(), Some("fq_codel"));
        assert!(s.sets_queue() && !s.needs_relay());
        assert_eq!(parse("aqm=cake").expect("ok").aqm.as_deref(), Some("cake"));
        assert_eq!(
            parse("rate=100mbit,buffer=200ms,aqm=cake").expect("ok").describe(),
            "rate=100.000Mbit/s,buffer=200ms,aqm=cake"
        );
        assert_eq!(
            parse("rate=1mbit,buffer=30p").expect("ok").describe(),
            "rate=1.000Mbit/s,buffer=30p"
        );
    }

    #[test]
    fn a_bad_buffer_or_aqm_is_named_in_one_line() {
        for (bad, needle) in [
            (
                "buffer=lots",
                "buffer 'lots' is not a time (buffer=200ms) or a packet count",
            ),
            ("buffer=-5ms", "buffer '-5ms' is not a time"),
            ("buffer=12xp", "buffer '12xp' is not a time"),
            ("buffer=0p", "buffer '0p' is empty"),
            ("buffer=0ms", "buffer '0ms' is empty"),
            ("buffer=61s", "buffer '61s' is over 60 s"),
            ("buffer=1000001p", "over 60 s or 1000000 packets"),
            ("aqm=red", "aqm 'red' is not fq_codel or cake"),
            ("aqm=", "aqm '' is not fq_codel or cake"),
        ] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(e.contains(needle), "{bad}: {e}");
            assert!(!e.contains('\n'), "{bad}: one line: {e}");
        }
        let fails = |links: &[&str], hosts, needle: &str| {
            let links: Vec<String> = links.iter().map(|l| l.to_string()).collect();
            let e = resolve(&links, hosts).expect_err(needle);
            let source = std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_default();
            assert!(source.contains(needle), "{links:?}: {e}: {source}");
            e.to_string()
        };
        let e = fails(&["buffer=200ms"], 2, "buffer needs a rate");
        assert_eq!(e, "--link buffer=200ms");
        assert_eq!(
            fails(&["rate=1gbit", "h3:aqm=cake"], 2, "'h3' is not a lab host"),
            "--link h3:aqm=cake"
        );
    }

    #[test]
    fn a_queue_takes_a_rate_from_any_link_and_no_limit_beside_it() {
        // The rate may come after the buffer.
        let r = resolve(&["h1:buffer=200ms".to_string(), "rate=100mbit".to_string()], 2).expect("valid");
        assert_eq!(r[0].buffer_us, Some(200_000));
        assert_eq!(r[1].buffer_us, None);
        let links = ["rate=100mbit".to_string(), "h2:aqm=cake".to_string()];
        assert_eq!(resolve(&links, 3).expect("valid")[1].aqm.as_deref(), Some("cake"));
        let e = resolve(&["h2:aqm=fq_codel".to_string()], 2).expect_err("no rate");
        assert_eq!(e.to_string(), "--link h2:aqm=fq_codel");
        assert!(
            std::error::Error::source(&e)
                .is_some_and(|s| s.to_string() == "aqm needs a rate, whose queue it is (rate=100mbit,aqm=...)")
        );
        let e = resolve(&["rate=1mbit,limit=100".to_string(), "h1:buffer=5ms".to_string()], 2).expect_err("both");
        assert_eq!(e.to_string(), "--link h1:buffer=5ms");
        assert!(
            std::error::Error::source(&e)
                .is_some_and(|s| s.to_string().contains("buffer and limit both size the queue"))
        );
    }

    #[test]
    fn describes_itself_as_typed() {
        let s = parse("rate=100mbit,delay=10ms,loss=1%").expect("valid");
        assert_eq!(s.describe(), "rate=100.000Mbit/s,delay=10ms,loss=1%");
    }
}
