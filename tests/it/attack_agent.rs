//! The agent attacked where a review found it open: log floods, connection and descriptor floods,
//! silent data connections, memory bombs, and (for the client) a result trickled byte by byte.
//! Loopback only; every process and connection is bounded in time and ended by the test.

use crate::attack::*;
use crate::util::*;
use linerate_core::spec::{Limit, RrSpec, TestSpec};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn issue_14_idle_and_drip_fed_connections_from_one_address_do_not_lock_out_another() {
    let agent = LoggedAgent::start(&[], &[]);
    // Drip-feeders first, so they hold 127.0.0.1's opening slots: a byte every 500 ms would keep
    // a per-read timer alive for ever.
    let drips: Vec<_> = (0..8)
        .map(|_| {
            let addr = agent.addr;
            std::thread::spawn(move || {
                let mut s = connect_from("127.0.0.1", addr).expect("connect");
                let opened = Instant::now();
                let mut reader = s.try_clone().expect("clone");
                let closed = std::thread::spawn(move || {
                    let _ = reader.set_read_timeout(Some(Duration::from_secs(20)));
                    let mut b = [0u8; 1024];
                    while reader.read(&mut b).is_ok_and(|n| n > 0) {}
                    opened.elapsed()
                });
                let mut bytes = preamble().to_vec();
                bytes.extend(frame(&json!({"type": "stop", "pad": "z".repeat(64)})));
                for b in bytes {
                    if closed.is_finished() || s.write_all(&[b]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                closed.join().expect("reader")
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // Then 1,000 idle connections from the same address.
    let mut idle = Vec::new();
    for _ in 0..1000 {
        if let Ok(s) = connect_from("127.0.0.1", agent.addr) {
            idle.push(s);
        }
    }
    assert!(idle.len() >= 900, "only {} idle connections opened", idle.len());
    // A client from another address gets through meanwhile.
    let target = agent.target();
    let out = linerate(&["tcp", &target, "-B", "127.0.0.2", "-t", "1", "-i", "0"], LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    for d in drips {
        let held = d.join().expect("drip thread");
        assert!(
            held < Duration::from_secs(8),
            "a drip-fed connection was held {held:?}, past the 5 s handshake deadline"
        );
    }
    let still_open = idle.iter().filter(|s| !closed_by_peer(s)).count();
    assert!(
        still_open <= 16,
        "{still_open} idle connections still held after the deadline"
    );
}

#[test]
fn issue_14_a_silent_rr_data_connection_frees_its_slot() {
    let agent = LoggedAgent::start(&["--max-tests", "1", "--idle", "2s"], &[]);
    let mut spec = RrSpec::new();
    spec.timing.limit = Limit::Buffers(1_000_000);
    let mut ctl = Ctl::open(agent.addr);
    let cookie = ctl.request(TestSpec::Rr(spec));
    let mut data = TcpStream::connect(agent.addr).expect("data connection");
    data.write_all(&data_header(&cookie, 0)).expect("header");
    // Not a byte on the data connection: the idle rule ends the test.
    ctl.start_until_idle();
    drop((ctl, data));
    // The agent lets go of the session once the client has closed (a moment after its result).
    let target = agent.target();
    let start = Instant::now();
    loop {
        let out = linerate(&["tcp", &target, "-t", "1", "-i", "0"], LIMIT);
        if out.status.success() {
            break;
        }
        let err = stderr(&out);
        assert!(err.contains("busy"), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the slot is still held: {err}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn issue_22_an_http_test_with_nothing_moving_ends_at_the_idle_limit_and_frees_its_slot() {
    // A namespace of its own: nothing else moves on its loopback, where the agent and the
    // client talk, so nothing but the test could keep it going.
    let Some(lab) = Lab::up(2, &[]) else { return };
    let ns = lab.namespace("h1");
    let agent = Agent::start_with(
        &["ip", "netns", "exec", &ns],
        &["--bind", "127.0.0.1", "--port", "0"],
        &["--idle", "2s", "--max-tests", "1"],
        &[],
    );
    let addr: SocketAddr = agent.addr.parse().expect("the agent's address");
    // Seven days of load on a server no user will reach.
    let week = || {
        TestSpec::Http(linerate_core::spec::HttpSpec::one_user(
            "http://127.0.0.1:9/",
            7.0 * 86_400.0,
        ))
    };
    in_netns(&ns, || {
        let mut ctl = Ctl::open(addr);
        ctl.request(week());
        // The client says nothing more and moves nothing: the result comes at the idle limit
        // (the agent once sampled on for the spec's week; `Ctl` waits 10 s).
        let result = ctl.start_until_idle();
        let report = &result["report"];
        assert_eq!(report["partial"], true, "{report}");
        assert!(
            report["notes"].to_string().contains("no data moved for 2 s"),
            "{report}"
        );
        drop(ctl);
        // Its slot (the only one) is free: the next client's test is accepted.
        poll_until(Duration::from_secs(10), "the http test's slot to be free", || {
            let mut next = Ctl::open(addr);
            next.send(json!({"type": "request", "spec": week()}));
            next.recv()["type"] == "accepted"
        });
    });
}

#[test]
fn issue_14_a_gibibyte_buffer_four_deep_is_refused_by_the_budget() {
    let agent = LoggedAgent::start(&["--max-memory", "2G"], &[]);
    let target = agent.target();
    let out = linerate(&["tcp", &target, "-l", "1G", "--depth", "4", "-n", "1"], LIMIT);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("needs 4.0 GiB of memory on the agent, its budget is 2.0 GiB"),
        "{err}"
    );
}

#[test]
fn issue_14_two_tests_that_fit_alone_do_not_fit_together() {
    let agent = LoggedAgent::start(&["--max-memory", "40M"], &[]);
    let target = agent.target();
    let first = Command::new(BIN)
        .args(["tcp", &target, "-l", "24M", "-t", "6", "-i", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let first = KillOnDrop(first);
    poll_until(LIMIT, "the first test's data to flow", || {
        data_segments_at(agent.addr.port()) > 10
    });
    let out = linerate(&["tcp", &target, "-l", "24M", "-t", "1", "-i", "0"], LIMIT);
    assert!(!out.status.success(), "the second test fit beside the first");
    let err = stderr(&out);
    assert!(err.contains("busy"), "{err}");
    assert!(err.contains("its budget is 40.0 MiB of which 24."), "{err}");
    let done = wait_bounded_status(first, LIMIT);
    assert!(done, "the first test succeeded");
    let again = linerate(&["tcp", &target, "-l", "24M", "-t", "1", "-i", "0"], LIMIT);
    assert!(again.status.success(), "fits once the first ended: {}", stderr(&again));
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for the child to exit within `limit`; whether it succeeded.
fn wait_bounded_status(mut child: KillOnDrop, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.0.try_wait() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the child ran past {limit:?}");
}

#[test]
fn issue_14_a_trickled_result_ends_the_client_within_its_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake agent");
    let addr = listener.local_addr().expect("address");
    let fake = std::thread::spawn(move || {
        let (mut ctl, _) = listener.accept().expect("control connection");
        ctl.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        let mut pre = [0u8; 8];
        ctl.read_exact(&mut pre).expect("preamble");
        ctl.write_all(&preamble()).expect("preamble");
        ctl.write_all(&frame(&json!({"type": "hello", "software": "fake", "challenge": null})))
            .expect("hello");
        let mut len = [0u8; 4];
        ctl.read_exact(&mut len).expect("request length");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        ctl.read_exact(&mut body).expect("request");
        let host = json!({"hostname": "fake", "kernel": "0", "os": null, "cpu_model": null, "cores": 1});
        ctl.write_all(&frame(
            &json!({"type": "accepted", "cookie": "00".repeat(16), "host": host}),
        ))
        .expect("accepted");
        // The data connection: read and dropped.
        let (mut data, _) = listener.accept().expect("data connection");
        std::thread::spawn(move || {
            let mut sink = vec![0u8; 1 << 16];
            while data.read(&mut sink).is_ok_and(|n| n > 0) {}
        });
        ctl.read_exact(&mut len).expect("start length");
        let mut start = vec![0u8; u32::from_be_bytes(len) as usize];
        ctl.read_exact(&mut start).expect("start");
        ctl.write_all(&frame(&json!({"type": "started"}))).expect("started");
        // The result, a byte a second, for as long as the client listens.
        let _ = ctl.write_all(&1000u32.to_be_bytes());
        for _ in 0..90 {
            std::thread::sleep(Duration::from_secs(1));
            if ctl.write_all(b" ").is_err() {
                break;
            }
        }
    });
    let start = Instant::now();
    let out = linerate(&["tcp", &addr.to_string(), "-t", "1", "-i", "0"], LIMIT);
    let took = start.elapsed();
    assert!(!out.status.success(), "a trickled result is not a result");
    let err = stderr(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    // A partial run: the report notes what came of the agent's result ("received 23 of 1,004
    // bytes of a message in 20 s"; a byte more or a second later on a loaded box).
    assert!(
        text.contains(" of 1,004 bytes of a message in 2") || err.contains(" of 1,004 bytes of a message in 2"),
        "stderr: {err}\nstdout: {text}"
    );
    assert!(text.contains("PARTIAL"), "{text}");
    // 1 s of test, then 20 s for the whole result from its first byte.
    assert!(took < Duration::from_secs(45), "the client waited {took:?}");
    drop(fake);
}

/// A linerate datagram (docs/protocol.md): magic, stream, kind (0 data, 1 end marker), sequence
/// number, send time, test id; little-endian, 32 bytes, then padding.
pub(crate) fn datagram(stream: u16, kind: u16, seq: u64, test_id: u64) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[..4].copy_from_slice(b"LNRU");
    d[4..6].copy_from_slice(&stream.to_le_bytes());
    d[6..8].copy_from_slice(&kind.to_le_bytes());
    d[8..16].copy_from_slice(&seq.to_le_bytes());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    d[16..24].copy_from_slice(&(now.as_nanos() as u64).to_le_bytes());
    d[24..32].copy_from_slice(&test_id.to_le_bytes());
    d
}

#[test]
fn issue_22_a_datagram_numbered_2_pow_32_minus_64_leaves_the_agent_within_its_budget() {
    use linerate_core::spec::UdpSpec;
    const BUDGET: u64 = 256 << 20;
    const SENT: u64 = 100;
    let agent = LoggedAgent::start(&["--max-memory", "256M"], &[]);
    let pid = agent.child.id();
    // A 4-stream UDP test for 2 s as fast as possible, spoken by hand: this client sends each
    // stream 100 true datagrams, then one numbered 2^32 - 64, then the end markers.
    let mut spec = UdpSpec::new();
    spec.streams = 4;
    spec.timing.limit = Limit::Seconds(2.0);
    let mut ctl = Ctl::open(agent.addr);
    ctl.send(json!({"type": "request", "spec": TestSpec::Udp(spec)}));
    let accepted = ctl.recv();
    assert_eq!(accepted["type"], "accepted", "{accepted}");
    let cookie = accepted["cookie"].as_str().expect("a cookie");
    // The test's id is the cookie's first 8 bytes, little-endian.
    let test_id = (0..8).rev().fold(0u64, |id, i| {
        id << 8 | u64::from_str_radix(&cookie[2 * i..2 * i + 2], 16).expect("hex")
    });
    let ports: Vec<u16> = accepted["udp_ports"]
        .as_array()
        .expect("the agent's UDP ports")
        .iter()
        .map(|p| p.as_u64().expect("a port") as u16)
        .collect();
    assert_eq!(ports.len(), 4);
    let sockets: Vec<std::net::UdpSocket> = ports
        .iter()
        .map(|p| {
            let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
            s.connect((agent.addr.ip(), *p)).expect("connect");
            s
        })
        .collect();
    let mine: Vec<u16> = sockets.iter().map(|s| s.local_addr().expect("addr").port()).collect();
    ctl.send(json!({"type": "ports", "udp_ports": mine}));
    ctl.send(json!({"type": "start"}));
    assert_eq!(ctl.recv()["type"], "started");
    let before = peak_rss_bytes(pid);
    for (i, s) in sockets.iter().enumerate() {
        let stream = i as u16;
        for seq in 0..SENT {
            s.send(&datagram(stream, 0, seq, test_id)).expect("send");
            if seq % 20 == 0 {
                // Paced a little, so that the agent's socket buffer never drops one.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        s.send(&datagram(stream, 0, (1 << 32) - 64, test_id)).expect("send");
        // The end marker thrice, as a client sends it; the agent may close the stream's port on
        // the first, and a later copy then meets the port unreachable (ECONNREFUSED).
        for _ in 0..3 {
            match s.send(&datagram(stream, 1, SENT, test_id)) {
                Err(e) if e.kind() != std::io::ErrorKind::ConnectionRefused => panic!("send: {e}"),
                _ => {}
            }
        }
    }
    // The agent's memory while it takes them in and ends its test (it once grew by
    // 512 MiB a stream here, and took longer than the wait below to answer).
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_secs(1) {
        let now = peak_rss_bytes(pid);
        assert!(
            now < BUDGET,
            "the agent's RSS reached {now} bytes, past its 256 MiB budget"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let result = ctl.recv();
    let peak = peak_rss_bytes(pid);
    eprintln!(
        "agent peak RSS {:.1} MiB before the datagrams, {:.1} MiB after",
        before as f64 / 1048576.0,
        peak as f64 / 1048576.0
    );
    assert_eq!(result["type"], "result", "{result}");
    assert!(peak > 0, "no VmHWM for the agent");
    assert!(
        peak < BUDGET,
        "the agent's RSS peaked at {peak} bytes, past its 256 MiB budget"
    );
    let report = &result["report"];
    let streams = report["streams"].as_array().expect("streams");
    assert_eq!(streams.len(), 4);
    for s in streams {
        let r = &s["udp_receive"];
        assert_eq!(
            (u(r, "/datagrams"), u(r, "/lost"), u(r, "/out_of_range")),
            (SENT, 0, 1),
            "{s}"
        );
        assert_eq!(u(r, "/highest_plus_one"), SENT);
        assert_eq!(u(r, "/tracked_datagrams"), 2 * (1 << 25) + 1);
    }
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("4 datagrams out of range on 4 streams: numbered past the 67108865 this test can send"),
        "{notes}"
    );
}
