//! The CPU part of the configuration: online CPUs, sockets and cores (from /sys topology or
//! /proc/cpuinfo), frequency and its scaling governor and driver. Out: [`CpuConfig`].

use super::CpuConfig;
use super::info::cpu_model;
use super::sysfs::{cpu_list, read_trimmed};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Sockets and physical cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CpuTopology {
    pub(super) sockets: u32,
    pub(super) cores: u32,
}

pub(super) const TOPOLOGY_FILES: &[&str] = &[
    "physical_package_id",
    "die_id",
    "core_id",
    "core_cpus_list",
    "thread_siblings_list",
];

/// Counts sockets and cores of the `online` CPUs from a listing of their sysfs topology files
/// in `grep . /sys/devices/system/cpu/cpu*/topology/*` form (`.../cpu3/topology/core_id:1`).
/// A core is a distinct `core_cpus_list` (older kernels: `thread_siblings_list`), else a distinct
/// (package, die, core_id): core ids repeat across packages and dies.
pub(super) fn parse_cpu_topology(listing: &str, online: &[u32]) -> Option<CpuTopology> {
    let mut files: BTreeMap<u32, BTreeMap<&str, &str>> = BTreeMap::new();
    for line in listing.lines() {
        let Some((path, value)) = line.split_once(':') else {
            continue;
        };
        let mut parts = path.rsplit('/');
        let (Some(file), Some("topology"), Some(cpu)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Some(cpu) = cpu.strip_prefix("cpu").and_then(|n| n.parse().ok()) else {
            continue;
        };
        files.entry(cpu).or_default().insert(file, value.trim());
    }
    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    for cpu in online {
        let Some(f) = files.get(cpu) else { continue };
        let package = f.get("physical_package_id").copied();
        if let Some(p) = package {
            packages.insert(p.to_string());
        }
        let siblings = f.get("core_cpus_list").or_else(|| f.get("thread_siblings_list"));
        let core = match (siblings.and_then(|s| cpu_list(s)), package, f.get("core_id")) {
            (Some(list), _, _) => format!("{list:?}"),
            (None, Some(p), Some(c)) => format!("{p}/{}/{c}", f.get("die_id").unwrap_or(&"0")),
            _ => continue,
        };
        cores.insert(core);
    }
    if packages.is_empty() || cores.is_empty() {
        return None;
    }
    Some(CpuTopology {
        sockets: u32::try_from(packages.len()).ok()?,
        cores: u32::try_from(cores.len()).ok()?,
    })
}

/// Sockets and cores from /proc/cpuinfo's `physical id` and `core id` (x86 only).
pub(super) fn parse_cpuinfo_topology(cpuinfo: &str) -> Option<CpuTopology> {
    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    for block in cpuinfo.split("\n\n") {
        let field = |name: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        if let (Some(p), Some(c)) = (field("physical id"), field("core id")) {
            packages.insert(p.clone());
            cores.insert((p, c));
        }
    }
    if packages.is_empty() {
        return None;
    }
    Some(CpuTopology {
        sockets: u32::try_from(packages.len()).ok()?,
        cores: u32::try_from(cores.len()).ok()?,
    })
}

/// Processor numbers in /proc/cpuinfo (the online CPUs).
pub(super) fn parse_cpuinfo_processors(cpuinfo: &str) -> Vec<u32> {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == "processor")
        .filter_map(|(_, v)| v.trim().parse().ok())
        .collect()
}

/// Mean of /proc/cpuinfo's `cpu MHz` lines.
pub(super) fn parse_cpuinfo_mhz(cpuinfo: &str) -> Option<f64> {
    let mhz: Vec<f64> = cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == "cpu MHz")
        .filter_map(|(_, v)| v.trim().parse().ok())
        .filter(|v: &f64| v.is_finite())
        .collect();
    mean(&mhz)
}

pub(super) fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

