//! The runner's shared rules, with stand-in workers on loopback sockets and test-only durations.

use super::*;
use crate::engine::NullSink;
use crate::spec::Limit;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

fn one_stream() -> Vec<StreamInfo> {
    vec![StreamInfo {
        id: 0,
        role: Role::Receive,
        grant: SocketGrant::default(),
    }]
}

fn runner(deadlines: Deadlines, streams: Vec<StreamInfo>, workers: usize) -> Runner<'static> {
    Runner {
        deadlines,
        streams,
        workers,
        name: "linerate-test",
        cpus: &[],
        sched: Sched::Normal,
        tcp_info: None,
        queued: None,
        received: None,
    }
}

/// One receiving stream's run under `deadlines`, its worker `work(shared, gate, worker)`.
fn drive_one(deadlines: Deadlines, work: impl Fn(&Shared<'_>, &Gate, usize) + Sync) -> SideReport {
    let r = runner(deadlines, one_stream(), 1);
    let (state, gate, control) = (RunState::new(1), Gate::new(), Control::default());
    let shared = state.shared(&control);
    r.drive(&shared, &gate, &mut NullSink, |w| work(&shared, &gate, w))
        .expect("runs")
        .0
}

/// A count-limited plan (no deadline), as a `-n` run has.
fn count_plan() -> Deadlines {
    Deadlines::new(&timing(Limit::Buffers(10)))
}

/// `limit` with no interval samples.
fn timing(limit: Limit) -> Timing {
    Timing {
        interval_seconds: 0.0,
        ..Timing::new(limit)
    }
}

#[test]
fn a_gate_not_reached_in_time_gives_the_run_up_with_a_note() {
    let deadlines = Deadlines {
        gate_timeout: Duration::from_millis(200),
        ..count_plan()
    };
    let streams = (0..2)
        .map(|i| StreamInfo {
            id: i,
            role: Role::Send,
            grant: SocketGrant::default(),
        })
        .collect();
    let r = runner(deadlines, streams, 2);
    let (state, gate, control) = (RunState::new(2), Gate::new(), Control::default());
    let shared = state.shared(&control);
    let started = Instant::now();
    let (report, _) = r
        .drive(&shared, &gate, &mut NullSink, |w| {
            if w == 1 {
                // Stuck in setup well past the gate's patience.
                thread::sleep(Duration::from_millis(600));
            }
            gate.arrive_and_wait(&shared.sampler);
            while !shared.control.aborted() {
                thread::sleep(Duration::from_millis(5));
            }
            shared.finish(w, StreamEnd::Stopped);
        })
        .expect("runs");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(report.partial);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n == "1 of 2 workers were not ready within 0.2 s: the run was given up"),
        "{:?}",
        report.notes
    );
}

#[test]
fn samples_past_the_cap_are_dropped_with_a_note() {
    let deadlines = Deadlines {
        interval: Some(Duration::from_millis(10)),
        max_samples: 3,
        ..count_plan()
    };
    let report = drive_one(deadlines, |shared, gate, w| {
        gate.arrive_and_wait(&shared.sampler);
        let c = &shared.counters[w];
        for i in 1..=30u64 {
            c.bytes.store(i * 1000, Relaxed);
            thread::sleep(Duration::from_millis(5));
        }
        shared.finish(w, StreamEnd::Count);
    });
    assert!(report.intervals.len() <= 3, "{:?}", report.intervals);
    assert!(!report.partial);
    assert_eq!(report.streams[0].bytes, 30_000);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("only the first 3 interval samples were kept")),
        "{:?}",
        report.notes
    );
}

/// A connected loopback pair: (this end, the peer).
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    (c, l.accept().expect("accept").0)
}

#[test]
fn a_count_limited_run_with_a_silent_peer_is_given_up() {
    // An asking worker, as rr's: a request, then a wait for an answer that never comes. With a
    // count and no deadline nothing else would end it.
    let (mine, _silent_peer) = pair();
    mine.set_read_timeout(Some(Duration::from_millis(20))).expect("timeout");
    let deadlines = Deadlines {
        idle: Some(Duration::from_millis(300)),
        ..count_plan()
    };
    let r = runner(deadlines, one_stream(), 1);
    let (state, gate, control) = (RunState::new(1), Gate::new(), Control::default());
    let shared = state.shared(&control);
    let started = Instant::now();
    let (report, _) = r
        .drive(&shared, &gate, &mut NullSink, |w| {
            gate.arrive_and_wait(&shared.sampler);
            let mut sock = &mine;
            sock.write_all(b"request").expect("write");
            let mut buf = [0u8; 16];
            let end = loop {
                if shared.control.aborted() {
                    break StreamEnd::Stopped;
                }
                match sock.read(&mut buf) {
                    Ok(0) => break StreamEnd::Eof,
                    Ok(k) => shared.counters[w].bytes.fetch_add(k as u64, Relaxed),
                    Err(_) => continue,
                };
            };
            shared.finish(w, end);
        })
        .expect("runs");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(report.partial);
    assert_eq!(report.streams[0].end, StreamEnd::Stopped);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n == "no data moved for 0.3 s: the run was given up"),
        "{:?}",
        report.notes
    );
}

