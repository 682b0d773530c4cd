//! HTTP/2 on linerate's server: h2 by ALPN on `serve --https-port`, h2c by prior
//! knowledge on `--http-port`, checked with curl and h2load on loopback, every run bounded.

use crate::util::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// `curl ARGS URL` bounded to 10 s: stdout as text.
fn curl(args: &[&str], url: &str) -> String {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl");
    assert!(
        out.status.success(),
        "curl {args:?} {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The HTTP version, status and body length curl saw, and the body when it is short.
fn fetch(args: &[&str], url: &str) -> String {
    let mut all = args.to_vec();
    all.extend(["-o", "/dev/null", "-w", "%{http_version} %{http_code} %{size_download}"]);
    curl(&all, url)
}

fn agent() -> Agent {
    Agent::start(&["--http-port", "0", "--https-port", "0"])
}

#[test]
fn issue_27_curl_gets_http2_by_alpn_and_by_prior_knowledge() {
    if !on_path("curl") {
        eprintln!("skipped: no curl");
        return;
    }
    let agent = agent();
    let https = agent.https_addr.clone().expect("https");
    let http = agent.http_addr.clone().expect("http");
    for (args, base) in [
        (&["-k", "--http2"][..], format!("https://{https}")),
        (&["--http2-prior-knowledge"][..], format!("http://{http}")),
    ] {
        // Small, across many DATA frames and windows (curl's stream window is 32 MiB, the
        // default 64 KiB frames), a 404 and a HEAD.
        assert_eq!(fetch(args, &format!("{base}/bytes/1024")), "2 200 1024", "{base}");
        assert_eq!(fetch(args, &format!("{base}/bytes/3000000")), "2 200 3000000", "{base}");
        assert_eq!(fetch(args, &format!("{base}/nothing")), "2 404 24", "{base}");
        let mut head = args.to_vec();
        head.push("-I");
        let h = curl(&head, &format!("{base}/bytes/77"));
        assert!(h.starts_with("HTTP/2 200"), "{h}");
        assert!(h.contains("content-length: 77"), "{h}");
        let body = curl(args, &format!("{base}/bytes/130"));
        let pattern = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n";
        assert_eq!(body, format!("{pattern}{pattern}01"), "{base}");
    }
    // HTTP/1.1 is still offered on both ports.
    assert_eq!(
        fetch(&["-k", "--http1.1"], &format!("https://{https}/bytes/10")),
        "1.1 200 10"
    );
    assert_eq!(fetch(&[], &format!("http://{http}/bytes/10")), "1.1 200 10");
}

/// `h2load -n N -c 4 -m 10 URL`, bounded: the counts of its "requests:" line and of its 2xx.
fn h2load(url: &str, n: u64) -> (u64, u64, String) {
    let out = Command::new("timeout")
        .args(["60", "h2load", "-n", &n.to_string(), "-c", "4", "-m", "10", url])
        .output()
        .expect("h2load");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |line: &str, word: &str| -> u64 {
        let l = text
            .lines()
            .find(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("{text}"));
        let words: Vec<&str> = l.split([' ', ',']).filter(|w| !w.is_empty()).collect();
        let i = words.iter().position(|w| *w == word).unwrap_or_else(|| panic!("{l}"));
        words[i - 1].parse().unwrap_or_else(|_| panic!("{l}"))
    };
    (field("requests:", "succeeded"), field("status codes:", "2xx"), text)
}

#[test]
fn issue_27_h2load_with_ten_streams_a_connection_over_tls_and_h2c() {
    if !on_path("h2load") {
        eprintln!("skipped: no h2load (apt-get install nghttp2-client)");
        return;
    }
    let agent = agent();
    let https = agent.https_addr.clone().expect("https");
    let http = agent.http_addr.clone().expect("http");
    for url in [
        format!("https://{https}/bytes/1024"),
        format!("http://{http}/bytes/1024"),
    ] {
        let (succeeded, ok, text) = h2load(&url, 4000);
        assert_eq!((succeeded, ok), (4000, 4000), "{url}\n{text}");
        // h2load says which protocol it spoke.
        assert!(text.contains("Application protocol: h2"), "{url}\n{text}");
    }
}

#[test]
fn issue_27_garbage_after_the_preface_closes_that_connection_only() {
    if !on_path("curl") {
        eprintln!("skipped: no curl");
        return;
    }
    let agent = agent();
    let http = agent.http_addr.clone().expect("http");
    for garbage in [
        &b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"[..],
        b"GET / HTTP/1.1\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(&http).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").expect("preface");
        s.write_all(garbage).expect("garbage");
        let t = Instant::now();
        let mut got = Vec::new();
        // The server answers with its SETTINGS and a GOAWAY, then closes (or resets).
        let _ = s.read_to_end(&mut got);
        assert!(t.elapsed() < Duration::from_secs(9), "not closed: {:?}", t.elapsed());
        // A GOAWAY frame (type 7) with PROTOCOL_ERROR or FRAME_SIZE_ERROR is among the frames.
        assert!(frame_types(&got).contains(&7), "{got:02x?}");
    }
    assert_eq!(
        fetch(&["--http2-prior-knowledge"], &format!("http://{http}/bytes/5")),
        "2 200 5"
    );
}

/// The types of the HTTP/2 frames in `bytes`, as far as they are whole.
fn frame_types(mut bytes: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    while bytes.len() >= 9 {
        let len = (usize::from(bytes[0]) << 16) | (usize::from(bytes[1]) << 8) | usize::from(bytes[2]);
        types.push(bytes[3]);
        bytes = &bytes[(9 + len).min(bytes.len())..];
    }
    types
}
