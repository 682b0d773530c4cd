//! What ethtool tells about one interface, piece by piece (link, features, rings, channels),
//! whichever way it was asked: `ethnl` (generic netlink) and `ethtool_program` (the fallback)
//! answer in these types, `interface` settles them into the configuration.

use super::config::{ChannelCounts, RingSizes};
use super::offloads::FeatureState;
use std::collections::BTreeMap;

/// Link settings as a driver reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct LinkSettings {
    pub(super) speed_mbit_per_second: Option<u32>,
    pub(super) duplex: Option<String>,
    pub(super) autoneg: Option<bool>,
}

/// One ethtool answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Reply<T> {
    Got(T),
    /// The driver does not implement it (EOPNOTSUPP): an answer, not a failure.
    Unsupported,
    Failed(String),
}

/// What ethtool tells about one interface.
#[derive(Clone, Debug)]
pub(super) struct EthtoolPieces {
    pub(super) link: Reply<LinkSettings>,
    pub(super) features: Reply<BTreeMap<String, FeatureState>>,
    pub(super) rings: Reply<RingSizes>,
    pub(super) channels: Reply<ChannelCounts>,
}