pub(super) fn read_cpu(cpuinfo: Option<&str>, notes: &mut Vec<String>) -> CpuConfig {
    let online = read_trimmed("/sys/devices/system/cpu/online")
        .and_then(|t| cpu_list(&t))
        .or_else(|| cpuinfo.map(parse_cpuinfo_processors))
        .unwrap_or_default();
    if online.is_empty() {
        notes.push("cpu: neither /sys/devices/system/cpu/online nor /proc/cpuinfo lists the online CPUs".into());
    }
    let cpu_dir = |cpu: u32| PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}"));
    let mut listing = String::new();
    for &cpu in &online {
        for file in TOPOLOGY_FILES {
            let path = cpu_dir(cpu).join("topology").join(file);
            if let Some(value) = read_trimmed(&path) {
                listing.push_str(&format!("{}:{value}\n", path.display()));
            }
        }
    }
    let topology = parse_cpu_topology(&listing, &online).or_else(|| cpuinfo.and_then(parse_cpuinfo_topology));
    if topology.is_none() {
        notes.push("cpu: no topology in /sys/devices/system/cpu/cpu*/topology or /proc/cpuinfo".into());
    }
    let model = cpuinfo.and_then(cpu_model);
    if model.is_none() {
        notes.push("cpu: no `model name` in /proc/cpuinfo".into());
    }

    let mut current_khz = Vec::new();
    let mut max_khz = Vec::new();
    let mut governors = BTreeSet::new();
    let mut drivers = BTreeSet::new();
    for &cpu in &online {
        let freq = cpu_dir(cpu).join("cpufreq");
        let number = |file: &str| read_trimmed(freq.join(file)).and_then(|v| v.parse::<f64>().ok());
        current_khz.extend(number("scaling_cur_freq"));
        max_khz.extend(number("cpuinfo_max_freq"));
        governors.extend(read_trimmed(freq.join("scaling_governor")));
        drivers.extend(read_trimmed(freq.join("scaling_driver")));
    }
    let current_mhz = mean(&current_khz)
        .map(|k| k / 1000.0)
        .or_else(|| cpuinfo.and_then(parse_cpuinfo_mhz));
    if current_mhz.is_none() {
        notes.push("cpu: no current frequency in cpufreq or /proc/cpuinfo".into());
    }
    if governors.is_empty() {
        notes.push("cpu: no cpufreq (frequency set by firmware or a hypervisor): governor and max MHz unknown".into());
    }
    let join = |set: BTreeSet<String>| (!set.is_empty()).then(|| set.into_iter().collect::<Vec<_>>().join(","));
    CpuConfig {
        model,
        sockets: topology.map(|t| t.sockets),
        cores: topology.map(|t| t.cores),
        threads: (!online.is_empty()).then(|| u32::try_from(online.len()).unwrap_or(u32::MAX)),
        online,
        current_mhz,
        max_mhz: max_khz.iter().copied().reduce(f64::max).map(|k| k / 1000.0),
        governor: join(governors),
        scaling_driver: join(drivers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::host::fixture;

    #[test]
    fn parses_captured_cpuinfo() {
        let cpuinfo = fixture("cpuinfo");
        assert_eq!(cpu_model(&cpuinfo).as_deref(), Some("AMD EPYC"));
        assert_eq!(parse_cpuinfo_processors(&cpuinfo), [0, 1]);
        let mhz = parse_cpuinfo_mhz(&cpuinfo).expect("cpu MHz lines");
        assert!((mhz - 2596.136).abs() < 1e-9, "{mhz}");
        assert_eq!(
            parse_cpuinfo_topology(&cpuinfo),
            Some(CpuTopology { sockets: 1, cores: 2 })
        );
        assert_eq!(parse_cpuinfo_mhz("processor : 0\n"), None);
        assert_eq!(parse_cpuinfo_topology("processor : 0\nmodel name : X\n"), None);
    }

    #[test]
    fn counts_sockets_and_cores_from_a_topology_listing() {
        let here = fixture("topology");
        let online = cpu_list(fixture("cpu-online").trim()).expect("cpu list");
        assert_eq!(online, [0, 1]);
        assert_eq!(
            parse_cpu_topology(&here, &online),
            Some(CpuTopology { sockets: 1, cores: 2 })
        );

        // Hand-made: 2 sockets x 4 cores x 2 threads, cpu N and N+8 siblings, cpu15 offline.
        let big = fixture("topology.2s4c2t-offline15");
        let online: Vec<u32> = (0..15).collect();
        assert_eq!(
            parse_cpu_topology(&big, &online),
            Some(CpuTopology { sockets: 2, cores: 8 })
        );
        // Without the sibling lists, (package, die, core_id) tells the cores apart.
        let ids_only: String = big
            .lines()
            .filter(|l| !l.contains("_list"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            parse_cpu_topology(&ids_only, &online),
            Some(CpuTopology { sockets: 2, cores: 8 })
        );
        // Only CPUs 0-3 online: one socket, four cores.
        assert_eq!(
            parse_cpu_topology(&big, &[0, 1, 2, 3]),
            Some(CpuTopology { sockets: 1, cores: 4 })
        );
        assert_eq!(
            parse_cpu_topology("garbage\n/x/cpuZ/topology/core_id:1\n", &online),
            None
        );
        assert_eq!(parse_cpu_topology("", &[]), None);
    }
}