#[test]
fn streams_that_do_not_end_after_the_deadline_stop_are_aborted() {
    let deadlines = Deadlines {
        deadline_stops_senders: true,
        drain: Duration::from_millis(200),
        ..Deadlines::new(&timing(Limit::Seconds(0.1)))
    };
    let r = runner(deadlines, one_stream(), 1);
    let (state, gate, control) = (RunState::new(1), Gate::new(), Control::default());
    let shared = state.shared(&control);
    let (report, _) = r
        .drive(&shared, &gate, &mut NullSink, |w| {
            gate.arrive_and_wait(&shared.sampler);
            // Keeps moving bytes (so it is not idle) and ignores the stop; only an abort ends it.
            while !shared.control.aborted() {
                shared.counters[w].bytes.fetch_add(1, Relaxed);
                thread::sleep(Duration::from_millis(5));
            }
            shared.finish(w, shared.stop_reason());
        })
        .expect("runs");
    assert!(shared.deadline_hit.load(Relaxed));
    assert!(report.partial);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n == "receivers saw no end of stream within 0.2 s of the senders stopping"),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_side_that_ends_on_stop_is_not_partial_when_stopped() {
    let deadlines = Deadlines {
        ends_on_stop: true,
        ..count_plan()
    };
    let r = runner(deadlines, one_stream(), 1);
    let (state, gate, control) = (RunState::new(1), Gate::new(), Control::default());
    let shared = state.shared(&control);
    let (report, _) = thread::scope(|s| {
        s.spawn(|| {
            thread::sleep(Duration::from_millis(100));
            control.stop_send();
        });
        r.drive(&shared, &gate, &mut NullSink, |w| {
            gate.arrive_and_wait(&shared.sampler);
            while !shared.control.sending_stopped() {
                shared.counters[w].bytes.fetch_add(1, Relaxed);
                thread::sleep(Duration::from_millis(5));
            }
            shared.finish(w, StreamEnd::Stopped);
        })
        .expect("runs")
    });
    assert!(!report.partial, "{:?}", report.notes);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}

#[test]
fn a_plan_turns_a_timing_into_deadlines_and_counts() {
    let tcp = Timing {
        warmup_seconds: 1.0,
        cooldown_seconds: 0.5,
        interval_seconds: 0.25,
        ..Timing::new(Limit::Seconds(4.0))
    };
    let deadlines = Deadlines::new(&tcp);
    assert_eq!(deadlines.deadline(), Some(Duration::from_secs(4)));
    assert_eq!(deadlines.deadline_ns(), Some(4_000_000_000));
    assert_eq!(deadlines.count(), None);
    assert_eq!(
        deadlines.measure_window(),
        (Duration::from_secs(1), Some(Duration::from_millis(3500)))
    );
    assert_eq!(deadlines.interval(), Some(Duration::from_millis(250)));
    // http: the ramp comes before the duration.
    let http = Timing {
        cooldown_seconds: 1.0,
        ..Timing::ramp(2.0, 10.0)
    };
    let deadlines = Deadlines::new(&http);
    assert_eq!(deadlines.deadline(), Some(Duration::from_secs(12)));
    assert_eq!(
        deadlines.measure_window(),
        (Duration::from_secs(2), Some(Duration::from_secs(11)))
    );
    // Its host sampler keeps the ramp and the length but acts on no deadline nor cool-down.
    let host = Deadlines::sampling(&http);
    assert_eq!(host.deadline(), Some(Duration::from_secs(12)));
    assert_eq!(host.measure_window(), (Duration::from_secs(2), None));
    // The idle rule holds for it too.
    assert!(host.ends_on_stop && host.idle == Some(IDLE));
    let counted = Deadlines::new(&timing(Limit::Buffers(7)));
    assert_eq!(
        (counted.count(), counted.deadline(), counted.interval()),
        (Some(7), None, None)
    );
}

