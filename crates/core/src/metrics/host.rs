//! What a host is and how it is set up, recorded with every result so that a figure can be traced
//! to the machine and the configuration that produced it.
//!
//! [`HostInfo`] is the short identity: name, kernel, CPU model and count, distribution.
//! [`HostConfig`] is the configuration that moves network results: CPU topology and frequency
//! scaling, memory, NUMA, each tested interface's driver, link, MTU, offloads, rings, queues and
//! IRQ affinity, the stack's sysctls and irqbalance. [`read_config`] reads it and never fails:
//! whatever it cannot read is `None` (or absent from a map) plus a line in [`HostConfig::notes`].
//! `doctor` checks a `HostConfig` against tuning advice; nothing here changes the host.
//!
//! Network namespaces: an agent often runs inside a netns while /sys is the host's (not
//! remounted), so /sys/class/net/IF may be another namespace's interface or absent. Interface data
//! therefore comes from sources that answer for the calling thread's namespace first: ethtool's
//! generic netlink (through the `ethtool` crate), rtnetlink, SIOCETHTOOL ioctls and /proc. Device
//! files are read under /sys/bus/BUS/devices/DEV, named by rtnetlink's parent-device attributes
//! or the driver's bus address, which do not depend on the namespace; /sys/class/net/IF is used
//! only when its `ifindex` and `address` match the interface this namespace has under that name.
//! The `ethtool` program is run only when netlink fails.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// /etc/os-release PRETTY_NAME, when present.
    pub os: Option<String>,
    /// /proc/cpuinfo `model name` of the first CPU, when present.
    pub cpu_model: Option<String>,
    /// CPUs online (sysconf _SC_NPROCESSORS_ONLN).
    pub cores: usize,
}

impl HostInfo {
    pub fn read() -> HostInfo {
        let uname = nix::sys::utsname::uname().ok();
        let field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
            uname
                .as_ref()
                .map(|u| f(u).to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
        HostInfo {
            hostname: field(|u| u.nodename()),
            kernel: field(|u| u.release()),
            os: os_release_name(&os_release),
            cpu_model: cpu_model(&cpuinfo),
            cores: online_cpus(),
        }
    }
}

/// CPUs online now.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn os_release_name(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
}

/// The host's configuration as it affects network results. Every field that can be unknown is an
/// `Option`; [`HostConfig::notes`] says why a piece is missing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostConfig {
    /// uname nodename (of this UTS namespace).
    pub hostname: Option<String>,
    /// uname release (`uname -r`).
    pub kernel: Option<String>,
    /// /etc/os-release PRETTY_NAME.
    pub distribution: Option<String>,
    pub cpu: CpuConfig,
    /// NUMA nodes online (/sys/devices/system/node).
    pub numa_nodes: Option<u32>,
    /// /proc/meminfo MemTotal, bytes.
    pub memory_bytes: Option<u64>,
    /// The interfaces asked for, in the order asked. One this network namespace does not have
    /// holds its name only.
    pub interfaces: Vec<InterfaceConfig>,
    /// sysctl name (`net.core.rmem_max`) -> value as /proc/sys shows it, runs of whitespace
    /// collapsed to one space (`4096 131072 6291456`). Those of [`SYSCTLS`] that could be read.
    pub sysctls: BTreeMap<String, String>,
    /// Whether a process named `irqbalance` runs. Only this PID namespace's processes are seen:
    /// in a container `false` may mean "not visible".
    pub irqbalance_running: Option<bool>,
    /// What could not be read, and why; one line each.
    pub notes: Vec<String>,
}

/// The CPUs: what they are, how many, and how their frequency is managed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuConfig {
    /// /proc/cpuinfo `model name`.
    pub model: Option<String>,
    /// Physical packages with an online CPU.
    pub sockets: Option<u32>,
    /// Physical cores with an online CPU (hyper-threads counted once).
    pub cores: Option<u32>,
    /// Logical CPUs online.
    pub threads: Option<u32>,
    /// The online CPUs' numbers (/sys/devices/system/cpu/online).
    pub online: Vec<u32>,
    /// Mean current frequency over the online CPUs, MHz: cpufreq's `scaling_cur_freq`, else
    /// /proc/cpuinfo `cpu MHz` (which x86 fills from the TSC or APERF/MPERF).
    pub current_mhz: Option<f64>,
    /// The highest `cpuinfo_max_freq` of the online CPUs, MHz; absent without cpufreq.
    pub max_mhz: Option<f64>,
    /// cpufreq scaling governor; the distinct governors joined by `,` when CPUs differ; absent
    /// without cpufreq (common in VMs, where the hypervisor manages frequency).
    pub governor: Option<String>,
    /// cpufreq scaling driver (`intel_pstate`, `amd-pstate-epp`, `acpi-cpufreq`): with the
    /// p-state drivers `powersave` still scales with load.
    pub scaling_driver: Option<String>,
}

/// One network interface, as the calling thread's network namespace sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InterfaceConfig {
    pub name: String,
    /// if_nametoindex in this namespace; absent when the namespace has no such interface.
    pub ifindex: Option<u32>,
    /// rtnetlink link kind (`veth`, `bridge`, `vlan`, `bond`); absent for a device without one
    /// (a NIC, virtio-net, `lo`).
    pub kind: Option<String>,
    /// Whether this is the loopback interface (IFF_LOOPBACK).
    pub loopback: bool,
    /// The device under the interface as rtnetlink names it (`0000:3b:00.0`, `virtio2`).
    pub parent_device: Option<String>,
    /// The bus of [`InterfaceConfig::parent_device`] (`pci`, `virtio`).
    pub parent_bus: Option<String>,
    /// ETHTOOL_GDRVINFO driver name (`mlx5_core`, `virtio_net`, `veth`).
    pub driver: Option<String>,
    pub driver_version: Option<String>,
    pub firmware_version: Option<String>,
    /// ETHTOOL_GDRVINFO bus_info: the PCI address for PCI devices.
    pub bus_address: Option<String>,
    /// Link speed, Mbit/s; absent when the driver reports none or "unknown".
    pub speed_mbit_per_second: Option<u32>,
    /// `full` or `half`; absent when unknown.
    pub duplex: Option<String>,
    pub autoneg: Option<bool>,
    /// rtnetlink operational state (`up`, `down`, `lowerlayerdown`, `unknown`, ...).
    pub operstate: Option<String>,
    pub mtu_bytes: Option<u32>,
    /// The largest MTU the driver accepts (IFLA_MAX_MTU).
    pub max_mtu_bytes: Option<u32>,
    /// The largest GSO packet the stack builds for this device (IFLA_GSO_MAX_SIZE), bytes.
    pub gso_max_size_bytes: Option<u32>,
    /// The largest GRO packet the stack builds for this device (IFLA_GRO_MAX_SIZE), bytes.
    pub gro_max_size_bytes: Option<u32>,
    /// The root qdisc (`fq`, `fq_codel`, `mq`, `noqueue`).
    pub qdisc: Option<String>,
    /// Transmit queue length, packets.
    pub tx_queue_len_packets: Option<u32>,
    /// Offload -> active, for the offloads of [`OFFLOADS`] the device knows: `tso`, `gso`,
    /// `gro`, `lro`, `rx-checksum`, `tx-checksum`, `scatter-gather`, `rx-gro-hw`,
    /// `tx-udp-segmentation`, `rx-udp-gro-forwarding`, `rx-gro-list`.
    pub offloads: BTreeMap<String, bool>,
    /// Offloads in [`InterfaceConfig::offloads`] that the driver does not let be changed.
    pub fixed_offloads: Vec<String>,
    pub rings: RingSizes,
    pub channels: ChannelCounts,
    /// The IRQs of the interface's queues with their CPU affinity; empty for virtual interfaces.
    pub irqs: Vec<IrqAffinity>,
    /// The NUMA node of the device; absent when the device has none (`-1`) or is virtual.
    pub numa_node: Option<u32>,
    /// Which source gave each piece: key `driver`, `link`, `mtu`, `offloads`, `rings`,
    /// `channels`, `irqs`, `numa_node`; value `netlink`, `ioctl`, `ethtool program`, `sysfs`,
    /// `procfs`.
    pub sources: BTreeMap<String, String>,
}

/// Ring sizes, descriptors per ring; absent when the driver does not report them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RingSizes {
    pub rx: Option<u32>,
    pub rx_max: Option<u32>,
    pub tx: Option<u32>,
    pub tx_max: Option<u32>,
}

