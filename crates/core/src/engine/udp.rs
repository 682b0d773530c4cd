//! UDP streams as UDPmon sent them: datagrams of one size, each with a sequence number and its
//! send time, paced at a regular gap or as fast as the kernel takes them; and at the receiver,
//! every datagram placed (lost, out of order, duplicated), its arrival time taken from the kernel
//! (SO_TIMESTAMPNS), the spacing between arrivals and the one-way delay recorded in histograms.
//!
//! Each stream has its own connected socket and worker thread. Senders write a batch per call:
//! one datagram per call while pacing keeps up, a UDP GSO train (UDP_SEGMENT) or a sendmmsg batch
//! when sending as fast as possible. Receivers read with recvmmsg, 64 datagrams per call. Nothing
//! in either loop allocates, locks or formats: counters are this stream's atomics, histograms are
//! sized before the clock starts.
//!
//! UDP has no end of stream: a sender ends with three end markers carrying its count, and a
//! receiver stops when the count has arrived, when markers came and nothing more for a moment,
//! or when nothing arrives for a while after the sender's time was up.

use super::pacing::Pacer;
use super::sequence::SequenceTracker;
use super::tcp::{Counters, Gate, end_from};
use super::{Control, EngineError, Sink, pin};
use crate::metrics::host::online_cpus;
use crate::metrics::sample::{HostSnapshot, HostTimeline, HostUsage, IrqGroups, read_clock_mhz};
use crate::result::{
    CpuUsage, ErrorCounts, IntervalSample, Role, SideReport, SocketGrant, StreamEnd, StreamReport, UdpReceiveReport,
    UdpSendReport,
};
use crate::spec::{Limit, UdpSpec};
use hdrhistogram::Histogram;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::thread;
use std::time::{Duration, Instant};

/// The first bytes of every linerate datagram.
pub const MAGIC: [u8; 4] = *b"LNRU";
/// Bytes of linerate's header at the start of each datagram.
pub const HEADER_BYTES: usize = 32;
const KIND_DATA: u16 = 0;
const KIND_END: u16 = 1;
/// Datagrams per recvmmsg / sendmmsg call and the most segments in one GSO train.
const BATCH: usize = 64;
/// The largest GSO train the kernel takes, bytes of payload.
const GSO_MAX_BYTES: usize = 65_000;
/// How long a receive call waits before the worker looks at the flags again.
const RECV_POLL: Duration = Duration::from_millis(50);
/// After the end markers, how long a receiver waits for late datagrams.
const END_GRACE: Duration = Duration::from_millis(300);
/// After the sender's time is up, how long a receiver waits with nothing arriving.
const IDLE_AFTER_END: Duration = Duration::from_secs(2);
/// A receiver that has had nothing for this long gives up, whatever the sender's plan.
const IDLE_ABORT: Duration = Duration::from_secs(30);
/// Linear arrival-spacing bins kept; longer spacings go to one overflow count.
pub const MAX_BINS: usize = 100_000;
/// Histograms hold 1 ns to 60 s at 3 significant digits (0.1 %).
const HIST_MAX_NS: u64 = 60_000_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds")
}

/// What a datagram's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub stream: u16,
    pub kind: u16,
    pub seq: u64,
    /// CLOCK_REALTIME at the sender when it was sent, ns since the Unix epoch.
    pub send_ns: u64,
    pub test_id: u64,
}

/// Writes linerate's header into the first [`HEADER_BYTES`] of `buf`.
pub fn write_header(buf: &mut [u8], h: &Header) {
    buf[0..4].copy_from_slice(&MAGIC);
    buf[4..6].copy_from_slice(&h.stream.to_le_bytes());
    buf[6..8].copy_from_slice(&h.kind.to_le_bytes());
    buf[8..16].copy_from_slice(&h.seq.to_le_bytes());
    buf[16..24].copy_from_slice(&h.send_ns.to_le_bytes());
    buf[24..32].copy_from_slice(&h.test_id.to_le_bytes());
}

/// Reads a header; `None` for anything that is not a linerate datagram.
pub fn parse_header(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER_BYTES || buf[0..4] != MAGIC {
        return None;
    }
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
    Some(Header {
        stream: u16::from_le_bytes([buf[4], buf[5]]),
        kind: u16::from_le_bytes([buf[6], buf[7]]),
        seq: u64_at(8),
        send_ns: u64_at(16),
        test_id: u64_at(24),
    })
}

/// CLOCK_REALTIME now, ns since the Unix epoch.
fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One connected UDP socket and what this end does with it.
pub struct UdpStream {
    /// Stream number reported for it (the client numbers all agents' streams in one run).
    pub id: u16,
    /// Its number within its agent's streams: the same on both ends, carried in every datagram.
    pub wire_id: u16,
    /// The test's id, carried in every datagram (from the agent's cookie): strays are dropped.
    pub test_id: u64,
    pub role: Role,
    pub socket: UdpSocket,
    pub grant: SocketGrant,
}

