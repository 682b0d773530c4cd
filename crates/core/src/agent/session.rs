//! The toolkit every kind's half of a test uses, once the handshake (`handshake`) handed it
//! over: a [`Test`], the control connection of an accepted test with its data connections
//! expected (through `pending`) and collected, its `accepted`, the client's ports, `start`,
//! `started`, and running the engine while watching the client before the report is sent. It imports no kind: each kind (`tcp`, `udp`, `rr`, `http`) is one
//! file that imports this one.

use super::admit::Source;
use super::config::{DATA_TIMEOUT, IDLE_TIMEOUT};
pub(super) use super::pending::Expecting;
use super::pending::{Registration, register};
use super::profile::{Applied, STOPPING};
pub(super) use super::refusal::{Refusal, proto_refusal};
use super::state::State;
use crate::engine::{Control, EngineError, Sink, pin};
use crate::metrics::host;
use crate::proto::conn::{Conn, ProtoError};
use crate::proto::frame::COOKIE_LEN;
use crate::proto::{self, ErrorKind, Message, auth};
use crate::result::{IntervalSample, SideReport};
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Waits for the `wanted` data connections of a test (one per stream) from `rx`, within
/// [`DATA_TIMEOUT`]; every slot is filled when it returns `Ok`.
pub(super) fn collect_streams(rx: &Receiver<(u16, TcpStream)>, wanted: usize) -> Result<Vec<TcpStream>, Refusal> {
    let mut got: Vec<Option<TcpStream>> = (0..wanted).map(|_| None).collect();
    let deadline = Instant::now() + DATA_TIMEOUT;
    let mut have = 0;
    while have < wanted {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((index, stream)) = rx.recv_timeout(left) else {
            return Err((
                ErrorKind::Failed,
                format!(
                    "{have} of {wanted} data connections arrived within {} s",
                    DATA_TIMEOUT.as_secs()
                ),
            ));
        };
        let slot = got.get_mut(usize::from(index)).filter(|s| s.is_none());
        let Some(slot) = slot else {
            return Err((
                ErrorKind::Protocol,
                format!("data connection for stream {index}, which is not expected"),
            ));
        };
        *slot = Some(stream);
        have += 1;
    }
    Ok(got.into_iter().flatten().collect())
}

/// Ignores interval samples: the agent returns them all with its result.
pub(super) struct Quiet;

impl Sink for Quiet {
    fn interval(&mut self, _: &[IntervalSample]) {}
}

/// A fresh cookie naming a test's data connections (and, on UDP, its datagrams).
pub(super) fn new_cookie() -> [u8; COOKIE_LEN] {
    auth::nonce()[..COOKIE_LEN]
        .try_into()
        .expect("nonce is longer than a cookie")
}

/// An engine's failure to set a stream up, as the refusal the client is sent.
pub(super) fn engine_refusal(e: &EngineError) -> Refusal {
    let source = std::error::Error::source(e).map(|s| s.to_string()).unwrap_or_default();
    (ErrorKind::Failed, format!("{e}: {source}"))
}

/// A socket call that failed while setting a stream up (`what` names it).
pub(super) fn io_refusal(what: &str, e: std::io::Error) -> Refusal {
    (ErrorKind::Failed, format!("{what}: {e}"))
}

/// The CPUs the client asked this end's workers to run on (`--peer-cpus`), if this host has them.
pub(super) fn check_peer_cpus(cpus: &[usize]) -> Result<(), Refusal> {
    pin::check_cpus(cpus).map_err(|e| (ErrorKind::BadSpec, format!("--peer-cpus: {e}")))
}

/// An accepted test: its control connection, the agent it runs on and the profile it runs
/// under. Each kind drives one through `accepted`, `start` and `run_and_report`.
pub(super) struct Accepted<'a, 'p> {
    pub state: &'a State,
    pub conn: &'a mut Conn,
    pub profile: &'a mut Option<Applied<'p>>,
    /// Its kind ("tcp", "udp", ...), for the agent's counters.
    pub kind: &'static str,
}

