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
//!
//! One file per job: the types are the wire crate's (`linerate_wire::metrics::host`), `info` reads
//! [`HostInfo`], `system` and `cpu` the /proc and /sys
//! parsers over `sysfs` (the readers they share), `offloads` the offload names; `interface`
//! assembles one interface from `rtnl` (rtnetlink), `ethnl` (ethtool generic netlink), `ioctl`
//! (SIOCETHTOOL), `ethtool_program` (the fallback), both answering in `pieces`, and `irq` (IRQs
//! and their affinity).

mod cpu;
mod ethnl;
mod ethtool_program;
mod info;
mod interface;
mod ioctl;
mod irq;
mod offloads;
mod pieces;
mod rtnl;
mod sysfs;
mod system;

// The types are the wire crate's (no I/O there); the readers beside this file fill them in.
pub use info::{HostInfo, ReadHostInfo, online_cpus};
use linerate_wire::metrics::host as config;
pub use linerate_wire::metrics::host::{ChannelCounts, CpuConfig, HostConfig, InterfaceConfig, IrqAffinity, RingSizes};
pub use offloads::{OFFLOADS, offload_switch};
pub use system::SYSCTLS;

use cpu::read_cpu;
use info::os_release_name;
use interface::read_interfaces;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;
use sysfs::read_noting;
use system::{parse_meminfo_total, process_running, read_numa_nodes, read_sysctls};

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

/// A captured /proc, /sys or ethtool text under tests/fixtures/config.
#[cfg(test)]
fn fixture(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/config/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    #[allow(clippy::print_stderr)] // a skipped test says why
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
            eprintln!("skipped: needs CAP_NET_ADMIN and iproute2 to create a veth pair");
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