/// Tunes a UDP data socket: the receive buffer (4 MiB unless asked, forced past rmem_max as
/// root), a 50 ms receive timeout, kernel receive timestamps. Returns what the kernel granted.
pub fn configure(socket: &UdpSocket, spec: &UdpSpec, role: Role) -> Result<SocketGrant, EngineError> {
    let sock = socket2::SockRef::from(socket);
    let opt = |option: &'static str| move |source| EngineError::SocketOption { option, source };
    if role == Role::Receive {
        let want = spec.window_bytes.map_or(4 << 20, |w| w.0) as usize;
        super::sockopt::set_buffer(
            socket.as_raw_fd(),
            libc::SO_RCVBUF,
            super::sockopt::SO_RCVBUFFORCE,
            want,
        )
        .map_err(opt("SO_RCVBUF"))?;
        sock.set_read_timeout(Some(RECV_POLL)).map_err(opt("SO_RCVTIMEO"))?;
        let on: libc::c_int = 1;
        // SAFETY: setsockopt reads an int we own for its stated length.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            // No kernel stamps: user-space ones are taken instead and the result says so.
            let _ = std::io::Error::last_os_error();
        }
    } else {
        let want = (4usize << 20).max(spec.payload_bytes as usize * BATCH * 4);
        super::sockopt::set_buffer(
            socket.as_raw_fd(),
            libc::SO_SNDBUF,
            super::sockopt::SO_SNDBUFFORCE,
            want,
        )
        .map_err(opt("SO_SNDBUF"))?;
    }
    Ok(SocketGrant {
        sndbuf_bytes: sock.send_buffer_size().map_err(opt("SO_SNDBUF"))? as u64,
        rcvbuf_bytes: sock.recv_buffer_size().map_err(opt("SO_RCVBUF"))? as u64,
        ..Default::default()
    })
}

/// Sets an int option at SOL_UDP; false where the kernel has no such option.
fn set_udp_int(socket: &UdpSocket, option: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: setsockopt reads an int we own for its stated length.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Sets UDP_SEGMENT (UDP GSO) so one send of n x `size` bytes leaves as n datagrams.
fn enable_gso(socket: &UdpSocket, size: u16) -> bool {
    set_udp_int(socket, libc::UDP_SEGMENT, libc::c_int::from(size))
}

/// What the workers of a datagram or transaction engine (UDP, request-response) share.
pub(super) struct Shared<'a> {
    pub counters: &'a [Counters],
    pub control: &'a Control,
    pub t0: &'a std::sync::OnceLock<Instant>,
    pub sampler: thread::Thread,
    pub deadline_hit: &'a AtomicBool,
    /// Datagrams a receiver saw that were not this test's (stray traffic), all streams.
    pub stray: &'a AtomicU64,
}

/// Starts a worker thread named `name` in `scope`, pinned to `cpu` when given; a pin that
/// fails is flagged in `pin_failed` (when given) and the worker runs unpinned.
pub(super) fn spawn_worker<'scope, T: Send + 'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    name: String,
    cpu: Option<usize>,
    pin_failed: Option<&'scope AtomicBool>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> std::io::Result<thread::ScopedJoinHandle<'scope, T>> {
    thread::Builder::new().name(name).spawn_scoped(scope, move || {
        if let Some(cpu) = cpu
            && pin::pin_current_thread(cpu).is_err()
            && let Some(flag) = pin_failed
        {
            flag.store(true, Relaxed);
        }
        work()
    })
}

/// What a run's [`Shared`] points at, owned by the sampling thread for the run.
pub(super) struct RunState {
    counters: Vec<Counters>,
    t0: std::sync::OnceLock<Instant>,
    deadline_hit: AtomicBool,
    stray: AtomicU64,
}

impl RunState {
    /// Counters for `streams` streams (or workers).
    pub fn new(streams: usize) -> RunState {
        RunState {
            counters: (0..streams).map(|_| Counters::default()).collect(),
            t0: std::sync::OnceLock::new(),
            deadline_hit: AtomicBool::new(false),
            stray: AtomicU64::new(0),
        }
    }

    /// The view the workers share; the calling thread is the sampler they wake.
    pub fn shared<'a>(&'a self, control: &'a Control) -> Shared<'a> {
        Shared {
            counters: &self.counters,
            control,
            t0: &self.t0,
            sampler: thread::current(),
            deadline_hit: &self.deadline_hit,
            stray: &self.stray,
        }
    }
}

/// When a run's window and intervals fall, for [`sample_until_done`].
pub(super) struct Plan {
    pub warmup: Duration,
    /// The senders' time limit; None for a count.
    pub deadline: Option<Duration>,
    pub interval: Option<Duration>,
    /// This side ends when the client says the run is over (an answering or sampling agent):
    /// that stop is its normal end, not a cut, so only an abort makes the report partial.
    pub ends_on_stop: bool,
}

