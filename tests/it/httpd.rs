//! The HTTP server of `linerate serve --http-port`, spoken to with plain sockets: lengths and
//! bodies, keep-alive rules, errors, pipelining, files, many connections, clients that vanish.

use crate::util::*;
use linerate_core::httpd::BODY_PATTERN;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

const READ_TIMEOUT: Duration = Duration::from_secs(10);

fn http_agent(extra: &[&str]) -> (Agent, String) {
    let mut args = vec!["--http-port", "0"];
    args.extend_from_slice(extra);
    let agent = Agent::start(&args);
    let http = agent.http_addr.clone().expect("an http address");
    assert!(!http.ends_with(":0"), "the real port is printed: {http}");
    (agent, http)
}

/// A client connection with what it has read and not yet used.
struct Client {
    stream: TcpStream,
    pending: Vec<u8>,
}

/// A response head: status code and the text of its lines.
struct Head {
    status: u16,
    text: String,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.text.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn content_length(&self) -> u64 {
        self.header("content-length")
            .unwrap_or_else(|| panic!("no Content-Length in {}", self.text))
            .parse()
            .expect("a number")
    }
}

impl Client {
    fn connect(addr: &str) -> Client {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
        stream.set_write_timeout(Some(READ_TIMEOUT)).expect("timeout");
        Client {
            stream,
            pending: Vec::new(),
        }
    }

    fn send(&mut self, request: &str) {
        self.stream.write_all(request.as_bytes()).expect("send the request");
    }

    fn get(&mut self, path: &str) {
        self.send(&format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n"));
    }

    /// Reads more bytes into `pending`; 0 at the end of the stream.
    fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk).expect("read within the timeout");
        self.pending.extend_from_slice(&chunk[..n]);
        n
    }

    fn head(&mut self) -> Head {
        loop {
            if let Some(end) = self.pending.windows(4).position(|w| w == b"\r\n\r\n") {
                let text = String::from_utf8(self.pending[..end + 4].to_vec()).expect("an ASCII head");
                self.pending.drain(..end + 4);
                let status = text
                    .strip_prefix("HTTP/1.1 ")
                    .and_then(|s| s.get(..3))
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("not a status line: {text}"));
                return Head { status, text };
            }
            assert!(self.pending.len() < 64 * 1024, "no end of head");
            assert!(
                self.fill() > 0,
                "connection closed before a head; got {:?}",
                self.pending
            );
        }
    }

    /// Reads an n-byte body and checks it against the pattern as it comes, without keeping it.
    fn pattern_body(&mut self, n: u64) {
        let pattern: Vec<u8> = (0..128 * 1024 + 64).map(|i| BODY_PATTERN[i % 64]).collect();
        let mut offset = 0u64;
        let check = |bytes: &[u8], offset: &mut u64| {
            for chunk in bytes.chunks(128 * 1024) {
                let start = (*offset % 64) as usize;
                assert!(
                    chunk == &pattern[start..start + chunk.len()],
                    "body differs from the pattern near byte {offset}"
                );
                *offset += chunk.len() as u64;
            }
        };
        let take = (self.pending.len() as u64).min(n) as usize;
        let first: Vec<u8> = self.pending.drain(..take).collect();
        check(&first, &mut offset);
        let mut buf = vec![0u8; 256 * 1024];
        while offset < n {
            let want = ((n - offset) as usize).min(buf.len());
            let got = self.stream.read(&mut buf[..want]).expect("read within the timeout");
            assert!(got > 0, "connection closed after {offset} of {n} body bytes");
            check(&buf[..got], &mut offset);
        }
    }

    fn body(&mut self, n: usize) -> Vec<u8> {
        while self.pending.len() < n {
            assert!(
                self.fill() > 0,
                "connection closed after {} of {n} body bytes",
                self.pending.len()
            );
        }
        self.pending.drain(..n).collect()
    }

    /// The server closes: nothing more, then the end of the stream.
    fn expect_eof(&mut self) {
        assert!(self.pending.is_empty(), "extra bytes {:?}", self.pending);
        assert_eq!(self.fill(), 0, "expected the end of the stream, got {:?}", self.pending);
    }

    /// Checks a GET of /bytes/n answered in full on this connection.
    fn fetch_bytes(&mut self, n: u64) -> Head {
        self.get(&format!("/bytes/{n}"));
        let head = self.head();
        assert_eq!(head.status, 200, "{}", head.text);
        assert_eq!(head.content_length(), n, "{}", head.text);
        self.pattern_body(n);
        head
    }
}