/// Channel (queue) counts; absent when the driver does not report them or has none of a kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelCounts {
    pub rx: Option<u32>,
    pub tx: Option<u32>,
    pub combined: Option<u32>,
    pub rx_max: Option<u32>,
    pub tx_max: Option<u32>,
    pub combined_max: Option<u32>,
}

/// One interrupt of an interface's queues.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IrqAffinity {
    pub irq: u32,
    /// The handler name from /proc/interrupts (`eth0-TxRx-3`, `virtio2-input.0`).
    pub name: String,
    /// The CPUs it may be delivered to (/proc/irq/N/smp_affinity_list).
    pub cpus: Vec<u32>,
    /// The CPUs it is delivered to (/proc/irq/N/effective_affinity_list): on x86 one CPU.
    pub effective_cpus: Option<Vec<u32>>,
}

impl InterfaceConfig {
    /// A device with hardware (or a hypervisor's device model) under it, as opposed to a
    /// software interface (`lo`, veth, bridge, vlan, tunnel).
    pub fn is_physical(&self) -> bool {
        !self.loopback
            && self.kind.is_none()
            && (self.parent_device.is_some() || self.bus_address.as_deref().is_some_and(|b| !b.is_empty()))
    }

    /// The CPUs this interface's queue interrupts are delivered to: each IRQ's effective
    /// affinity where the kernel reports it, else its affinity list.
    pub fn irq_cpus(&self) -> BTreeSet<u32> {
        self.irqs
            .iter()
            .flat_map(|i| match &i.effective_cpus {
                Some(e) if !e.is_empty() => e.clone(),
                _ => i.cpus.clone(),
            })
            .collect()
    }
}

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

/// An offload as [`InterfaceConfig::offloads`] names it.
struct Offload {
    /// The key in [`InterfaceConfig::offloads`].
    key: &'static str,
    /// The name `ethtool -K` takes.
    switch: &'static str,
    /// `ethtool -k`'s line for it (a group of kernel features, or one feature).
    group: &'static str,
    /// The kernel's feature strings (net/ethtool/common.c `netdev_features_strings`); the
    /// offload is on when any of them is active.
    features: &'static [&'static str],
}

const OFFLOADS_TABLE: &[Offload] = &[
    Offload {
        key: "tso",
        switch: "tso",
        group: "tcp-segmentation-offload",
        features: &["tx-tcp-segmentation", "tx-tcp6-segmentation"],
    },
    Offload {
        key: "gso",
        switch: "gso",
        group: "generic-segmentation-offload",
        features: &["tx-generic-segmentation"],
    },
    Offload {
        key: "gro",
        switch: "gro",
        group: "generic-receive-offload",
        features: &["rx-gro"],
    },
    Offload {
        key: "lro",
        switch: "lro",
        group: "large-receive-offload",
        features: &["rx-lro"],
    },
    Offload {
        key: "rx-checksum",
        switch: "rx",
        group: "rx-checksumming",
        features: &["rx-checksum"],
    },
    Offload {
        key: "tx-checksum",
        switch: "tx",
        group: "tx-checksumming",
        features: &["tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6"],
    },
    Offload {
        key: "scatter-gather",
        switch: "sg",
        group: "scatter-gather",
        features: &["tx-scatter-gather"],
    },
    Offload {
        key: "rx-gro-hw",
        switch: "rx-gro-hw",
        group: "rx-gro-hw",
        features: &["rx-gro-hw"],
    },
    Offload {
        key: "tx-udp-segmentation",
        switch: "tx-udp-segmentation",
        group: "tx-udp-segmentation",
        features: &["tx-udp-segmentation"],
    },
    Offload {
        key: "rx-udp-gro-forwarding",
        switch: "rx-udp-gro-forwarding",
        group: "rx-udp-gro-forwarding",
        features: &["rx-udp-gro-forwarding"],
    },
    Offload {
        key: "rx-gro-list",
        switch: "rx-gro-list",
        group: "rx-gro-list",
        features: &["rx-gro-list"],
    },
];

/// The keys [`InterfaceConfig::offloads`] may hold.
pub const OFFLOADS: &[&str] = &[
    "tso",
    "gso",
    "gro",
    "lro",
    "rx-checksum",
    "tx-checksum",
    "scatter-gather",
    "rx-gro-hw",
    "tx-udp-segmentation",
    "rx-udp-gro-forwarding",
    "rx-gro-list",
];

/// The name `ethtool -K IF NAME on|off` takes for an offload key (`rx-checksum` -> `rx`).
pub fn offload_switch(key: &str) -> Option<&'static str> {
    OFFLOADS_TABLE.iter().find(|o| o.key == key).map(|o| o.switch)
}

/// How long one kernel or program query may take before it is given up and noted.
const QUERY_TIMEOUT: Duration = Duration::from_secs(3);

/// Reads the host's configuration and that of `interfaces` in the calling thread's network
/// namespace. Never fails and never panics: a piece it cannot read is `None` plus a note.
pub fn read_config(interfaces: &[String]) -> HostConfig {
    let mut notes = Vec::new();
    let uname = nix::sys::utsname::uname()
        .map_err(|e| notes.push(format!("uname: {e}")))
        .ok();
    let uname_field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        uname.as_ref().map(|u| f(u).to_string_lossy().into_owned())
    };
    let distribution = ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| os_release_name(&t));
    if distribution.is_none() {
        notes.push("distribution: no PRETTY_NAME in /etc/os-release or /usr/lib/os-release".into());
    }
    let cpuinfo = read_noting("/proc/cpuinfo", &mut notes);
    let memory_bytes = read_noting("/proc/meminfo", &mut notes).and_then(|t| parse_meminfo_total(&t));
    if memory_bytes.is_none() {
        notes.push("memory: no MemTotal in /proc/meminfo".into());
    }
    let irqbalance_running = match process_running(Path::new("/proc"), "irqbalance") {
        Ok(running) => Some(running),
        Err(e) => {
            notes.push(format!("irqbalance: listing /proc: {e}"));
            None
        }
    };
    HostConfig {
        hostname: uname_field(|u| u.nodename()),
        kernel: uname_field(|u| u.release()),
        distribution,
        cpu: read_cpu(cpuinfo.as_deref(), &mut notes),
        numa_nodes: read_numa_nodes(&mut notes),
        memory_bytes,
        interfaces: read_interfaces(interfaces, &mut notes),
        sysctls: read_sysctls(&mut notes),
        irqbalance_running,
        notes,
    }
}

/// The interface the route to `peer` leaves by, in the calling thread's network namespace:
/// rtnetlink's answer to `ip route get PEER`, else the interface holding the local address a UDP
/// socket connected to `peer` would use (connecting sends nothing). A peer that is this host
/// (127.0.0.1, or one of its own addresses) gives the loopback interface.
pub fn interface_towards(peer: IpAddr) -> Option<String> {
    let peer = peer.to_canonical();
    if let Some(name) = rtnl::route_oif(peer)
        .ok()
        .and_then(|i| nix::net::if_::if_indextoname(i).ok())
    {
        return Some(name.to_string_lossy().into_owned());
    }
    interface_by_local_address(peer)
}

