//! What the agent's attack tests share, functional and timed: an agent whose
//! stderr is kept in a file, a control connection spoken by hand, connections from a chosen
//! loopback address.
#![allow(dead_code)]

use crate::util::*;
use linerate_core::spec::TestSpec;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `linerate serve` on 127.0.0.1:0 with its stderr in a file, killed on drop.
pub struct LoggedAgent {
    pub child: Child,
    pub addr: SocketAddr,
    pub log: std::path::PathBuf,
}

impl LoggedAgent {
    pub fn start(extra: &[&str], env: &[(&str, &str)]) -> LoggedAgent {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = std::env::temp_dir().join(format!("linerate-attack-{}-{n}.log", std::process::id()));
        let file = std::fs::File::create(&log).expect("create the agent's log");
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--bind", "127.0.0.1", "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(file));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start linerate serve");
        let mut out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = Vec::new();
            let mut byte = [0u8; 1];
            while out.read(&mut byte).is_ok_and(|n| n == 1) {
                if byte[0] == b'\n' {
                    let _ = tx.send(String::from_utf8_lossy(&line).to_string());
                    line.clear();
                } else {
                    line.push(byte[0]);
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the agent's address line");
        let addr = line
            .split_whitespace()
            .find_map(|w| w.parse::<SocketAddr>().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        LoggedAgent { child, addr, log }
    }

    pub fn log_bytes(&self) -> Vec<u8> {
        std::fs::read(&self.log).unwrap_or_default()
    }

    pub fn target(&self) -> String {
        self.addr.to_string()
    }

    /// The agent's threads now.
    pub fn threads(&self) -> usize {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().parse().ok()))
            })
            .flatten()
            .unwrap_or(0)
    }

    /// Descriptors the agent holds now.
    pub fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, |d| d.count())
    }
}

impl Drop for LoggedAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A connection from `source` (a loopback address) to `to`.
pub fn connect_from(source: &str, to: SocketAddr) -> std::io::Result<TcpStream> {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    let from: SocketAddr = format!("{source}:0").parse().expect("source address");
    sock.bind(&from.into())?;
    sock.connect_timeout(&to.into(), Duration::from_secs(5))?;
    Ok(sock.into())
}

pub fn frame(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).expect("json");
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

/// The control preamble of the protocol version this build speaks (docs/protocol.md).
pub fn preamble() -> [u8; 8] {
    [b'L', b'N', b'R', b'T', 0, 5, 0, 0]
}

/// A control connection spoken by hand: the protocol as a client that means harm would.
pub struct Ctl(TcpStream);

impl Ctl {
    /// Past the preambles and the agent's hello.
    pub fn open(to: SocketAddr) -> Ctl {
        let mut s = TcpStream::connect(to).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        s.write_all(&preamble()).expect("preamble");
        let mut theirs = [0u8; 8];
        s.read_exact(&mut theirs).expect("the agent's preamble");
        let mut c = Ctl(s);
        assert_eq!(c.recv()["type"], "hello");
        c
    }

    pub fn send(&mut self, v: Value) {
        self.0.write_all(&frame(&v)).expect("send a message");
    }

    pub fn recv(&mut self) -> Value {
        let mut len = [0u8; 4];
        self.0.read_exact(&mut len).expect("a message's length");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        self.0.read_exact(&mut body).expect("a message's body");
        serde_json::from_slice(&body).expect("a JSON message")
    }

    /// Starts the accepted test and returns its result, which must come within 10 s of
    /// `started`: an agent started with a short `--idle`, on a test where nothing moves.
    pub fn start_until_idle(&mut self) -> Value {
        self.send(json!({"type": "start"}));
        assert_eq!(self.recv()["type"], "started");
        let start = Instant::now();
        let result = self.recv();
        assert_eq!(result["type"], "result", "{result}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "ended after {:?}",
            start.elapsed()
        );
        result
    }

    /// Asks for `spec` and returns the cookie of the accepted test.
    pub fn request(&mut self, spec: TestSpec) -> [u8; 16] {
        self.send(json!({"type": "request", "spec": spec}));
        let accepted = self.recv();
        assert_eq!(accepted["type"], "accepted", "{accepted}");
        let hex = accepted["cookie"].as_str().expect("a cookie");
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        bytes.try_into().expect("16 bytes")
    }
}

pub fn data_header(cookie: &[u8; 16], stream: u16) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[..4].copy_from_slice(b"LNRD");
    h[4..20].copy_from_slice(cookie);
    h[20..22].copy_from_slice(&stream.to_be_bytes());
    h
}

/// Whether the agent has closed `s` (end of stream or reset), looking without waiting long.
pub fn closed_by_peer(mut s: &TcpStream) -> bool {
    let _ = s.set_read_timeout(Some(Duration::from_millis(1)));
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// Peak resident memory of process `pid` so far, bytes (VmHWM).
pub fn peak_rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Sets the flag when dropped: flood threads stop even if the test fails while they run.
pub struct StopOnDrop<'a>(pub &'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A `clock` session opened by hand: past the preambles and the hello (an agent
/// without a secret), `clock` sent; returns the stream and the agent's first answer (its
/// `clock_reading`, or the error that refused it). None when the agent closed before answering.
pub fn open_clock_session(to: SocketAddr) -> Option<(TcpStream, Value)> {
    let mut s = TcpStream::connect(to).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut out = preamble().to_vec();
    out.extend(frame(&json!({"type": "clock"})));
    s.write_all(&out).ok()?;
    let mut theirs = [0u8; 8];
    s.read_exact(&mut theirs).ok()?;
    let hello = read_frame(&mut s)?;
    assert_eq!(hello["type"], "hello", "{hello}");
    let answer = read_frame(&mut s)?;
    Some((s, answer))
}

/// One message off `s`, None at its end or a time-out.
pub fn read_frame(s: &mut TcpStream) -> Option<Value> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
