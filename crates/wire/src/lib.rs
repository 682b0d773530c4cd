//! linerate-wire: what crosses the wire and the store, as types, with no I/O.
//!
//! The validated test specs ([`spec`]) and their units ([`units`]), the result document
//! ([`result`]) with the host's samples and configuration it holds ([`metrics`]), the grades
//! made from its latency figures ([`grade`]), the sweep document ([`sweep`]), goodput
//! arithmetic ([`goodput`]) and a peer's text made safe to print ([`text`]). `linerate-core` measures and fills these in; `linerate-results` and
//! `linerate-report` read them without compiling the engines. Nothing here opens a socket, a
//! file or a process (`tests/it/layout/` checks).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod goodput;
pub mod grade;
pub mod metrics;
pub mod result;
pub mod spec;
pub mod sweep;
pub mod text;
pub mod units;

/// The version of this build, as written into every result document.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