fn interface_by_local_address(peer: IpAddr) -> Option<String> {
    let unspecified: IpAddr = match peer {
        IpAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = std::net::UdpSocket::bind((unspecified, 0)).ok()?;
    socket.connect((peer, 9)).ok()?;
    let local = socket.local_addr().ok()?;
    if let std::net::SocketAddr::V6(v6) = local
        && v6.scope_id() != 0
    {
        return nix::net::if_::if_indextoname(v6.scope_id())
            .ok()
            .map(|n| n.to_string_lossy().into_owned());
    }
    let addresses = nix::ifaddrs::getifaddrs().ok()?;
    let mut loopback = None;
    for ifa in addresses {
        let flags = ifa.flags;
        if flags.contains(nix::net::if_::InterfaceFlags::IFF_LOOPBACK) && loopback.is_none() {
            loopback = Some(ifa.interface_name.clone());
        }
        let ip = ifa.address.as_ref().and_then(|a| {
            a.as_sockaddr_in()
                .map(|s| IpAddr::from(s.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|s| IpAddr::from(s.ip())))
        });
        // Traffic to one of this host's own addresses goes through the loopback interface.
        if ip == Some(local.ip()) && !local.ip().is_loopback() && local.ip() != peer {
            return Some(ifa.interface_name);
        }
    }
    if local.ip().is_loopback() || local.ip() == peer {
        return Some(loopback.unwrap_or_else(|| "lo".to_string()));
    }
    None
}

fn read_noting(path: &str, notes: &mut Vec<String>) -> Option<String> {
    std::fs::read_to_string(path)
        .map_err(|e| notes.push(format!("{path}: {e}")))
        .ok()
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_sysctls(notes: &mut Vec<String>) -> BTreeMap<String, String> {
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

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether any process under `proc_dir` (a /proc) has the command name `comm`.
fn process_running(proc_dir: &Path, comm: &str) -> io::Result<bool> {
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
fn parse_meminfo_total(text: &str) -> Option<u64> {
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

/// A kernel CPU list (`0-3,8`) as u32s.
fn cpu_list(text: &str) -> Option<Vec<u32>> {
    let cpus = crate::units::parse_cpu_list(text.trim()).ok()?;
    cpus.into_iter().map(|c| u32::try_from(c).ok()).collect()
}

fn read_numa_nodes(notes: &mut Vec<String>) -> Option<u32> {
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

/// Sockets and physical cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CpuTopology {
    sockets: u32,
    cores: u32,
}

const TOPOLOGY_FILES: &[&str] = &[
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
fn parse_cpu_topology(listing: &str, online: &[u32]) -> Option<CpuTopology> {
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
fn parse_cpuinfo_topology(cpuinfo: &str) -> Option<CpuTopology> {
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
fn parse_cpuinfo_processors(cpuinfo: &str) -> Vec<u32> {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == "processor")
        .filter_map(|(_, v)| v.trim().parse().ok())
        .collect()
}

/// Mean of /proc/cpuinfo's `cpu MHz` lines.
fn parse_cpuinfo_mhz(cpuinfo: &str) -> Option<f64> {
    let mhz: Vec<f64> = cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == "cpu MHz")
        .filter_map(|(_, v)| v.trim().parse().ok())
        .filter(|v: &f64| v.is_finite())
        .collect();
    mean(&mhz)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn read_cpu(cpuinfo: Option<&str>, notes: &mut Vec<String>) -> CpuConfig {
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

/// A feature as ethtool reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FeatureState {
    active: bool,
    /// Whether the driver lets it be switched (not `[fixed]`).
    changeable: bool,
}

/// The offloads of [`OFFLOADS_TABLE`] that `features` know, and those of them that are fixed.
/// `features` may hold kernel feature strings (netlink) or `ethtool -k` lines, which add the
/// group names; a group line wins over its members.
fn offloads_from_features(features: &BTreeMap<String, FeatureState>) -> (BTreeMap<String, bool>, Vec<String>) {
    let mut offloads = BTreeMap::new();
    let mut fixed = Vec::new();
    for o in OFFLOADS_TABLE {
        let states: Vec<FeatureState> = match features.get(o.group) {
            Some(s) => vec![*s],
            None => o.features.iter().filter_map(|f| features.get(*f).copied()).collect(),
        };
        if states.is_empty() {
            continue;
        }
        offloads.insert(o.key.to_string(), states.iter().any(|s| s.active));
        if !states.iter().any(|s| s.changeable) {
            fixed.push(o.key.to_string());
        }
    }
    (offloads, fixed)
}

/// Link settings as a driver reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct LinkSettings {
    speed_mbit_per_second: Option<u32>,
    duplex: Option<String>,
    autoneg: Option<bool>,
}

/// One ethtool answer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Reply<T> {
    Got(T),
    /// The driver does not implement it (EOPNOTSUPP): an answer, not a failure.
    Unsupported,
    Failed(String),
}

/// What ethtool tells about one interface.
#[derive(Clone, Debug)]
struct EthtoolPieces {
    link: Reply<LinkSettings>,
    features: Reply<BTreeMap<String, FeatureState>>,
    rings: Reply<RingSizes>,
    channels: Reply<ChannelCounts>,
}

fn read_interfaces(names: &[String], notes: &mut Vec<String>) -> Vec<InterfaceConfig> {
    let interrupts = crate::metrics::irq::Interrupts::read();
    if interrupts.is_none() && !names.is_empty() {
        notes.push("/proc/interrupts: unreadable, interface IRQs from sysfs only".into());
    }
    let mut configs: Vec<(InterfaceConfig, bool)> = names
        .iter()
        .map(|n| read_interface_base(n, interrupts.as_ref(), notes))
        .collect();
    let present: Vec<String> = configs
        .iter()
        .filter(|(c, _)| c.ifindex.is_some())
        .map(|(c, _)| c.name.clone())
        .collect();
    if present.is_empty() {
        return configs.into_iter().map(|(c, _)| c).collect();
    }
    let netlink = match ethnl::query(&present) {
        Ok(pieces) => pieces,
        Err(e) => {
            notes.push(format!("ethtool netlink: {e}"));
            let failed = || EthtoolPieces {
                link: Reply::Failed(e.clone()),
                features: Reply::Failed(e.clone()),
                rings: Reply::Failed(e.clone()),
                channels: Reply::Failed(e.clone()),
            };
            present.iter().map(|_| failed()).collect()
        }
    };
    let mut pieces = present.iter().zip(netlink);
    for (config, trusted) in configs.iter_mut().filter(|(c, _)| c.ifindex.is_some()) {
        let Some((_, p)) = pieces.next() else { break };
        apply_ethtool(config, *trusted, p, notes);
    }
    configs.into_iter().map(|(c, _)| c).collect()
}

/// Everything but the ethtool netlink pieces, which are asked for all interfaces at once.
/// Returns the config and whether /sys/class/net/NAME is this namespace's interface.
fn read_interface_base(
    name: &str,
    interrupts: Option<&crate::metrics::irq::Interrupts>,
    notes: &mut Vec<String>,
) -> (InterfaceConfig, bool) {
    let mut c = InterfaceConfig {
        name: name.to_string(),
        ..InterfaceConfig::default()
    };
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', '\0']) || name == "." || name == ".." {
        notes.push(format!("interface {name:?}: not a valid interface name"));
        return (c, false);
    }
    let ifindex = match nix::net::if_::if_nametoindex(name) {
        Ok(i) => i,
        Err(e) => {
            notes.push(format!("{name}: no such interface in this network namespace ({e})"));
            return (c, false);
        }
    };
    c.ifindex = Some(ifindex);

    let mut address = None;
    match rtnl::get_link(ifindex) {
        Ok(link) => {
            c.loopback = link.flags & libc::IFF_LOOPBACK as u32 != 0;
            c.mtu_bytes = link.mtu;
            c.max_mtu_bytes = link.max_mtu;
            c.gso_max_size_bytes = link.gso_max_size;
            c.gro_max_size_bytes = link.gro_max_size;
            c.kind = link.kind;
            c.parent_device = link.parent_device;
            c.parent_bus = link.parent_bus;
            c.qdisc = link.qdisc;
            c.tx_queue_len_packets = link.tx_queue_len;
            c.operstate = link.operstate.map(operstate_name);
            address = link.address;
            c.sources.insert("mtu".into(), "netlink".into());
        }
        Err(e) => {
            notes.push(format!("{name}: rtnetlink: {e}; max MTU, kind, qdisc unknown"));
            match ioctl::mtu(name) {
                Ok(mtu) => {
                    c.mtu_bytes = Some(mtu);
                    c.sources.insert("mtu".into(), "ioctl".into());
                }
                Err(e) => notes.push(format!("{name}: MTU: SIOCGIFMTU: {e}")),
            }
        }
    }
    let trusted = sysfs_is_this_interface(name, ifindex, address.as_deref(), notes);

    match ioctl::drvinfo(name) {
        Ok(d) => {
            c.driver = d.driver;
            c.driver_version = d.version;
            c.firmware_version = d.firmware_version;
            c.bus_address = d.bus_address;
            c.sources.insert("driver".into(), "ioctl".into());
        }
        Err(e) => {
            let sysfs_driver = trusted
                .then(|| std::fs::read_link(format!("/sys/class/net/{name}/device/driver")).ok())
                .flatten()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()));
            if let Some(driver) = sysfs_driver {
                c.driver = Some(driver);
                c.sources.insert("driver".into(), "sysfs".into());
            } else if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                notes.push(format!("{name}: driver: not reported (ETHTOOL_GDRVINFO not supported)"));
            } else {
                notes.push(format!("{name}: driver: ETHTOOL_GDRVINFO: {e}"));
            }
        }
    }

    if !c.loopback {
        let device = device_dir(&c, trusted);
        read_irqs(&mut c, interrupts, device.as_deref(), notes);
        read_numa_node(&mut c, device.as_deref(), notes);
    }
    (c, trusted)
}

fn operstate_name(state: u8) -> String {
    // include/uapi/linux/if.h IF_OPER_*
    match state {
        0 => "unknown",
        1 => "notpresent",
        2 => "down",
        3 => "lowerlayerdown",
        4 => "testing",
        5 => "dormant",
        6 => "up",
        _ => return format!("state {state}"),
    }
    .to_string()
}

/// Whether /sys/class/net/NAME is the interface this namespace has under NAME: sysfs shows the
/// namespace of whoever mounted it, and another namespace may have an interface of the same name
/// (even the same ifindex), so the hardware address must match too when there is one.
fn sysfs_is_this_interface(name: &str, ifindex: u32, address: Option<&[u8]>, notes: &mut Vec<String>) -> bool {
    let dir = PathBuf::from(format!("/sys/class/net/{name}"));
    let Some(sys_index) = read_trimmed(dir.join("ifindex")) else {
        return false;
    };
    let index_matches = sys_index.parse::<u32>().ok() == Some(ifindex);
    let address_matches = match address {
        None => true,
        Some(a) => {
            let hex = a.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
            read_trimmed(dir.join("address")).is_some_and(|s| s.eq_ignore_ascii_case(&hex))
        }
    };
    if !(index_matches && address_matches) {
        notes.push(format!(
            "{name}: /sys/class/net/{name} is another network namespace's interface (ifindex {sys_index} there, \
             {ifindex} here): sysfs not used for it"
        ));
        return false;
    }
    true
}

/// The interface's device directory in sysfs, resolved to its real path: by the bus and name
/// rtnetlink gives (namespace-independent), else the PCI address, else /sys/class/net/NAME/device
/// when that is this namespace's interface.
fn device_dir(c: &InterfaceConfig, trusted: bool) -> Option<PathBuf> {
    let safe = |s: &str| !s.is_empty() && !s.contains('/') && s != "." && s != "..";
    let by_parent = match (&c.parent_bus, &c.parent_device) {
        (Some(bus), Some(dev)) if safe(bus) && safe(dev) => {
            Some(PathBuf::from(format!("/sys/bus/{bus}/devices/{dev}")))
        }
        _ => None,
    };
    let by_pci = c
        .bus_address
        .as_deref()
        .filter(|a| is_pci_address(a))
        .map(|a| PathBuf::from(format!("/sys/bus/pci/devices/{a}")));
    let by_class = trusted.then(|| PathBuf::from(format!("/sys/class/net/{}/device", c.name)));
    [by_parent, by_pci, by_class]
        .into_iter()
        .flatten()
        .find_map(|p| std::fs::canonicalize(p).ok())
}

/// `0000:3b:00.0`: domain, bus, device, function.
fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_hexdigit));
    b.len() == 12
        && hex(0..4)
        && b[4] == b':'
        && hex(5..7)
        && b[7] == b':'
        && hex(8..10)
        && b[10] == b'.'
        && (b'0'..=b'7').contains(&b[11])
}