impl Plan {
    /// From a spec's warm-up, limit and interval, seconds.
    pub fn from_spec(warmup_seconds: f64, limit: Limit, interval_seconds: f64) -> Plan {
        Plan {
            warmup: Duration::from_secs_f64(warmup_seconds),
            deadline: match limit {
                Limit::Seconds(s) => Some(Duration::from_secs_f64(s)),
                Limit::Buffers(_) => None,
            },
            interval: (interval_seconds > 0.0).then(|| Duration::from_secs_f64(interval_seconds)),
            ends_on_stop: false,
        }
    }
}

/// What the sampler reports of each stream.
pub(super) struct StreamInfo {
    pub id: u16,
    pub role: Role,
    pub grant: SocketGrant,
}

impl Shared<'_> {
    pub fn now_ns(&self) -> u64 {
        self.t0.get().map_or(0, |t| t.elapsed().as_nanos() as u64).max(1)
    }

    pub fn finish(&self, idx: usize, end: StreamEnd) {
        let c = &self.counters[idx];
        c.end.store(end as u8, Relaxed);
        c.end_ns.store(self.now_ns(), Relaxed);
        self.sampler.unpark();
    }
}

/// What a worker hands back when its stream ends.
enum Outcome {
    Sent(UdpSendReport),
    Received(Box<UdpReceiveReport>),
}

/// Runs the streams until senders reach their limit and receivers their end, and returns what
/// this end counted.
pub fn run(
    spec: &UdpSpec,
    cpus: &[usize],
    streams: Vec<UdpStream>,
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<SideReport, EngineError> {
    pin::check_cpus(cpus)?;
    let n = streams.len();
    let state = RunState::new(n);
    let gate = Gate::new();
    let shared = state.shared(control);
    let pin_failed = AtomicBool::new(false);
    let (report, outcomes) = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (idx, s) in streams.iter().enumerate() {
            let cpu = (!cpus.is_empty()).then(|| cpus[idx % cpus.len()]);
            let (shared, gate) = (&shared, &gate);
            let spawned = spawn_worker(
                scope,
                format!("linerate-u{idx}"),
                cpu,
                Some(&pin_failed),
                move || match s.role {
                    Role::Send => Outcome::Sent(send_stream(spec, idx, s, shared, gate)),
                    Role::Receive => Outcome::Received(Box::new(receive_stream(spec, idx, s, shared, gate))),
                },
            );
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    control.abort();
                    gate.open();
                    return (Err(EngineError::Spawn(e)), Vec::new());
                }
            }
        }
        let plan = Plan::from_spec(spec.warmup_seconds, spec.limit, spec.interval_seconds);
        let infos: Vec<StreamInfo> = streams
            .iter()
            .map(|s| StreamInfo {
                id: s.id,
                role: s.role,
                grant: s.grant.clone(),
            })
            .collect();
        let report = sample_until_done(&plan, &infos, &shared, &gate, sink);
        let outcomes: Vec<Option<Outcome>> = handles.into_iter().map(|h| h.join().ok()).collect();
        (Ok(report), outcomes)
    });
    let mut report = report?;
    for (r, o) in report.streams.iter_mut().zip(outcomes) {
        match o {
            Some(Outcome::Sent(s)) => r.udp_send = Some(s),
            Some(Outcome::Received(rx)) => r.udp_receive = Some(*rx),
            None => r.end = StreamEnd::Error,
        }
    }
    let strays = shared.stray.load(Relaxed);
    if strays > 0 {
        report
            .notes
            .push(format!("{strays} datagrams that were not this test's were dropped"));
    }
    if pin_failed.load(Relaxed) {
        report
            .notes
            .push("a worker could not be pinned to its CPU and ran unpinned".into());
    }
    report.io = "syscall".into();
    Ok(report)
}

