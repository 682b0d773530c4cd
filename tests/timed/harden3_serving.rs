//! `serve --metrics` under idle connections: a scrape behind 20 idle
//! connections, and five scrapes in a row while one client keeps 10 open, each answered within
//! the endpoint's 2 s deadline (docs/security.md), Prometheus' scrape timeout being 10 s.

use crate::attack::StopOnDrop;
use crate::util::*;
use macro_rules_attribute::apply;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The endpoint's deadline for one request (`agent::exporter::REQUEST_TIMEOUT`): a scrape that
/// waits for nobody else takes milliseconds, so this bound holds on a loaded machine and a
/// scrape queued behind even one idle connection (2 s each) misses it.
const DEADLINE: Duration = Duration::from_secs(2);
/// How long a scrape is waited for at most: past the 40 s 20 queued connections cost before.
const PATIENCE: Duration = Duration::from_secs(45);

/// `GET /metrics` on `addr`: how long the whole answer took, and its status line.
fn scrape(addr: &str) -> (Duration, String) {
    let start = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr.parse().expect("addr"), PATIENCE).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).expect("timeout");
    s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .expect("send");
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let took = start.elapsed();
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("# EOF"), "no whole exposition after {took:?}: {text:?}");
    (took, text.lines().next().unwrap_or_default().to_string())
}

#[apply(timed!)]
fn issue_39_a_scrape_behind_20_idle_connections_is_answered_within_2_s() {
    let (_agent, _addr, metrics) = agent_with_metrics();
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(&metrics).expect("an idle connection"))
        .collect();
    // They are accepted before the scrape connects.
    std::thread::sleep(Duration::from_millis(200));
    let (took, status) = scrape(&metrics);
    assert_eq!(status, "HTTP/1.1 200 OK");
    eprintln!("the scrape behind 20 idle connections took {took:?}");
    assert!(took < DEADLINE, "the scrape behind 20 idle connections took {took:?}");
    drop(idle);
}

#[apply(timed!)]
fn issue_39_one_client_holding_10_connections_delays_no_scrape() {
    let (_agent, _addr, metrics) = agent_with_metrics();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        let holder = scope.spawn(|| {
            // Ten connections that send nothing, each reopened as soon as the endpoint closes it.
            let mut held: Vec<TcpStream> = Vec::new();
            let mut opened = 0u32;
            while !stop.load(Ordering::Relaxed) {
                held.retain(|s| !crate::attack::closed_by_peer(s));
                while held.len() < 10 {
                    let Ok(s) = TcpStream::connect(&metrics) else { break };
                    held.push(s);
                    opened += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            opened
        });
        std::thread::sleep(Duration::from_millis(300));
        for i in 0..5 {
            let (took, status) = scrape(&metrics);
            assert_eq!(status, "HTTP/1.1 200 OK");
            eprintln!("scrape {i} beside 10 held connections took {took:?}");
            assert!(took < DEADLINE, "scrape {i} took {took:?} beside 10 held connections");
        }
        stop.store(true, Ordering::Relaxed);
        let opened = holder.join().expect("the holder");
        assert!(opened >= 10, "the holder opened {opened}");
    });
}
