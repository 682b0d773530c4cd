//! A hostile HTTP/2 server against `linerate http --http2`. Each test's server
//! (plain TCP, h2c by prior knowledge, written here) reads the client's preface and nothing
//! after it, and floods one kind of frame: PINGs, SETTINGS, or CONTINUATION frames that never
//! end the header block. The client's peak RSS must stay under 64 MiB and the run must fail
//! (exit status 4) with the flood named in its document. Each server writes at most
//! [`FLOOD_BUDGET`] over all its connections, so the unfixed client (which kept every
//! acknowledgement and every block byte: 2.48 GB, 1.51 GB and 768 MB in 3 s in the issue) cannot
//! take the machine with it; each run lasts 3 s, as the issue's did.

use crate::util::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(40);
/// What one test's server writes at most over all its connections: each flood frame costs the
/// unfixed client at least its own size, so it would end past 256 MiB, four times the bound the
/// tests hold it to.
const FLOOD_BUDGET: i64 = 256 << 20;
/// The client's peak RSS the tests allow, KiB.
const MAX_PEAK_KIB: u64 = 64 << 10;

#[derive(Clone, Copy)]
enum Flood {
    Ping,
    Settings,
    /// HEADERS on stream 1 without END_HEADERS, then CONTINUATION frames of 16 KiB that never
    /// end it.
    Continuation,
}

/// A frame header: `len` bytes of payload, `kind`, `flags`, `stream`.
fn frame_head(len: usize, kind: u8, flags: u8, stream: u32) -> Vec<u8> {
    let mut h = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    h.extend_from_slice(&stream.to_be_bytes());
    h
}

/// The hostile server on 127.0.0.1: a thread per connection that reads the preface, sends an
/// empty SETTINGS and then `flood` until the client leaves or the budget is spent. Stops with
/// the test process.
fn flooding_server(flood: Flood) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let left = Arc::new(AtomicI64::new(FLOOD_BUDGET));
    // 64 KiB of the flood's frames, written again and again.
    let one = match flood {
        Flood::Ping => [frame_head(8, 6, 0, 0), vec![7; 8]].concat(),
        Flood::Settings => frame_head(0, 4, 0, 0),
        Flood::Continuation => [frame_head(16_384, 9, 0, 1), vec![0; 16_384]].concat(),
    };
    let chunk: Arc<Vec<u8>> = Arc::new(one.repeat((64 << 10) / one.len()));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (left, chunk) = (Arc::clone(&left), Arc::clone(&chunk));
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if conn.read_exact(&mut preface).is_err() {
                    return;
                }
                let mut first = frame_head(0, 4, 0, 0);
                if let Flood::Continuation = flood {
                    // :status 200 (indexed), the block left open.
                    first.extend(frame_head(1, 1, 0, 1));
                    first.push(0x88);
                }
                if conn.write_all(&first).is_err() {
                    return;
                }
                while left.fetch_sub(chunk.len() as i64, Relaxed) > 0 {
                    if conn.write_all(&chunk).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// `linerate http --http2` for 3 s against the flooding server: its document and peak RSS (KiB).
fn against(flood: Flood) -> (std::process::Output, u64) {
    let addr = flooding_server(flood);
    let url = format!("http://{addr}/x");
    let mut cmd = Command::new(BIN);
    cmd.args([
        "http",
        "--json",
        "--no-agent",
        "--ramp",
        "0",
        "-d",
        "3s",
        "--http2",
        &url,
        "--users",
        "1",
        "--threads",
        "1",
    ]);
    run_with_peak_rss(&cmd, LIMIT)
}

/// The run failed (exit status 4), its connections ended for `cause` as the server's protocol
/// errors, a note names it, and the client stayed under the bound.
fn check(flood: Flood, cause: &str, words: &str) {
    if !can_run(&[PEAK_RSS]) {
        return;
    }
    let (out, peak_kib) = against(flood);
    let v = json_with_status(&out, 4);
    let h2 = &v["summary"]["http2"];
    assert!(
        h2["protocol_errors"].as_u64().is_some_and(|n| n >= 1),
        "peak {peak_kib} KiB: {h2}"
    );
    assert!(
        h2["protocol_error_causes"][cause].as_u64().is_some_and(|n| n >= 1),
        "{h2}"
    );
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        notes.iter().any(|n| n.contains(words) && n.contains("broke HTTP/2")),
        "{notes:?}"
    );
    // The figures docs/security.md records.
    eprintln!("{cause}: peak RSS {peak_kib} KiB; {}", v["summary"]["http2"]);
    assert!(peak_kib < MAX_PEAK_KIB, "the client's peak RSS was {peak_kib} KiB");
}

#[test]
fn issue_39_a_ping_flood_ends_the_connection_with_memory_bounded() {
    check(Flood::Ping, "ping_flood", "PING flood");
}

#[test]
fn issue_39_a_settings_flood_ends_the_connection_with_memory_bounded() {
    check(Flood::Settings, "settings_flood", "SETTINGS flood");
}

#[test]
fn issue_39_a_continuation_flood_ends_the_connection_with_memory_bounded() {
    check(Flood::Continuation, "continuation_flood", "CONTINUATION flood");
}
