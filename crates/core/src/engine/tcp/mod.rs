//! The TCP throughput engine: drives connected data sockets from worker threads and counts.
//!
//! Before the clock starts, workers are pinned and their buffers allocated and touched. In the
//! loop a worker does one read or write, adds to counters only it writes (each on its own cache
//! line), and looks at two flags. The runner (`engine::run`) on the caller's thread samples the
//! counters, reads CPU and (through this engine's hook) TCP_INFO, and stops the senders at the
//! deadline; workers never lock, allocate or format.

use super::run::{Gate, Plan, RunState, Runner, Shared, StreamInfo};
use super::sockopt;
use super::{Control, EngineError, Sink, pin};

mod epoll;
mod event;
pub mod mix;
mod mix_event;
mod uring;
use crate::result::{Role, SideReport, SocketGrant, StreamEnd};
use crate::spec::TcpSpec;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::OnceLock;
use std::sync::atomic::Ordering::Relaxed;

/// One connected data socket and what this end does with it.
pub struct DataStream {
    /// Stream number reported for it.
    pub id: u16,
    pub role: Role,
    pub socket: TcpStream,
    /// What [`sockopt::configure`] read back.
    pub grant: SocketGrant,
}

fn is_again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// A stream as a worker holds it.
pub(super) struct WorkerStream<'a> {
    /// Index into the counters and the plan's streams.
    pub idx: usize,
    pub role: Role,
    pub socket: &'a TcpStream,
}

