//! linerate-core: everything that measures, and nothing that prints.
//!
//! In: validated test specs ([`spec`]) and sockets. Out: plain data ([`result`]) that the
//! `linerate-report` crate renders. The control protocol ([`proto`]) carries specs to agents and
//! their measurements back; [`client`] runs one test against one or more agents, [`agent`] is
//! the other half, serving them.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod client;
pub mod codec;
pub mod engine;
pub mod fleet;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod fuzz;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod httpd;
pub mod metrics;
pub mod proto;
pub mod spec;
pub mod summary;
pub mod sweep;
pub mod tls;
pub mod tlsclient;
pub(crate) mod tlsio;
pub mod unixtime;

// What crosses the wire and the store, typed and I/O-free, is the wire crate's; under its old
// paths here so that core's code and the binary read it as before.
pub use linerate_wire::{VERSION, goodput, result, units};
