//! Offload names as results and `doctor` use them, the kernel features and `ethtool -k` groups
//! behind each, and the mapping from reported feature states to on/off and fixed.

use std::collections::BTreeMap;

/// An offload as [`InterfaceConfig::offloads`](super::InterfaceConfig::offloads) names it.
pub(super) struct Offload {
    /// The key in [`InterfaceConfig::offloads`](super::InterfaceConfig::offloads).
    pub(super) key: &'static str,
    /// The name `ethtool -K` takes.
    pub(super) switch: &'static str,
    /// `ethtool -k`'s line for it (a group of kernel features, or one feature).
    pub(super) group: &'static str,
    /// The kernel's feature strings (net/ethtool/common.c `netdev_features_strings`); the
    /// offload is on when any of them is active.
    pub(super) features: &'static [&'static str],
}

pub(super) const OFFLOADS_TABLE: &[Offload] = &[
    Offload {
        key: "tso",
        switch: "tso",
        group: "tcp-segmentation-offload",
        features: &["tx-tcp-segmentation", "tx-tcp6-segmentation"],
    },
    Offload {
        key: "gso",
        switch: "gso",
        group: "generic-segmentation-offload",
        features: &["tx-generic-segmentation"],
    },
    Offload {
        key: "gro",
        switch: "gro",
        group: "generic-receive-offload",
        features: &["rx-gro"],
    },
    Offload {
        key: "lro",
        switch: "lro",
        group: "large-receive-offload",
        features: &["rx-lro"],
    },
    Offload {
        key: "rx-checksum",
        switch: "rx",
        group: "rx-checksumming",
        features: &["rx-checksum"],
    },
    Offload {
        key: "tx-checksum",
        switch: "tx",
        group: "tx-checksumming",
        features: &["tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6"],
    },
    Offload {
        key: "scatter-gather",
        switch: "sg",
        group: "scatter-gather",
        features: &["tx-scatter-gather"],
    },
    Offload {
        key: "rx-gro-hw",
        switch: "rx-gro-hw",
        group: "rx-gro-hw",
        features: &["rx-gro-hw"],
    },
    Offload {
        key: "tx-udp-segmentation",
        switch: "tx-udp-segmentation",
        group: "tx-udp-segmentation",
        features: &["tx-udp-segmentation"],
    },
    Offload {
        key: "rx-udp-gro-forwarding",
        switch: "rx-udp-gro-forwarding",
        group: "rx-udp-gro-forwarding",
        features: &["rx-udp-gro-forwarding"],
    },
    Offload {
        key: "rx-gro-list",
        switch: "rx-gro-list",
        group: "rx-gro-list",
        features: &["rx-gro-list"],
    },
];

/// The keys [`InterfaceConfig::offloads`](super::InterfaceConfig::offloads) may hold.
pub const OFFLOADS: &[&str] = &[
    "tso",
    "gso",
    "gro",
    "lro",
    "rx-checksum",
    "tx-checksum",
    "scatter-gather",
    "rx-gro-hw",
    "tx-udp-segmentation",
    "rx-udp-gro-forwarding",
    "rx-gro-list",
];

/// The name `ethtool -K IF NAME on|off` takes for an offload key (`rx-checksum` -> `rx`).
pub fn offload_switch(key: &str) -> Option<&'static str> {
    OFFLOADS_TABLE.iter().find(|o| o.key == key).map(|o| o.switch)
}

/// A feature as ethtool reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct FeatureState {
    pub(super) active: bool,
    /// Whether the driver lets it be switched (not `[fixed]`).
    pub(super) changeable: bool,
}

/// The offloads of [`OFFLOADS_TABLE`] that `features` know, and those of them that are fixed.
/// `features` may hold kernel feature strings (netlink) or `ethtool -k` lines, which add the
/// group names; a group line wins over its members.
pub(super) fn offloads_from_features(
    features: &BTreeMap<String, FeatureState>,
) -> (BTreeMap<String, bool>, Vec<String>) {
    let mut offloads = BTreeMap::new();
    let mut fixed = Vec::new();
    for o in OFFLOADS_TABLE {
        let states: Vec<FeatureState> = match features.get(o.group) {
            Some(s) => vec![*s],
            None => o.features.iter().filter_map(|f| features.get(*f).copied()).collect(),
        };
        if states.is_empty() {
            continue;
        }
        offloads.insert(o.key.to_string(), states.iter().any(|s| s.active));
        if !states.iter().any(|s| s.changeable) {
            fixed.push(o.key.to_string());
        }
    }
    (offloads, fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(pairs: &[(&str, bool, bool)]) -> BTreeMap<String, FeatureState> {
        pairs
            .iter()
            .map(|&(n, active, changeable)| (n.to_string(), FeatureState { active, changeable }))
            .collect()
    }

    #[test]
    fn maps_kernel_features_to_offloads() {
        let f = states(&[
            ("tx-tcp-segmentation", false, true),
            ("tx-tcp6-segmentation", true, true),
            ("tx-generic-segmentation", true, true),
            ("rx-gro", false, true),
            ("rx-lro", false, false),
            ("rx-checksum", true, false),
            ("tx-checksum-ipv4", false, false),
            ("tx-checksum-ip-generic", true, true),
            ("highdma", true, false),
        ]);
        let (offloads, fixed) = offloads_from_features(&f);
        let want: BTreeMap<String, bool> = [
            ("tso", true),
            ("gso", true),
            ("gro", false),
            ("lro", false),
            ("rx-checksum", true),
            ("tx-checksum", true),
        ]
        .iter()
        .map(|&(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(offloads, want);
        assert_eq!(fixed, ["lro", "rx-checksum"]);
        assert_eq!(offload_switch("rx-checksum"), Some("rx"));
        assert_eq!(offload_switch("scatter-gather"), Some("sg"));
        assert_eq!(offload_switch("nonsense"), None);
        assert!(OFFLOADS_TABLE.iter().map(|o| o.key).eq(OFFLOADS.iter().copied()));
    }
}
