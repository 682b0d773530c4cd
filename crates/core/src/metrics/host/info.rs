//! [`HostInfo`], the short identity of a host (name, kernel, CPU model and count,
//! distribution, boot id and network namespace), and the online CPU count. In: uname,
//! /proc/cpuinfo, /etc/os-release, /proc/sys/kernel/random/boot_id, /proc/self/ns/net.

pub use linerate_wire::metrics::host::HostInfo;

/// [`HostInfo`] read from this host. A trait because the type is the wire crate's, where nothing
/// reads a file; it is `HostInfo::read()` with the trait in scope.
pub trait ReadHostInfo {
    fn read() -> HostInfo;
}

impl ReadHostInfo for HostInfo {
    fn read() -> HostInfo {
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
            boot_id: std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
            net_namespace: std::fs::read_link("/proc/self/ns/net")
                .ok()
                .map(|p| p.to_string_lossy().into_owned()),
        }
    }
}

/// CPUs online now.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

pub(super) fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

pub(super) fn os_release_name(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
