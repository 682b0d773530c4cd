//! Malicious agents against the client: a fake agent in the test
//! speaks the real protocol (preambles, length-prefixed JSON written with serde_json) and lies:
//! a result too large for the test, a forged one, a 100 MB error text full of escape
//! sequences, no challenge to a client that holds a secret, a proof that is not one.

use crate::util::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);
/// What `linerate tcp -n 5` sends: five buffers of 128 KiB.
const SENT_BYTES: u64 = 5 * 131_072;

/// What the fake agent does after the client's `start`, or instead of accepting the test.
#[derive(Clone)]
enum Lie {
    /// A report of what it really received, plus `extra_bytes`.
    Report { extra_bytes: u64 },
    /// A report of `bytes` received to a clean end, whatever came.
    Claim { bytes: u64 },
    /// A result whose length prefix says this many bytes; then bytes until the client leaves.
    Huge { len: u32 },
    /// An error in place of `accepted`: the whole frame, made before the client starts (a 100 MB
    /// text takes seconds to encode in a debug build, longer than the client waits on a loaded
    /// box).
    ErrorFrame(Vec<u8>),
    /// A challenge, and an `auth_ok` whose proof is zeros.
    BadProof,
}

fn write_frame(s: &mut TcpStream, v: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(v).expect("json");
    s.write_all(&(body.len() as u32).to_be_bytes())?;
    s.write_all(&body)
}

/// The next message from the client; an error when it left (as a refusing client does).
fn read_frame(s: &mut TcpStream) -> std::io::Result<Value> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body)?;
    Ok(serde_json::from_slice(&body).expect("the client sends JSON"))
}

/// An agent's report for a one-stream TCP test, receiving `bytes`.
fn report(bytes: u64) -> Value {
    json!({
        "window_start_ns": 0, "window_end_ns": 1_000_000_000u64,
        "streams": [{
            "stream": 0, "role": "receive", "bytes": bytes, "ops": 5, "seconds": 1.0,
            "total_bytes": bytes,
            "socket": {"sndbuf_bytes": null, "rcvbuf_bytes": null, "mss_bytes": null,
                       "congestion": null, "nodelay": false},
            "tcp": null, "errors": {"resets": 0, "other": 0}, "end": "eof"
        }],
        "intervals": [],
        "cpu": {"host_percent": null, "process_percent_of_host": null,
                "process_user_seconds": 0.0, "process_system_seconds": 0.0},
        "io": "syscall", "partial": false, "notes": []
    })
}

/// Reads the client's preamble (and the proof a client with a secret sends after it: time,
/// nonce, mac1, skipped) and answers with the preamble of protocol 4 (docs/protocol.md).
fn answer_preamble(s: &mut TcpStream) -> std::io::Result<()> {
    let mut preamble = [0u8; 8];
    s.read_exact(&mut preamble)?;
    if preamble[6] & 1 != 0 {
        s.read_exact(&mut [0u8; 56])?;
    }
    s.write_all(b"LNRT\x00\x05\x00\x00")
}