/// The sampling thread: starts the clock, takes interval samples and the window's edges.
pub(super) fn sample_until_done(
    plan: &Plan,
    streams: &[StreamInfo],
    shared: &Shared<'_>,
    gate: &Gate,
    sink: &mut dyn Sink,
) -> SideReport {
    let n = streams.len();
    let counters = shared.counters;
    let (warmup, deadline, interval) = (plan.warmup, plan.deadline, plan.interval);
    let read_counts = || -> Vec<(u64, u64)> {
        counters
            .iter()
            .map(|c| (c.bytes.load(Relaxed), c.ops.load(Relaxed)))
            .collect()
    };
    let first = HostSnapshot::read();
    let groups = IrqGroups::discover(first.interrupts.as_ref(), &first.interfaces);
    let deadline_guard = Instant::now() + Duration::from_secs(15);
    while gate.arrived.load(Relaxed) < n && Instant::now() < deadline_guard {
        thread::park_timeout(Duration::from_millis(10));
    }
    let first = HostSnapshot {
        at: Instant::now(),
        ..first
    };
    let start = first.at;
    let _ = shared.t0.set(start);
    // (when, every stream's counts, the host's counters) at the window's start.
    type Edge = (u64, Vec<(u64, u64)>, HostSnapshot);
    let mut window_start: Option<Edge> = warmup.is_zero().then(|| (0, vec![(0, 0); n], first.clone()));
    let mut timeline = HostTimeline::new(first, 0, groups.clone());
    gate.open();

    let mut intervals = Vec::new();
    let mut last = vec![(0u64, 0u64); n];
    let mut last_ns = 0u64;
    let mut tick = 1u32;
    let mut emit = |now_ns: u64,
                    counts: &[(u64, u64)],
                    last: &mut Vec<(u64, u64)>,
                    last_ns: &mut u64,
                    intervals: &mut Vec<IntervalSample>| {
        let mut batch = Vec::with_capacity(n);
        for (i, s) in streams.iter().enumerate() {
            batch.push(IntervalSample {
                stream: s.id,
                start_ns: *last_ns,
                end_ns: now_ns,
                bytes: counts[i].0 - last[i].0,
                ops: counts[i].1 - last[i].1,
                tcp: None,
            });
        }
        sink.interval(&batch);
        timeline.tick(now_ns);
        if intervals.len() + batch.len() <= super::tcp::MAX_SAMPLES {
            intervals.extend_from_slice(&batch);
        }
        *last = counts.to_vec();
        *last_ns = now_ns;
    };
    loop {
        if counters.iter().all(|c| c.end_ns.load(Relaxed) != 0) {
            break;
        }
        let el = start.elapsed();
        if window_start.is_none() && el >= warmup {
            window_start = Some((el.as_nanos() as u64, read_counts(), HostSnapshot::read()));
        }
        if let Some(d) = deadline
            && el >= d
            && !shared.deadline_hit.load(Relaxed)
        {
            shared.deadline_hit.store(true, Relaxed);
        }
        if let Some(iv) = interval
            && el >= iv * tick
        {
            emit(
                el.as_nanos() as u64,
                &read_counts(),
                &mut last,
                &mut last_ns,
                &mut intervals,
            );
            tick = (el.as_secs_f64() / iv.as_secs_f64()) as u32 + 1;
        }
        let mut next = el + Duration::from_millis(100);
        if let Some(iv) = interval {
            next = next.min(iv * tick);
        }
        let wait = next.saturating_sub(start.elapsed());
        if !wait.is_zero() {
            thread::park_timeout(wait);
        }
    }
    let end_ns = start.elapsed().as_nanos() as u64;
    let final_counts = read_counts();
    if interval.is_none() || final_counts != last {
        emit(end_ns, &final_counts, &mut last, &mut last_ns, &mut intervals);
    }
    let mut notes = Vec::new();
    let (ws_ns, ws_counts, ws_host) = window_start.unwrap_or_else(|| {
        notes.push("stopped during warm-up: nothing was measured".into());
        (end_ns, final_counts.clone(), HostSnapshot::read())
    });
    let we_host = HostSnapshot::read();
    let window_seconds = end_ns.saturating_sub(ws_ns) as f64 / 1e9;
    let proc = we_host.process.since(&ws_host.process);
    let host = HostUsage {
        clock_mhz: read_clock_mhz(),
        ..HostUsage::between(&ws_host, &we_host, &groups, true)
    };
    let cpu = CpuUsage {
        host_percent: host.cpu.map(|c| c.busy),
        process_percent: (window_seconds > 0.0)
            .then(|| 100.0 * (proc.user_seconds + proc.system_seconds) / (window_seconds * online_cpus() as f64)),
        process_user_seconds: proc.user_seconds,
        process_system_seconds: proc.system_seconds,
        split: host.cpu,
        per_cpu: host.per_cpu.clone(),
    };
    let stream_reports = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let c = &counters[i];
            let stream_end = c.end_ns.load(Relaxed).min(end_ns);
            StreamReport {
                stream: s.id,
                role: s.role,
                bytes: final_counts[i].0.saturating_sub(ws_counts[i].0),
                ops: final_counts[i].1.saturating_sub(ws_counts[i].1),
                seconds: stream_end.saturating_sub(ws_ns) as f64 / 1e9,
                total_bytes: final_counts[i].0,
                socket: s.grant.clone(),
                tcp: None,
                errors: ErrorCounts {
                    resets: c.resets.load(Relaxed),
                    other: c.other_errors.load(Relaxed),
                },
                end: end_from(c.end.load(Relaxed)),
                udp_send: None,
                udp_receive: None,
                rr: None,
            }
        })
        .collect();
    SideReport {
        window_start_ns: ws_ns,
        window_end_ns: end_ns,
        streams: stream_reports,
        intervals,
        cpu,
        host: Some(host),
        timeline: timeline.into_entries(),
        config: None,
        io: String::new(),
        partial: shared.control.aborted() || (!plan.ends_on_stop && shared.control.sending_stopped()),
        notes,
    }
}

