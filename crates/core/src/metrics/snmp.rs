//! The stack's own counters: TCP and UDP from /proc/net/snmp (per network namespace) and the
//! softnet backlog from /proc/net/softnet_stat (one hexadecimal line per CPU, 32-bit counters
//! that wrap).

/// Counters since boot (or since the namespace was made).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackCounters {
    pub tcp_in_segments: u64,
    pub tcp_out_segments: u64,
    pub tcp_retransmitted_segments: u64,
    pub udp_in_datagrams: u64,
    pub udp_out_datagrams: u64,
    pub udp_receive_buffer_errors: u64,
    pub udp_send_buffer_errors: u64,
}

impl StackCounters {
    pub(crate) fn read() -> Option<StackCounters> {
        let text = std::fs::read_to_string("/proc/thread-self/net/snmp")
            .or_else(|_| std::fs::read_to_string("/proc/net/snmp"))
            .ok()?;
        parse_snmp(&text)
    }
}

/// The value under `field` in the two-line `Proto:` table (a header line, then a value line).
fn field(text: &str, proto: &str, field: &str) -> Option<u64> {
    let prefix = format!("{proto}:");
    let mut rows = text.lines().filter(|l| l.starts_with(&prefix));
    let names = rows.next()?;
    let values = rows.next()?;
    let at = names.split_whitespace().position(|n| n == field)?;
    // MaxConn is -1: parse as signed, keep what is a counter.
    values
        .split_whitespace()
        .nth(at)?
        .parse::<i64>()
        .ok()
        .map(|v| v.max(0) as u64)
}

/// Parses /proc/net/snmp; `None` without a Tcp table.
pub(crate) fn parse_snmp(text: &str) -> Option<StackCounters> {
    let udp = |f: &str| field(text, "Udp", f).unwrap_or(0);
    Some(StackCounters {
        tcp_in_segments: field(text, "Tcp", "InSegs")?,
        tcp_out_segments: field(text, "Tcp", "OutSegs").unwrap_or(0),
        tcp_retransmitted_segments: field(text, "Tcp", "RetransSegs").unwrap_or(0),
        udp_in_datagrams: udp("InDatagrams"),
        udp_out_datagrams: udp("OutDatagrams"),
        udp_receive_buffer_errors: udp("RcvbufErrors"),
        udp_send_buffer_errors: udp("SndbufErrors"),
    })
}

/// One CPU's softnet backlog counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftnetCpu {
    /// The CPU number (column 13 on kernels that print it, else the line's position).
    pub cpu: u32,
    /// Packets taken off the backlog.
    pub processed: u64,
    /// Packets dropped because the backlog was full (net.core.netdev_max_backlog).
    pub dropped: u64,
    /// Times a softirq ran out of budget with work left (net.core.netdev_budget).
    pub squeezed: u64,
}

/// Reads /proc/net/softnet_stat; `None` when it cannot be read.
pub(crate) fn read_softnet() -> Option<Vec<SoftnetCpu>> {
    Some(parse_softnet(&std::fs::read_to_string("/proc/net/softnet_stat").ok()?))
}

/// Parses /proc/net/softnet_stat: columns 0, 1, 2 and 12 of each CPU's line.
pub(crate) fn parse_softnet(text: &str) -> Vec<SoftnetCpu> {
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let cols: Vec<u64> = line
                .split_whitespace()
                .map(|c| u64::from_str_radix(c, 16).unwrap_or(0))
                .collect();
            let col = |n: usize| cols.get(n).copied().unwrap_or(0);
            SoftnetCpu {
                cpu: cols.get(12).map_or(i as u32, |&c| c as u32),
                processed: col(0),
                dropped: col(1),
                squeezed: col(2),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_and_udp_tables() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
Tcp: 1 200 120000 -1 137 123 2 16 0 1224220 1225857 199 0 16 0\n\
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
Udp: 27 0 0 28 5 6 0 0 0\n";
        let s = parse_snmp(text).expect("parses");
        assert_eq!(s.tcp_retransmitted_segments, 199);
        assert_eq!(s.tcp_in_segments, 1_224_220);
        assert_eq!((s.udp_receive_buffer_errors, s.udp_send_buffer_errors), (5, 6));
        assert_eq!(parse_snmp("Ip: a\nIp: 1\n"), None);
    }

    #[test]
    fn sums_softnet_over_cpus() {
        let s = parse_softnet("000c8462 00000002 00000010 0\n000aa93e 00000001 00000001 0 0 0 0 0 0 0 0 0 00000003\n");
        assert_eq!(
            (s[0].cpu, s[0].processed, s[0].dropped, s[0].squeezed),
            (0, 0xc8462, 2, 0x10)
        );
        assert_eq!(s[1].cpu, 3, "column 13 names the CPU");
    }

    #[test]
    fn reads_this_host() {
        assert!(StackCounters::read().is_some());
        assert!(read_softnet().is_some_and(|v| !v.is_empty()));
    }
}
