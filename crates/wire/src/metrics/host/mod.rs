//! What a host is and how it is set up, as a result document records it: [`HostInfo`] (the
//! short identity) and [`HostConfig`] (the configuration that moves network results). Core's
//! `metrics::host` reads both from the kernel; `doctor` checks a `HostConfig`.

mod config;
mod info;

pub use config::{ChannelCounts, CpuConfig, HostConfig, InterfaceConfig, IrqAffinity, RingSizes};
pub use info::HostInfo;
