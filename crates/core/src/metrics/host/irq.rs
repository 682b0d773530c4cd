//! An interface's IRQs and their affinity: found through the device's msi_irqs in /sys or by
//! name in /proc/interrupts, with the CPUs each may run on from /proc/irq/N.

use super::config::{InterfaceConfig, IrqAffinity};
use super::sysfs::{cpu_list, is_pci_address, read_trimmed};
use std::path::Path;

/// Whether `text` names interface `name` as a whole word: `eth0-TxRx-0` and `i40e-eth0-TxRx-0`
/// name `eth0`, `eth01` and `veth0` do not.
pub(super) fn names_interface(text: &str, name: &str) -> bool {
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
pub(super) fn irq_handler_name(desc: &str) -> String {
    desc.split_whitespace().next_back().unwrap_or_default().to_string()
}

/// IRQs of an interface's queues from /proc/interrupts: the lines whose handler names the
/// interface (`eth0-TxRx-3`, `i40e-eth0-TxRx-3`, `mlx5_comp3@pci:...` does not).
pub(super) fn irqs_naming(interrupts: &crate::metrics::irq::Interrupts, name: &str) -> Vec<(u32, String)> {
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
pub(super) fn irqs_of_device(dir: &Path, interrupts: Option<&crate::metrics::irq::Interrupts>) -> Vec<(u32, String)> {
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

pub(super) fn is_control_vector(name: &str) -> bool {
    name.ends_with("-config") || name.contains("async") || name.ends_with("misc")
}

pub(super) fn read_irqs(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::host::fixture;

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
}