#[test]
fn keep_alive_connection_answers_every_size_in_turn() {
    let (_agent, http) = http_agent(&[]);
    let mut c = Client::connect(&http);
    for n in [0, 1, 1000, (1 << 20) + 7, 100 << 20, 3] {
        let head = c.fetch_bytes(n);
        assert_eq!(head.header("content-type"), Some("application/octet-stream"));
        assert_eq!(head.header("server"), Some("linerate"));
        assert!(
            head.header("date").is_some_and(|d| d.ends_with(" GMT")),
            "{}",
            head.text
        );
        assert_eq!(head.header("connection"), None, "HTTP/1.1 keeps alive by default");
    }
}

#[test]
fn connection_close_is_answered_then_closed() {
    let (_agent, http) = http_agent(&[]);
    let mut c = Client::connect(&http);
    c.send("GET /bytes/10 HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    let head = c.head();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("connection"), Some("close"));
    assert_eq!(head.content_length(), 10);
    c.pattern_body(10);
    c.expect_eof();
}

#[test]
fn http10_closes_unless_asked_to_keep_alive() {
    let (_agent, http) = http_agent(&[]);
    let mut c = Client::connect(&http);
    c.send("GET /bytes/5 HTTP/1.0\r\n\r\n");
    let head = c.head();
    assert_eq!((head.status, head.content_length()), (200, 5));
    c.pattern_body(5);
    c.expect_eof();

    let mut c = Client::connect(&http);
    for _ in 0..2 {
        c.send("GET /bytes/7 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let head = c.head();
        assert_eq!(head.header("connection"), Some("keep-alive"), "{}", head.text);
        assert_eq!(head.content_length(), 7);
        c.pattern_body(7);
    }
}

#[test]
fn head_has_the_headers_and_no_body() {
    let (_agent, http) = http_agent(&[]);
    let mut c = Client::connect(&http);
    c.send("HEAD /bytes/1000 HTTP/1.1\r\nHost: test\r\n\r\n");
    let head = c.head();
    assert_eq!((head.status, head.content_length()), (200, 1000));
    // The next response's head follows at once: no body bytes came between.
    c.fetch_bytes(4);
    c.send("HEAD /nowhere HTTP/1.1\r\n\r\n");
    assert_eq!(c.head().status, 404);
    c.fetch_bytes(2);
}

#[test]
fn not_found_wrong_method_and_bad_length_keep_the_connection() {
    let (_agent, http) = http_agent(&[]);
    let mut c = Client::connect(&http);
    c.get("/nowhere");
    let head = c.head();
    assert_eq!(head.status, 404, "{}", head.text);
    let text_len = head.content_length() as usize;
    assert!(String::from_utf8(c.body(text_len)).expect("text").contains("not found"));

    // A POST body is read and dropped: the next request on the connection is answered.
    c.send("POST /bytes/10 HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello");
    let head = c.head();
    assert_eq!(head.status, 405, "{}", head.text);
    assert_eq!(head.header("allow"), Some("GET, HEAD"));
    c.body(head.content_length() as usize);
    c.fetch_bytes(3);

    for bad in ["/bytes/abc", "/bytes/-1", "/bytes/1099511627777", "/bytes/"] {
        c.get(bad);
        let head = c.head();
        assert_eq!(head.status, 400, "{bad}: {}", head.text);
        c.body(head.content_length() as usize);
    }
    c.fetch_bytes(1);
}

#[test]
fn malformed_and_oversized_requests_get_an_answer_then_eof() {
    let (_agent, http) = http_agent(&[]);
    let mut c = Client::connect(&http);
    c.send("GARBAGE\r\n\r\n");
    let head = c.head();
    assert_eq!(head.status, 400, "{}", head.text);
    assert_eq!(head.header("connection"), Some("close"));
    c.body(head.content_length() as usize);
    c.expect_eof();

    let mut c = Client::connect(&http);
    let mut big = String::from("GET /bytes/1 HTTP/1.1\r\n");
    while big.len() <= 20 * 1024 {
        big.push_str("X-Filler: 0123456789012345678901234567890123456789\r\n");
    }
    big.push_str("\r\n");
    c.send(&big);
    let head = c.head();
    assert_eq!(head.status, 431, "{}", head.text);
    c.body(head.content_length() as usize);
    c.expect_eof();

    // A head of just under 16 KiB is still answered.
    let mut c = Client::connect(&http);
    let mut fits = String::from("GET /bytes/9 HTTP/1.1\r\n");
    while fits.len() < 15 * 1024 {
        fits.push_str(&format!("Cookie: {}\r\n", "c".repeat(1000)));
    }
    fits.push_str("\r\n");
    c.send(&fits);
    assert_eq!(c.head().status, 200);
    c.pattern_body(9);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let (_agent, http) = http_agent(&[]);
    let mut c = Client::connect(&http);
    let sizes = [10u64, 300_000, 20];
    let all: String = sizes
        .iter()
        .map(|n| format!("GET /bytes/{n} HTTP/1.1\r\nHost: test\r\n\r\n"))
        .collect();
    c.send(&all);
    for n in sizes {
        let head = c.head();
        assert_eq!((head.status, head.content_length()), (200, n), "{}", head.text);
        c.pattern_body(n);
    }
    c.fetch_bytes(1);
}

#[test]
fn files_are_served_byte_exact() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("object.bin");
    let content: Vec<u8> = (0..524_288u32 + 13)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(&path, &content).expect("write the file");
    let (_agent, http) = http_agent(&["--file", path.to_str().expect("a UTF-8 path")]);
    let mut c = Client::connect(&http);
    for _ in 0..2 {
        c.get("/files/object.bin");
        let head = c.head();
        assert_eq!(head.status, 200, "{}", head.text);
        assert_eq!(head.content_length(), content.len() as u64);
        assert!(c.body(content.len()) == content, "file body differs");
    }
    c.send("HEAD /files/object.bin HTTP/1.1\r\n\r\n");
    assert_eq!(c.head().content_length(), content.len() as u64);
    c.get("/files/other.bin");
    assert_eq!(c.head().status, 404);
}

#[test]
fn file_errors_name_the_path_and_need_the_http_port() {
    let out = linerate(
        &["serve", "--bind", "127.0.0.1", "--port", "0", "--file", "/tmp/x.bin"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--http-port"), "{}", stderr(&out));
    let out = linerate(
        &[
            "serve",
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--http-port",
            "0",
            "--file",
            "/nonexistent/linerate.bin",
        ],
        Duration::from_secs(10),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("/nonexistent/linerate.bin"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

/// Raises this process's soft limit on open files to at least `n` (as far as the hard limit).
fn raise_open_files(n: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        assert!(
            limit.rlim_max >= n,
            "the hard limit on open files ({}) is below {n}",
            limit.rlim_max
        );
        if limit.rlim_cur < n {
            limit.rlim_cur = limit.rlim_max.min(n.max(limit.rlim_cur) * 2);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
}

#[test]
fn two_thousand_concurrent_connections_are_all_answered() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 500;
    // Other tests in this process hold sockets too.
    raise_open_files((THREADS * PER_THREAD) as u64 + 1024);
    let (_agent, http) = http_agent(&[]);
    let all_open = std::sync::Barrier::new(THREADS);
    let answered: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (http, all_open) = (&http, &all_open);
                s.spawn(move || {
                    let mut clients: Vec<Client> = (0..PER_THREAD).map(|_| Client::connect(http)).collect();
                    // Every connection is open before any request goes out.
                    all_open.wait();
                    for (i, c) in clients.iter_mut().enumerate() {
                        c.get(&format!("/bytes/{}", 100 + t * PER_THREAD + i));
                    }
                    for (i, c) in clients.iter_mut().enumerate() {
                        let n = (100 + t * PER_THREAD + i) as u64;
                        let head = c.head();
                        assert_eq!((head.status, head.content_length()), (200, n));
                        c.pattern_body(n);
                    }
                    clients.len()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("client thread")).sum()
    });
    assert_eq!(answered, THREADS * PER_THREAD);
}

#[test]
fn clients_that_reset_or_half_close_mid_body_disturb_nobody() {
    let (agent, http) = http_agent(&[]);
    let mut bystander = Client::connect(&http);
    bystander.fetch_bytes(100);

    // Reset: read a little of a large body, then RST (linger 0) with the rest in flight.
    for _ in 0..3 {
        let mut c = Client::connect(&http);
        c.get("/bytes/104857600");
        assert_eq!(c.head().status, 200);
        c.pattern_body(1 << 20);
        socket2::SockRef::from(&c.stream)
            .set_linger(Some(Duration::ZERO))
            .expect("SO_LINGER");
        drop(c);
    }
    // Half-close: the request, then FIN; the whole response still comes, then EOF.
    let mut c = Client::connect(&http);
    c.send("GET /bytes/10485760 HTTP/1.1\r\nHost: test\r\n\r\n");
    c.stream.shutdown(Shutdown::Write).expect("shutdown");
    let head = c.head();
    assert_eq!((head.status, head.content_length()), (200, 10 << 20));
    c.pattern_body(10 << 20);
    c.expect_eof();
    // The same with a small body: the FIN is likely in with the request, and must still be seen.
    for _ in 0..5 {
        let mut c = Client::connect(&http);
        c.send("GET /bytes/10 HTTP/1.1\r\nHost: test\r\n\r\n");
        c.stream.shutdown(Shutdown::Write).expect("shutdown");
        assert_eq!(c.head().content_length(), 10);
        c.pattern_body(10);
        c.expect_eof();
    }

    bystander.fetch_bytes(1 << 20);
    Client::connect(&http).fetch_bytes(1000);
    // The agent on the same process still answers too.
    let mut agent_conn = TcpStream::connect(&agent.addr).expect("the agent still listens");
    agent_conn.write_all(b"x").expect("write");
}
