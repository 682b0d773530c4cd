//! The HTTP server of `serve --http-port` under attack: thousands of
//! connections holding partial request heads from one address while another address is still
//! answered, the same under a low descriptor limit, and a head trickled a byte a second.

use crate::util::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);
const PARTIAL_HEAD: &[u8] = b"GET /bytes/1 HTTP/1.1\r\nHost: flood\r\nX-Slow: ";

fn http_agent(prefix: &[&str], extra: &[&str]) -> (Agent, SocketAddr) {
    let mut args = vec!["--http-port", "0"];
    args.extend_from_slice(extra);
    let agent = Agent::start_with(prefix, &["--bind", "127.0.0.1", "--port", "0"], &args, &[]);
    let http = agent.http_addr.clone().expect("an http address");
    (agent, http.parse().expect("an address"))
}

/// `n` connections from 127.0.0.1, each having sent the start of a head and no more.
fn flood(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .filter_map(|_| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
            // The server may already have closed it (over a cap): that is what is tested.
            let _ = s.write_all(PARTIAL_HEAD);
            Some(s)
        })
        .collect()
}

/// How many of `conns` the server still holds open (neither end of stream nor reset).
fn still_open(conns: &[TcpStream]) -> usize {
    conns
        .iter()
        .filter(|s| {
            s.set_nonblocking(true).expect("nonblocking");
            let mut b = [0u8; 1];
            matches!(s.peek(&mut b), Err(e) if e.kind() == ErrorKind::WouldBlock)
        })
        .count()
}

/// One request from source address `from`; the response's status line and body.
fn fetch_from(from: [u8; 4], addr: SocketAddr, path: &str) -> (String, Vec<u8>) {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket
        .bind(&SocketAddr::from((from, 0)).into())
        .expect("bind the source address");
    socket
        .connect_timeout(&addr.into(), Duration::from_secs(5))
        .expect("connect within 5 s");
    let mut s: TcpStream = socket.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes())
        .expect("send");
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("the response within 10 s");
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
    let body = all.split_off(end);
    let text = String::from_utf8_lossy(&all);
    (text.lines().next().unwrap_or_default().to_string(), body)
}

#[test]
fn issue_14_partial_heads_from_one_address_leave_room_for_another() {
    // A head deadline longer than the test, so that only the cap closes connections here.
    let (_agent, addr) = http_agent(&[], &["--http-max-per-address", "1000", "--http-head-timeout", "120"]);
    let held = flood(addr, 3000);
    assert!(held.len() > 2900, "{} of 3000 connected", held.len());
    let (status, body) = fetch_from([127, 0, 0, 2], addr, "/bytes/10");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body, b"0123456789");
    // The flooding address keeps at most its cap; the rest were closed at accept.
    poll_until(LIMIT, "the server to close what is over the cap", || {
        still_open(&held) <= 1000
    });
    let open = still_open(&held);
    assert!(
        open >= 500,
        "the cap, not something else, closed them: {open} left open"
    );
}

#[test]
fn issue_14_at_the_descriptor_limit_the_oldest_waiting_connection_makes_room() {
    // An open-files limit of 1,100 leaves the server 588 connections above its reserve of 512;
    // no per-address cap, so only the reserve and the eviction stand between 1,500 connections
    // and the last descriptor.
    let prefix = ["sh", "-c", "ulimit -n 1100 && exec \"$0\" \"$@\""];
    let (_agent, addr) = http_agent(&prefix, &["--http-max-per-address", "0", "--http-head-timeout", "120"]);
    let held = flood(addr, 1500);
    assert!(held.len() > 1400, "{} of 1500 connected", held.len());
    poll_until(LIMIT, "the server to make room by closing the oldest", || {
        still_open(&held) <= 600
    });
    let (status, body) = fetch_from([127, 0, 0, 2], addr, "/bytes/3");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body, b"012");
    // The newest survive: the server closed from the oldest end.
    let newest = still_open(&held[held.len() - 100..]);
    let oldest = still_open(&held[..100]);
    assert!(newest > oldest, "newest {newest} open, oldest {oldest}");
}

#[test]
fn issue_14_a_head_trickled_a_byte_a_second_is_closed_by_its_deadline() {
    let (_agent, addr) = http_agent(&[], &["--http-head-timeout", "2"]);
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(1000))).expect("timeout");
    let start = Instant::now();
    let head = b"GET /bytes/1 HTTP/1.1\r\nHost: trickle\r\nX-Pad: aaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let mut closed_after = None;
    for byte in head {
        if s.write_all(std::slice::from_ref(byte)).is_err() {
            closed_after = Some(start.elapsed());
            break;
        }
        let mut b = [0u8; 64];
        match s.read(&mut b) {
            Ok(0) => {
                closed_after = Some(start.elapsed());
                break;
            }
            Ok(_) => panic!("an answer to a head that never finished"),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => {
                closed_after = Some(start.elapsed());
                break;
            }
        }
    }
    let closed_after = closed_after.expect("closed before the head's 70 bytes were trickled");
    assert!(
        closed_after < Duration::from_secs(15) && closed_after >= Duration::from_secs(1),
        "closed after {closed_after:?}"
    );
    // Waiting between requests is the idle rule, not the head deadline: a keep-alive
    // connection quiet for 3 s still gets its next answer.
    let mut k = TcpStream::connect(addr).expect("connect");
    k.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    for _ in 0..2 {
        k.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: k\r\n\r\n").expect("send");
        let mut got = Vec::new();
        let mut b = [0u8; 512];
        while !got.ends_with(b"\r\n\r\n01") {
            let n = k.read(&mut b).expect("an answer");
            assert!(n > 0, "closed while idle: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&b[..n]);
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}
