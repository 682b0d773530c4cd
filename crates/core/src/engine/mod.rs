//! The measuring engines. An engine is handed connected sockets and a validated spec, drives them
//! from pinned worker threads, and returns what it counted ([`crate::result::SideReport`]); interval
//! samples go to a [`Sink`] while it runs. Engines print nothing and know nothing of the protocol.
//!
//! Every engine ([`tcp`], [`udp`], [`rr`], [`http`]) runs on the one runner (`run`: workers, the
//! start gate, sampling, the window, the stop rules) and uses the base here (this module's
//! [`Control`], [`Sink`] and [`EngineError`], [`sockopt`], [`pin`], [`pacing`], [`sequence`],
//! `uring`); none imports another. Socket options are set and read back in [`sockopt`] only.

pub mod http;
pub mod pacing;
pub mod pin;
pub mod rr;
pub(crate) mod run;
pub mod sequence;
pub mod sockopt;
pub mod tcp;
pub mod udp;

use crate::result::{IntervalSample, Role};
use std::sync::atomic::{AtomicBool, Ordering};

/// Where engines put interval samples while they run. The collector, the live lines and the JSON
/// stream are sinks; an engine never knows which ones are listening.
pub trait Sink: Send {
    /// Once, before the workers start: each stream's number and what this end does with it,
    /// as the end that opened the stream recorded it. A sink that tells sent from received
    /// keeps these rather than working roles out again.
    fn start(&mut self, _streams: &[(u16, Role)]) {}

    /// Once, at the run's time zero (the zero every sample's `start_ns` and `end_ns` count
    /// from), from the sampling thread: what runs beside the test (latency probes) puts its
    /// own times on the same axis.
    fn zero(&mut self, _at: std::time::Instant) {}

    /// One call per interval with one sample per stream. Called from the engine's sampling
    /// thread, never from a worker: it may format and print, but must not block for long.
    fn interval(&mut self, samples: &[IntervalSample]);
}

/// A sink that keeps nothing.
pub struct NullSink;

impl Sink for NullSink {
    fn interval(&mut self, _: &[IntervalSample]) {}
}

/// Flags another thread sets to end a run early.
#[derive(Debug, Default)]
pub struct Control {
    /// Senders stop and close their side; receivers read on to the end of stream.
    pub stop_send: AtomicBool,
    /// Everything stops now; the run is reported as partial.
    pub abort: AtomicBool,
    /// How long no byte may move before the run is given up, for a run that has that rule;
    /// None: the runner's own (30 s). An agent sets it (`serve --idle`).
    pub idle: Option<std::time::Duration>,
    /// The peer decides when the run ends (an iperf3 client): its stop is the run's
    /// normal end, not a cut, so only an abort makes the report partial.
    pub peer_ends: bool,
}

impl Control {
    pub fn stop_send(&self) {
        self.stop_send.store(true, Ordering::Relaxed);
    }
    pub fn abort(&self) {
        self.abort.store(true, Ordering::Relaxed);
    }
    pub fn sending_stopped(&self) -> bool {
        self.stop_send.load(Ordering::Relaxed)
    }
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("CPU {cpu} does not exist here (this host has CPUs {online})")]
    NoSuchCpu { cpu: usize, online: String },
    #[error("pinning a worker to CPU {cpu}")]
    Pin {
        cpu: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("setting {option} on a data socket")]
    SocketOption {
        option: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("starting a worker thread")]
    Spawn(#[source] std::io::Error),
    #[error("setting up io_uring for --depth")]
    Uring(#[source] std::io::Error),
    #[error("{what}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("setting up TLS")]
    Tls(#[source] crate::tls::TlsSetupError),
}