/// Whether `text` names interface `name` as a whole word: `eth0-TxRx-0` and `i40e-eth0-TxRx-0`
/// name `eth0`, `eth01` and `veth0` do not.
fn names_interface(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let word_char = |c: char| c.is_ascii_alphanumeric();
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(word_char) && !after.is_some_and(word_char)
    })
}

/// The handler name of an /proc/interrupts line: its last word (`virtio2-input.0`).
fn irq_handler_name(desc: &str) -> String {
    desc.split_whitespace().next_back().unwrap_or_default().to_string()
}

/// IRQs of an interface's queues from /proc/interrupts: the lines whose handler names the
/// interface (`eth0-TxRx-3`, `i40e-eth0-TxRx-3`, `mlx5_comp3@pci:...` does not).
fn irqs_naming(interrupts: &crate::metrics::irq::Interrupts, name: &str) -> Vec<(u32, String)> {
    interrupts
        .lines
        .iter()
        .filter(|l| names_interface(&l.desc, name))
        .filter_map(|l| Some((l.irq.parse().ok()?, irq_handler_name(&l.desc))))
        .collect()
}

/// IRQs of a device from its MSI vectors (the device's `msi_irqs`, or its parent's for a
/// virtio device). Vectors named as control ones serve no queue and are left out: virtio's
/// `virtioN-config`, mlx5's `mlx5_async*`, Intel's `...:misc`.
fn irqs_of_device(dir: &Path, interrupts: Option<&crate::metrics::irq::Interrupts>) -> Vec<(u32, String)> {
    let msi = [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .find_map(|d| std::fs::read_dir(d.join("msi_irqs")).ok());
    let Some(msi) = msi else { return Vec::new() };
    let mut irqs: Vec<u32> = msi.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    irqs.sort_unstable();
    let name_of = |irq: u32| {
        interrupts
            .and_then(|i| i.lines.iter().find(|l| l.irq == irq.to_string()))
            .map(|l| irq_handler_name(&l.desc))
            .unwrap_or_default()
    };
    // A virtio PCI device's vectors are named after the virtio device (`virtio2-input.0`).
    let virtio = dir
        .file_name()
        .and_then(|f| f.to_str())
        .filter(|f| f.starts_with("virtio"))
        .map(|f| format!("{f}-"));
    irqs.into_iter()
        .map(|irq| (irq, name_of(irq)))
        .filter(|(_, n)| !is_control_vector(n))
        .filter(|(_, n)| virtio.as_deref().is_none_or(|v| n.starts_with(v)))
        .collect()
}

fn is_control_vector(name: &str) -> bool {
    name.ends_with("-config") || name.contains("async") || name.ends_with("misc")
}

fn read_irqs(
    c: &mut InterfaceConfig,
    interrupts: Option<&crate::metrics::irq::Interrupts>,
    device: Option<&Path>,
    notes: &mut Vec<String>,
) {
    let mut irqs = interrupts.map(|i| irqs_naming(i, &c.name)).unwrap_or_default();
    let mut source = "procfs";
    if irqs.is_empty()
        && let Some(dir) = device
    {
        irqs = irqs_of_device(dir, interrupts);
        source = "sysfs";
    }
    if irqs.is_empty() {
        if c.parent_device.is_some() || c.bus_address.as_deref().is_some_and(is_pci_address) {
            notes.push(format!(
                "{}: no queue IRQs found in /proc/interrupts or the device's msi_irqs",
                c.name
            ));
        }
        return;
    }
    c.sources.insert("irqs".into(), source.into());
    c.irqs = irqs
        .into_iter()
        .map(|(irq, name)| IrqAffinity {
            irq,
            name,
            cpus: read_trimmed(format!("/proc/irq/{irq}/smp_affinity_list"))
                .and_then(|t| cpu_list(&t))
                .unwrap_or_default(),
            effective_cpus: read_trimmed(format!("/proc/irq/{irq}/effective_affinity_list")).and_then(|t| cpu_list(&t)),
        })
        .collect();
}

fn read_numa_node(c: &mut InterfaceConfig, device: Option<&Path>, notes: &mut Vec<String>) {
    let Some(dir) = device else { return };
    let value = [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .find_map(|d| read_trimmed(d.join("numa_node")));
    match value.as_deref().map(str::parse::<i64>) {
        Some(Ok(n)) => {
            // -1: the platform ties the device to no node.
            c.numa_node = u32::try_from(n).ok();
            c.sources.insert("numa_node".into(), "sysfs".into());
        }
        Some(Err(_)) => notes.push(format!(
            "{}: numa_node {:?} is not a number",
            c.name,
            value.unwrap_or_default()
        )),
        None => {}
    }
}

/// Fills the ethtool pieces: netlink's answer, else the `ethtool` program's, else sysfs for the
/// link speed.
fn apply_ethtool(c: &mut InterfaceConfig, trusted: bool, netlink: EthtoolPieces, notes: &mut Vec<String>) {
    let name = c.name.clone();
    let program = EthtoolProgram { interface: &name };

    let link = settle(&name, "link settings", netlink.link, || program.link(), notes);
    match link {
        Some((l, source)) => {
            c.speed_mbit_per_second = l.speed_mbit_per_second;
            c.duplex = l.duplex;
            c.autoneg = l.autoneg;
            c.sources.insert("link".into(), source.into());
        }
        None if trusted => {
            let dir = format!("/sys/class/net/{name}");
            // sysfs says -1 (or fails with EINVAL) when the speed is unknown.
            c.speed_mbit_per_second = read_trimmed(format!("{dir}/speed")).and_then(|s| s.parse().ok());
            c.duplex = read_trimmed(format!("{dir}/duplex")).filter(|d| d == "full" || d == "half");
            if c.speed_mbit_per_second.is_some() || c.duplex.is_some() {
                c.sources.insert("link".into(), "sysfs".into());
            }
        }
        None => {}
    }

    if let Some((features, source)) = settle(&name, "offloads", netlink.features, || program.features(), notes) {
        let (offloads, fixed) = offloads_from_features(&features);
        c.offloads = offloads;
        c.fixed_offloads = fixed;
        let mut source = source.to_string();
        if !c.offloads.contains_key("scatter-gather") {
            // ethtool 0.3.0 drops bit 0 of netlink bitsets, which is NETIF_F_SG
            // ("tx-scatter-gather"): ask the legacy ioctl for it.
            match ioctl::scatter_gather(&name) {
                Ok(on) => {
                    c.offloads.insert("scatter-gather".into(), on);
                    source.push_str(", ioctl");
                }
                Err(e) => notes.push(format!("{name}: scatter-gather: ETHTOOL_GSG: {e}")),
            }
        }
        c.sources.insert("offloads".into(), source);
    }
    if let Some((rings, source)) = settle(&name, "rings", netlink.rings, || program.rings(), notes) {
        c.rings = rings;
        c.sources.insert("rings".into(), source.into());
    }
    if let Some((channels, source)) = settle(&name, "channels", netlink.channels, || program.channels(), notes) {
        c.channels = channels;
        c.sources.insert("channels".into(), source.into());
    }
}

/// Netlink's answer, or the program's when netlink failed (not when the driver said it has
/// none: the program would ask the same driver). Notes why nothing came.
fn settle<T>(
    name: &str,
    what: &str,
    netlink: Reply<T>,
    program: impl FnOnce() -> Reply<T>,
    notes: &mut Vec<String>,
) -> Option<(T, &'static str)> {
    match netlink {
        Reply::Got(v) => Some((v, "netlink")),
        Reply::Unsupported => {
            notes.push(format!("{name}: {what}: not reported by the driver"));
            None
        }
        Reply::Failed(netlink_error) => match program() {
            Reply::Got(v) => Some((v, "ethtool program")),
            Reply::Unsupported => {
                notes.push(format!("{name}: {what}: not reported by the driver"));
                None
            }
            Reply::Failed(program_error) => {
                notes.push(format!(
                    "{name}: {what}: netlink: {netlink_error}; ethtool program: {program_error}"
                ));
                None
            }
        },
    }
}

/// ethtool's generic netlink through the `ethtool` crate (async, on tokio): a current-thread
/// runtime for the duration of one query.
mod ethnl {
    use super::{ChannelCounts, EthtoolPieces, FeatureState, LinkSettings, QUERY_TIMEOUT, Reply, RingSizes};
    use ethtool::{
        EthtoolAttr, EthtoolChannelAttr, EthtoolError, EthtoolFeatureAttr, EthtoolHandle, EthtoolLinkModeAttr,
        EthtoolLinkModeDuplex, EthtoolMessage, EthtoolRingAttr,
    };
    use futures_util::{Stream, StreamExt};
    use netlink_packet_generic::GenlMessage;
    use std::collections::BTreeMap;

    /// Asks about each of `names`, in order. `Err` when netlink cannot be reached at all.
    pub(super) fn query(names: &[String]) -> Result<Vec<EthtoolPieces>, String> {
        if tokio::runtime::Handle::try_current().is_ok() {
            // Starting a runtime inside a runtime panics, so ask from a thread of our own. A new
            // thread starts in its creator's network namespace (clone copies the thread's
            // nsproxy), so the answer is still about the caller's namespace.
            return std::thread::scope(|s| {
                let thread = std::thread::Builder::new()
                    .name("linerate-ethtool".into())
                    .spawn_scoped(s, || query_here(names))
                    .map_err(|e| format!("starting a thread: {e}"))?;
                thread
                    .join()
                    .unwrap_or_else(|_| Err("the netlink thread panicked".into()))
            });
        }
        query_here(names)
    }

    fn query_here(names: &[String]) -> Result<Vec<EthtoolPieces>, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting a tokio runtime: {e}"))?;
        runtime.block_on(async {
            let (connection, mut handle, _) = ethtool::new_connection().map_err(|e| format!("netlink socket: {e}"))?;
            let connection = tokio::spawn(connection);
            let mut all = Vec::with_capacity(names.len());
            for name in names {
                all.push(query_one(&mut handle, name).await);
            }
            connection.abort();
            Ok(all)
        })
    }

    async fn query_one(handle: &mut EthtoolHandle, name: &str) -> EthtoolPieces {
        let link = collect(handle.link_mode().get(Some(name)).execute()).await;
        let features = collect(handle.feature().get(Some(name)).execute()).await;
        let rings = collect(handle.ring().get(Some(name)).execute()).await;
        let channels = collect(handle.channel().get(Some(name)).execute()).await;
        EthtoolPieces {
            link: map(link, link_settings),
            features: map(features, feature_states),
            rings: map(rings, ring_sizes),
            channels: map(channels, channel_counts),
        }
    }

    fn map<T>(reply: Reply<Vec<EthtoolAttr>>, f: fn(Vec<EthtoolAttr>) -> T) -> Reply<T> {
        match reply {
            Reply::Got(attrs) => Reply::Got(f(attrs)),
            Reply::Unsupported => Reply::Unsupported,
            Reply::Failed(e) => Reply::Failed(e),
        }
    }

    /// Runs one request and gathers the attributes of its replies.
    async fn collect<S>(request: impl Future<Output = Result<S, EthtoolError>>) -> Reply<Vec<EthtoolAttr>>
    where
        S: Stream<Item = Result<GenlMessage<EthtoolMessage>, EthtoolError>>,
    {
        let run = async {
            let replies = request.await?;
            let mut replies = std::pin::pin!(replies);
            let mut attrs = Vec::new();
            while let Some(reply) = replies.next().await {
                attrs.extend(reply?.payload.nlas);
            }
            Ok::<_, EthtoolError>(attrs)
        };
        match tokio::time::timeout(QUERY_TIMEOUT, run).await {
            Ok(Ok(attrs)) => Reply::Got(attrs),
            Ok(Err(EthtoolError::NetlinkError(e))) => match e.code.map(|c| -c.get()) {
                Some(libc::EOPNOTSUPP) => Reply::Unsupported,
                Some(errno) => Reply::Failed(std::io::Error::from_raw_os_error(errno).to_string()),
                None => Reply::Failed("an empty netlink error".into()),
            },
            Ok(Err(e)) => Reply::Failed(e.to_string()),
            Err(_) => Reply::Failed(format!("no answer within {} s", QUERY_TIMEOUT.as_secs())),
        }
    }

    fn link_settings(attrs: Vec<EthtoolAttr>) -> LinkSettings {
        let mut l = LinkSettings::default();
        for attr in attrs {
            match attr {
                // SPEED_UNKNOWN is u32::MAX (include/uapi/linux/ethtool.h).
                EthtoolAttr::LinkMode(EthtoolLinkModeAttr::Speed(s)) if s != 0 && s != u32::MAX => {
                    l.speed_mbit_per_second = Some(s);
                }
                EthtoolAttr::LinkMode(EthtoolLinkModeAttr::Duplex(d)) => {
                    l.duplex = match d {
                        EthtoolLinkModeDuplex::Full => Some("full".into()),
                        EthtoolLinkModeDuplex::Half => Some("half".into()),
                        _ => None,
                    };
                }
                EthtoolAttr::LinkMode(EthtoolLinkModeAttr::Autoneg(a)) => l.autoneg = Some(a),
                _ => {}
            }
        }
        l
    }

    /// Features by kernel name. The HW bitset lists every feature the kernel knows, its value
    /// telling whether the driver lets it change; ACTIVE lists the features that are on.
    fn feature_states(attrs: Vec<EthtoolAttr>) -> BTreeMap<String, FeatureState> {
        let mut states: BTreeMap<String, FeatureState> = BTreeMap::new();
        for attr in attrs {
            match attr {
                EthtoolAttr::Feature(EthtoolFeatureAttr::Hw(bits)) => {
                    for bit in bits {
                        states.entry(bit.name).or_default().changeable = bit.value;
                    }
                }
                EthtoolAttr::Feature(EthtoolFeatureAttr::Active(bits)) => {
                    for bit in bits.into_iter().filter(|b| b.value) {
                        states.entry(bit.name).or_default().active = true;
                    }
                }
                _ => {}
            }
        }
        states
    }

    fn ring_sizes(attrs: Vec<EthtoolAttr>) -> RingSizes {
        let mut r = RingSizes::default();
        for attr in attrs {
            match attr {
                EthtoolAttr::Ring(EthtoolRingAttr::Rx(v)) => r.rx = Some(v),
                EthtoolAttr::Ring(EthtoolRingAttr::RxMax(v)) => r.rx_max = Some(v),
                EthtoolAttr::Ring(EthtoolRingAttr::Tx(v)) => r.tx = Some(v),
                EthtoolAttr::Ring(EthtoolRingAttr::TxMax(v)) => r.tx_max = Some(v),
                _ => {}
            }
        }
        r
    }

    fn channel_counts(attrs: Vec<EthtoolAttr>) -> ChannelCounts {
        let mut c = ChannelCounts::default();
        for attr in attrs {
            match attr {
                EthtoolAttr::Channel(EthtoolChannelAttr::RxCount(v)) => c.rx = Some(v),
                EthtoolAttr::Channel(EthtoolChannelAttr::TxCount(v)) => c.tx = Some(v),
                EthtoolAttr::Channel(EthtoolChannelAttr::CombinedCount(v)) => c.combined = Some(v),
                EthtoolAttr::Channel(EthtoolChannelAttr::RxMax(v)) => c.rx_max = Some(v),
                EthtoolAttr::Channel(EthtoolChannelAttr::TxMax(v)) => c.tx_max = Some(v),
                EthtoolAttr::Channel(EthtoolChannelAttr::CombinedMax(v)) => c.combined_max = Some(v),
                _ => {}
            }
        }
        c
    }
}

/// The `ethtool` program, run only when netlink failed.
struct EthtoolProgram<'a> {
    interface: &'a str,
}

