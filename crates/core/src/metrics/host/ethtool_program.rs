//! The `ethtool` program as the fallback when ethtool's netlink fails, and the parsers of its
//! output (`ethtool IF`, `-k`, `-g`, `-l`); `tc qdisc show` for the qdiscs' parameters.

use super::QUERY_TIMEOUT;
use super::config::{ChannelCounts, RingSizes};
use super::offloads::FeatureState;
use super::pieces::{LinkSettings, Reply};
use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

/// The `ethtool` program, run only when netlink failed.
pub(super) struct EthtoolProgram<'a> {
    pub(super) interface: &'a str,
}

impl EthtoolProgram<'_> {
    pub(super) fn link(&self) -> Reply<LinkSettings> {
        self.run(&[]).and_then(|t| parse_ethtool_settings(&t))
    }

    pub(super) fn features(&self) -> Reply<BTreeMap<String, FeatureState>> {
        self.run(&["-k"])
            .and_then(|t| Some(parse_ethtool_features(&t)).filter(|f| !f.is_empty()))
    }

    pub(super) fn rings(&self) -> Reply<RingSizes> {
        self.run(&["-g"]).and_then(|t| {
            let (max, now) = parse_ethtool_sections(&t)?;
            Some(RingSizes {
                rx: now.get("RX").copied(),
                rx_max: max.get("RX").copied(),
                tx: now.get("TX").copied(),
                tx_max: max.get("TX").copied(),
            })
        })
    }

    pub(super) fn channels(&self) -> Reply<ChannelCounts> {
        self.run(&["-l"]).and_then(|t| {
            let (max, now) = parse_ethtool_sections(&t)?;
            Some(ChannelCounts {
                rx: now.get("RX").copied(),
                tx: now.get("TX").copied(),
                combined: now.get("Combined").copied(),
                rx_max: max.get("RX").copied(),
                tx_max: max.get("TX").copied(),
                combined_max: max.get("Combined").copied(),
            })
        })
    }

    /// `ethtool OPTION IF`'s standard output, bounded in time.
    fn run(&self, option: &[&str]) -> Reply<String> {
        let mut args = option.to_vec();
        args.push(self.interface);
        // PATH may lack the sbin directories for a non-root user.
        run_program(&["ethtool", "/usr/sbin/ethtool", "/sbin/ethtool"], &args)
    }
}

/// The first of `programs` that is installed, run with `args`: its standard output, bounded
/// in time ([`QUERY_TIMEOUT`]); "Operation not supported" is [`Reply::Unsupported`].
pub(super) fn run_program(programs: &[&str], args: &[&str]) -> Reply<String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    for program in programs {
        let spawned = Command::new(program)
            .args(args)
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Reply::Failed(format!("running {program}: {e}")),
        };
        let started = std::time::Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < QUERY_TIMEOUT => std::thread::sleep(Duration::from_millis(5)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Reply::Failed(format!("no answer within {} s", QUERY_TIMEOUT.as_secs()));
                }
                Err(e) => return Reply::Failed(format!("waiting for {program}: {e}")),
            }
        };
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_string(&mut stdout);
        }
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        if status.success() {
            return Reply::Got(stdout);
        }
        if stderr.contains("Operation not supported") || stdout.contains("Operation not supported") {
            return Reply::Unsupported;
        }
        let first = stderr.lines().next().unwrap_or_default().trim().to_string();
        return Reply::Failed(if first.is_empty() { format!("{status}") } else { first });
    }
    Reply::Failed("not installed".into())
}

/// `tc qdisc show dev IF`: one line per qdisc with its parameters (`tbf 8001: root rate 100Mbit
/// burst 12500b lat 50ms`), the kernel's own words; `refcnt` (a count of users) left out.
pub(super) fn qdiscs(interface: &str) -> Reply<Vec<String>> {
    run_program(
        &["tc", "/usr/sbin/tc", "/sbin/tc"],
        &["qdisc", "show", "dev", interface],
    )
    .and_then(|t| Some(parse_qdiscs(&t)))
}

fn parse_qdiscs(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("qdisc "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let mut out = Vec::new();
            let mut i = 0;
            while i < words.len() {
                if words[i] == "refcnt" {
                    i += 2;
                    continue;
                }
                out.push(words[i]);
                i += 1;
            }
            out.join(" ")
        })
        .collect()
}

impl Reply<String> {
    /// Parses a program's output; output it cannot parse counts as "not reported".
    fn and_then<T>(self, parse: impl FnOnce(String) -> Option<T>) -> Reply<T> {
        match self {
            Reply::Got(text) => parse(text).map_or(Reply::Unsupported, Reply::Got),
            Reply::Unsupported => Reply::Unsupported,
            Reply::Failed(e) => Reply::Failed(e),
        }
    }
}

/// `ethtool IF`: the `Speed:`, `Duplex:` and `Auto-negotiation:` lines; `None` without a speed
/// or duplex line (as for `lo`).
pub(super) fn parse_ethtool_settings(text: &str) -> Option<LinkSettings> {
    let mut l = LinkSettings::default();
    let mut seen = false;
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "Speed" => {
                seen = true;
                l.speed_mbit_per_second = value
                    .strip_suffix("Mb/s")
                    .and_then(|v| v.parse().ok())
                    .filter(|&s| s != 0);
            }
            "Duplex" => {
                seen = true;
                l.duplex = match value {
                    "Full" => Some("full".into()),
                    "Half" => Some("half".into()),
                    _ => None,
                };
            }
            "Auto-negotiation" => {
                l.autoneg = match value {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                };
            }
            _ => {}
        }
    }
    seen.then_some(l)
}

