//! The small readers every /proc and /sys parser here shares: a file read whole (noting why
//! not) or trimmed, a kernel CPU list, a PCI bus address. Imports nothing of its siblings.

use std::path::Path;

pub(super) fn read_noting(path: &str, notes: &mut Vec<String>) -> Option<String> {
    std::fs::read_to_string(path)
        .map_err(|e| notes.push(format!("{path}: {e}")))
        .ok()
}

pub(super) fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// A kernel CPU list (`0-3,8`) as u32s.
pub(super) fn cpu_list(text: &str) -> Option<Vec<u32>> {
    let cpus = crate::units::parse_cpu_list(text.trim()).ok()?;
    cpus.into_iter().map(|c| u32::try_from(c).ok()).collect()
}

/// `0000:3b:00.0`: domain, bus, device, function.
pub(super) fn is_pci_address(s: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(cpu_list("0-3,8\n"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(cpu_list(""), None);
        assert_eq!(cpu_list("3-1"), None);
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
}
