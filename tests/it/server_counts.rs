//! A linerate HTTP server's own counts in an HTTP test's result: the agent beside
//! `serve --http-port`/`--https-port` reports them over the test, and the summary sets the
//! server's CPU per TLS handshake beside the client's. Also the server's flags and caps.

use crate::util::{Agent, f, json_of, linerate, port_of, stderr, u};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn load(url: &str, agent: &str) -> serde_json::Value {
    json_of(&linerate(
        &[
            "http",
            "--json",
            "-d",
            "1s",
            url,
            "--insecure",
            "--users",
            "2",
            "--keepalive",
            "--agent",
            agent,
        ],
        LIMIT,
    ))
}

/// Two keep-alive users make two handshakes: the server counts as many as the client, and the
/// server's CPU per handshake is known; an agent that runs no server on the URL's port has
/// none to report.
#[test]
fn issue_27_the_agent_reports_its_https_servers_handshakes() {
    let agent = Agent::start(&["--https-port", "0"]);
    let port = port_of(agent.https_addr.as_deref().expect("https address"));
    let url = format!("https://127.0.0.1:{port}/bytes/1024");
    let v = load(&url, &agent.addr);
    let client = u(&v, "/summary/tls/full") + u(&v, "/summary/tls/resumed");
    assert_eq!(client, 2, "{}", v["summary"]["tls"]);
    let server = &v["summary"]["servers"][0]["counted_by_server"];
    assert_eq!(server["ports"][0].as_u64(), Some(u64::from(port)), "{server}");
    assert_eq!(u(server, "/tls_full") + u(server, "/tls_resumed"), client, "{server}");
    assert_eq!(u(server, "/tls_failed"), 0, "{server}");
    assert_eq!(u(server, "/connections_accepted"), 2, "{server}");
    assert!(u(server, "/requests") >= u(&v, "/summary/responses"), "{server}");
    assert!(f(server, "/cpu_us_per_handshake") > 0.0, "{server}");
    assert!(
        f(&v, "/summary/tls/server_cpu_us_per_handshake") > 0.0,
        "{}",
        v["summary"]["tls"]
    );

    // The same URL with another agent (which runs no server): nothing counted by the server.
    let other = Agent::start(&[]);
    let v = load(&url, &other.addr);
    assert!(
        v["summary"]["servers"][0]["counted_by_server"].is_null(),
        "{}",
        v["summary"]["servers"]
    );
    assert!(v["summary"]["tls"]["server_cpu_us_per_handshake"].is_null());
}

/// `--file` (and the other HTTP server flags) need `--http-port` or `--https-port`; with
/// `--https-port` alone the file is served over TLS.
#[test]
fn issue_27_serve_file_needs_an_http_or_https_port() {
    let file = std::env::temp_dir().join(format!("lr-it-file-{}.bin", std::process::id()));
    std::fs::write(&file, vec![7u8; 3000]).expect("write the file");
    let path = file.to_str().expect("utf-8 path");
    for flag in [
        &["--file", path][..],
        &["--http-head-timeout", "5"],
        &["--http-max-per-address", "3"],
    ] {
        let mut args = vec!["serve", "--bind", "127.0.0.1", "--port", "0"];
        args.extend_from_slice(flag);
        let out = linerate(&args, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--http-port"), "{}", stderr(&out));
    }
    let agent = Agent::start(&["--https-port", "0", "--file", path]);
    let port = port_of(agent.https_addr.as_deref().expect("https address"));
    let name = file.file_name().expect("a name").to_string_lossy();
    let url = format!("https://127.0.0.1:{port}/files/{name}");
    let v = json_of(&linerate(&["http", "--json", "-d", "1s", &url, "--insecure"], LIMIT));
    let _ = std::fs::remove_file(&file);
    assert!(u(&v, "/summary/responses") > 0);
    assert_eq!(u(&v, "/summary/body_bytes"), u(&v, "/summary/responses") * 3000);
    assert_eq!(u(&v, "/summary/errors/total"), 0);
}

/// An h2c connection by prior knowledge, its SETTINGS read back: the server has taken it as
/// HTTP/2. None when the server closed it instead.
fn h2c(addr: &str) -> Option<TcpStream> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    // The preface, then an empty SETTINGS frame (length 0, type 4, flags 0, stream 0).
    let _ = s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0");
    let mut head = [0u8; 9];
    match s.read_exact(&mut head) {
        Ok(()) if head[3] == 4 => Some(s),
        _ => None,
    }
}

/// HTTP/2 connections count toward the per-address cap as HTTP/1.1 ones do: with a cap of 2,
/// two held h2c connections keep a third out; once one closes, a new one gets in.
#[test]
fn issue_27_h2_connections_count_toward_the_per_address_cap() {
    let agent = Agent::start(&["--http-port", "0", "--http-max-per-address", "2"]);
    let addr = agent.http_addr.clone().expect("http address");
    let first = h2c(&addr).expect("the first h2c connection is served");
    let second = h2c(&addr).expect("the second h2c connection is served");
    assert!(
        h2c(&addr).is_none(),
        "a third connection from the address got past a cap of 2"
    );
    drop(first);
    // The server releases the closed connection's place when its lane sees the close.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let third = loop {
        if let Some(s) = h2c(&addr) {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the closed connection's place never came back"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    drop((second, third));
}
