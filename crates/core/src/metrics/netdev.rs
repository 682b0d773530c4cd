//! Interface counters from /proc/net/dev, which (unlike /sys/class/net) always shows the network
//! namespace of the thread that reads it. Counters are 64-bit, but some drivers keep 32-bit ones
//! that wrap; an interface that is removed and created again starts from zero.

/// One interface's counters since it was created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IfCounters {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errors: u64,
    pub rx_dropped: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub tx_dropped: u64,
}

/// Reads this thread's namespace's interfaces; empty when /proc/net/dev cannot be read.
pub fn read() -> Vec<IfCounters> {
    std::fs::read_to_string("/proc/thread-self/net/dev")
        .or_else(|_| std::fs::read_to_string("/proc/net/dev"))
        .map(|t| parse_net_dev(&t))
        .unwrap_or_default()
}

/// Parses /proc/net/dev: two header lines, then `name: 8 receive and 8 transmit counters`.
pub(crate) fn parse_net_dev(text: &str) -> Vec<IfCounters> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(':')?;
            let v: Vec<u64> = rest.split_whitespace().map(|f| f.parse().ok()).collect::<Option<_>>()?;
            if v.len() < 12 {
                return None;
            }
            Some(IfCounters {
                name: name.trim().to_string(),
                rx_bytes: v[0],
                rx_packets: v[1],
                rx_errors: v[2],
                rx_dropped: v[3],
                tx_bytes: v[8],
                tx_packets: v[9],
                tx_errors: v[10],
                tx_dropped: v[11],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_interfaces() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
lo: 53976503271 1223012    0    0    0     0          0         0 53976503271 1223012    0    0    0     0       0          0\n  \
eth0: 35310518    1239    1    2    0     0          0         0    83017     885    3    4    0     0       0          0\n";
        let v = parse_net_dev(text);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name, "lo");
        assert_eq!(v[0].rx_bytes, 53_976_503_271);
        assert_eq!(
            (
                v[1].rx_errors,
                v[1].rx_dropped,
                v[1].tx_bytes,
                v[1].tx_packets,
                v[1].tx_errors,
                v[1].tx_dropped
            ),
            (1, 2, 83017, 885, 3, 4)
        );
    }

    #[test]
    fn reads_this_namespace() {
        assert!(read().iter().any(|i| i.name == "lo"));
    }
}
