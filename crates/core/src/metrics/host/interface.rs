//! One tested interface's configuration, in the calling thread's network namespace: the base
//! from rtnetlink and the ioctls, then ethtool's netlink answers, each piece settled against the
//! `ethtool` program when netlink failed; the device directory, NUMA node and IRQs from /sys.

use super::config::InterfaceConfig;
use super::ethtool_program::EthtoolProgram;
use super::irq::read_irqs;
use super::offloads::offloads_from_features;
use super::pieces::{EthtoolPieces, Reply};
use super::sysfs::{is_pci_address, read_trimmed};
use super::{ethnl, ioctl, rtnl};
use std::path::{Path, PathBuf};

pub(super) fn read_interfaces(names: &[String], notes: &mut Vec<String>) -> Vec<InterfaceConfig> {
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
pub(super) fn read_interface_base(
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
            match super::ethtool_program::qdiscs(name) {
                Reply::Got(q) => {
                    c.qdiscs = q;
                    c.sources.insert("qdiscs".into(), "tc program".into());
                }
                Reply::Unsupported => {}
                Reply::Failed(e) => notes.push(format!("{name}: qdiscs: tc: {e}")),
            }
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

pub(super) fn operstate_name(state: u8) -> String {
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
pub(super) fn sysfs_is_this_interface(
    name: &str,
    ifindex: u32,
    address: Option<&[u8]>,
    notes: &mut Vec<String>,
) -> bool {
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
pub(super) fn device_dir(c: &InterfaceConfig, trusted: bool) -> Option<PathBuf> {
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

pub(super) fn read_numa_node(c: &mut InterfaceConfig, device: Option<&Path>, notes: &mut Vec<String>) {
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
pub(super) fn apply_ethtool(c: &mut InterfaceConfig, trusted: bool, netlink: EthtoolPieces, notes: &mut Vec<String>) {
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
pub(super) fn settle<T>(
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
