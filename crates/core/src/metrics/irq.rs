//! Interrupt counts from /proc/interrupts and softirq counts from /proc/softirqs. Both print a
//! header naming the online CPUs (`CPU0 CPU1 CPU3` when CPU2 is offline) and one line per source
//! with a count per CPU. The kernel keeps these in `unsigned int`: they wrap at 2^32.

/// One line of /proc/interrupts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqLine {
    /// The IRQ number or the name of an architecture's source (`LOC`, `RES`, `NMI`).
    pub irq: String,
    /// Counts in the order of [`Interrupts::cpus`]; shorter (often one) for a system-wide count
    /// such as `ERR`.
    pub counts: Vec<u64>,
    /// The rest of the line with runs of spaces collapsed: chip, hardware IRQ, handler names.
    pub desc: String,
}

/// One reading of /proc/interrupts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interrupts {
    /// The CPU numbers of the columns.
    pub cpus: Vec<u32>,
    pub lines: Vec<IrqLine>,
}

impl Interrupts {
    pub(crate) fn read() -> Option<Interrupts> {
        parse_interrupts(&std::fs::read_to_string("/proc/interrupts").ok()?)
    }
}

/// The `CPU0 CPU1 ...` header as CPU numbers.
fn parse_header(line: &str) -> Option<Vec<u32>> {
    line.split_whitespace()
        .map(|t| t.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect::<Option<Vec<u32>>>()
        .filter(|v| !v.is_empty())
}

/// Splits `  24:    1    0  IO-APIC 5-edge ACPI:Ged` into its name, at most `columns` counts,
/// and the collapsed rest.
fn parse_row(line: &str, columns: usize) -> Option<(String, Vec<u64>, String)> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let mut counts = Vec::with_capacity(columns);
    let mut tokens = rest.split_whitespace().peekable();
    while counts.len() < columns {
        match tokens.peek().and_then(|t| t.parse::<u64>().ok()) {
            Some(v) => {
                counts.push(v);
                tokens.next();
            }
            None => break,
        }
    }
    let desc = tokens.collect::<Vec<_>>().join(" ");
    Some((name.to_string(), counts, desc))
}

/// Parses /proc/interrupts; lines it cannot read are skipped, `None` without a header.
pub(crate) fn parse_interrupts(text: &str) -> Option<Interrupts> {
    let mut lines = text.lines();
    let cpus = parse_header(lines.next()?)?;
    let lines = lines
        .filter_map(|l| parse_row(l, cpus.len()))
        .map(|(irq, counts, desc)| IrqLine { irq, counts, desc })
        .collect();
    Some(Interrupts { cpus, lines })
}

/// One reading of /proc/softirqs: per kind (`NET_RX`, `NET_TX`, `TIMER`, ...), a count per CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Softirqs {
    pub cpus: Vec<u32>,
    pub kinds: Vec<(String, Vec<u64>)>,
}

impl Softirqs {
    pub(crate) fn read() -> Option<Softirqs> {
        parse_softirqs(&std::fs::read_to_string("/proc/softirqs").ok()?)
    }
}

/// Parses /proc/softirqs; `None` without a header.
pub(crate) fn parse_softirqs(text: &str) -> Option<Softirqs> {
    let mut lines = text.lines();
    let cpus = parse_header(lines.next()?)?;
    let kinds = lines
        .filter_map(|l| parse_row(l, cpus.len()))
        .map(|(kind, counts, _)| (kind, counts))
        .collect();
    Some(Softirqs { cpus, kinds })
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1       \n  \
 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n  \
 41:       1923          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx\n\
NMI:          0          0   Non-maskable interrupts\n\
LOC:     297773     297600   Local timer interrupts\n\
ERR:          0\n";

    #[test]
    fn parses_numbered_and_named_lines() {
        let i = parse_interrupts(INTERRUPTS).expect("parses");
        assert_eq!(i.cpus, [0, 1]);
        assert_eq!(i.lines.len(), 5);
        assert_eq!(i.lines[1].irq, "41");
        assert_eq!(i.lines[1].counts, [1923, 0]);
        assert_eq!(i.lines[1].desc, "PCI-MSIX-0000:00:04.0 1-edge virtio3-rx");
        assert_eq!(i.lines[3].desc, "Local timer interrupts");
        assert_eq!(i.lines[4].counts, [0], "a system-wide line has one count");
    }

    #[test]
    fn a_handler_name_that_is_a_number_is_not_a_count() {
        let i = parse_interrupts("  CPU0\n 9: 5 IO-APIC 9-fasteoi acpi\n").expect("parses");
        assert_eq!(i.lines[0].counts, [5]);
        assert_eq!(i.lines[0].desc, "IO-APIC 9-fasteoi acpi");
    }

    #[test]
    fn parses_softirqs() {
        let s = parse_softirqs("                    CPU0       CPU2\n      NET_RX:     659731     562237\n")
            .expect("parses");
        assert_eq!(s.cpus, [0, 2]);
        assert_eq!(s.kinds, [("NET_RX".to_string(), vec![659731, 562237])]);
        assert_eq!(parse_softirqs("garbage\n"), None);
    }

    #[test]
    fn reads_this_host() {
        let i = Interrupts::read().expect("/proc/interrupts");
        assert!(!i.cpus.is_empty() && !i.lines.is_empty());
        let s = Softirqs::read().expect("/proc/softirqs");
        assert!(s.kinds.iter().any(|(k, _)| k == "NET_RX"));
    }
}
