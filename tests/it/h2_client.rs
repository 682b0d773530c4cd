//! `linerate http --http2`: HTTP/2 by ALPN on https and by prior knowledge on
//! cleartext, `--streams` per connection, against linerate's own server, nginx (TLS 1.2 and 1.3,
//! h2c, a stream limit of 4) and tiny in-test h2 servers that reset every stream or send a
//! GOAWAY. Every run is bounded; nothing here depends on the machine's speed.

use crate::kinds::*;
use crate::nginx::Nginx;
use crate::util::*;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn issue_27_h2_client_against_linerate_server_h2c_and_tls_ten_streams() {
    let agent = Agent::start(&["--http-port", "0", "--https-port", "0"]);
    let https = agent.https_addr.clone().expect("https");
    let http_addr = agent.http_addr.clone().expect("http");
    for (url, tls) in [
        (format!("http://{http_addr}/bytes/1024"), false),
        (format!("https://{https}/bytes/1024"), true),
    ] {
        let mut args = vec![url.as_str(), "--users", "2", "--streams", "10", "--threads", "1"];
        if tls {
            args.push("--insecure");
        }
        let v = json_of(&http2(&args));
        check_identities(&v);
        let responses = u(&v, "/summary/responses");
        assert!(responses > 0, "{url}: {}", v["summary"]);
        assert_eq!(u(&v, "/summary/errors/total"), 0, "{url}: {}", v["summary"]["errors"]);
        assert_eq!(u(&v, "/summary/body_bytes"), responses * 1024, "{url}");
        // One connection per user, each carrying its ten streams at once (the first round of
        // requests goes out together), never more.
        assert_eq!(u(&v, "/summary/connections/attempted"), 2, "{url}");
        assert_eq!(u(&v, "/summary/http2/streams"), 10, "{url}");
        assert_eq!(
            u(&v, "/summary/http2/max_streams_in_flight"),
            10,
            "{url}: {}",
            v["summary"]["http2"]
        );
        assert_eq!(u(&v, "/summary/http2/peer_max_concurrent_streams"), 128, "{url}");
        assert_eq!(v["summary"]["http2"]["capped"], false, "{url}");
        if tls {
            assert_eq!(u(&v, "/summary/tls/full"), 2, "{url}: {}", v["summary"]["tls"]);
        }
    }
}

/// nginx with HTTP/2 on `listen` (ssl or h2c by prior knowledge), a 1 KiB file, at most
/// `streams` concurrent streams, its log of `STATUS PROTOCOL`.
fn nginx_h2(tls: bool, streams: u32) -> Option<Nginx> {
    Nginx::start_with("$status $server_protocol $ssl_protocol", move |dir: &Path, _| {
        std::fs::write(dir.join("www/1k.bin"), vec![b'x'; 1024]).expect("1k.bin");
        let mut server = format!("http2_max_concurrent_streams {streams};");
        let listen = if tls {
            let key = rcgen::KeyPair::generate().expect("key");
            let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
                .expect("params")
                .self_signed(&key)
                .expect("cert");
            let (c, k) = (dir.join("cert.pem"), dir.join("cert.key"));
            std::fs::write(&c, cert.pem()).expect("cert");
            std::fs::write(&k, key.serialize_pem()).expect("key");
            server.push_str(&format!(
                " ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.2 TLSv1.3;",
                c.display(),
                k.display()
            ));
            " ssl http2"
        } else {
            " http2"
        };
        (listen.to_string(), server)
    })
}

/// Requests nginx logged with status 200 over HTTP/2.0 and, over TLS, `tls` (else `-`).
fn nginx_h2_log(nginx: &Nginx, tls: &str) -> u64 {
    let text = std::fs::read_to_string(nginx.dir.path().join("access.log")).unwrap_or_default();
    text.lines()
        .filter(|l| l.split_whitespace().collect::<Vec<_>>() == ["200", "HTTP/2.0", tls])
        .count() as u64
}

#[test]
fn issue_27_h2_client_against_nginx_tls_1_2_1_3_and_h2c_counts_match_its_log() {
    for (tls, versions) in [(true, &["1.2", "1.3"][..]), (false, &[""][..])] {
        let Some(nginx) = nginx_h2(tls, 128) else { return };
        for version in versions {
            std::fs::write(nginx.dir.path().join("access.log"), "").expect("empty the log");
            let url = match tls {
                true => format!("https://localhost:{}/1k.bin", nginx.port),
                false => format!("http://127.0.0.1:{}/1k.bin", nginx.port),
            };
            let mut args = vec![url.as_str(), "--users", "4", "--streams", "5", "--threads", "2"];
            if tls {
                args.extend(["--insecure", "--tls-version", version]);
            }
            let v = json_of(&http2(&args));
            check_identities(&v);
            let responses = u(&v, "/summary/responses");
            assert!(
                responses > 0 && u(&v, "/summary/errors/total") == 0,
                "{url} {version}: {}",
                v["summary"]
            );
            // Every response the client counted is a line of nginx's log with HTTP/2.0; nginx also
            // logs those that came past the window's end and those in flight.
            let protocol = match *version {
                "1.2" => "TLSv1.2",
                "1.3" => "TLSv1.3",
                _ => "-",
            };
            let logged = nginx_h2_log(&nginx, protocol);
            assert!(
                responses <= logged && logged <= responses + u(&v, "/summary/in_flight_at_end") + 4 * 5 * 2,
                "{url} {version}: counted {responses}, nginx logged {logged}"
            );
            assert_eq!(u(&v, "/summary/http2/max_streams_in_flight"), 5, "{url}");
        }
    }
}

