//! Whether this host can set a TCP congestion control by name, checked when a spec is
//! validated (on the client and again on the agent) so that `-C NAME` is refused in one line
//! instead of failing on every stream.

use super::{SpecError, TcpSpec, TestSpec};

/// A spec's checks on this host: its own (the wire crate's `validate_with`) and whether this
/// host can set its congestion control ([`usable`], read from /proc) at the point the spec
/// checks it.
pub trait Validate {
    fn validate(&self) -> Result<(), SpecError>;
}

impl Validate for TcpSpec {
    fn validate(&self) -> Result<(), SpecError> {
        self.validate_with(usable)
    }
}

impl Validate for TestSpec {
    fn validate(&self) -> Result<(), SpecError> {
        self.validate_with(usable)
    }
}

/// Refuses a congestion control this host cannot set: one missing from
/// `tcp_available_congestion_control` (root may still load it as a module, tcp(7), so a module
/// file for it is enough there), or, without root, from `tcp_allowed_congestion_control`. Where
/// /proc cannot be read the name passes and TCP_CONGESTION decides.
pub fn usable(name: &str) -> Result<(), SpecError> {
    const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let (file, module_ok) = if root {
        (AVAILABLE, congestion_module_exists(name))
    } else {
        (ALLOWED, false)
    };
    congestion_listed(name, file, std::fs::read_to_string(file).ok().as_deref(), module_ok)
}

/// The decision of [`usable`] on `listed`, the file's text (None: unreadable).
fn congestion_listed(name: &str, file: &'static str, listed: Option<&str>, module_ok: bool) -> Result<(), SpecError> {
    match listed {
        Some(text) if !module_ok && !text.split_whitespace().any(|n| n == name) => {
            Err(SpecError::CongestionUnavailable {
                name: name.into(),
                file,
                listed: text.split_whitespace().collect::<Vec<_>>().join(" "),
            })
        }
        _ => Ok(()),
    }
}

/// True when the running kernel has a loadable module `tcp_NAME` (root can load it on demand).
fn congestion_module_exists(name: &str) -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let dir = format!("/lib/modules/{}/kernel/net/ipv4", release.trim());
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&format!("tcp_{name}.ko")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_a_congestion_control_the_host_lacks_is_refused() {
        let f = "/proc/sys/net/ipv4/tcp_available_congestion_control";
        assert_eq!(congestion_listed("cubic", f, Some("reno cubic\n"), false), Ok(()));
        let e = congestion_listed("nonexistent", f, Some("reno cubic\n"), false).expect_err("not listed");
        assert_eq!(
            e.to_string(),
            "congestion control 'nonexistent' is not in /proc/sys/net/ipv4/tcp_available_congestion_control \
             on this host (reno cubic)"
        );
        assert_eq!(
            congestion_listed("bbr", f, Some("reno cubic"), true),
            Ok(()),
            "a loadable module"
        );
        assert_eq!(
            congestion_listed("bbr", f, None, false),
            Ok(()),
            "unreadable: the kernel decides"
        );
        if std::path::Path::new(f).exists() {
            let mut s = TcpSpec::new();
            s.congestion = Some("nonexistent".into());
            assert!(matches!(s.validate(), Err(SpecError::CongestionUnavailable { .. })));
        }
    }
}
