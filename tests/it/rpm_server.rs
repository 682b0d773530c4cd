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