/// One sending stream: paced or as fast as possible, then the end markers.
fn send_stream(spec: &UdpSpec, idx: usize, s: &UdpStream, shared: &Shared<'_>, gate: &Gate) -> UdpSendReport {
    let size = spec.payload_bytes as usize;
    let limit = match spec.limit {
        Limit::Buffers(n) => Some(n),
        Limit::Seconds(_) => None,
    };
    let deadline_ns = match spec.limit {
        Limit::Seconds(sec) => Some((sec * 1e9) as u64),
        Limit::Buffers(_) => None,
    };
    // A GSO train as fast as possible; one datagram at a time when paced.
    let gso = spec.gap_ns == 0 && size <= usize::from(u16::MAX) && enable_gso(&s.socket, size as u16);
    let per_call = if spec.gap_ns == 0 {
        if gso {
            (GSO_MAX_BYTES / size).clamp(1, BATCH)
        } else {
            BATCH
        }
    } else if spec.gap_ns < super::pacing::MIN_UNBATCHED_GAP_NS {
        BATCH
    } else {
        1
    };
    // Touched before the clock starts: a byte pattern, headers written per send.
    let mut buf = vec![0x5a_u8; size * per_call];
    let mut iov: Vec<libc::iovec> = Vec::with_capacity(per_call);
    let mut msgs: Vec<libc::mmsghdr> = Vec::with_capacity(per_call);
    for i in 0..per_call {
        iov.push(libc::iovec {
            iov_base: buf[i * size..].as_mut_ptr().cast(),
            iov_len: size,
        });
    }
    for v in iov.iter_mut() {
        // SAFETY: mmsghdr is plain data; zeroed is a valid empty header.
        let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
        m.msg_hdr.msg_iov = v;
        m.msg_hdr.msg_iovlen = 1;
        msgs.push(m);
    }
    let fd = s.socket.as_raw_fd();
    let counter = &shared.counters[idx];
    gate.arrive_and_wait(&shared.sampler);
    let start = *shared
        .t0
        .get()
        .expect("the sampler set time zero before opening the gate");
    let mut pacer = Pacer::new(start, spec.gap_ns);
    let mut seq = 0u64;
    let mut errors = 0u64;
    let end = loop {
        if shared.control.aborted() || shared.control.sending_stopped() {
            break StreamEnd::Stopped;
        }
        let remaining = limit.map_or(u64::MAX, |l| l - seq);
        if remaining == 0 {
            break StreamEnd::Count;
        }
        let due = pacer.wait((per_call as u64).min(remaining), deadline_ns);
        let now = start.elapsed().as_nanos() as u64;
        if due == 0 || deadline_ns.is_some_and(|d| now >= d) {
            break StreamEnd::Deadline;
        }
        let k = due as usize;
        let send_ns = realtime_ns();
        for i in 0..k {
            let h = Header {
                stream: s.wire_id,
                kind: KIND_DATA,
                seq: seq + i as u64,
                send_ns,
                test_id: s.test_id,
            };
            write_header(&mut buf[i * size..(i + 1) * size], &h);
        }
        // SAFETY: buffers, iovecs and headers were set up above and outlive the calls; lengths
        // are within them.
        let sent = if k == 1 || gso {
            let rc = unsafe { libc::send(fd, buf.as_ptr().cast(), k * size, 0) };
            if rc < 0 { -1 } else { k as isize }
        } else {
            let rc = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), k as libc::c_uint, 0) };
            rc as isize
        };
        if sent <= 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // A full queue (qdisc or socket): wait a little and send again.
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                    thread::yield_now();
                    continue;
                }
                // The peer's port answered ICMP unreachable (not listening yet, or gone): counted,
                // and the stream goes on.
                Some(libc::ECONNREFUSED) => {
                    errors += 1;
                    continue;
                }
                _ => {
                    errors += 1;
                    counter.other_errors.store(errors, Relaxed);
                    break StreamEnd::Error;
                }
            }
        }
        let sent = sent as u64;
        pacer.sent(sent, now);
        seq += sent;
        counter
            .bytes
            .store(counter.bytes.load(Relaxed) + sent * size as u64, Relaxed);
        counter.ops.store(seq, Relaxed);
    };
    if end == StreamEnd::Deadline {
        shared.deadline_hit.store(true, Relaxed);
    }
    // End markers: the count, three times, a millisecond apart (one survives 1 % loss 10^6 times
    // out of 10^6).
    let mut marker = [0u8; HEADER_BYTES];
    for _ in 0..3 {
        write_header(
            &mut marker,
            &Header {
                stream: s.wire_id,
                kind: KIND_END,
                seq,
                send_ns: realtime_ns(),
                test_id: s.test_id,
            },
        );
        let _ = s.socket.send(&marker);
        thread::sleep(Duration::from_millis(1));
    }
    counter.other_errors.store(errors, Relaxed);
    shared.finish(idx, end);
    UdpSendReport {
        datagrams: seq,
        spacing: pacer.spacing(),
        gso,
        errors,
    }
}

