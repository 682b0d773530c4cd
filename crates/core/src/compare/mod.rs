//! Comparing two sets of results (issue 16): what differs between the configurations that
//! measured them ([`config`]). Typed data, no printing.

pub mod config;

pub use config::{ConfigChange, config_difference};
