//! [`HostInfo`], the short identity of a host (name, kernel, CPU model and count, distribution,
//! boot id and network namespace), as a document holds it; core's `metrics::host` reads it.

use serde::{Deserialize, Serialize};

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
    /// The kernel's boot id (/proc/sys/kernel/random/boot_id): two ends with the same one run on
    /// one host (one kernel), so its host-wide counters (CPU, interrupts, softirqs, memory) are
    /// summed once. Absent when unreadable or from an older linerate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The network namespace (`net:[INODE]`, /proc/self/ns/net): ends sharing a boot id and a
    /// namespace also share interface and stack counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_namespace: Option<String>,
}
