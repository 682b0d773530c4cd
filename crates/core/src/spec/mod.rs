//! The validated, unit-typed test specs: the wire crate's ([`linerate_wire::spec`]), under their
//! old path, with the one check that reads the host: whether it can set a TCP congestion control
//! ([`Validate::validate`], which every spec's validation on the client and the agent goes
//! through).

pub use linerate_wire::spec::*;

mod congestion;

pub use congestion::{Validate, usable as congestion_usable};