/// A stand-in worker blocked "in a read" until the unblock rule wakes it.
fn blocked_until_woken(
    deadlines: Deadlines,
    control: &Control,
    stop_after: Option<Duration>,
) -> (SideReport, Duration) {
    let woken = Arc::new(AtomicBool::new(false));
    let flag = woken.clone();
    let deadlines = Deadlines {
        unblock: Some(Unblock {
            wake: Arc::new(move || flag.store(true, Relaxed)),
            quiet: Duration::from_millis(100),
        }),
        ..deadlines
    };
    let r = runner(deadlines, one_stream(), 1);
    let (state, gate) = (RunState::new(1), Gate::new());
    let shared = state.shared(control);
    let started = Instant::now();
    let (report, _) = thread::scope(|s| {
        if let Some(after) = stop_after {
            s.spawn(move || {
                thread::sleep(after);
                control.stop_send();
            });
        }
        r.drive(&shared, &gate, &mut NullSink, |w| {
            gate.arrive_and_wait(&shared.sampler);
            while !woken.load(Relaxed) {
                thread::sleep(Duration::from_millis(5));
            }
            shared.finish(w, StreamEnd::Stopped);
        })
        .expect("runs")
    });
    (report, started.elapsed())
}

#[test]
fn the_unblock_rule_wakes_blocked_workers_when_the_asking_is_over() {
    let control = Control::default();
    let deadlines = Deadlines {
        ends_on_stop: true,
        ..count_plan()
    };
    let (report, took) = blocked_until_woken(deadlines, &control, Some(Duration::from_millis(50)));
    assert!(!report.partial, "{:?}", report.notes);
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn the_unblock_rule_wakes_blocked_workers_when_the_time_is_up_and_nothing_moves() {
    let control = Control::default();
    let (report, took) = blocked_until_woken(Deadlines::new(&timing(Limit::Seconds(0.1))), &control, None);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    assert!(took >= Duration::from_millis(100), "not before the deadline: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn cpu_over_a_window_counts_this_process() {
    let a = crate::metrics::sample::HostSnapshot::read();
    // Burn a little CPU so the process's share is above zero.
    // 150 ms: longer than the shortest window a share is given for (ten clock ticks).
    let until = Instant::now() + Duration::from_millis(150);
    let mut x = 0u64;
    while Instant::now() < until {
        x = x.wrapping_mul(31).wrapping_add(7);
    }
    std::hint::black_box(x);
    let b = crate::metrics::sample::HostSnapshot::read();
    let groups = crate::metrics::sample::IrqGroups::discover(a.interrupts.as_ref(), &a.interfaces);
    let seconds = b.at.saturating_duration_since(a.at).as_secs_f64();
    let (cpu, host) = sampler::cpu_over(&a, &b, &groups, seconds);
    assert!(cpu.process_user_seconds + cpu.process_system_seconds > 0.0, "{cpu:?}");
    assert!(
        cpu.process_percent_of_host.is_some_and(|p| p > 0.0 && p <= 100.0),
        "{cpu:?}"
    );
    assert_eq!(cpu.host_percent, host.cpu.map(|c| c.busy));
    // Too short a window gives no share at all (431.84 % over a few milliseconds).
    let (short, _) = sampler::cpu_over(&a, &b, &groups, 0.002);
    assert_eq!(short.process_percent_of_host, None);
}

#[test]
fn issue_23_a_receiving_sides_window_follows_its_data() {
    // A receiver that waits 300 ms for its first byte, takes bytes for 200 ms, then waits
    // 400 ms for stragglers: its window is the 200 ms of data, give or take its looks, not the
    // 900 ms of the run. Bounds are loose: a loaded machine makes looks late, never early.
    let run = |follow: bool| {
        let mut deadlines = count_plan();
        deadlines.window_follows_data = follow;
        drive_one(deadlines, |shared, gate, w| {
            gate.arrive_and_wait(&shared.sampler);
            thread::sleep(Duration::from_millis(300));
            let data = Instant::now();
            while data.elapsed() < Duration::from_millis(200) {
                let c = &shared.counters[w];
                c.bytes.store(c.bytes.load(Relaxed) + 1000, Relaxed);
                thread::sleep(Duration::from_millis(1));
            }
            thread::sleep(Duration::from_millis(400));
            shared.finish(w, StreamEnd::Eof);
        })
    };
    let started = Instant::now();
    let r = run(true);
    let run_ns = started.elapsed().as_nanos() as u64;
    let total = r.streams[0].total_bytes;
    assert!(total > 0);
    assert_eq!(r.streams[0].bytes, total, "every byte is in the window");
    assert!(r.window_start_ns >= 250_000_000, "starts at {} ns", r.window_start_ns);
    assert!(
        r.window_end_ns + 300_000_000 <= run_ns,
        "ends at {} ns of a run of {run_ns} ns",
        r.window_end_ns
    );
    let window = (r.window_end_ns - r.window_start_ns) as f64 / 1e9;
    let host = r.host.as_ref().expect("the host's samplers").seconds;
    assert!(
        (host - window).abs() < 1e-6,
        "the host's samplers cover {host} s of {window} s"
    );
    // Without the rule, the window is the run's.
    let r = run(false);
    assert_eq!(r.window_start_ns, 0);
}
