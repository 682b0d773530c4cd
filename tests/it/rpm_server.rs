//! The agent as a responsiveness test server: `serve` answers `/.well-known/nq` with the draft's
//! configuration (the draft's URL keys and the older ones Apple's spec names) and the endpoints
//! it names, over HTTP/2 (TLS by ALPN, h2c by prior knowledge) and HTTP/1.1 (TLS and cleartext),
//! checked with curl on loopback, every run bounded.

use crate::util::*;
use std::io::Read;
use std::process::{Command, Stdio};

/// The four ways to reach the agent's server: curl's flags and the base URL.
fn ways(agent: &Agent) -> Vec<(Vec<&'static str>, String, &'static str)> {
    let https = agent.https_addr.clone().expect("https");
    let http = agent.http_addr.clone().expect("http");
    vec![
        (vec!["-k", "--http2"], format!("https://{https}"), "2"),
        (vec!["--http2-prior-knowledge"], format!("http://{http}"), "2"),
        (vec!["-k", "--http1.1"], format!("https://{https}"), "1.1"),
        (vec!["--http1.1"], format!("http://{http}"), "1.1"),
    ]
}

/// `curl -sS --max-time 20 ARGS URL`: exit status, stdout, stderr.
fn curl(args: &[&str], url: &str) -> (Option<i32>, String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `curl` that must succeed: its stdout.
fn fetch(args: &[&str], url: &str) -> String {
    let (code, out, err) = curl(args, url);
    assert_eq!(code, Some(0), "curl {args:?} {url}: {err}");
    out
}

fn agent() -> Option<Agent> {
    if !on_path("curl") {
        eprintln!("skipped: no curl");
        return None;
    }
    Some(Agent::start(&["--http-port", "0", "--https-port", "0"]))
}

/// The three URLs of a configuration document, each checked to be given under both spellings.
fn urls(doc: &serde_json::Value) -> [String; 3] {
    let urls = &doc["urls"];
    [
        ("small_download_url", "small_https_download_url"),
        ("large_download_url", "large_https_download_url"),
        ("upload_url", "https_upload_url"),
    ]
    .map(|(draft, apple)| {
        let url = urls[draft].as_str().unwrap_or_else(|| panic!("no {draft} in {doc}"));
        assert_eq!(urls[apple].as_str(), Some(url), "{apple} differs from {draft} in {doc}");
        url.to_string()
    })
}

/// Reads `n` bytes of `url`'s body through curl's stdout, then closes the pipe: curl stops
/// mid-stream (a write error), as a client that has measured enough does. The bytes read.
fn read_then_abort(args: &[&str], url: &str, n: usize) -> Vec<u8> {
    let mut child = Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("curl");
    let mut body = vec![0u8; n];
    let mut stdout = child.stdout.take().expect("piped");
    let got = stdout.read_exact(&mut body);
    drop(stdout);
    let status = child.wait().expect("curl ends once its pipe is closed (or after 20 s)");
    got.unwrap_or_else(|e| panic!("{n} bytes of {url} ({args:?}) before curl ended ({status}): {e}"));
    // 23: curl could not write what it received, the pipe being closed; it stopped there.
    assert_eq!(status.code(), Some(23), "{url} {args:?}");
    body
}

const PATTERN: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n";

#[test]
fn curl_reads_the_configuration_under_both_spellings_and_fetches_each_endpoint() {
    let Some(agent) = agent() else { return };
    let upload = std::env::temp_dir().join(format!("linerate-rpm-upload-{}.bin", std::process::id()));
    std::fs::write(&upload, vec![7u8; 10_000_000]).expect("write the upload");
    let upload_arg = format!("@{}", upload.display());
    for (args, base, version) in ways(&agent) {
        let text = fetch(&args, &format!("{base}/.well-known/nq"));
        let doc: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{base}: not JSON ({e}): {text}"));
        assert_eq!(doc["version"], 1, "{text}");
        assert_eq!(doc["test_endpoint"], "127.0.0.1", "{text}");
        let [small, large, sink] = urls(&doc);
        for url in [&small, &large, &sink] {
            assert!(url.starts_with(&format!("{base}/")), "{url} is not on {base}");
        }
        let mut with_w = args.clone();
        with_w.extend(["-w", " %{http_version} %{http_code} %{content_type}"]);
        assert_eq!(
            fetch(&with_w, &format!("{base}/.well-known/nq")),
            format!("{text} {version} 200 application/json")
        );
        assert_eq!(
            fetch(&with_w, &small),
            format!("0 {version} 200 application/octet-stream"),
            "{small}"
        );

        let body = read_then_abort(&args, &large, 3_000_000);
        assert!(
            body.iter().enumerate().all(|(i, b)| *b == PATTERN[i % 64]),
            "{large}: not the pattern"
        );
        let mut head = args.clone();
        head.push("-I");
        let h = fetch(&head, &large).to_ascii_lowercase();
        assert!(h.contains("content-length: 1099511627776\r\n"), "{large}: {h}");

        // 10 MB with a length, then (HTTP/1.1) the same chunked from a pipe; both counted.
        let mut post = args.clone();
        post.extend([
            "--data-binary",
            upload_arg.as_str(),
            "-H",
            "Content-Type: application/octet-stream",
        ]);
        post.extend(["-w", " %{http_version} %{http_code}"]);
        assert_eq!(fetch(&post, &sink), format!("10000000\n {version} 200"), "{sink}");
        let mut put = args.clone();
        put.extend(["-T", upload.to_str().expect("utf-8 path"), "-w", " %{http_code}"]);
        assert_eq!(fetch(&put, &sink), "10000000\n 200", "{sink} by PUT");
    }
    std::fs::remove_file(&upload).expect("remove the upload");
}

#[test]
fn chunked_uploads_are_counted_and_wrong_methods_and_hosts_are_refused() {
    let Some(agent) = agent() else { return };
    let http = agent.http_addr.clone().expect("http");
    let sink = format!("http://{http}/rpm/upload");
    // From a pipe curl cannot know the length: HTTP/1.1 sends it chunked, HTTP/2 in DATA frames.
    for flag in ["--http1.1", "--http2-prior-knowledge"] {
        let mut child = Command::new("curl")
            .args(["-sS", "--max-time", "20", flag, "-T", "-", "-w", " %{http_code}", &sink])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("curl");
        let mut stdin = child.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            for _ in 0..100 {
                stdin.write_all(&[b'x'; 65_537]).expect("feed curl");
            }
        });
        let out = child.wait_with_output().expect("curl");
        writer.join().expect("writer");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "6553700\n 200", "{flag}");
    }
    for (args, base, _) in ways(&agent) {
        let mut w = args.clone();
        w.extend(["-o", "/dev/null", "-w", "%{http_code} %{header_json}"]);
        let got = fetch(&w, &format!("{base}/rpm/upload"));
        assert!(
            got.starts_with("405 ") && got.contains("\"allow\":[\"POST, PUT\"]"),
            "{base}: {got}"
        );
        // No body: a body the server does not read races its response (over HTTP/2 h2 may
        // then reset the stream with NO_ERROR, which curl reports as an error).
        let mut post = w.clone();
        post.extend(["-X", "POST"]);
        let got = fetch(&post, &format!("{base}/.well-known/nq"));
        assert!(
            got.starts_with("405 ") && got.contains("\"allow\":[\"GET, HEAD\"]"),
            "{base}: {got}"
        );
        let got = fetch(&post, &format!("{base}/rpm/small"));
        assert!(got.starts_with("405 "), "{base}: {got}");
    }
    // A Host that cannot go into a URL as it is: a 400, not a document.
    let got = fetch(
        &["-H", "Host: a\"b", "-o", "/dev/null", "-w", "%{http_code}"],
        &format!("http://{http}/.well-known/nq"),
    );
    assert_eq!(got, "400");
    // HTTP/1.0 without a Host: the document names the address the client reached.
    let text = fetch(&["--http1.0", "-H", "Host:"], &format!("http://{http}/.well-known/nq"));
    assert!(
        text.contains(&format!("\"upload_url\": \"http://{http}/rpm/upload\"")),
        "{text}"
    );
}

