//! Running a test from the client's end: connect to each agent, authenticate, agree on the test,
//! open the data connections, start every agent and then the local engine, watch the control
//! connections while it runs, and join everyone's measurements into one [`TestResult`].
//!
//! What every kind shares is in `session` (`start`, and the one `drive` that runs
//! the local engine, watches the agents and assembles the document); each kind's half of a test
//! is one file (`tcp`, `udp`, `rr`, `http`) that imports only `session`, mirroring the agent.
//!
//! [`TestResult`]: crate::result::TestResult

mod controller;
mod handshake;
mod http;
mod iperf3;
mod matrix;
mod profile;
mod query;
mod reach;
mod rpm;
mod rr;
mod session;
mod tcp;
mod udp;
mod zero;

/// What a caller of the client names: the sink its live lines implement, the HTTP targets it
/// builds, the agent's port, the shared secret's type, and the check of `--cpus` against this
/// host (the engine and the protocol stay behind the client).
pub use crate::engine::http::{HttpTarget, HttpUrl, ProbeLog, Probing, start_probes, tls_client_config};
pub use crate::engine::pin::check_cpus as check_local_cpus;
pub use crate::engine::rr::{Fate, ProbeRecord, Recorded};
pub use crate::engine::{NullSink, Sink};
pub use crate::proto::DEFAULT_PORT;
pub use crate::proto::auth::Secret;
pub use crate::tls::TlsSetupError;
pub(crate) use controller::proves_itself;
pub use controller::{AgentClock, Relayed, read_clock, run_from};
pub use http::{HttpAgent, LOAD_SERIES, add_probe_series, http_targets, load_end_s, run_http};
#[cfg(feature = "fuzzing")]
pub(crate) use iperf3::fuzz::check as iperf3_fuzz_check;
pub use iperf3::{SCHEME as IPERF3_SCHEME, iperf3_target, run_iperf3};
pub(crate) use matrix::error_chain;
pub use matrix::{CLOCK_EXCHANGES, MatrixLayout, cell_figure, cell_value, read_clocks, run_matrix};
pub use query::agent_profiles;
pub use rpm::{RpmSetupError, RpmTarget, rpm_target, run_rpm};
pub use rr::{run_rr, run_rr_recorded};
pub(crate) use session::START_WAIT_MAX;
pub use session::{ClientError, ClientOptions, StartAt, Target};
pub use tcp::run_tcp;
pub use udp::run_udp;
pub use zero::ZeroClock;