/// `ethtool -k IF`: `name: on|off` with ` [fixed]` when the driver does not let it change;
/// group lines (`tcp-segmentation-offload: on`) as well as the indented kernel features.
pub(super) fn parse_ethtool_features(text: &str) -> BTreeMap<String, FeatureState> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.trim().split_once(':')?;
            let active = match rest.split_whitespace().next()? {
                "on" => true,
                "off" => false,
                _ => return None,
            };
            Some((
                name.to_string(),
                FeatureState {
                    active,
                    changeable: !rest.contains("[fixed]"),
                },
            ))
        })
        .collect()
}

/// `ethtool -g IF` or `ethtool -l IF`: (pre-set maximums, current settings), each `KEY: N`
/// (`RX`, `TX`, `Combined`); a key with `n/a` is left out. `None` without either section.
pub(super) type Sections = (BTreeMap<String, u32>, BTreeMap<String, u32>);
pub(super) fn parse_ethtool_sections(text: &str) -> Option<Sections> {
    let mut max = BTreeMap::new();
    let mut now = BTreeMap::new();
    let mut section: Option<&mut BTreeMap<String, u32>> = None;
    let mut seen = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Pre-set maximums") {
            section = Some(&mut max);
            seen = true;
        } else if line.starts_with("Current hardware settings") {
            section = Some(&mut now);
            seen = true;
        } else if let (Some(map), Some((key, value))) = (section.as_mut(), line.split_once(':'))
            && let Ok(v) = value.trim().parse()
        {
            map.insert(key.trim().to_string(), v);
        }
    }
    seen.then_some((max, now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdiscs_keep_their_parameters_without_refcnt() {
        let text = "qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 12500b lat 50ms \nqdisc noqueue 0: dev lo root refcnt 2\n";
        assert_eq!(
            parse_qdiscs(text),
            [
                "tbf 8001: root rate 100Mbit burst 12500b lat 50ms",
                "noqueue 0: dev lo root"
            ]
        );
    }
    use crate::metrics::host::fixture;
    use crate::metrics::host::offloads::offloads_from_features;

    #[test]
    fn parses_captured_ethtool_features() {
        let f = parse_ethtool_features(&fixture("ethtool-k.eth0"));
        assert_eq!(
            f.get("rx-checksumming"),
            Some(&FeatureState {
                active: true,
                changeable: false
            })
        );
        assert_eq!(
            f.get("tx-tcp-ecn-segmentation"),
            Some(&FeatureState {
                active: false,
                changeable: false
            })
        );
        let (offloads, fixed) = offloads_from_features(&f);
        for (key, on) in [
            ("tso", true),
            ("gso", true),
            ("gro", true),
            ("lro", false),
            ("scatter-gather", true),
        ] {
            assert_eq!(offloads.get(key), Some(&on), "{key}");
        }
        assert_eq!(fixed, ["lro", "rx-checksum", "rx-gro-hw", "tx-udp-segmentation"]);
        let veth = offloads_from_features(&parse_ethtool_features(&fixture("ethtool-k.veth"))).0;
        assert_eq!(veth.get("gro"), Some(&false), "veth has GRO off by default");
    }

    #[test]
    fn parses_captured_ethtool_settings() {
        assert_eq!(
            parse_ethtool_settings(&fixture("ethtool.veth")),
            Some(LinkSettings {
                speed_mbit_per_second: Some(10_000),
                duplex: Some("full".into()),
                autoneg: Some(false)
            })
        );
        assert_eq!(
            parse_ethtool_settings(&fixture("ethtool.eth0")),
            Some(LinkSettings {
                speed_mbit_per_second: None,
                duplex: None,
                autoneg: Some(false)
            })
        );
        assert_eq!(parse_ethtool_settings("Settings for lo:\n\tLink detected: yes\n"), None);
    }

    #[test]
    fn parses_captured_ethtool_rings_and_channels() {
        let (max, now) = parse_ethtool_sections(&fixture("ethtool-g.eth0")).expect("sections");
        assert_eq!(
            (max.get("RX"), max.get("TX"), now.get("RX"), now.get("TX")),
            (Some(&256), Some(&256), Some(&256), Some(&256))
        );
        assert_eq!(max.get("RX Mini"), None, "n/a is left out");
        let (max, now) = parse_ethtool_sections(&fixture("ethtool-l.eth0")).expect("sections");
        assert_eq!(
            (max.get("Combined"), now.get("Combined"), now.get("RX")),
            (Some(&1), Some(&1), None)
        );
        let (max, now) = parse_ethtool_sections(&fixture("ethtool-l.veth")).expect("sections");
        assert_eq!(
            (max.get("RX"), now.get("RX"), now.get("Combined")),
            (Some(&2), Some(&1), None)
        );
        assert_eq!(parse_ethtool_sections("netlink error: Operation not supported\n"), None);
    }
}