#[test]
fn clients_that_abort_the_large_object_leave_the_server_serving() {
    let Some(agent) = agent() else { return };
    for (args, base, version) in ways(&agent) {
        // Several at once, each cut after 1 MB, then the next requests on new connections.
        let cut: Vec<_> = (0..4)
            .map(|_| {
                let (args, url) = (args.clone(), format!("{base}/rpm/large"));
                std::thread::spawn(move || read_then_abort(&args, &url, 1_000_000).len())
            })
            .collect();
        for c in cut {
            assert_eq!(c.join().expect("an aborted download"), 1_000_000);
        }
        let mut w = args.clone();
        w.extend(["-w", " %{http_version} %{http_code}"]);
        assert_eq!(
            fetch(&w, &format!("{base}/rpm/small")),
            format!("0 {version} 200"),
            "{base}"
        );
        let mut post = w.clone();
        post.extend(["--data-binary", "abc"]);
        assert_eq!(
            fetch(&post, &format!("{base}/rpm/upload")),
            format!("3\n {version} 200"),
            "{base}"
        );
    }
}

/// Writes `parts` to a new connection to `addr`, a moment apart, and reads to the server's close.
fn exchange(addr: &str, parts: &[&[u8]]) -> String {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    for part in parts {
        s.write_all(part).expect("send");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut all = Vec::new();
    s.read_to_end(&mut all)
        .expect("the answers, then the server's close, within 10 s");
    String::from_utf8_lossy(&all).into_owned()
}

#[test]
fn an_upload_s_body_ends_where_its_framing_says_and_the_next_request_follows() {
    let agent = Agent::start(&["--http-port", "0"]);
    let http = agent.http_addr.clone().expect("http");
    // A body with a length, the next request pipelined right behind it in the same write.
    let got = exchange(
        &http,
        &[b"POST /rpm/upload HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /rpm/small HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"],
    );
    let answers: Vec<&str> = got.split("HTTP/1.1 ").skip(1).collect();
    assert_eq!(answers.len(), 2, "{got}");
    assert!(
        answers[0].starts_with("200 OK\r\n") && answers[0].ends_with("Content-Length: 2\r\n\r\n5\n"),
        "{got}"
    );
    assert!(
        answers[1].starts_with("200 OK\r\n") && answers[1].ends_with("\r\n\r\n0"),
        "{got}"
    );
    // A chunked body cut across writes inside its size line, data and trailer, with an
    // extension: 3 + 16 bytes, then the connection closed after the answer.
    let got = exchange(
        &http,
        &[
            b"PUT /rpm/upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r",
            b"\nabc\r\n1",
            b"0;ext=1\r\n0123456789",
            b"abcdef\r\n0\r\nX-Trailer: y\r",
            b"\n\r\n",
        ],
    );
    assert!(
        got.starts_with("HTTP/1.1 200 OK\r\n") && got.contains("Connection: close\r\n"),
        "{got}"
    );
    assert!(got.ends_with("\r\n\r\n19\n"), "{got}");
    // A broken chunked framing: a 400, then the close.
    let got = exchange(
        &http,
        &[b"POST /rpm/upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
    );
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    // Expect: 100-continue is answered before the body is sent.
    let got = exchange(
        &http,
        &[
            b"POST /rpm/upload HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nConnection: close\r\nContent-Length: 2\r\n\r\n",
            b"ok",
        ],
    );
    assert!(
        got.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"),
        "{got}"
    );
    assert!(got.ends_with("\r\n\r\n2\n"), "{got}");
}

#[test]
fn an_upload_that_stalls_is_ended_at_the_idle_limit_and_others_are_served_meanwhile() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let agent = Agent::start(&["--http-port", "0", "--http-idle-timeout", "1"]);
    let http = agent.http_addr.clone().expect("http");
    // HTTP/1.1: 10 of 100 promised bytes, then nothing: closed by the idle limit, unanswered.
    let mut s = std::net::TcpStream::connect(&http).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(b"POST /rpm/upload HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789")
        .expect("send");
    let t = Instant::now();
    // Meanwhile another client is served.
    let got = exchange(
        &http,
        &[b"GET /rpm/small HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"],
    );
    assert!(got.ends_with("\r\n\r\n0"), "{got}");
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("the server's close within 10 s");
    assert!(all.is_empty(), "{:?}", String::from_utf8_lossy(&all));
    assert!(t.elapsed() < Duration::from_secs(9), "closed after {:?}", t.elapsed());

    // HTTP/2 (h2c): a stream that sends 10 bytes and stops is reset; the connection's next
    // stream is answered.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (reset, next) = runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(20), async {
            let tcp = tokio::net::TcpStream::connect(&http).await.expect("connect");
            let (client, conn) = h2::client::handshake(tcp).await.expect("handshake");
            tokio::spawn(conn);
            let mut client = client.ready().await.expect("ready");
            let req = http_request("POST", &format!("http://{http}/rpm/upload"));
            let (stalled, mut body) = client.send_request(req, false).expect("send");
            body.send_data(bytes::Bytes::from_static(b"0123456789"), false)
                .expect("data");
            let reset = stalled.await.expect_err("a reset, not an answer");
            client = client.ready().await.expect("ready");
            let req = http_request("GET", &format!("http://{http}/rpm/small"));
            let (answer, _) = client.send_request(req, true).expect("send");
            let answer = answer.await.expect("an answer");
            (reset.reason(), answer.status().as_u16())
        })
        .await
        .expect("within 20 s")
    });
    assert_eq!(reset, Some(h2::Reason::CANCEL));
    assert_eq!(next, 200);
}

fn http_request(method: &str, url: &str) -> http::Request<()> {
    http::Request::builder()
        .method(method)
        .uri(url)
        .body(())
        .expect("a request")
}
