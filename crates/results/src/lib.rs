//! linerate-results: the results side, above the measuring core. Documents read back
//! ([`document`]), the results store ([`store`]), campaign plans ([`plan`]), comparisons
//! ([`compare`]), repeated runs ([`repeat`]) and their statistics ([`stats`]), each over the
//! headline figures of a run ([`headline`]), and Quality of Outcome requirements as `--qoo`
//! names them ([`qoo`]).
//!
//! In: the result document's types from `linerate_wire::result` (and sweeps from
//! `linerate_wire::sweep`). Out: plain data that `linerate-report` renders and the binary stores.
//! A crate of its own so that the agent, which links `linerate-core` alone, carries none of
//! SQLite, TOML or the statistics (docs/architecture.md).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod compare;
pub mod document;
#[cfg(test)]
mod fuzz;
pub mod headline;
pub mod plan;
pub mod qoo;
pub mod repeat;
pub mod stats;
pub mod store;
