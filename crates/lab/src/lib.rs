//! linerate-lab: emulated hosts and links on one machine, for users (`linerate lab`) and for
//! linerate's own tests.
//!
//! A lab is a set of network namespaces (`LAB-h1` .. `LAB-hN`) with one veth each, joined point
//! to point (two hosts) or through a switch namespace (`LAB-sw`: a kernel bridge, or linerate's
//! user-space relay when packets must be delayed, reordered or duplicated and the kernel has no
//! netem). Every host gets an address in 10.211.0.0/24 (host X is 10.211.0.X; the range exists
//! only inside the lab), a hosts file naming h1..hN, and a `linerate serve` agent. What was made
//! is recorded under /run/linerate/labs/LAB so that `lab down` can remove it, also after a crash.
//!
//! Link specs in ([`link`]), a [`LabState`] out ([`up`]), its status as the result document's
//! [`LabRecord`] ([`status`]); the binary prints, this crate does not. Rooms: [`link`] parses
//! specs, `topology` sets up and removes, `net` is the veth wiring, `shape` is tc (`queue` the
//! queue in front of each rate: tbf's FIFO or an AQM, and its record), `loss` is
//! nftables, `daemons` are the agents and the relay process, [`relay`] is the relay itself,
//! `state` the state file, `exec` runs a command in a host.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cmd;
mod daemons;
mod error;
mod exec;
pub mod link;
mod loss;
mod net;
mod queue;
pub mod relay;
mod shape;
mod state;
mod status;
mod topology;

pub use error::LabError;
pub use exec::exec;
pub use linerate_core::result::lab::LabRecord;
pub use loss::loss_drops;
pub use state::{LabHost, LabState, labs, load, state_dir};
pub use status::{relay_stats, status};
pub use topology::{UpOptions, down, up};

pub const DEFAULT_NAME: &str = "lab";
pub const SUBNET: &str = "10.211.0";
pub const AGENT_PORT: u16 = 5301;
/// The port of each host's HTTP server (`serve --http-port`: `/bytes/N` and files), for
/// `linerate http` inside the lab.
pub const HTTP_PORT: u16 = 8080;
