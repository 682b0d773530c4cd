//! Request-response: the client (the *asking* end) sends a request of `request_bytes` and waits
//! for the whole response of `response_bytes` before the next (closed loop, here), or sends each
//! request on a schedule whatever is outstanding and times it from that moment (open loop, no
//! coordinated omission: `rr/open.rs`); the agent (the *answering* end) answers each request,
//! in order, however many are pipelined. `rr/stream.rs` holds what both loops share. Every round trip goes into an HDR histogram
//! (3 significant digits, no sampling); nothing in the loop allocates.
//!
//! TCP keeps one connection per stream; `connect` opens a new one per transaction (netperf's
//! TCP_CRR) and also times the handshake. UDP tags each request with its number in its first
//! bytes (up to 8; the answer echoes them), so a late answer is told from the current one; a
//! request unanswered within the timeout counts as lost and the stream goes on.

use super::pacing::Pacer;
use super::run::{self, Deadlines, Gate, RunState, Runner, Shared, Unblock};
use super::sockopt::{self, Proto, Tuning};
use super::{Control, EngineError, Sink};
use crate::result::{Role, RrStreamReport, SideReport, SocketGrant, StreamEnd};
use crate::spec::RrSpec;
pub use record::{Fate, ProbeRecord, Recorded};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};
use stream::{HIST_MAX_NS, POLL, hex, histogram, tag};
pub use stream::{RrSocket, RrStream, raw_fd};

mod open;
mod record;
mod stream;

/// How long an answering CRR stream waits on the shared queue of new connections at a time.
const ACCEPT_WAIT: Duration = Duration::from_millis(2);
/// A TCP_CRR connect gives up after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// An answering end with nothing to answer for this long after the asker's time is up stops.
const IDLE_AFTER_END: Duration = Duration::from_secs(2);