/// A receiver's running state for one stream.
struct Receiver {
    tracker: SequenceTracker,
    spacing: Histogram<u64>,
    /// One-way delay at or above the first datagram's (`owd - base + 1`) and below it
    /// (`base - owd`): HdrHistogram's precision is relative to the value, so values are kept
    /// near zero rather than offset.
    delay_above: Histogram<u64>,
    delay_below: Histogram<u64>,
    delay_base_ns: Option<i64>,
    bins: Vec<u64>,
    bin_ns: u64,
    bin_overflow: u64,
    prev: Option<(u64, u64)>,
    jitter_ns: f64,
    first_ns: Option<u64>,
    last_ns: u64,
    kernel_stamps: u64,
    user_stamps: u64,
    end_count: Option<u64>,
}

impl Receiver {
    fn new(spec: &UdpSpec) -> Receiver {
        let expected = match spec.limit {
            Limit::Buffers(n) => n,
            Limit::Seconds(s) if spec.gap_ns > 0 => (s * 1e9 / spec.gap_ns as f64) as u64 + 1,
            Limit::Seconds(s) => (s * 1e6) as u64,
        };
        Receiver {
            tracker: SequenceTracker::with_capacity(expected.min(1 << 28)),
            spacing: histogram(),
            delay_above: histogram(),
            delay_below: histogram(),
            delay_base_ns: None,
            bins: vec![0; MAX_BINS],
            bin_ns: u64::from(spec.bin_us) * 1000,
            bin_overflow: 0,
            prev: None,
            jitter_ns: 0.0,
            first_ns: None,
            last_ns: 0,
            kernel_stamps: 0,
            user_stamps: 0,
            end_count: None,
        }
    }

    /// One data datagram, arrived at `at_ns` (CLOCK_REALTIME).
    #[inline]
    fn datagram(&mut self, h: &Header, at_ns: u64) {
        self.tracker.record(h.seq);
        self.first_ns.get_or_insert(at_ns);
        self.last_ns = at_ns;
        if let Some((prev_at, prev_send)) = self.prev {
            let spacing = at_ns.saturating_sub(prev_at);
            let _ = self.spacing.record(spacing.clamp(1, HIST_MAX_NS));
            match self.bins.get_mut((spacing / self.bin_ns) as usize) {
                Some(b) => *b += 1,
                None => self.bin_overflow += 1,
            }
            // RFC 3550 6.4.1: D = (Rj - Ri) - (Sj - Si); J += (|D| - J) / 16.
            let d = (at_ns as i64 - prev_at as i64) - (h.send_ns as i64 - prev_send as i64);
            self.jitter_ns += ((d.unsigned_abs() as f64) - self.jitter_ns) / 16.0;
        }
        self.prev = Some((at_ns, h.send_ns));
        // One-way delay against the first datagram's (the ends' clocks may differ by anything).
        let owd = at_ns as i64 - h.send_ns as i64;
        let base = *self.delay_base_ns.get_or_insert(owd);
        let d = owd - base;
        if d >= 0 {
            let _ = self.delay_above.record((d + 1).min(HIST_MAX_NS as i64) as u64);
        } else {
            let _ = self.delay_below.record((-d).min(HIST_MAX_NS as i64) as u64);
        }
    }

    /// The one-way delay above its minimum (stored + 1 ns, so 0 fits), and that minimum.
    fn delay_above_minimum(&self) -> (Histogram<u64>, i64) {
        let base = self.delay_base_ns.unwrap_or(0);
        let min = if self.delay_below.is_empty() {
            base + self.delay_above.min() as i64 - 1
        } else {
            base - self.delay_below.max() as i64
        };
        let mut h = histogram();
        let mut add = |owd: i64, n: u64| {
            let _ = h.record_n((owd - min + 1).clamp(1, HIST_MAX_NS as i64) as u64, n);
        };
        for v in self.delay_above.iter_recorded() {
            add(base + v.value_iterated_to() as i64 - 1, v.count_at_value());
        }
        for v in self.delay_below.iter_recorded() {
            add(base - v.value_iterated_to() as i64, v.count_at_value());
        }
        (h, min)
    }

