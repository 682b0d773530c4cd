//! The agent as iperf3's server (`serve --iperf3-port`): `iperf3 -c` clients (3.7 and
//! later) run their tests against linerate's engines, one at a time as iperf3's own server runs
//! them, under the agent's limits (its test slots, memory budget, idle rule, handshake deadline,
//! caps on opening connections), and each test's document goes to the agent's owner. iperf3's
//! protocol has no authentication here, so the port is loopback only unless `--iperf3-allow`
//! names who may use it (docs/security.md).
//!
//! `listen` binds the port and accepts, `turn` keeps the port's one test and routes its data
//! connections to it, `test` runs one test, driving `sequence` (the server's control sequence as a
//! state machine, tested without a socket); docs/iperf3.md says what maps to what.

mod listen;
mod sequence;
mod test;
mod turn;

pub(super) use listen::Listeners;
