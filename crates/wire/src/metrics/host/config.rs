//! The types of [`HostConfig`]: CPU, interfaces, rings, channels, IRQ affinity. Data only; the
//! readers in core's `metrics::host` fill them in.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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
    /// collapsed to one space (`4096 131072 6291456`). Those of core's `metrics::host::SYSCTLS` that could be read.
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
    /// Every qdisc on the interface with its parameters, as `tc qdisc show` words them (`tbf
    /// 8001: root rate 100Mbit burst 12500b lat 50ms`); empty where `tc` is not installed.
    pub qdiscs: Vec<String>,
    /// Transmit queue length, packets.
    pub tx_queue_len_packets: Option<u32>,
    /// Offload -> active, for the offloads of core's `metrics::host::OFFLOADS` the device knows: `tso`, `gso`,
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