    fn report(self, spec: &UdpSpec, gro: bool) -> UdpReceiveReport {
        let sent = self.end_count;
        let (delay, delay_min_ns) = self.delay_above_minimum();
        let seq = self.tracker.summary(sent, 1000);
        let hex = |h: &Histogram<u64>| {
            let mut bytes = Vec::new();
            let _ = hdrhistogram::serialization::Serializer::serialize(
                &mut hdrhistogram::serialization::V2Serializer::new(),
                h,
                &mut bytes,
            );
            crate::proto::to_hex(&bytes)
        };
        let bins = self
            .bins
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| [i as u64 * u64::from(spec.bin_us), *c])
            .collect();
        UdpReceiveReport {
            datagrams: seq.received,
            lost: seq.lost,
            out_of_order: seq.out_of_order,
            duplicates: seq.duplicates,
            highest_plus_one: self.tracker.highest_plus_one(),
            end_count: sent,
            loss_ranges: seq.loss_ranges,
            loss_range_count: seq.loss_range_count,
            loss_picture: self.tracker.loss_picture(sent, 64),
            first_arrival_unix_ns: self.first_ns,
            last_arrival_unix_ns: self.first_ns.map(|_| self.last_ns),
            jitter_us: self.jitter_ns / 1e3,
            timestamps: match (self.kernel_stamps, self.user_stamps) {
                (_, 0) => "kernel",
                (0, _) => "user",
                _ => "kernel and user",
            }
            .into(),
            spacing_histogram: hex(&self.spacing),
            delay_histogram: hex(&delay),
            delay_min_ns,
            bin_us: spec.bin_us,
            bins,
            bin_overflow: self.bin_overflow,
            gro,
        }
    }
}

/// The kernel's receive timestamp of a message (SCM_TIMESTAMPNS) and, with UDP GRO, the size of
/// each datagram in it (UDP_GRO).
fn stamps(hdr: &libc::msghdr) -> (Option<u64>, Option<usize>) {
    let (mut at, mut segment) = (None, None);
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                at = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            } else if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                let g: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                segment = usize::try_from(g).ok();
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    (at, segment)
}