/// Runs the streams until senders reach their limit and receivers their end of stream (or until
/// `control` says stop), and returns what this end counted.
pub fn run(
    spec: &TcpSpec,
    cpus: &[usize],
    streams: Vec<DataStream>,
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<SideReport, EngineError> {
    pin::check_cpus(cpus)?;
    let n = streams.len();
    let workers = worker_count(spec.threads, cpus, n);
    let state = RunState::new(n);
    let gate = Gate::new();
    let uring_failed: OnceLock<String> = OnceLock::new();
    let epoll_failed: OnceLock<String> = OnceLock::new();
    let shared = shared_for(spec, &state, control);
    let depth = spec.depth as usize;
    // Senders report TCP_INFO (cwnd, RTT, retransmits) in each interval and at the end.
    let tcp_info = |i: usize| {
        let s: &DataStream = &streams[i];
        (s.role == Role::Send).then(|| sockopt::tcp_info(&s.socket)).flatten()
    };
    let runner = Runner {
        plan: plan_for(spec),
        streams: StreamInfo::all(streams.iter().map(|s| (s.id, s.role, &s.grant))),
        workers,
        name: "linerate-w",
        cpus,
        tcp_info: Some(&tcp_info),
    };
    let (mut report, _) = runner.drive(&shared, &gate, sink, |w| {
        let mine: Vec<WorkerStream<'_>> = streams
            .iter()
            .enumerate()
            .filter(|(i, _)| i % workers == w)
            .map(|(idx, s)| WorkerStream {
                idx,
                role: s.role,
                socket: &s.socket,
            })
            .collect();
        let (shared, gate, uring_failed, epoll_failed) = (&shared, &gate, &uring_failed, &epoll_failed);
        if depth > 1 {
            match uring::Worker::new(&mine, depth, shared.buffer_bytes) {
                Ok(mut u) => {
                    gate.arrive_and_wait(&shared.sampler);
                    u.run(&mine, shared);
                }
                Err(e) => {
                    let _ = uring_failed.set(e.to_string());
                    run_syscall_worker(&mine, shared, gate, epoll_failed);
                }
            }
        } else {
            run_syscall_worker(&mine, shared, gate, epoll_failed);
        }
    })?;
    report.io = if depth > 1 && uring_failed.get().is_none() {
        "io_uring"
    } else {
        "syscall"
    }
    .into();
    if let Some(e) = uring_failed.get() {
        report.notes.push(format!(
            "io_uring unavailable ({e}): --depth fell back to one blocking call at a time"
        ));
    }
    end_notes(&mut report, spec, &epoll_failed);
    Ok(report)
}

/// The counters and flags of a TCP run (one-way or mixed): buffers of `-l` bytes, a count per
/// stream with `-n`.
fn shared_for<'a>(spec: &TcpSpec, state: &'a RunState, control: &'a Control) -> Shared<'a> {
    Shared {
        buffer_bytes: spec.buffer_bytes.0 as usize,
        count: spec.timing.limit.count(),
        ..state.shared(control)
    }
}

/// The runner's plan for a TCP run: the spec's windows; the deadline stops the senders (a
/// mixed run's client checks it between transfers, its agent ends when the client closes).
fn plan_for(spec: &TcpSpec) -> Plan {
    let mut plan = Plan::new(&spec.timing);
    plan.deadline_stops_senders = true;
    plan
}

/// What every TCP run's report says at its end: a worker without epoll, and socket options the
/// kernel capped.
fn end_notes(report: &mut SideReport, spec: &TcpSpec, epoll_failed: &OnceLock<String>) {
    if let Some(e) = epoll_failed.get() {
        report.notes.push(format!(
            "a worker could not set up epoll ({e}): its streams ended at once"
        ));
    }
    let asked = sockopt::Asked {
        window: spec.window_bytes,
        sndbuf: spec.sndbuf_bytes,
        mss_bytes: spec.mss_bytes,
    };
    report.notes.extend(sockopt::grant_notes(asked, &report.streams));
}

/// Workers on this end: `threads` when the spec sets it, else one per CPU this end may use (the
/// `cpus` it pins to, else this thread's affinity mask); never more than streams, at least one.
fn worker_count(threads: u16, cpus: &[usize], streams: usize) -> usize {
    let wanted = match threads {
        0 if cpus.is_empty() => pin::allowed_cpus().len(),
        0 => cpus.len(),
        t => usize::from(t),
    };
    wanted.min(streams).max(1)
}

/// One stream: plain blocking calls (an event loop adds an epoll_wait per call; at -P 1 on
/// loopback it measured 13.9 Gbit/s against 14.6 blocking, docs/benchmarks.md, issue 12). Several: non-blocking calls from one epoll loop ([`event`]). Either way
/// the buffers are allocated and touched before the gate; streams of one worker share them.
fn run_syscall_worker(mine: &[WorkerStream<'_>], shared: &Shared<'_>, gate: &Gate, epoll_failed: &OnceLock<String>) {
    let len = shared.buffer_bytes;
    // Touched before the clock matters: a byte pattern, not zero pages.
    let pattern = |any: bool| -> Vec<u8> {
        if any {
            (0..len).map(|i| i as u8).collect()
        } else {
            Vec::new()
        }
    };
    if let [one] = mine {
        let mut buf = pattern(true);
        gate.arrive_and_wait(&shared.sampler);
        blocking_stream(one, &mut buf, shared);
        return;
    }
    let send_buf = pattern(mine.iter().any(|s| s.role == Role::Send));
    let mut recv_buf = pattern(mine.iter().any(|s| s.role == Role::Receive));
    match event::EventLoop::new(mine) {
        Ok(mut ev) => {
            gate.arrive_and_wait(&shared.sampler);
            ev.run(mine, &send_buf, &mut recv_buf, shared);
        }
        Err(e) => {
            let _ = epoll_failed.set(e.to_string());
            gate.arrive_and_wait(&shared.sampler);
            for s in mine {
                shared.count_error(s.idx, &e);
                shared.finish(s.idx, StreamEnd::Error);
            }
        }
    }
}

fn blocking_stream(s: &WorkerStream<'_>, buf: &mut [u8], shared: &Shared<'_>) {
    let c = &shared.counters[s.idx];
    let control = shared.control;
    let mut sock = s.socket;
    let (mut bytes, mut ops) = (0u64, 0u64);
    let end = match s.role {
        Role::Send => {
            let mut off = 0usize;
            let end = loop {
                if control.sending_stopped() || control.aborted() {
                    break shared.stop_reason();
                }
                if shared.count == Some(ops) {
                    break StreamEnd::Count;
                }
                match sock.write(&buf[off..]) {
                    Ok(k) => {
                        bytes += k as u64;
                        off += k;
                        if off == buf.len() {
                            off = 0;
                            ops += 1;
                            c.ops.store(ops, Relaxed);
                        }
                        c.bytes.store(bytes, Relaxed);
                    }
                    Err(e) if is_again(&e) => {}
                    Err(e) => {
                        shared.count_error(s.idx, &e);
                        break StreamEnd::Error;
                    }
                }
            };
            let _ = sock.shutdown(Shutdown::Write);
            end
        }
        Role::Receive => loop {
            if control.aborted() {
                break StreamEnd::Stopped;
            }
            match sock.read(buf) {
                Ok(0) => break StreamEnd::Eof,
                Ok(k) => {
                    bytes += k as u64;
                    ops += 1;
                    c.bytes.store(bytes, Relaxed);
                    c.ops.store(ops, Relaxed);
                }
                Err(e) if is_again(&e) => {}
                Err(e) => {
                    shared.count_error(s.idx, &e);
                    break StreamEnd::Error;
                }
            }
        },
    };
    shared.finish(s.idx, end);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NullSink;
    use crate::spec::Limit;
    use crate::units::ByteSize;
    use std::net::TcpListener;
    use std::thread;
    use std::time::{Duration, Instant};

    /// `n` connected pairs on loopback: (sending end, receiving end).
    fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        (0..n)
            .map(|_| {
                let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
                (c, l.accept().expect("accept").0)
            })
            .collect()
    }

    fn run_pairs(spec: &TcpSpec, n: usize) -> (SideReport, SideReport) {
        let (tx, rx): (Vec<_>, Vec<_>) = pairs(n)
            .into_iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let ga = sockopt::configure(&a, spec, Role::Send).expect("configure");
                let gb = sockopt::configure(&b, spec, Role::Receive).expect("configure");
                (
                    DataStream {
                        id: i as u16,
                        role: Role::Send,
                        socket: a,
                        grant: ga,
                    },
                    DataStream {
                        id: i as u16,
                        role: Role::Receive,
                        socket: b,
                        grant: gb,
                    },
                )
            })
            .unzip();
        let control_rx = Control::default();
        thread::scope(|s| {
            let h = s.spawn(|| run(spec, &[], rx, &mut NullSink, &control_rx).expect("receiver"));
            let sent = run(spec, &[], tx, &mut NullSink, &Control::default()).expect("sender");
            (sent, h.join().expect("join"))
        })
    }

    #[test]
    fn count_mode_moves_exactly_the_buffers_asked_for() {
        let mut spec = TcpSpec::new();
        spec.timing.limit = Limit::Buffers(50);
        spec.buffer_bytes = ByteSize(10_000);
        spec.threads = 1; // two streams on one worker: the epoll path
        let (sent, received) = run_pairs(&spec, 2);
        for r in [&sent, &received] {
            assert_eq!(r.streams.iter().map(|s| s.bytes).sum::<u64>(), 2 * 50 * 10_000, "{r:?}");
            assert!(!r.partial);
        }
        assert!(sent.streams.iter().all(|s| s.end == StreamEnd::Count && s.ops == 50));
        assert!(received.streams.iter().all(|s| s.end == StreamEnd::Eof));
    }

    #[test]
    fn sixteen_streams_over_two_workers_move_exactly_the_bytes_asked() {
        let mut spec = TcpSpec::new();
        spec.streams = 16;
        spec.threads = 2;
        spec.timing.limit = Limit::Buffers(40);
        spec.buffer_bytes = ByteSize(7_000); // not a multiple of any socket buffer: partial writes
        let (sent, received) = run_pairs(&spec, 16);
        for r in [&sent, &received] {
            assert_eq!(r.streams.len(), 16);
            assert!(r.streams.iter().all(|s| s.bytes == 40 * 7_000), "{r:?}");
            assert!(!r.partial);
        }
        assert!(sent.streams.iter().all(|s| s.end == StreamEnd::Count && s.ops == 40));
        assert!(received.streams.iter().all(|s| s.end == StreamEnd::Eof));
    }

    #[test]
    fn eight_streams_on_one_worker_stop_at_the_deadline() {
        let mut spec = TcpSpec::new();
        spec.streams = 8;
        spec.threads = 1;
        spec.timing.limit = Limit::Seconds(0.5);
        spec.timing.interval_seconds = 0.0;
        let (sent, received) = run_pairs(&spec, 8);
        for (s, r) in sent.streams.iter().zip(&received.streams) {
            assert_eq!(s.end, StreamEnd::Deadline);
            assert!((0.45..1.5).contains(&s.seconds), "{s:?}");
            assert!(s.bytes > 0, "every stream moved data: {s:?}");
            assert_eq!(r.end, StreamEnd::Eof);
            assert_eq!(r.bytes, s.bytes, "receiver counts every byte sent");
        }
        assert!(!sent.partial && !received.partial);
    }

    #[test]
    fn abort_ends_an_event_loop_worker_promptly() {
        let spec = TcpSpec::new();
        let pairs = pairs(4);
        let streams: Vec<DataStream> = pairs
            .iter()
            .enumerate()
            .map(|(i, (_, b))| DataStream {
                id: i as u16,
                role: Role::Receive,
                socket: b.try_clone().expect("clone"),
                grant: sockopt::configure(b, &spec, Role::Receive).expect("configure"),
            })
            .collect();
        let control = Control::default();
        let mut one = TcpSpec::new();
        one.threads = 1;
        let (report, took) = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(200));
                control.abort();
            });
            let started = Instant::now();
            let r = run(&one, &[], streams, &mut NullSink, &control).expect("run");
            (r, started.elapsed())
        });
        // The abort comes at 200 ms; the loop sees it within one epoll_wait slice.
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(report.partial);
        assert!(report.streams.iter().all(|s| s.end == StreamEnd::Stopped), "{report:?}");
    }

    #[test]
    fn default_workers_are_one_per_allowed_cpu_and_never_more_than_streams() {
        let allowed = pin::allowed_cpus().len();
        assert_eq!(worker_count(0, &[], 1_000), allowed);
        assert_eq!(worker_count(0, &[], 1), 1);
        assert_eq!(worker_count(0, &[0, 1, 0], 16), 3, "one per listed CPU");
        assert_eq!(worker_count(0, &[0, 1, 0], 2), 2);
        assert_eq!(worker_count(5, &[0], 16), 5, "--threads overrides");
        assert_eq!(worker_count(5, &[], 3), 3);
    }

    #[test]
    fn time_mode_stops_at_the_deadline_and_samples_intervals() {
        let mut spec = TcpSpec::new();
        spec.timing.limit = Limit::Seconds(0.6);
        spec.timing.interval_seconds = 0.2;
        let (sent, received) = run_pairs(&spec, 1);
        let s = &sent.streams[0];
        assert_eq!(s.end, StreamEnd::Deadline);
        assert!((0.55..1.5).contains(&s.seconds), "{s:?}");
        assert_eq!(received.streams[0].bytes, s.bytes, "receiver counts every byte sent");
        assert!(sent.intervals.len() >= 3, "{:?}", sent.intervals);
        let summed: u64 = sent.intervals.iter().map(|i| i.bytes).sum();
        assert_eq!(summed, s.total_bytes, "intervals add up to the whole run");
        assert!(sent.intervals.iter().all(|i| i.tcp.is_some()));
        assert!(sent.cpu.host_percent.is_some());
    }

    #[test]
    fn warmup_is_left_out_of_the_window() {
        let mut spec = TcpSpec::new();
        spec.timing.limit = Limit::Seconds(0.8);
        spec.timing.warmup_seconds = 0.3;
        let (sent, _) = run_pairs(&spec, 1);
        let s = &sent.streams[0];
        assert!(s.bytes < s.total_bytes);
        assert!(sent.window_start_ns >= 300_000_000);
        assert!((0.45..1.4).contains(&s.seconds), "{s:?}");
    }

    #[test]
    fn abort_ends_a_run_that_would_never_end() {
        let spec = TcpSpec::new();
        let (_a, b) = pairs(1).pop().expect("pair");
        let g = sockopt::configure(&b, &spec, Role::Receive).expect("configure");
        let control = Control::default();
        let started = Instant::now();
        let report = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(200));
                control.abort();
            });
            let streams = vec![DataStream {
                id: 0,
                role: Role::Receive,
                socket: b,
                grant: g,
            }];
            let mut c = TcpSpec::new();
            c.timing.limit = Limit::Buffers(1);
            run(&c, &[], streams, &mut NullSink, &control).expect("run")
        });
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(report.partial);
        assert_eq!(report.streams[0].end, StreamEnd::Stopped);
    }
}