#[test]
fn issue_27_a_server_stream_limit_below_streams_is_honoured_and_recorded() {
    let Some(nginx) = nginx_h2(false, 4) else { return };
    let url = format!("http://127.0.0.1:{}/1k.bin", nginx.port);
    let v = json_of(&http2(&[&url, "--users", "2", "--streams", "10"]));
    check_identities(&v);
    assert!(u(&v, "/summary/responses") > 0, "{}", v["summary"]);
    assert_eq!(u(&v, "/summary/errors/total"), 0, "{}", v["summary"]["errors"]);
    let h2 = &v["summary"]["http2"];
    assert_eq!(u(&v, "/summary/http2/peer_max_concurrent_streams"), 4, "{h2}");
    assert_eq!(h2["capped"], true, "{h2}");
    // Only one stream goes out before the server's SETTINGS are known; then the slots past its
    // limit retire: never more than 4 in flight, and none refused (nginx resets the streams past
    // its limit).
    let most = u(&v, "/summary/http2/max_streams_in_flight");
    assert!((1..=4).contains(&most), "{h2}");
}

/// What the tiny h2c server does with its streams.
#[derive(Clone, Copy, PartialEq)]
enum Tiny {
    /// Answers every stream with RST_STREAM(REFUSED_STREAM).
    Reset,
    /// Sends a GOAWAY (ENHANCE_YOUR_CALM) before any stream is processed.
    GoAway,
    /// Takes every stream and never answers it.
    Silent,
}

/// A tiny h2c server on 127.0.0.1 (the h2 crate, its own thread and runtime), doing `mode`.
/// Stops with the test process.
fn tiny_h2_server(mode: Tiny) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((s, _)) = listener.accept().await {
                tokio::task::spawn_local(async move {
                    let Ok(mut conn) = h2::server::handshake::<_>(s).await else {
                        return;
                    };
                    let _: &h2::server::Connection<_, bytes::Bytes> = &conn;
                    if mode == Tiny::GoAway {
                        conn.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
                    }
                    let mut held = Vec::new();
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        if mode == Tiny::Silent {
                            held.push(respond);
                        } else {
                            respond.send_reset(h2::Reason::REFUSED_STREAM);
                        }
                    }
                });
            }
        });
    });
    addr
}

#[test]
fn issue_27_rst_stream_and_goaway_are_errors_of_their_own_class() {
    for reset in [true, false] {
        let addr = tiny_h2_server(if reset { Tiny::Reset } else { Tiny::GoAway });
        let url = format!("http://{addr}/x");
        let out = http2(&[&url, "--users", "2", "--streams", "4", "-d", "1s"]);
        // Not one request succeeded: a failed run, its document printed all the same.
        let v = json_with_status(&out, 4);
        check_identities(&v);
        let e = &v["summary"]["errors"];
        assert_eq!(u(&v, "/summary/responses"), 0, "{e}");
        if reset {
            assert!(u(&v, "/summary/errors/rst_stream") > 0, "{e}");
            assert_eq!(
                u(&v, "/summary/errors/rst_stream"),
                u(&v, "/summary/errors/total"),
                "{e}"
            );
        } else {
            assert!(u(&v, "/summary/errors/goaway") > 0, "{e}");
            assert_eq!(u(&v, "/summary/errors/rst_stream"), 0, "{e}");
        }
    }
}

