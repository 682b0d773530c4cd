//! The engine against a small HTTP/2 (h2c) responsiveness server of the test's own on loopback:
//! the draft's four URLs, a large object that never ends and a sink that reads everything.

use super::*;
use crate::spec::RpmDirection;
use bytes::Bytes;
use std::net::{Ipv4Addr, SocketAddr};

/// Serves the draft's URLs on loopback for `life`, then drops every connection (a server that
/// stops mid-test). Returns its address.
pub(crate) fn server(life: Duration) -> SocketAddr {
    let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    std_listener.set_nonblocking(true).expect("nonblocking");
    let addr = std_listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let rt = runtime().expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
            let accept = async {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::task::spawn_local(connection(stream, addr));
                }
            };
            let _ = tokio::time::timeout(life, accept).await;
        });
        // The runtime's drop ends every connection's task: their sockets close.
    });
    addr
}

async fn connection(stream: tokio::net::TcpStream, addr: SocketAddr) {
    let Ok(mut conn) = h2::server::handshake(stream).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        tokio::task::spawn_local(async move {
            let ok = |len: Option<usize>| {
                let mut r = http::Response::builder().status(200);
                if let Some(n) = len {
                    r = r.header("content-length", n);
                }
                r.body(()).expect("response")
            };
            match req.uri().path() {
                "/.well-known/nq" => {
                    let doc = format!(
                        r#"{{"version":1,"urls":{{"small_download_url":"http://{addr}/small","large_download_url":"http://{addr}/large","upload_url":"http://{addr}/upload"}}}}"#
                    );
                    let mut s = respond.send_response(ok(Some(doc.len())), false).expect("send");
                    let _ = s.send_data(Bytes::from(doc), true);
                }
                "/small" => {
                    let mut s = respond.send_response(ok(Some(1)), false).expect("send");
                    let _ = s.send_data(Bytes::from_static(b"x"), true);
                }
                "/large" => {
                    let mut s = respond.send_response(ok(None), false).expect("send");
                    let zeros = Bytes::from(vec![0u8; 16 << 10]);
                    loop {
                        s.reserve_capacity(zeros.len());
                        match std::future::poll_fn(|cx| s.poll_capacity(cx)).await {
                            Some(Ok(n)) if n > 0 => {
                                if s.send_data(zeros.slice(..n), false).is_err() {
                                    return;
                                }
                            }
                            Some(Ok(_)) => {}
                            _ => return,
                        }
                    }
                }
                "/upload" => {
                    let mut body = req.into_body();
                    while let Some(Ok(chunk)) = body.data().await {
                        let _ = body.flow_control().release_capacity(chunk.len());
                    }
                    let _ = respond.send_response(ok(Some(0)), true);
                }
                _ => {
                    let r = http::Response::builder().status(404).body(()).expect("response");
                    let _ = respond.send_response(r, true);
                }
            }
        });
    }
}

pub(crate) fn spec_for(addr: SocketAddr, direction: RpmDirection) -> RpmSpec {
    let mut s = RpmSpec::new(&format!("http://{addr}/.well-known/nq"));
    s.direction = direction;
    s.mad = 2;
    s.max_connections = 3;
    s.probes_per_second = 20;
    s.idle_probes = 3;
    s.timeout_ms = 2000;
    s.timing.interval_seconds = 0.25;
    s.timing.limit = crate::spec::Limit::Seconds(2.0);
    s.validate().expect("valid");
    s
}

pub(crate) fn target(addr: SocketAddr) -> RpmServer {
    let endpoint = Endpoint { addr, tls: None };
    let url: http::Uri = format!("http://{addr}/.well-known/nq").parse().expect("uri");
    let urls = fetch_config(&url, &endpoint, None, Duration::from_secs(5)).expect("the configuration");
    RpmServer { urls, endpoint }
}