/// One receiving stream, until its end.
fn receive_stream(spec: &UdpSpec, idx: usize, s: &UdpStream, shared: &Shared<'_>, gate: &Gate) -> UdpReceiveReport {
    // As fast as possible, UDP GRO hands up trains of datagrams in one message (each segment
    // keeps its own header; the train shares one arrival time).
    let gro = spec.gap_ns == 0 && set_udp_int(&s.socket, libc::UDP_GRO, 1);
    let size = if gro {
        usize::from(u16::MAX)
    } else {
        (spec.payload_bytes as usize).max(HEADER_BYTES) + 1
    };
    const CONTROL_BYTES: usize = 64;
    let mut rx = Receiver::new(spec);
    let mut buf = vec![0u8; size * BATCH];
    let mut control = vec![0u8; CONTROL_BYTES * BATCH];
    let mut iov: Vec<libc::iovec> = (0..BATCH)
        .map(|i| libc::iovec {
            iov_base: buf[i * size..].as_mut_ptr().cast(),
            iov_len: size,
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = (0..BATCH)
        .map(|i| {
            // SAFETY: plain data, zeroed is a valid empty header.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = &mut iov[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = control[i * CONTROL_BYTES..].as_mut_ptr().cast();
            m
        })
        .collect();
    let fd = s.socket.as_raw_fd();
    let counter = &shared.counters[idx];
    let deadline = match spec.limit {
        Limit::Seconds(sec) => Some(Duration::from_secs_f64(sec)),
        Limit::Buffers(_) => None,
    };
    let expected = match spec.limit {
        Limit::Buffers(n) => Some(n),
        Limit::Seconds(_) => None,
    };
    gate.arrive_and_wait(&shared.sampler);
    let start = *shared.t0.get().expect("time zero is set before the gate opens");
    let mut last_arrival = Instant::now();
    let mut end_seen: Option<Instant> = None;
    let end = loop {
        if shared.control.aborted() {
            break StreamEnd::Stopped;
        }
        for m in msgs.iter_mut() {
            m.msg_hdr.msg_controllen = CONTROL_BYTES as _;
        }
        // SAFETY: every header points into buffers owned above, sized as declared.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        let now = Instant::now();
        if got > 0 {
            last_arrival = now;
            let mut user_ns = None;
            let (mut bytes, mut data) = (0u64, 0u64);
            for (i, m) in msgs.iter().take(got as usize).enumerate() {
                let len = (m.msg_len as usize).min(size);
                let (stamp, segment) = stamps(&m.msg_hdr);
                let at = match stamp {
                    Some(t) => t,
                    None => *user_ns.get_or_insert_with(realtime_ns),
                };
                // Without GRO (or for a lone datagram) the message is one datagram.
                let seg = segment.filter(|g| *g > 0 && *g < len).unwrap_or(len);
                let message = &buf[i * size..i * size + len];
                for d in message.chunks(seg) {
                    let Some(h) = parse_header(d) else {
                        shared.stray.fetch_add(1, Relaxed);
                        continue;
                    };
                    if h.test_id != s.test_id || h.stream != s.wire_id {
                        shared.stray.fetch_add(1, Relaxed);
                        continue;
                    }
                    if h.kind == KIND_END {
                        rx.end_count = Some(h.seq);
                        end_seen.get_or_insert(now);
                        continue;
                    }
                    if stamp.is_some() {
                        rx.kernel_stamps += 1;
                    } else {
                        rx.user_stamps += 1;
                    }
                    rx.datagram(&h, at);
                    bytes += d.len() as u64;
                    data += 1;
                }
            }
            counter.bytes.store(counter.bytes.load(Relaxed) + bytes, Relaxed);
            counter.ops.store(counter.ops.load(Relaxed) + data, Relaxed);
        } else {
            let e = std::io::Error::last_os_error();
            if !matches!(
                e.raw_os_error(),
                Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ECONNREFUSED)
            ) {
                counter
                    .other_errors
                    .store(counter.other_errors.load(Relaxed) + 1, Relaxed);
                break StreamEnd::Error;
            }
        }
        // All the sender's datagrams are here.
        if let Some(n) = rx.end_count.or(expected)
            && rx.tracker.received() >= n
        {
            break StreamEnd::Eof;
        }
        // The end markers came: a moment for stragglers.
        if end_seen.is_some_and(|t| now - t >= END_GRACE) {
            break StreamEnd::Eof;
        }
        let idle = now - last_arrival;
        let sender_done = deadline.is_some_and(|d| now - start >= d) || shared.control.sending_stopped();
        if (sender_done || expected.is_some()) && idle >= IDLE_AFTER_END && rx.first_ns.is_some() {
            break StreamEnd::Eof;
        }
        if idle >= IDLE_ABORT {
            break StreamEnd::Stopped;
        }
    };
    shared.finish(idx, end);
    rx.report(spec, gro)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NullSink;
    use crate::spec::Direction;

    #[test]
    fn header_round_trips() {
        let h = Header {
            stream: 7,
            kind: KIND_DATA,
            seq: 1 << 40,
            send_ns: 1_700_000_000_000_000_000,
            test_id: 0xdead_beef,
        };
        let mut buf = [0u8; 64];
        write_header(&mut buf, &h);
        assert_eq!(parse_header(&buf), Some(h));
        assert_eq!(parse_header(&buf[..31]), None);
        buf[0] = b'X';
        assert_eq!(parse_header(&buf), None);
    }

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let b = UdpSocket::bind("127.0.0.1:0").expect("bind");
        a.connect(b.local_addr().expect("addr")).expect("connect");
        b.connect(a.local_addr().expect("addr")).expect("connect");
        (a, b)
    }

    /// Runs a sender and a receiver engine on a loopback pair.
    fn run_pair(spec: &UdpSpec) -> (SideReport, SideReport) {
        let (a, b) = pair();
        let grant_a = configure(&a, spec, Role::Send).expect("configure");
        let grant_b = configure(&b, spec, Role::Receive).expect("configure");
        let send = UdpStream {
            id: 0,
            wire_id: 0,
            test_id: 42,
            role: Role::Send,
            socket: a,
            grant: grant_a,
        };
        let recv = UdpStream {
            id: 0,
            wire_id: 0,
            test_id: 42,
            role: Role::Receive,
            socket: b,
            grant: grant_b,
        };
        thread::scope(|s| {
            let r = s.spawn(|| run(spec, &[], vec![recv], &mut NullSink, &Control::default()));
            thread::sleep(Duration::from_millis(20));
            let t = run(spec, &[], vec![send], &mut NullSink, &Control::default()).expect("sender");
            (t, r.join().expect("receiver thread").expect("receiver"))
        })
    }

    #[test]
    fn every_datagram_of_a_paced_count_arrives_in_order() {
        let mut spec = UdpSpec::new();
        spec.limit = Limit::Buffers(2000);
        spec.gap_ns = 20_000;
        spec.direction = Direction::Send;
        let (sent, received) = run_pair(&spec);
        let s = sent.streams[0].udp_send.as_ref().expect("send report");
        assert_eq!(s.datagrams, 2000);
        assert!((s.spacing.mean_us - 20.0).abs() < 2.0, "{:?}", s.spacing);
        let r = received.streams[0].udp_receive.as_ref().expect("receive report");
        assert_eq!((r.datagrams, r.lost, r.out_of_order, r.duplicates), (2000, 0, 0, 0));
        assert!(
            r.delay_min_ns > 0 && r.delay_min_ns < 10_000_000,
            "loopback: {} ns",
            r.delay_min_ns
        );
        // With every datagram in, the receiver need not wait for the end markers.
        assert!(r.end_count.is_none_or(|c| c == 2000), "{:?}", r.end_count);
        assert_eq!(received.streams[0].bytes, 2000 * 1472);
        assert_eq!(r.timestamps, "kernel");
    }

    #[test]
    fn as_fast_as_possible_for_a_time() {
        let mut spec = UdpSpec::new();
        spec.limit = Limit::Seconds(0.5);
        spec.payload_bytes = 1000;
        let (sent, received) = run_pair(&spec);
        let s = sent.streams[0].udp_send.as_ref().expect("send report");
        let r = received.streams[0].udp_receive.as_ref().expect("receive report");
        assert!(s.datagrams > 1000, "{s:?}");
        assert_eq!(r.end_count, Some(s.datagrams));
        assert_eq!(r.datagrams + r.lost, s.datagrams, "every datagram received or lost");
    }
}