/// One control session of the fake agent, as the script `lie` says.
fn control(mut s: TcpStream, lie: &Lie, received: &mpsc::Receiver<u64>) -> std::io::Result<()> {
    answer_preamble(&mut s)?;
    let challenge = matches!(lie, Lie::BadProof).then(|| "ab".repeat(32));
    write_frame(
        &mut s,
        &json!({"type": "hello", "software": "fake", "challenge": challenge}),
    )?;
    if challenge.is_some() {
        assert_eq!(read_frame(&mut s)?["type"], "auth");
        write_frame(&mut s, &json!({"type": "auth_ok", "mac": "00".repeat(32)}))?;
        return Ok(());
    }
    assert_eq!(read_frame(&mut s)?["type"], "request");
    if let Lie::ErrorFrame(frame) = lie {
        return s.write_all(frame);
    }
    let host = json!({"hostname": "fake", "kernel": "6.0", "os": null, "cpu_model": null, "cores": 2});
    write_frame(
        &mut s,
        &json!({"type": "accepted", "cookie": "11".repeat(16), "host": host}),
    )?;
    assert_eq!(read_frame(&mut s)?["type"], "start");
    write_frame(&mut s, &json!({"type": "started"}))?;
    match lie {
        Lie::Report { extra_bytes } => {
            let got = received.recv_timeout(LIMIT).expect("the data connection ended");
            write_frame(&mut s, &json!({"type": "result", "report": report(got + extra_bytes)}))
        }
        Lie::Claim { bytes } => {
            received.recv_timeout(LIMIT).expect("the data connection ended");
            write_frame(&mut s, &json!({"type": "result", "report": report(*bytes)}))
        }
        Lie::Huge { len } => {
            received.recv_timeout(LIMIT).expect("the data connection ended");
            s.write_all(&len.to_be_bytes())?;
            let chunk = vec![b' '; 1 << 20];
            // The client should leave at the prefix: a write then fails and ends this.
            for _ in 0..(*len >> 20) {
                s.write_all(&chunk)?;
            }
            Ok(())
        }
        Lie::ErrorFrame(_) | Lie::BadProof => unreachable!("handled above"),
    }
}

/// Reads a data connection's header and then everything, and says how many bytes came.
fn data(mut s: TcpStream, received: &mpsc::Sender<u64>) {
    let mut header = [0u8; 24];
    if s.read_exact(&mut header).is_err() {
        return;
    }
    let mut sink = vec![0u8; 1 << 16];
    let mut total = 0u64;
    while let Ok(n) = s.read(&mut sink) {
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    let _ = received.send(total);
}

/// A fake agent on 127.0.0.1 that serves connections until the test ends (its thread stops
/// with the listener when nothing connects for `LIMIT`).
fn fake_agent(lie: Lie) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let (tx, rx) = mpsc::channel();
        let mut rx = Some(rx);
        let mut last = Instant::now();
        while last.elapsed() < LIMIT {
            let Ok((s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            last = Instant::now();
            s.set_nonblocking(false).expect("blocking");
            s.set_read_timeout(Some(LIMIT)).expect("timeout");
            // Both kinds of connection open with four bytes of magic from the client.
            let mut magic = [0u8; 4];
            let until = Instant::now() + Duration::from_secs(5);
            while s.peek(&mut magic).is_ok_and(|n| n > 0 && n < 4) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if &magic == b"LNRD" {
                let tx = tx.clone();
                std::thread::spawn(move || data(s, &tx));
            } else if let Some(rx) = rx.take() {
                let lie = lie.clone();
                std::thread::spawn(move || {
                    let _ = control(s, &lie, &rx);
                });
            }
        }
    });
    addr
}

/// `linerate tcp ADDR -n 5 --json EXTRA` with `secret` in LINERATE_SECRET (or none).
fn client(addr: &str, extra: &[&str], secret: Option<&str>) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["tcp", addr, "-n", "5", "--json"]).args(extra);
    match secret {
        Some(s) => cmd.env("LINERATE_SECRET", s),
        None => cmd.env_remove("LINERATE_SECRET"),
    };
    cmd
}

fn notes(v: &Value) -> String {
    v["notes"].as_array().map(|n| format!("{n:?}")).unwrap_or_default()
}

#[test]
fn issue_14_a_forged_result_is_refused_and_nothing_is_built_from_it() {
    let addr = fake_agent(Lie::Report {
        extra_bytes: 1_000_000_000,
    });
    let out = run_bounded(&mut client(&addr, &[], None), LIMIT);
    let v = json_with_status(&out, 3);
    let n = notes(&v);
    assert!(
        n.contains(&format!(
            "result refused: it claims {} bytes received on stream 0, the client sent {SENT_BYTES}",
            SENT_BYTES + 1_000_000_000
        )),
        "{n}"
    );
    assert!(v["partial"] == true, "a refused result makes the run partial");
    let text = String::from_utf8_lossy(&out.stdout);
    let forged = (SENT_BYTES + 1_000_000_000).to_string();
    assert_eq!(
        text.matches(&forged).count(),
        1,
        "the forged figure is only in the note: {text}"
    );
    assert_eq!(u(&v, "/summary/sent/bytes"), SENT_BYTES);
}

