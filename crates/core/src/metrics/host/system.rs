//! Host-wide facts from /proc and /sys: the recorded sysctls, memory, NUMA nodes, whether a
//! process (irqbalance) runs. Each reader notes what it could not read instead of failing.

use super::sysfs::{cpu_list, read_trimmed};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// Sysctls recorded with every result: socket buffer limits, TCP options, busy polling.
pub const SYSCTLS: &[&str] = &[
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.netdev_max_backlog",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_mtu_probing",
];

pub(super) fn read_sysctls(notes: &mut Vec<String>) -> BTreeMap<String, String> {
    let mut sysctls = BTreeMap::new();
    for name in SYSCTLS {
        // /proc/sys/net answers for the network namespace of the thread that opens it.
        let path = format!("/proc/sys/{}", name.replace('.', "/"));
        match std::fs::read_to_string(&path) {
            Ok(value) => {
                sysctls.insert(name.to_string(), collapse_whitespace(&value));
            }
            // Some net.core sysctls (busy_poll, netdev_max_backlog) are global and the kernel
            // registers them in the initial network namespace only.
            Err(e) if e.kind() == io::ErrorKind::NotFound => notes.push(format!(
                "sysctl {name}: not in this network namespace (or not in this kernel)"
            )),
            Err(e) => notes.push(format!("sysctl {name}: {e}")),
        }
    }
    sysctls
}

pub(super) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether any process under `proc_dir` (a /proc) has the command name `comm`.
pub(super) fn process_running(proc_dir: &Path, comm: &str) -> io::Result<bool> {
    for entry in std::fs::read_dir(proc_dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        // A process may exit between the listing and the read: skip it.
        if read_trimmed(entry.path().join("comm")).as_deref() == Some(comm) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// MemTotal from /proc/meminfo, bytes.
pub(super) fn parse_meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let mut words = line.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    let mult = match words.next() {
        Some("kB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    value.checked_mul(mult)
}

pub(super) fn read_numa_nodes(notes: &mut Vec<String>) -> Option<u32> {
    let count = read_trimmed("/sys/devices/system/node/online")
        .and_then(|t| cpu_list(&t))
        .map(|n| n.len())
        .or_else(|| {
            let dir = std::fs::read_dir("/sys/devices/system/node").ok()?;
            let nodes = dir
                .filter_map(|e| e.ok())
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("node"))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
                })
                .count();
            (nodes > 0).then_some(nodes)
        });
    if count.is_none() {
        notes.push("numa: /sys/devices/system/node lists no node (a kernel without NUMA support?)".into());
    }
    count.and_then(|c| u32::try_from(c).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::host::fixture;
    use crate::metrics::host::info::os_release_name;

    #[test]
    fn parses_captured_meminfo_and_os_release() {
        assert_eq!(parse_meminfo_total(&fixture("meminfo")), Some(24_684_084 * 1024));
        assert_eq!(parse_meminfo_total("MemTotal:  10\n"), Some(10));
        assert_eq!(parse_meminfo_total("MemFree: 10 kB\n"), None);
        assert_eq!(parse_meminfo_total("MemTotal: lots kB\n"), None);
        assert_eq!(parse_meminfo_total("MemTotal: 99999999999999999999 kB\n"), None);
        assert_eq!(
            os_release_name(&fixture("os-release")).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
    }

    #[test]
    fn collapses_sysctl_whitespace() {
        assert_eq!(collapse_whitespace("4096\t131072\t6291456\n"), "4096 131072 6291456");
        assert_eq!(collapse_whitespace("reno cubic  bbr\n"), "reno cubic bbr");
    }

    #[test]
    fn finds_a_process_by_command_name() {
        let dir = std::env::temp_dir().join(format!("linerate-proc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (pid, comm) in [("1", "init\n"), ("42", "irqbalance\n")] {
            std::fs::create_dir_all(dir.join(pid)).expect("mkdir");
            std::fs::write(dir.join(pid).join("comm"), comm).expect("write");
        }
        std::fs::create_dir_all(dir.join("self")).expect("mkdir");
        assert!(process_running(&dir, "irqbalance").expect("listing"));
        assert!(!process_running(&dir, "irqbalan").expect("listing"));
        std::fs::remove_dir_all(&dir).expect("cleanup");
        assert!(process_running(&dir, "irqbalance").is_err());
    }
}