#[test]
fn issue_27_streams_without_http2_is_a_usage_error() {
    let out = linerate(&["http", "http://127.0.0.1:9/x", "--streams", "4", "--no-agent"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = linerate(
        &[
            "http",
            "http://127.0.0.1:9/x",
            "--http2",
            "--streams",
            "0",
            "--no-agent",
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn issue_27_h2_streams_a_server_never_answers_time_out_and_the_run_ends() {
    let addr = tiny_h2_server(Tiny::Silent);
    let url = format!("http://{addr}/x");
    let began = std::time::Instant::now();
    let out = http2(&[&url, "--users", "1", "--streams", "3", "-d", "2s", "--timeout", "300ms"]);
    let v = json_with_status(&out, 4);
    check_identities(&v);
    let e = &v["summary"]["errors"];
    assert_eq!(u(&v, "/summary/responses"), 0, "{e}");
    // Three streams at a time, each cancelled at its deadline and sent again: several rounds.
    assert!(u(&v, "/summary/errors/timeout") >= 3, "{e}");
    assert_eq!(u(&v, "/summary/errors/timeout"), u(&v, "/summary/errors/total"), "{e}");
    assert_eq!(
        u(&v, "/summary/connections/attempted"),
        1,
        "{}",
        v["summary"]["connections"]
    );
    assert!(began.elapsed() < Duration::from_secs(20), "took {:?}", began.elapsed());
}

#[test]
fn issue_27_h2_bodies_past_the_windows_come_whole_and_statuses_count() {
    let agent = Agent::start(&["--http-port", "0"]);
    let http_addr = agent.http_addr.clone().expect("http");
    // 3 MiB a response: past the 1 MiB stream window, so the client must give it back.
    let big = format!("http://{http_addr}/bytes/3145728");
    let v = json_of(&http2(&[&big, "--users", "1", "--streams", "4", "-d", "1s"]));
    check_identities(&v);
    let responses = u(&v, "/summary/responses");
    assert!(responses > 0, "{}", v["summary"]);
    assert_eq!(u(&v, "/summary/errors/total"), 0, "{}", v["summary"]["errors"]);
    assert_eq!(u(&v, "/summary/body_bytes"), responses * 3_145_728);
    // A route the server does not have: 404, each a bad status.
    let missing = format!("http://{http_addr}/nothing-here");
    let out = http2(&[&missing, "--users", "1", "--streams", "2", "-d", "500ms"]);
    let v = json_with_status(&out, 4);
    check_identities(&v);
    let bad = u(&v, "/summary/errors/bad_status");
    assert!(bad > 0, "{}", v["summary"]["errors"]);
    assert_eq!(bad, u(&v, "/summary/errors/total"), "{}", v["summary"]["errors"]);
}

/// What a raw HTTP/2 server saw of the client's request heads.
#[derive(Default)]
struct Heads {
    connections: AtomicU64,
    blocks: AtomicU64,
    /// Blocks that began with a dynamic table size update to 0.
    updates: AtomicU64,
    /// Blocks that indexed a field or referred to a dynamic entry.
    indexing: AtomicU64,
    /// What each answer says: a content-length (raw digits) when set, and its body's bytes.
    content_length: Option<u64>,
    body: usize,
}

/// A raw HTTP/2 server on 127.0.0.1 (a thread per connection, blocking reads) that allows no
/// HPACK table (SETTINGS_HEADER_TABLE_SIZE 0, sent first) and answers every request 200 with
/// the content-length and body `heads` names (by default none), noting in `heads` what each
/// request head held. Stops with the test process.
fn no_table_h2_server(heads: Arc<Heads>) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let heads = Arc::clone(&heads);
            std::thread::spawn(move || {
                heads.connections.fetch_add(1, Relaxed);
                let mut preface = [0u8; 24];
                let settings = [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
                if conn.read_exact(&mut preface).is_err() || conn.write_all(&settings).is_err() {
                    return;
                }
                let mut head = [0u8; 9];
                while conn.read_exact(&mut head).is_ok() {
                    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
                    let mut payload = vec![0u8; len];
                    if conn.read_exact(&mut payload).is_err() {
                        return;
                    }
                    let reply = match head[3] {
                        // SETTINGS: acknowledged.
                        4 if head[4] & 1 == 0 => vec![0, 0, 0, 4, 1, 0, 0, 0, 0],
                        // HEADERS (linerate's: one frame, no padding): 200, the stream ended.
                        1 => {
                            heads.blocks.fetch_add(1, Relaxed);
                            let mut block = &payload[..];
                            if block.first() == Some(&0x20) {
                                heads.updates.fetch_add(1, Relaxed);
                                block = &block[1..];
                            }
                            if indexes(block) {
                                heads.indexing.fetch_add(1, Relaxed);
                            }
                            // :status 200, then content-length (28) without indexing.
                            let mut block = vec![0x88];
                            if let Some(n) = heads.content_length {
                                let digits = n.to_string();
                                block.extend([0x0f, 0x0d, digits.len() as u8]);
                                block.extend(digits.bytes());
                            }
                            // END_HEADERS, and END_STREAM when no DATA follows.
                            let flags = if heads.body == 0 { 5 } else { 4 };
                            let mut r = vec![0, 0, block.len() as u8, 1, flags];
                            r.extend_from_slice(&head[5..9]);
                            r.extend(block);
                            if heads.body > 0 {
                                r.extend([0, 0, heads.body as u8, 0, 1]);
                                r.extend_from_slice(&head[5..9]);
                                r.extend(std::iter::repeat_n(b'x', heads.body));
                            }
                            r
                        }
                        _ => continue,
                    };
                    if conn.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Whether an HPACK block inserts a field into the table (a literal with incremental indexing)
/// or refers to a dynamic entry (an index from 62); a block that does not parse counts as one.
fn indexes(block: &[u8]) -> bool {
    fn int(b: &[u8], at: &mut usize, bits: u32) -> Option<usize> {
        let max = (1usize << bits) - 1;
        let mut v = usize::from(*b.get(*at)?) & max;
        *at += 1;
        if v == max {
            let mut shift = 0;
            loop {
                let byte = *b.get(*at)?;
                *at += 1;
                v += usize::from(byte & 0x7f) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    break;
                }
            }
        }
        Some(v)
    }
    let mut at = 0;
    while at < block.len() {
        let first = block[at];
        let (bits, inserts) = match first {
            0x80.. => (7, false),
            0x40..=0x7f => (6, true),
            0x20..=0x3f => (5, false),
            _ => (4, false),
        };
        let Some(index) = int(block, &mut at, bits) else {
            return true;
        };
        if inserts || (first >= 0x80 && index >= 62) || (first < 0x20 && index >= 62) {
            return true;
        }
        if first >= 0x20 {
            continue;
        }
        for _ in 0..if index == 0 { 2 } else { 1 } {
            let Some(len) = int(block, &mut at, 7) else { return true };
            at += len;
        }
    }
    at != block.len()
}

#[test]
fn issue_27_h2_requests_index_their_fields_only_where_the_server_has_room() {
    // linerate's server keeps h2's 4096-byte table: the fields are indexed after the first
    // request, and a wrong index would be a 404 or a GOAWAY.
    let agent = Agent::start(&["--http-port", "0"]);
    let url = format!("http://{}/bytes/16", agent.http_addr.clone().expect("http"));
    let v = json_of(&http2(&[&url, "--users", "2", "--streams", "4", "-d", "1s"]));
    check_identities(&v);
    assert!(u(&v, "/summary/responses") > 100, "{}", v["summary"]);
    assert_eq!(u(&v, "/summary/errors/total"), 0, "{}", v["summary"]["errors"]);
    // A server that allows no table: plain literals all along, and the table's new size said
    // once per connection, at the start of the first block after its SETTINGS.
    let heads = Arc::new(Heads::default());
    let url = format!("http://{}/x", no_table_h2_server(Arc::clone(&heads)));
    let v = json_of(&http2(&[&url, "--users", "2", "--streams", "4", "-d", "1s"]));
    check_identities(&v);
    assert!(u(&v, "/summary/responses") > 100, "{}", v["summary"]);
    assert_eq!(u(&v, "/summary/errors/total"), 0, "{}", v["summary"]["errors"]);
    let connections = heads.connections.load(Relaxed);
    assert_eq!(connections, 2);
    assert!(heads.blocks.load(Relaxed) > 100);
    assert_eq!(heads.indexing.load(Relaxed), 0, "blocks that indexed into no table");
    assert_eq!(
        heads.updates.load(Relaxed),
        connections,
        "one table size update per connection"
    );
}

/// RFC 9113 8.1.1: a body shorter than its content-length is a short body, a longer one a bad
/// response; the same length is a response.
#[test]
fn issue_27_h2_bodies_are_checked_against_their_content_length() {
    for (length, body, class) in [
        (10, 10, None),
        (10, 4, Some("short_body")),
        (4, 10, Some("bad_response")),
    ] {
        let heads = Arc::new(Heads {
            content_length: Some(length),
            body,
            ..Heads::default()
        });
        let url = format!("http://{}/x", no_table_h2_server(heads));
        let out = http2(&[&url, "--users", "1", "--streams", "2", "-d", "500ms"]);
        let v = match class {
            None => json_of(&out),
            Some(_) => json_with_status(&out, 4),
        };
        check_identities(&v);
        let e = &v["summary"]["errors"];
        match class {
            None => {
                assert!(u(&v, "/summary/responses") > 10, "{}", v["summary"]);
                assert_eq!(u(&v, "/summary/errors/total"), 0, "{e}");
                assert_eq!(u(&v, "/summary/body_bytes"), u(&v, "/summary/responses") * 10);
            }
            Some(class) => {
                assert_eq!(u(&v, "/summary/responses"), 0, "{length} said, {body} sent: {e}");
                assert!(
                    e[class].as_u64().is_some_and(|n| n > 10),
                    "{length} said, {body} sent: {e}"
                );
                assert_eq!(e[class], e["total"], "{e}");
            }
        }
    }
}