#[test]
fn issue_14_an_oversized_result_is_refused_at_its_length_with_memory_bounded() {
    if !can_run(&[PEAK_RSS]) {
        return;
    }
    // 120 MB: under the protocol's 128 MiB cap, far over what one stream for a moment can fill.
    let addr = fake_agent(Lie::Huge { len: 120_000_000 });
    let (out, peak_kb) = run_with_peak_rss(&client(&addr, &[], None), LIMIT);
    let v = json_with_status(&out, 3);
    let n = notes(&v);
    assert!(n.contains("control message of 120000000 bytes exceeds the"), "{n}");
    assert!(peak_kb < 100_000, "the client's peak RSS was {peak_kb} kB");
}

#[test]
fn issue_14_a_100_mb_error_text_reaches_stderr_cut_and_escaped() {
    // 500 kB is read (under the 1 MiB a client reads before the result) and cut and escaped;
    // 100 MB is refused from its length prefix. Either way stderr is one short line.
    for len in [500_000, 100_000_000] {
        let mut text = String::with_capacity(len + 4096);
        text.push_str("\u{1b}[2J\nlinerate: forged line\n");
        while text.len() < len {
            text.push_str("\u{1b}[31m");
            text.push_str(&"flood ".repeat(170));
        }
        let body = serde_json::to_vec(&json!({"type": "error", "kind": "failed", "message": text})).expect("json");
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        let addr = fake_agent(Lie::ErrorFrame(frame));
        let out = run_bounded(&mut client(&addr, &[], None), LIMIT);
        assert!(!out.status.success());
        assert!(out.stderr.len() < 4096, "{} bytes of stderr", out.stderr.len());
        assert!(!out.stderr.contains(&0x1b), "an escape byte reached stderr");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        if len < 1 << 20 {
            assert!(
                err.contains("test failed: \\u{1b}[2J\\u{a}linerate: forged line"),
                "{err}"
            );
        } else {
            assert!(err.contains("exceeds the 1048576-byte limit"), "{err}");
        }
    }
}

#[test]
fn issue_14_a_client_with_a_secret_refuses_an_agent_that_asks_for_none() {
    let addr = fake_agent(Lie::Report { extra_bytes: 0 });
    let out = run_bounded(&mut client(&addr, &[], Some("correct horse battery")), LIMIT);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("asked for no secret") && err.contains("--allow-unauthenticated-agent"),
        "{err}"
    );
    // Told to, it goes on against the same kind of agent.
    let addr = fake_agent(Lie::Report { extra_bytes: 0 });
    let out = run_bounded(
        &mut client(&addr, &["--allow-unauthenticated-agent"], Some("correct horse battery")),
        LIMIT,
    );
    let v = json_of(&out);
    assert_eq!(u(&v, "/summary/received/bytes"), SENT_BYTES);
    // Without a secret there is nothing to prove: an open agent is the only kind there is.
    let addr = fake_agent(Lie::Report { extra_bytes: 0 });
    assert_eq!(
        u(
            &json_of(&run_bounded(&mut client(&addr, &[], None), LIMIT)),
            "/summary/received/bytes"
        ),
        SENT_BYTES
    );
}