impl EthtoolProgram<'_> {
    fn link(&self) -> Reply<LinkSettings> {
        self.run(&[]).and_then(|t| parse_ethtool_settings(&t))
    }

    fn features(&self) -> Reply<BTreeMap<String, FeatureState>> {
        self.run(&["-k"])
            .and_then(|t| Some(parse_ethtool_features(&t)).filter(|f| !f.is_empty()))
    }

    fn rings(&self) -> Reply<RingSizes> {
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

    fn channels(&self) -> Reply<ChannelCounts> {
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
        use std::io::Read;
        use std::process::{Command, Stdio};
        // PATH may lack the sbin directories for a non-root user.
        for program in ["ethtool", "/usr/sbin/ethtool", "/sbin/ethtool"] {
            let spawned = Command::new(program)
                .args(option)
                .arg(self.interface)
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
fn parse_ethtool_settings(text: &str) -> Option<LinkSettings> {
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
fn parse_ethtool_features(text: &str) -> BTreeMap<String, FeatureState> {
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
type Sections = (BTreeMap<String, u32>, BTreeMap<String, u32>);
fn parse_ethtool_sections(text: &str) -> Option<Sections> {
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

/// rtnetlink requests, hand-built: two fixed-layout messages do not justify the
/// netlink-packet-route crate (~13 s of extra build on 2 cores). netlink-packet-core (already
/// under `ethtool`) walks the attributes.
mod rtnl {
    use netlink_packet_core::{NetlinkBuffer, NlasIterator};
    use std::io::{self, Read};
    use std::net::IpAddr;

    const NLMSG_ERROR: u16 = 2;
    const NLM_F_REQUEST: u16 = 1;
    const RTM_NEWLINK: u16 = 16;
    const RTM_GETLINK: u16 = 18;
    const RTM_NEWROUTE: u16 = 24;
    const RTM_GETROUTE: u16 = 26;
    // include/uapi/linux/if_link.h
    const IFLA_ADDRESS: u16 = 1;
    const IFLA_MTU: u16 = 4;
    const IFLA_QDISC: u16 = 6;
    const IFLA_TXQLEN: u16 = 13;
    const IFLA_OPERSTATE: u16 = 16;
    const IFLA_LINKINFO: u16 = 18;
    const IFLA_INFO_KIND: u16 = 1;
    const IFLA_EXT_MASK: u16 = 29;
    const IFLA_GSO_MAX_SIZE: u16 = 41;
    const IFLA_MAX_MTU: u16 = 51;
    const IFLA_PARENT_DEV_NAME: u16 = 56;
    const IFLA_PARENT_DEV_BUS_NAME: u16 = 57;
    const IFLA_GRO_MAX_SIZE: u16 = 58;
    const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;
    const RTA_DST: u16 = 1;
    const RTA_OIF: u16 = 4;
    const IFINFOMSG_LEN: usize = 16;
    const RTMSG_LEN: usize = 12;

    /// What RTM_GETLINK tells about one interface.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub(super) struct Link {
        pub flags: u32,
        pub address: Option<Vec<u8>>,
        pub mtu: Option<u32>,
        pub max_mtu: Option<u32>,
        pub gso_max_size: Option<u32>,
        pub gro_max_size: Option<u32>,
        pub kind: Option<String>,
        pub parent_device: Option<String>,
        pub parent_bus: Option<String>,
        pub qdisc: Option<String>,
        pub tx_queue_len: Option<u32>,
        pub operstate: Option<u8>,
    }

    pub(super) fn get_link(ifindex: u32) -> io::Result<Link> {
        let mut body = vec![0u8; IFINFOMSG_LEN];
        body[4..8].copy_from_slice(&ifindex.to_ne_bytes());
        push_attr(&mut body, IFLA_EXT_MASK, &RTEXT_FILTER_SKIP_STATS.to_ne_bytes());
        let reply = request(RTM_GETLINK, &body, RTM_NEWLINK)?;
        parse_link(&reply).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed RTM_NEWLINK"))
    }

    /// The output interface of the route to `dst` (`ip route get`).
    pub(super) fn route_oif(dst: IpAddr) -> io::Result<u32> {
        let (family, bytes) = match dst {
            IpAddr::V4(a) => (libc::AF_INET, a.octets().to_vec()),
            IpAddr::V6(a) => (libc::AF_INET6, a.octets().to_vec()),
        };
        let mut body = vec![0u8; RTMSG_LEN];
        body[0] = family as u8;
        body[1] = (bytes.len() * 8) as u8;
        push_attr(&mut body, RTA_DST, &bytes);
        let reply = request(RTM_GETROUTE, &body, RTM_NEWROUTE)?;
        parse_route_oif(&reply).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "route has no output interface"))
    }

    fn push_attr(buf: &mut Vec<u8>, kind: u16, value: &[u8]) {
        let len = 4 + value.len();
        buf.extend_from_slice(&(len as u16).to_ne_bytes());
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(value);
        buf.resize(buf.len().next_multiple_of(4), 0);
    }

    /// Sends one request to the kernel and returns the payload of the reply of type `want`.
    fn request(kind: u16, body: &[u8], want: u16) -> io::Result<Vec<u8>> {
        use socket2::{Domain, Protocol, Socket, Type};
        let socket = Socket::new(
            Domain::from(libc::AF_NETLINK),
            Type::RAW,
            Some(Protocol::from(libc::NETLINK_ROUTE)),
        )?;
        socket.set_read_timeout(Some(super::QUERY_TIMEOUT))?;
        const SEQ: u32 = 1;
        let mut msg = Vec::with_capacity(16 + body.len());
        msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        msg.extend_from_slice(&SEQ.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(body);
        // An unbound, unconnected netlink socket sends to the kernel and is bound on first send.
        socket.send(&msg)?;
        let mut buf = vec![0u8; 64 * 1024];
        for _ in 0..16 {
            let n = (&socket).read(&mut buf)?;
            let mut at = 0;
            while at < n {
                let Ok(m) = NetlinkBuffer::new_checked(&buf[at..n]) else {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated netlink reply"));
                };
                let len = m.length() as usize;
                if m.sequence_number() == SEQ {
                    if m.message_type() == NLMSG_ERROR {
                        let code = m
                            .payload()
                            .get(..4)
                            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                        match code {
                            Some(0) => {}
                            Some(c) => return Err(io::Error::from_raw_os_error(-c)),
                            None => return Err(io::Error::new(io::ErrorKind::InvalidData, "short netlink error")),
                        }
                    } else if m.message_type() == want {
                        return Ok(m.payload().to_vec());
                    }
                }
                if len == 0 {
                    break;
                }
                at += len.next_multiple_of(4);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no reply to the netlink request",
        ))
    }

    fn u32_of(v: &[u8]) -> Option<u32> {
        Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
    }

    fn string_of(v: &[u8]) -> String {
        let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
        String::from_utf8_lossy(&v[..end]).into_owned()
    }

    /// An RTM_NEWLINK payload: struct ifinfomsg, then IFLA_* attributes.
    pub(super) fn parse_link(payload: &[u8]) -> Option<Link> {
        let header = payload.get(..IFINFOMSG_LEN)?;
        let mut link = Link {
            flags: u32_of(&header[8..12])?,
            ..Link::default()
        };
        for nla in NlasIterator::new(&payload[IFINFOMSG_LEN..]) {
            let Ok(nla) = nla else { break };
            let v = nla.value();
            match nla.kind() {
                IFLA_ADDRESS if !v.is_empty() => link.address = Some(v.to_vec()),
                IFLA_MTU => link.mtu = u32_of(v),
                IFLA_MAX_MTU => link.max_mtu = u32_of(v).filter(|&m| m != 0),
                IFLA_GSO_MAX_SIZE => link.gso_max_size = u32_of(v),
                IFLA_GRO_MAX_SIZE => link.gro_max_size = u32_of(v),
                IFLA_QDISC => link.qdisc = Some(string_of(v)),
                IFLA_TXQLEN => link.tx_queue_len = u32_of(v),
                IFLA_OPERSTATE => link.operstate = v.first().copied(),
                IFLA_PARENT_DEV_NAME => link.parent_device = Some(string_of(v)),
                IFLA_PARENT_DEV_BUS_NAME => link.parent_bus = Some(string_of(v)),
                IFLA_LINKINFO => {
                    link.kind = NlasIterator::new(v)
                        .filter_map(Result::ok)
                        .find(|n| n.kind() == IFLA_INFO_KIND)
                        .map(|n| string_of(n.value()));
                }
                _ => {}
            }
        }
        Some(link)
    }

    /// An RTM_NEWROUTE payload's RTA_OIF: struct rtmsg, then RTA_* attributes.
    pub(super) fn parse_route_oif(payload: &[u8]) -> Option<u32> {
        NlasIterator::new(payload.get(RTMSG_LEN..)?)
            .map_while(Result::ok)
            .find(|n| n.kind() == RTA_OIF)
            .and_then(|n| u32_of(n.value()))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
            let mut v = Vec::new();
            push_attr(&mut v, kind, value);
            v
        }

        #[test]
        fn parses_rtnetlink_replies() {
            let mut payload = vec![0u8; 16];
            payload[8..12].copy_from_slice(&(libc::IFF_UP as u32).to_ne_bytes());
            payload.extend(attr(IFLA_MTU, &1500u32.to_ne_bytes()));
            payload.extend(attr(IFLA_MAX_MTU, &9216u32.to_ne_bytes()));
            payload.extend(attr(IFLA_QDISC, b"mq\0"));
            payload.extend(attr(IFLA_ADDRESS, &[2, 0, 0, 0, 0, 1]));
            payload.extend(attr(IFLA_PARENT_DEV_NAME, b"0000:3b:00.0\0"));
            payload.extend(attr(IFLA_PARENT_DEV_BUS_NAME, b"pci\0"));
            payload.extend(attr(IFLA_LINKINFO, &attr(IFLA_INFO_KIND, b"veth\0")));
            let link = parse_link(&payload).expect("parses");
            assert_eq!(link.flags, libc::IFF_UP as u32);
            assert_eq!((link.mtu, link.max_mtu), (Some(1500), Some(9216)));
            assert_eq!(link.qdisc.as_deref(), Some("mq"));
            assert_eq!(link.address.as_deref(), Some(&[2u8, 0, 0, 0, 0, 1][..]));
            assert_eq!(link.parent_device.as_deref(), Some("0000:3b:00.0"));
            assert_eq!(link.parent_bus.as_deref(), Some("pci"));
            assert_eq!(link.kind.as_deref(), Some("veth"));
            assert_eq!(parse_link(&payload[..10]), None);
            // A truncated attribute ends the walk; what came before stays.
            let cut = parse_link(&payload[..16 + 8 + 3]).expect("parses");
            assert_eq!((cut.mtu, cut.max_mtu), (Some(1500), None));

            let mut route = vec![0u8; 12];
            route.extend(attr(1, &[127, 0, 0, 1]));
            route.extend(attr(RTA_OIF, &7u32.to_ne_bytes()));
            assert_eq!(parse_route_oif(&route), Some(7));
            assert_eq!(parse_route_oif(&route[..16]), None);
        }
    }
}

/// SIOCETHTOOL and SIOCGIFMTU ioctls on an AF_INET datagram socket, which act on the socket's
/// network namespace. ethtool's netlink has no message for driver information.
mod ioctl {
    use std::io;
    use std::os::fd::AsRawFd;

    // include/uapi/linux/ethtool.h
    const ETHTOOL_GDRVINFO: u32 = 0x03;
    const ETHTOOL_GSG: u32 = 0x18;

    /// struct ethtool_drvinfo.
    #[repr(C)]
    struct EthtoolDrvinfo {
        cmd: u32,
        driver: [u8; 32],
        version: [u8; 32],
        fw_version: [u8; 32],
        bus_info: [u8; 32],
        erom_version: [u8; 32],
        reserved2: [u8; 12],
        n_priv_flags: u32,
        n_stats: u32,
        testinfo_len: u32,
        eedump_len: u32,
        regdump_len: u32,
    }

    /// struct ethtool_value.
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }

    #[derive(Debug, Default)]
    pub(super) struct Drvinfo {
        pub driver: Option<String>,
        pub version: Option<String>,
        pub firmware_version: Option<String>,
        pub bus_address: Option<String>,
    }

    fn text(field: &[u8]) -> Option<String> {
        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        let s = String::from_utf8_lossy(&field[..end]).trim().to_string();
        (!s.is_empty()).then_some(s)
    }

    /// An ifreq naming `name`. Callers check the name is shorter than IFNAMSIZ.
    fn ifreq(name: &str) -> io::Result<libc::ifreq> {
        if name.len() >= libc::IFNAMSIZ || name.contains('\0') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "interface name too long"));
        }
        // SAFETY: ifreq is plain old data (a name array and a union of integers and pointers),
        // for which all-zero bytes are a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        Ok(req)
    }

    fn socket() -> io::Result<socket2::Socket> {
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)
    }

    /// SIOCETHTOOL with `data` (a struct starting with its u32 command).
    fn ethtool<T>(name: &str, data: &mut T) -> io::Result<()> {
        let mut req = ifreq(name)?;
        req.ifr_ifru.ifru_data = (data as *mut T).cast();
        let socket = socket()?;
        // SAFETY: `req` names the interface and points to `data`, a live, writable repr(C)
        // struct of the layout the command in its first field expects; both outlive the call.
        let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    pub(super) fn drvinfo(name: &str) -> io::Result<Drvinfo> {
        // SAFETY: EthtoolDrvinfo is integers and byte arrays: all-zero bytes are a valid value.
        let mut d: EthtoolDrvinfo = unsafe { std::mem::zeroed() };
        d.cmd = ETHTOOL_GDRVINFO;
        ethtool(name, &mut d)?;
        Ok(Drvinfo {
            driver: text(&d.driver),
            version: text(&d.version),
            firmware_version: text(&d.fw_version),
            bus_address: text(&d.bus_info),
        })
    }

    /// Whether scatter-gather (NETIF_F_SG) is on.
    pub(super) fn scatter_gather(name: &str) -> io::Result<bool> {
        let mut v = EthtoolValue {
            cmd: ETHTOOL_GSG,
            data: 0,
        };
        ethtool(name, &mut v)?;
        Ok(v.data != 0)
    }

    pub(super) fn mtu(name: &str) -> io::Result<u32> {
        let mut req = ifreq(name)?;
        let socket = socket()?;
        // SAFETY: `req` is a valid ifreq naming the interface; SIOCGIFMTU writes ifru_mtu.
        let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFMTU as _, &mut req) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel filled ifru_mtu, an int, for SIOCGIFMTU.
        let mtu = unsafe { req.ifr_ifru.ifru_mtu };
        u32::try_from(mtu).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative MTU"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/../../tests/fixtures/config/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn parses_cpu_model_and_os_name() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD Opteron(tm) Processor 275\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD Opteron(tm) Processor 275"));
        let os = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(os_release_name(os).as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
    }

    #[test]
    fn reads_this_host() {
        let h = HostInfo::read();
        assert!(!h.kernel.is_empty());
        assert!(h.cores >= 1);
    }

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

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(cpu_list("0-3,8\n"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(cpu_list(""), None);
        assert_eq!(cpu_list("3-1"), None);
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

    #[test]
    fn names_interfaces_as_whole_words() {
        assert!(names_interface("PCI-MSIX-0000:3b:00.0 5-edge eth0-TxRx-3", "eth0"));
        assert!(names_interface("i40e-eth0-TxRx-0", "eth0"));
        assert!(names_interface("eth0", "eth0"));
        assert!(!names_interface("eth01-TxRx-0", "eth0"));
        assert!(!names_interface("veth0", "eth0"));
        assert!(!names_interface("anything", ""));
    }

    #[test]
    fn finds_interface_irqs_in_captured_interrupts() {
        let interrupts = crate::metrics::irq::parse_interrupts(&fixture("interrupts")).expect("parses");
        assert!(
            irqs_naming(&interrupts, "eth0").is_empty(),
            "virtio names its vectors after the device"
        );
        assert_eq!(
            irqs_naming(&interrupts, "virtio2"),
            [
                (37, "virtio2-config".to_string()),
                (38, "virtio2-input.0".to_string()),
                (39, "virtio2-output.0".to_string())
            ]
        );
        let mut named = interrupts.clone();
        named.lines[0].desc = "IR-PCI-MSIX-0000:3b:00.0 0-edge eth1-TxRx-0".into();
        named.lines[1].desc = "IR-PCI-MSIX-0000:3b:00.0 1-edge eth1-TxRx-1".into();
        named.lines[2].desc = "IR-PCI-MSIX-0000:3b:00.0 2-edge eth10-TxRx-0".into();
        assert_eq!(
            irqs_naming(&named, "eth1"),
            [(24, "eth1-TxRx-0".to_string()), (25, "eth1-TxRx-1".to_string())]
        );
    }

    #[test]
    fn tells_control_vectors_from_queue_vectors() {
        for control in [
            "virtio2-config",
            "mlx5_async0@pci:0000:3b:00.0",
            "i40e-0000:3b:00.0:misc",
            "ice-0000:3b:00.0:misc",
        ] {
            assert!(is_control_vector(control), "{control}");
        }
        for queue in [
            "virtio2-input.0",
            "mlx5_comp3@pci:0000:3b:00.0",
            "ice-eth1-TxRx-0",
            "eth0-TxRx-1",
        ] {
            assert!(!is_control_vector(queue), "{queue}");
        }
    }

    #[test]
    fn recognises_pci_addresses() {
        assert!(is_pci_address("0000:3b:00.0"));
        assert!(is_pci_address("0000:00:03.7"));
        assert!(!is_pci_address("0000:00:03.8"));
        assert!(!is_pci_address("virtio2"));
        assert!(!is_pci_address(""));
        assert!(!is_pci_address("0000:3b:00.0x"));
    }

    fn states(pairs: &[(&str, bool, bool)]) -> BTreeMap<String, FeatureState> {
        pairs
            .iter()
            .map(|&(n, active, changeable)| (n.to_string(), FeatureState { active, changeable }))
            .collect()
    }

    #[test]
    fn maps_kernel_features_to_offloads() {
        let f = states(&[
            ("tx-tcp-segmentation", false, true),
            ("tx-tcp6-segmentation", true, true),
            ("tx-generic-segmentation", true, true),
            ("rx-gro", false, true),
            ("rx-lro", false, false),
            ("rx-checksum", true, false),
            ("tx-checksum-ipv4", false, false),
            ("tx-checksum-ip-generic", true, true),
            ("highdma", true, false),
        ]);
        let (offloads, fixed) = offloads_from_features(&f);
        let want: BTreeMap<String, bool> = [
            ("tso", true),
            ("gso", true),
            ("gro", false),
            ("lro", false),
            ("rx-checksum", true),
            ("tx-checksum", true),
        ]
        .iter()
        .map(|&(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(offloads, want);
        assert_eq!(fixed, ["lro", "rx-checksum"]);
        assert_eq!(offload_switch("rx-checksum"), Some("rx"));
        assert_eq!(offload_switch("scatter-gather"), Some("sg"));
        assert_eq!(offload_switch("nonsense"), None);
        assert!(OFFLOADS_TABLE.iter().map(|o| o.key).eq(OFFLOADS.iter().copied()));
    }

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

    #[test]
    fn reads_the_loopback_interface() {
        let c = read_config(&["lo".to_string(), "linerate-none0".to_string()]);
        assert!(c.kernel.is_some() && c.hostname.is_some());
        assert!(c.cpu.threads.is_some_and(|t| t >= 1));
        assert!(!c.cpu.online.is_empty());
        assert!(c.memory_bytes.is_some_and(|m| m > 1 << 20));
        assert!(c.sysctls.contains_key("net.core.rmem_max"), "{:?}", c.notes);
        assert!(
            c.sysctls
                .get("net.ipv4.tcp_rmem")
                .is_some_and(|v| v.split(' ').count() == 3)
        );
        assert!(c.irqbalance_running.is_some());
        let lo = &c.interfaces[0];
        assert_eq!(lo.ifindex, Some(1));
        assert!(lo.loopback && !lo.is_physical());
        assert!(lo.mtu_bytes.is_some_and(|m| m >= 1280), "{lo:?}");
        assert!(lo.irqs.is_empty());
        assert_eq!(lo.offloads.get("gso"), Some(&true), "{lo:?} {:?}", c.notes);
        assert!(lo.offloads.contains_key("scatter-gather"), "{lo:?}");
        assert_eq!(lo.sources.get("offloads").map(String::as_str), Some("netlink, ioctl"));
        let missing = &c.interfaces[1];
        assert_eq!((missing.name.as_str(), missing.ifindex), ("linerate-none0", None));
        assert!(
            c.notes
                .iter()
                .any(|n| n.starts_with("linerate-none0: no such interface")),
            "{:?}",
            c.notes
        );
        let json = serde_json::to_string(&c).expect("serializes");
        assert_eq!(serde_json::from_str::<HostConfig>(&json).expect("deserializes"), c);
    }

    #[test]
    fn survives_odd_interface_names() {
        let c = read_config(&[String::new(), "../../etc".into(), "x".repeat(40), "a\0b".into()]);
        assert_eq!(c.interfaces.len(), 4);
        assert!(c.interfaces.iter().all(|i| i.ifindex.is_none()));
    }

    #[test]
    fn the_loopback_peer_is_reached_through_lo() {
        assert_eq!(
            interface_towards("127.0.0.1".parse().expect("addr")).as_deref(),
            Some("lo")
        );
        assert_eq!(
            interface_towards("127.3.2.1".parse().expect("addr")).as_deref(),
            Some("lo")
        );
        assert_eq!(
            interface_by_local_address("127.0.0.1".parse().expect("addr")).as_deref(),
            Some("lo")
        );
    }

    #[test]
    fn reads_from_inside_a_tokio_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let c = runtime.block_on(async { read_config(&["lo".to_string()]) });
        assert!(!c.interfaces[0].offloads.is_empty(), "{:?}", c.notes);
    }

    /// A veth pair made for one test and deleted when dropped.
    struct Veth(String);

    impl Drop for Veth {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip").args(["link", "del", &self.0]).status();
        }
    }

    #[test]
    fn reads_a_veth() {
        // Creating interfaces needs CAP_NET_ADMIN and iproute2 (CI runs as root); elsewhere the
        // test has nothing to look at.
        let name = format!("lrc{}a", std::process::id() % 100_000);
        let peer = format!("lrc{}b", std::process::id() % 100_000);
        let made = std::process::Command::new("ip")
            .args(["link", "add", &name, "type", "veth", "peer", "name", &peer])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            return;
        }
        let _veth = Veth(name.clone());
        let c = read_config(std::slice::from_ref(&name));
        let v = &c.interfaces[0];
        assert_eq!(v.kind.as_deref(), Some("veth"), "{v:?}");
        assert!(!v.is_physical());
        assert_eq!(v.driver.as_deref(), Some("veth"));
        assert_eq!(v.mtu_bytes, Some(1500));
        assert!(v.max_mtu_bytes.is_some_and(|m| m > 9000));
        assert_eq!(v.speed_mbit_per_second, Some(10_000), "{:?}", c.notes);
        assert_eq!(v.offloads.get("tso"), Some(&true));
        assert_eq!(v.channels.rx_max.map(|m| m >= 1), Some(true), "{v:?}");
        assert_eq!(v.sources.get("link").map(String::as_str), Some("netlink"));
    }
}
