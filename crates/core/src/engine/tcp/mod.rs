//! The TCP throughput engine: drives connected data sockets from worker threads and counts.
//!
//! Before the clock starts, workers are pinned and their buffers allocated and touched. In the
//! loop a worker does one read or write, adds to counters only it writes (each on its own cache
//! line), and looks at two flags. The runner (`engine::run`) on the caller's thread samples the
//! counters, reads CPU and (through this engine's hook) TCP_INFO, and stops the senders at the
//! deadline; workers never lock, allocate or format.
//!
//! One run (`runner`) serves two workloads: one-way streams (`oneway`, with its epoll loop in
//! `event` and its io_uring worker in `uring`) and mixed transfers (`mix`, its blocking loop in
//! `mix_link`, its epoll loop in `mix_event`). The runner chooses each worker's style (io_uring,
//! blocking, epoll) once; `epoll` is the epoll instance both loops use, `stream` the types all of
//! them share.

mod epoll;
mod event;
pub mod mix;
mod mix_event;
mod mix_link;
mod oneway;
mod runner;
mod stream;
mod uring;
mod zerocopy;

pub use stream::DataStream;

use super::{Control, EngineError, Sink, sockopt};
use crate::result::SideReport;
use crate::spec::TcpSpec;
use std::sync::atomic::Ordering::Relaxed;

/// Runs one-way streams until senders reach their limit and receivers their end of stream (or
/// until `control` says stop), and returns what this end counted.
pub fn run(
    spec: &TcpSpec,
    cpus: &[usize],
    streams: Vec<DataStream>,
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<SideReport, EngineError> {
    let oneway = oneway::OneWay::default();
    let mut report = runner::run(spec, &oneway, cpus, &streams, sink, control)?;
    let tally = &oneway.tally;
    let seen = sockopt::ZeroCopySeen {
        asked: spec.zerocopy,
        io_uring: report.io == "io_uring",
        fell_back: tally.fell_back.load(Relaxed),
        completed: tally.completed.load(Relaxed),
        copied: tally.copied.load(Relaxed),
    };
    let notes = sockopt::zerocopy_notes(seen, &mut report.streams);
    report.notes.extend(notes);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NullSink;
    use crate::result::{Role, StreamEnd};
    use crate::spec::{Limit, ZeroCopy};
    use crate::units::ByteSize;
    use std::net::TcpListener;
    use std::net::TcpStream;
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

    /// Both zero-copy paths on one worker's epoll loop (two streams), every byte
    /// counted on both ends, the path in the grant and MSG_ZEROCOPY's completions noted.
    #[test]
    fn issue_28_zerocopy_on_an_event_loop_moves_exactly_the_buffers_asked_for() {
        for z in [ZeroCopy::Sendfile, ZeroCopy::Msg] {
            let mut spec = TcpSpec::new();
            spec.timing.limit = Limit::Buffers(60);
            spec.buffer_bytes = ByteSize(70_000);
            spec.threads = 1;
            spec.zerocopy = Some(z);
            let (sent, received) = run_pairs(&spec, 2);
            for r in [&sent, &received] {
                assert_eq!(
                    r.streams.iter().map(|s| s.bytes).sum::<u64>(),
                    2 * 60 * 70_000,
                    "{z}: {r:?}"
                );
            }
            assert!(sent.streams.iter().all(|s| s.socket.zerocopy == Some(z)), "{z}");
            assert!(received.streams.iter().all(|s| s.socket.zerocopy.is_none()), "{z}");
            if z == ZeroCopy::Msg {
                assert!(
                    sent.notes.iter().any(|n| n.contains("MSG_ZEROCOPY")),
                    "{:?}",
                    sent.notes
                );
            }
        }
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
        // The window is what follows the warm-up: at least the 0.5 s left of the limit. No upper
        // bound: on a loaded machine the run may end late, and how late is the machine's, not
        // the engine's (the warm-up's exclusion is the two checks above).
        assert!(s.seconds >= 0.45, "{s:?}");
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