#[test]
fn issue_14_an_agent_that_cannot_prove_the_secret_is_refused() {
    let addr = fake_agent(Lie::BadProof);
    let out = run_bounded(&mut client(&addr, &[], Some("correct horse battery")), LIMIT);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("could not prove it knows the secret"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn issue_22_a_clean_end_with_0_bytes_received_makes_the_run_partial() {
    let addr = fake_agent(Lie::Claim { bytes: 0 });
    let out = run_bounded(&mut client(&addr, &[], None), LIMIT);
    let v = json_with_status(&out, 3);
    let n = notes(&v);
    assert!(
        n.contains(&format!(
            "result refused: it claims 0 bytes received on stream 0 to a clean end, the client sent {SENT_BYTES}"
        )),
        "{n}"
    );
    assert!(v["partial"] == true, "counts that cannot be true make the run partial");
    assert_eq!(u(&v, "/summary/sent/bytes"), SENT_BYTES);
}

/// An agent's report of `streams` UDP streams on which it sent `sent` datagrams each.
fn udp_send_report(streams: u16, sent: u64) -> Value {
    let stream = |i: u16| {
        json!({
            "stream": i, "role": "send", "bytes": sent * 64, "ops": sent, "seconds": 0.1,
            "total_bytes": sent * 64,
            "socket": {"sndbuf_bytes": null, "rcvbuf_bytes": null, "mss_bytes": null,
                       "congestion": null, "nodelay": false},
            "tcp": null, "errors": {"resets": 0, "other": 0}, "end": "count",
            "udp_send": {"datagrams": sent, "gso": false, "errors": 0,
                         "spacing": {"mean_us": 1.0, "stddev_us": 0.0, "late_percent": 0.0, "requested_us": 0.0}}
        })
    };
    let mut r = report(0);
    r["streams"] = (0..streams).map(stream).collect();
    r
}

/// A fake agent for `udp -R -P 4 -n 100`: on each stream one datagram numbered 2^32 - 64, then
/// the 100 it was asked for and the end markers; then a true report of what it sent.
fn udp_session(mut s: TcpStream) -> std::io::Result<()> {
    use crate::attack_agent::datagram;
    answer_preamble(&mut s)?;
    write_frame(&mut s, &json!({"type": "hello", "software": "fake", "challenge": null}))?;
    assert_eq!(read_frame(&mut s)?["type"], "request");
    let sockets: Vec<std::net::UdpSocket> = (0..4)
        .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let ports: Vec<u16> = sockets.iter().map(|u| u.local_addr().expect("addr").port()).collect();
    let host = json!({"hostname": "fake", "kernel": "6.0", "os": null, "cpu_model": null, "cores": 2});
    write_frame(
        &mut s,
        &json!({"type": "accepted", "cookie": "11".repeat(16), "host": host, "udp_ports": ports}),
    )?;
    let theirs = read_frame(&mut s)?;
    assert_eq!(theirs["type"], "ports", "{theirs}");
    for (u, p) in sockets.iter().zip(theirs["udp_ports"].as_array().expect("ports")) {
        u.connect(("127.0.0.1", p.as_u64().expect("a port") as u16))?;
    }
    assert_eq!(read_frame(&mut s)?["type"], "start");
    write_frame(&mut s, &json!({"type": "started"}))?;
    let test_id = u64::from_le_bytes([0x11; 8]);
    for (i, u) in sockets.iter().enumerate() {
        let stream = i as u16;
        u.send(&datagram(stream, 0, (1 << 32) - 64, test_id))?;
        for seq in 0..100 {
            u.send(&datagram(stream, 0, seq, test_id))?;
        }
        for _ in 0..3 {
            u.send(&datagram(stream, 1, 100, test_id))?;
        }
    }
    write_frame(&mut s, &json!({"type": "result", "report": udp_send_report(4, 100)}))
}

#[test]
fn issue_22_a_client_receiving_counts_a_datagram_numbered_2_pow_32_minus_64_out_of_range() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let fake = std::thread::spawn(move || {
        let (s, _) = listener.accept().expect("control connection");
        s.set_read_timeout(Some(LIMIT)).expect("timeout");
        udp_session(s)
    });
    let mut cmd = Command::new(BIN);
    cmd.args(["udp", &addr, "-R", "-P", "4", "-n", "100", "--json"])
        .env_remove("LINERATE_SECRET");
    let out = run_bounded(&mut cmd, LIMIT);
    let v = json_with_status(&out, 0);
    assert_eq!(u(&v, "/summary/out_of_range"), 4, "{}", notes(&v));
    assert_eq!(u(&v, "/summary/datagrams_received"), 400);
    assert_eq!(u(&v, "/summary/lost"), 0);
    let n = notes(&v);
    assert!(
        n.contains("4 datagrams out of range on 4 streams: numbered past the 100 this test can send"),
        "{n}"
    );
    fake.join().expect("the fake agent").expect("its session");
}