/// Sets TCP_NODELAY (TCP), SO_BUSY_POLL (when asked) and, for UDP, a short receive timeout;
/// returns what the kernel granted (rr streams once reported every figure as 0).
pub fn configure_socket(fd: BorrowedFd<'_>, spec: &RrSpec, tcp: bool) -> Result<SocketGrant, EngineError> {
    let tuning = Tuning {
        nodelay: tcp,
        busy_poll_us: spec.busy_poll_us,
        // TCP reads block without a timeout (a timer armed per blocking read costs ~2 % of the
        // round trips): a guard thread shuts the sockets down when the run is stopped or stalls.
        // UDP keeps a short timeout: it is how a lost request is noticed.
        read_timeout: (!tcp).then_some(POLL),
        ..Tuning::default()
    };
    sockopt::apply(&fd, &tuning, if tcp { Proto::Tcp } else { Proto::Udp })
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Runs the streams: askers until their limit, answerers until the askers are done. `accept`
/// carries TCP_CRR connections to the answering end.
pub fn run(
    spec: &RrSpec,
    cpus: &[usize],
    streams: Vec<RrStream>,
    accept: Option<mpsc::Receiver<(u16, TcpStream)>>,
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<SideReport, EngineError> {
    let accept = accept.map(Mutex::new);
    let answering = streams.iter().all(|s| s.role == Role::Receive);
    let mut deadlines = Deadlines::new(&spec.timing);
    // An answering side ends when told the asking is over: that is the normal end, not a cut.
    deadlines.ends_on_stop = answering;
    deadlines.unblock = unblock_tcp(&streams);
    let each = streams.iter().map(|s| (s.id, s.role, &s.grant));
    let runner = Runner::one_worker_per_stream(deadlines, each, "linerate-r", cpus)?;
    let state = RunState::new(streams.len());
    let gate = Gate::new();
    let shared = state.shared(control);
    let busy_poll = spec.busy_poll_us.and_then(|us| {
        let fd = streams.iter().find_map(|s| raw_fd(&s.socket))?;
        Some(sockopt::busy_poll_note(us, sockopt::busy_poll_us(&fd)))
    });
    let run = StreamRun::new(spec, &runner, &shared, &gate);
    let (mut report, outcomes) = runner.drive(&shared, &gate, sink, |idx| {
        let s = &streams[idx];
        let open = spec.rate.is_some() && matches!(s.socket, RrSocket::Tcp(_) | RrSocket::Udp(_));
        match s.role {
            Role::Send if open => open::ask_open(run, idx, s),
            Role::Send => ask(run, idx, s),
            Role::Receive => answer(run, idx, s, accept.as_ref()),
        }
    })?;
    for (r, o) in report.streams.iter_mut().zip(outcomes) {
        match o {
            Some(o) => r.rr = Some(o),
            None => r.end = StreamEnd::Error,
        }
    }
    report.notes.extend(busy_poll);
    report.io = "syscall".into();
    Ok(report)
}

/// The runner's stop rule for TCP streams blocked in a read (they have no receive timeout): it
/// shuts their sockets down when the run is aborted, when the asking is over (at once on the
/// answering side, a second after the stop on the asking side), and when the time is up and no
/// transaction has moved for [`IDLE_AFTER_END`] (a peer gone silent). None without TCP streams.
fn unblock_tcp(streams: &[RrStream]) -> Option<Unblock> {
    let fds: Vec<std::os::fd::RawFd> = streams
        .iter()
        .filter_map(|s| match &s.socket {
            RrSocket::Tcp(t) => Some(t.as_raw_fd()),
            _ => None,
        })
        .collect();
    (!fds.is_empty()).then(|| Unblock {
        wake: Arc::new(move || {
            for fd in &fds {
                // SAFETY: shutdown on a socket fd the streams own for the whole run; the runner
                // calls this only while it drives them, and they are closed after it returns.
                unsafe { libc::shutdown(*fd, libc::SHUT_RDWR) };
            }
        }),
        quiet: IDLE_AFTER_END,
    })
}

/// What each stream's worker of an rr run is handed.
type StreamRun<'r, 's> = run::StreamRun<'r, 's, RrSpec>;

/// An asking stream's sizes (request, response) and buffers: the request it writes and where it
/// reads an answer (at least 64 KiB).
fn ask_buffers(spec: &RrSpec) -> (usize, usize, Vec<u8>, Vec<u8>) {
    let req = spec.request_bytes as usize;
    let resp = spec.response_bytes as usize;
    (req, resp, vec![0x5a_u8; req], vec![0u8; resp.max(65_536)])
}

/// One asking stream.
fn ask(run: StreamRun<'_, '_>, idx: usize, s: &RrStream) -> RrStreamReport {
    let (spec, deadlines, shared, gate) = (run.spec, run.deadlines, run.shared, run.gate);
    let (req, resp, mut request, mut response) = ask_buffers(spec);
    let mut rtt = histogram();
    let mut connect_hist = histogram();
    let (mut lost, mut stale, mut errors) = (0u64, 0u64, 0u64);
    let (limit, deadline_ns) = (deadlines.count(), deadlines.deadline_ns());
    let timeout = Duration::from_millis(u64::from(spec.timeout_ms));
    // Transactions begun in the warm-up are done but not timed into the figures.
    let warmup_ns = deadlines.measure_window().0.as_nanos() as u64;
    let counter = &shared.counters[idx];
    gate.arrive_and_wait(&shared.sampler);
    let start = *shared.t0.get().expect("time zero is set before the gate opens");
    let gap_ns = spec.gap_ns().unwrap_or(0);
    let mut pacer = Pacer::new(start, gap_ns);
    let mut seq = 0u64;
    let end = loop {
        if shared.control.aborted() || shared.control.sending_stopped() {
            break StreamEnd::Stopped;
        }
        if limit.is_some_and(|l| seq >= l) {
            break StreamEnd::Count;
        }
        // Open loop: wait for this transaction's moment; it is timed from that moment.
        let scheduled = if gap_ns > 0 {
            if pacer.wait(1, deadline_ns) == 0 {
                break StreamEnd::Deadline;
            }
            Some(seq * gap_ns)
        } else {
            None
        };
        let begin = start.elapsed().as_nanos() as u64;
        if deadline_ns.is_some_and(|d| begin >= d) {
            break StreamEnd::Deadline;
        }
        tag(&mut request, seq);
        let done: io::Result<bool> = match &s.socket {
            RrSocket::Tcp(t) => transact_tcp(t, &request, &mut response[..resp], shared).map(|()| true),
            RrSocket::Udp(u) => transact_udp(
                u,
                &request,
                &mut response,
                start + Duration::from_nanos(begin) + timeout,
                &mut stale,
                shared,
            )
            .inspect(|answered| {
                if !answered && begin >= warmup_ns {
                    lost += 1;
                }
            }),
            RrSocket::Connect { addr, header, from } => {
                let c0 = Instant::now();
                match connect_from(*addr, *from) {
                    Ok(t) => {
                        let _ = connect_hist.record((c0.elapsed().as_nanos() as u64).clamp(1, HIST_MAX_NS));
                        // Closed with a reset: no TIME_WAIT left behind per transaction.
                        sockopt::per_connection(&t, Some(POLL), true);
                        let r = (&t)
                            .write_all(header)
                            .and_then(|()| transact_tcp(&t, &request, &mut response[..resp], shared));
                        r.map(|()| true)
                    }
                    Err(e) => Err(e),
                }
            }
            RrSocket::Accept => Ok(false),
        };
        match done {
            Ok(true) => {
                if begin >= warmup_ns {
                    let now = start.elapsed().as_nanos() as u64;
                    let from = scheduled.unwrap_or(begin);
                    let _ = rtt.record(now.saturating_sub(from).clamp(1, HIST_MAX_NS));
                }
                counter
                    .bytes
                    .store(counter.bytes.load(Relaxed) + (req + resp) as u64, Relaxed);
            }
            Ok(false) => {}
            Err(_) if shared.control.aborted() || shared.control.sending_stopped() => {
                break StreamEnd::Stopped;
            }
            Err(_) => {
                errors += 1;
                counter.other_errors.store(errors, Relaxed);
                if !matches!(s.socket, RrSocket::Connect { .. }) {
                    break StreamEnd::Error;
                }
            }
        }
        seq += 1;
        if gap_ns > 0 {
            pacer.sent(1, begin);
        }
        counter.ops.store(seq, Relaxed);
    };
    if end == StreamEnd::Deadline {
        shared.deadline_hit.store(true, Relaxed);
    }
    if let RrSocket::Tcp(t) = &s.socket {
        let _ = t.shutdown(std::net::Shutdown::Write);
    }
    shared.finish(idx, end);
    RrStreamReport {
        transactions: rtt.len(),
        lost,
        stale,
        errors,
        latency_histogram: hex(&rtt),
        connect_histogram: (!connect_hist.is_empty()).then(|| hex(&connect_hist)),
        requested_rate: spec.rate,
        achieved_spacing_us: (gap_ns > 0).then(|| pacer.spacing().mean_us),
        open_loop: None,
    }
}

/// Writes a request and reads the whole response on a TCP connection.
fn transact_tcp(mut t: &TcpStream, request: &[u8], response: &mut [u8], shared: &Shared<'_>) -> io::Result<()> {
    t.write_all(request)?;
    let mut got = 0;
    while got < response.len() {
        match t.read(&mut response[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => got += k,
            Err(e) if is_timeout(&e) => {
                if shared.control.aborted() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends a request datagram and waits for its answer until `until` (the transaction's start
/// plus the timeout; the clock is read only once a wait runs out); Ok(false) when none came.
fn transact_udp(
    u: &UdpSocket,
    request: &[u8],
    response: &mut [u8],
    until: Instant,
    stale: &mut u64,
    shared: &Shared<'_>,
) -> io::Result<bool> {
    u.send(request)?;
    let k = request.len().min(8);
    loop {
        match u.recv(response) {
            Ok(n) => {
                let m = k.min(n);
                if response[..m] == request[..m] {
                    return Ok(true);
                }
                // The answer to an earlier request that timed out.
                *stale += 1;
            }
            Err(e) if is_timeout(&e) || e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
            Err(e) => return Err(e),
        }
        if Instant::now() >= until || shared.control.aborted() {
            return Ok(false);
        }
    }
}

/// One answering stream (or, for TCP_CRR, one of the threads answering new connections).
fn answer(
    run: StreamRun<'_, '_>,
    idx: usize,
    s: &RrStream,
    accept: Option<&Mutex<mpsc::Receiver<(u16, TcpStream)>>>,
) -> RrStreamReport {
    let (spec, deadlines, shared, gate) = (run.spec, run.deadlines, run.shared, run.gate);
    let req = spec.request_bytes as usize;
    let resp = spec.response_bytes as usize;
    let mut request = vec![0u8; req.max(65_536)];
    let mut response = vec![0xa5_u8; resp];
    // A probe session's answers carry the time each request was read (`RrSpec::stamp`).
    let stamp = spec.stamp && resp >= 16;
    let counter = &shared.counters[idx];
    let deadline = deadlines.deadline();
    gate.arrive_and_wait(&shared.sampler);
    let start = *shared.t0.get().expect("time zero is set before the gate opens");
    let (mut served, mut errors) = (0u64, 0u64);
    // One transaction answered: the sampler reads both counters (this worker alone writes them).
    let count = |served: &mut u64, bytes: u64| {
        *served += 1;
        counter.ops.store(*served, Relaxed);
        counter.bytes.store(counter.bytes.load(Relaxed) + bytes, Relaxed);
    };
    let mut last = Instant::now();
    // The asker is done: it said so (stop), or its time is up and nothing comes.
    let asker_done = |last: Instant| {
        shared.control.aborted()
            || shared.control.sending_stopped()
            || (deadline.is_some_and(|d| start.elapsed() >= d) && last.elapsed() >= IDLE_AFTER_END)
    };
    let end = match &s.socket {
        RrSocket::Tcp(t) => loop {
            match serve_tcp(t, &mut request[..req], &mut response, stamp, &asker_done, &mut last) {
                Ok(true) => count(&mut served, (req + resp) as u64),
                Ok(false) => break StreamEnd::Eof,
                Err(_) if asker_done(last) => break StreamEnd::Stopped,
                Err(_) => {
                    errors += 1;
                    break StreamEnd::Error;
                }
            }
        },
        RrSocket::Udp(u) => loop {
            if asker_done(last) {
                break StreamEnd::Eof;
            }
            match u.recv(&mut request) {
                Ok(n) => {
                    last = Instant::now();
                    let k = n.min(8).min(resp);
                    response[..k].copy_from_slice(&request[..k]);
                    if stamp {
                        record::stamp(&mut response);
                    }
                    if u.send(&response).is_ok() {
                        count(&mut served, (n + resp) as u64);
                    } else {
                        errors += 1;
                    }
                }
                Err(e) if is_timeout(&e) || e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
                Err(_) => {
                    errors += 1;
                    break StreamEnd::Error;
                }
            }
        },
        RrSocket::Accept => loop {
            if asker_done(last) {
                break StreamEnd::Eof;
            }
            // Every answering stream of a CRR test takes its connections from one queue: hold
            // it only briefly, so that with many streams each still sees the asker's end soon
            // (held for POLL, 256 streams took 12.8 s to go round).
            let next = accept.and_then(|a| a.lock().ok().and_then(|rx| rx.recv_timeout(ACCEPT_WAIT).ok()));
            let Some((_, t)) = next else { continue };
            last = Instant::now();
            sockopt::per_connection(&t, Some(POLL), false);
            // One transaction per connection; the asker closes it.
            match serve_tcp(&t, &mut request[..req], &mut response, stamp, &asker_done, &mut last) {
                Ok(true) => count(&mut served, (req + resp) as u64),
                Ok(false) => {}
                Err(_) => errors += 1,
            }
        },
        RrSocket::Connect { .. } => StreamEnd::Error,
    };
    counter.other_errors.store(errors, Relaxed);
    shared.finish(idx, end);
    RrStreamReport {
        transactions: served,
        errors,
        ..Default::default()
    }
}

/// A TCP_CRR connection to `addr`, from the local address `from` when given.
fn connect_from(addr: SocketAddr, from: Option<std::net::IpAddr>) -> io::Result<TcpStream> {
    let Some(ip) = from else {
        return TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT);
    };
    let sock = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    sock.bind(&SocketAddr::new(ip, 0).into())?;
    sock.connect_timeout(&addr.into(), CONNECT_TIMEOUT)?;
    Ok(sock.into())
}

/// Reads one whole request and writes the response (with `stamp`, the time the request was
/// read in it: [`RrSpec::stamp`]); Ok(false) at end of stream.
fn serve_tcp(
    mut t: &TcpStream,
    request: &mut [u8],
    response: &mut [u8],
    stamp: bool,
    asker_done: &dyn Fn(Instant) -> bool,
    last: &mut Instant,
) -> io::Result<bool> {
    let mut got = 0;
    while got < request.len() {
        match t.read(&mut request[got..]) {
            Ok(0) => return Ok(false),
            // (No clock read per request: TCP reads block until data or the guard's shutdown,
            // so `last` is only for the UDP and CRR paths.)
            Ok(k) => got += k,
            Err(e) if is_timeout(&e) => {
                if asker_done(*last) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    if stamp {
        record::stamp(response);
    }
    t.write_all(response)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crr_connections_leave_from_the_address_asked_for() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let from: std::net::IpAddr = "127.0.0.2".parse().expect("ip");
        let _c = connect_from(addr, Some(from)).expect("connect from 127.0.0.2");
        let (_, peer) = l.accept().expect("accept");
        assert_eq!(peer.ip(), from);
        let _d = connect_from(addr, None).expect("connect");
        assert_eq!(l.accept().expect("accept").1.ip(), addr.ip());
    }
}