impl<'a> Accepted<'a, '_> {
    /// Data connections that arrive with `cookie` go to the test's queue, as far as `expecting`
    /// allows, until the registration drops.
    pub(super) fn expect_streams(&self, cookie: [u8; COOKIE_LEN], expecting: Expecting) -> Registration<'a> {
        register(&self.state.pending, cookie, expecting)
    }

    /// Where this test's data connections come from (they count against no opening cap there).
    pub(super) fn source(&self) -> Source {
        Source::of(&self.conn.peer())
    }

    /// The address of this end of the control connection: UDP data sockets bind to it.
    pub(super) fn local_ip(&self) -> Result<IpAddr, Refusal> {
        let local = self.conn.stream().local_addr();
        Ok(local.map_err(|e| io_refusal("control socket", e))?.ip())
    }

    /// Tells the client its test is accepted: the cookie, this host, and this end's UDP ports;
    /// refused when the agent is stopping.
    pub(super) fn accepted(&mut self, cookie: &[u8; COOKIE_LEN], udp_ports: Vec<u16>) -> Result<(), Refusal> {
        if self.state.stopping.load(Ordering::SeqCst) {
            return Err((ErrorKind::Failed, STOPPING.into()));
        }
        self.conn
            .send(&Message::Accepted {
                cookie: proto::to_hex(cookie),
                host: self.state.host.clone(),
                udp_ports,
            })
            .map_err(proto_refusal)
    }

    /// The client's UDP ports, one for each of this end's `streams` streams.
    pub(super) fn client_ports(&mut self, streams: usize) -> Result<Vec<u16>, Refusal> {
        let got = self.conn.recv(IDLE_TIMEOUT, "waiting for the client's ports");
        match got.map_err(proto_refusal)? {
            Message::Ports { udp_ports } if udp_ports.len() == streams => Ok(udp_ports),
            Message::Ports { udp_ports } => Err((
                ErrorKind::Protocol,
                format!("{} UDP ports for {streams} streams", udp_ports.len()),
            )),
            other => Err((ErrorKind::Protocol, format!("expected 'ports', got '{}'", other.name()))),
        }
    }

    /// Waits for `start`; under a profile longer, while the client's other agents run theirs.
    /// An agent that is stopping stops waiting (within `STOP_POLL`).
    pub(super) fn await_start(&mut self) -> Result<(), Refusal> {
        let wait = IDLE_TIMEOUT
            + if self.profile.is_some() {
                proto::PROFILE_TIMEOUT
            } else {
                Duration::ZERO
            };
        let until = Instant::now() + wait;
        let got = loop {
            if self.state.stopping.load(Ordering::SeqCst) {
                return Err((ErrorKind::Failed, STOPPING.into()));
            }
            if let Some(m) = self.conn.try_recv(STOP_POLL).map_err(proto_refusal)? {
                break m;
            }
            if Instant::now() >= until {
                return Err(proto_refusal(ProtoError::Timeout {
                    peer: self.conn.peer(),
                    what: "waiting for start",
                    seconds: wait.as_secs_f64(),
                }));
            }
        };
        match got {
            Message::Start => Ok(()),
            Message::Error { kind, message } => Err(proto_refusal(ProtoError::Refused {
                peer: self.conn.peer(),
                kind,
                message: proto::peer_text(&message),
            })),
            other => Err((ErrorKind::Protocol, format!("expected 'start', got '{}'", other.name()))),
        }
    }

    /// Tells the client this end is ready: its engine starts next.
    pub(super) fn started(&mut self) -> Result<(), Refusal> {
        self.conn.send(&Message::Started).map_err(proto_refusal)
    }

    /// Runs this end's engine while watching the client's control connection, then sends the
    /// report with the configuration of the interface toward `peer`, read after the window
    /// (netlink and sysfs cost a few milliseconds), and with the profile's record, its undo run
    /// after that reading. The client may be gone (killed mid-test): then there is no one to
    /// tell, and that is fine.
    pub(super) fn run_and_report(
        &mut self,
        peer: Option<IpAddr>,
        run: impl FnOnce(&Control) -> Result<SideReport, EngineError>,
    ) -> Result<(), Refusal> {
        let control = Control {
            idle: self.state.config.idle,
            ..Control::default()
        };
        let engine_done = AtomicBool::new(false);
        let conn = &mut *self.conn;
        let stopping = &self.state.stopping;
        let (report, cut) = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| watch_client(conn, &control, &engine_done, stopping));
            let report = run(&control);
            engine_done.store(true, Ordering::Relaxed);
            (report, watcher.join().unwrap_or(false))
        });
        let mut report = report.map_err(|e| (ErrorKind::Failed, e.to_string()))?;
        if cut {
            // The engine was aborted, so the report is partial already; say why.
            report.partial = true;
            report.notes.push(format!("{STOPPING}: the test was ended early"));
        }
        self.state.metrics.test_report(self.kind, &report);
        let used: Vec<String> = peer.and_then(host::interface_towards).into_iter().collect();
        report.config = Some(host::read_config(&used));
        report.profile = self.profile.take().map(Applied::finish);
        let _ = conn.send(&Message::Result {
            report: Box::new(report),
        });
        // The client may have sent `stop` after this end finished on its own: read it rather
        // than close over it, or the reset that follows can cost the client the result.
        conn.close_gracefully(Duration::from_secs(2));
        Ok(())
    }
}

/// How often a test waiting on its client looks whether the agent is stopping.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Reads the control connection while a test runs: `stop` stops the senders; a closed or broken
/// connection means the client is gone, and the test is aborted at once, as it is when the agent
/// is stopping (then it returns true).
fn watch_client(conn: &mut Conn, control: &Control, engine_done: &AtomicBool, stopping: &AtomicBool) -> bool {
    while !engine_done.load(Ordering::Relaxed) {
        if stopping.load(Ordering::SeqCst) {
            control.abort();
            return true;
        }
        match conn.try_recv(STOP_POLL) {
            Ok(None) => {}
            Ok(Some(Message::Stop)) => control.stop_send(),
            Ok(Some(_)) | Err(_) => {
                control.abort();
                return false;
            }
        }
    }
    false
}