#[test]
fn a_run_loads_both_ways_probes_and_ends_within_its_limit() {
    let addr = server(Duration::from_secs(30));
    let server = target(addr);
    assert_eq!(server.urls.small.path(), "/small");
    let spec = spec_for(addr, RpmDirection::Both);
    let began = Instant::now();
    let run = run(&spec, &server, None, &AtomicBool::new(false)).expect("runs");
    // Two stages at most 2 s each would be 4: one stage here, with slack for a loaded box.
    assert!(began.elapsed() < Duration::from_secs(6), "{:?}", began.elapsed());
    assert!(run.failure.is_none(), "{:?}", run.failure);
    assert_eq!(run.idle.foreign.len(), 3);
    assert_eq!(run.idle.own.len(), 3);
    assert_eq!(run.stages.len(), 1);
    let s = &run.stages[0];
    assert!(s.down && s.up);
    let down: u64 = s.intervals.iter().map(|i| i.down_bytes).sum();
    let up: u64 = s.intervals.iter().map(|i| i.up_bytes).sum();
    assert!(down > 0 && up > 0, "down {down} up {up}");
    assert!(!s.probes.foreign.is_empty() && !s.probes.own.is_empty());
    // Cleartext: the TCP-only formula, no TLS figure.
    assert!(s.probes.foreign.iter().all(|p| p.tls_ms.is_none()));
    assert!(s.means.tcp_ms.is_some() && s.means.http_ms.is_some() && s.means.self_ms.is_some());
    assert_eq!(s.means.tls_ms, None);
    let p = &s.probes;
    assert!(p.foreign_sent >= p.foreign.len() as u64 + p.foreign_lost);
    assert!(p.own_sent >= p.own.len() as u64 + p.own_lost);
}

#[test]
fn sequential_runs_a_download_stage_then_an_upload_stage() {
    let addr = server(Duration::from_secs(30));
    let mut spec = spec_for(addr, RpmDirection::Sequential);
    spec.timing.limit = crate::spec::Limit::Seconds(1.0);
    let run = run(&spec, &target(addr), None, &AtomicBool::new(false)).expect("runs");
    let ways: Vec<(bool, bool)> = run.stages.iter().map(|s| (s.down, s.up)).collect();
    assert_eq!(ways, vec![(true, false), (false, true)]);
    assert!(run.stages[0].intervals.iter().all(|i| i.up_bytes == 0));
    assert!(run.stages[1].intervals.iter().all(|i| i.down_bytes == 0));
    assert!(run.stages[1].intervals.iter().map(|i| i.up_bytes).sum::<u64>() > 0);
}

#[test]
fn a_server_that_stops_ends_the_run_with_what_was_measured() {
    let addr = server(Duration::from_millis(1500));
    let mut spec = spec_for(addr, RpmDirection::Down);
    spec.timing.limit = crate::spec::Limit::Seconds(20.0);
    spec.sdt_percent = 0.0;
    let began = Instant::now();
    let run = run(&spec, &target(addr), None, &AtomicBool::new(false)).expect("runs");
    assert!(began.elapsed() < Duration::from_secs(10), "{:?}", began.elapsed());
    assert!(run.failure.is_some(), "the server's end is the stage's failure");
    let s = &run.stages[0];
    assert!(s.intervals.iter().map(|i| i.down_bytes).sum::<u64>() > 0);
}

#[test]
fn the_goodput_saturates_first_then_the_responsiveness_becomes_stable() {
    let spec = RpmSpec::new("http://x/");
    assert_eq!((spec.mad, spec.sdt_percent), (4, 5.0));
    let mut p = Progress::default();
    let asked = Cell::new(0);
    // Goodput, Mbit/s: its moving averages over 4 intervals are 10, 30, 50, 62.5, 85, 97.5,
    // 100, 100, 100; the last four (97.5, 100, 100, 100: sigma 1.08) are first within 5 % of
    // 100 at the ninth interval (the four before: sigma 6.2, over 5).
    for (i, g) in [10.0, 50.0, 90.0, 100.0, 100.0, 100.0, 100.0, 100.0]
        .into_iter()
        .enumerate()
    {
        p.step(&spec, g * 1e6, || {
            asked.set(asked.get() + 1);
            Some(500.0)
        });
        assert!(!p.goodput_stable, "interval {}", i + 1);
    }
    assert_eq!(asked.get(), 0, "no responsiveness before the goodput is stable");
    assert_eq!(p.goodput_averages[3], 62.5e6);
    // Then RPM 500, 480, 510, 505: sigma 11.4, within 5 % of 505 once four have run.
    for (i, r) in [500.0, 480.0, 510.0, 505.0].into_iter().enumerate() {
        p.step(&spec, 100e6, || Some(r));
        assert!(p.goodput_stable);
        assert_eq!(p.stable, i == 3, "responsiveness {}", i + 1);
    }
    // The goodput's averages stop once it is stable: nine of them.
    assert_eq!(p.goodput_averages.len(), 9);
    assert_eq!(
        stats::confidence(p.responsiveness.len(), 4, p.stable),
        crate::result::Confidence::High
    );
}
