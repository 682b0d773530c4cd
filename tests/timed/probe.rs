//! `--probe` timed: latency under load across a lab link of 100 Mbit/s and 10 ms each way whose
//! queue is a deep FIFO (200 ms: the load adds about its depth, and `ping` beside the test sees
//! the same) or a shallow one (5 ms: the load adds little and still fills the link).

use crate::util::*;
use macro_rules_attribute::apply;
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// `linerate tcp h2 --probe rr` from h1: 2 s idle, 10 s of `streams` cubic streams, 2 s
/// recovery.
fn probed_load(lab: &Lab, streams: &str) -> Value {
    let args = [
        "-C",
        "cubic",
        "-P",
        streams,
        "-t",
        "10",
        "--probe",
        "rr",
        "--probe-rate",
        "20",
        "--probe-idle",
        "2",
        "--probe-recovery",
        "2",
    ];
    lab.tcp("h1", "h2", &args)
}

/// The median of `ping`'s round trips, ms.
fn ping_median(out: &std::process::Output) -> f64 {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ms: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(ms.len() >= 10, "too few pings: {text}");
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// The 200 ms FIFO: idle 20 ms, the load adds about 200 ms (on the way up, where the queue is),
/// and ping run beside it in the same lab, from 4 s to 10 s into the probes (inside the load),
/// agrees with the probes' loaded median within 10 %.
#[apply(timed!)]
fn issue_41_a_200ms_fifo_adds_about_its_depth_under_load_and_ping_agrees() {
    let Some(lab) = Lab::up(2, &["rate=100mbit,delay=10ms,buffer=200ms"]) else {
        return;
    };
    let (v, ping) = std::thread::scope(|s| {
        let ping = s.spawn(|| {
            std::thread::sleep(Duration::from_secs(4));
            lab.exec("h1", &["ping", "-n", "-i", "0.2", "-c", "30", "h2"], LIMIT)
        });
        // Sixteen streams: a loss backs off one of them, so the FIFO stays nearer full than
        // under four (cubic's sawtooth: 4 streams added 161 ms at the median, 16 added 179).
        let v = probed_load(&lab, "16");
        (v, ping.join().expect("ping's thread"))
    });
    let l = &v["latency"];
    let (idle, loaded, added) = (f(l, "/idle_ms"), f(l, "/loaded_ms"), f(l, "/added_ms"));
    let head = l["series"]
        .as_array()
        .and_then(|s| s.first())
        .expect("the probes' series");
    let p90 = f(head, "/loaded/rtt_ms/p90");
    let ping = ping_median(&ping);
    eprintln!(
        "200 ms FIFO: idle {idle:.2} ms, loaded {loaded:.2} ms (p90 {p90:.2}), added {added:.2} ms; ping beside it {ping:.2} ms"
    );
    assert!((19.5..=25.0).contains(&idle), "idle {idle} ms, want 20 ms");
    assert!((130.0..=235.0).contains(&added), "added {added} ms, want about 200 ms");
    assert!(p90 - idle >= 170.0, "the full queue: p90 {p90} ms");
    assert!(
        (ping - loaded).abs() <= 0.1 * ping,
        "ping {ping} ms against probes {loaded} ms"
    );
    // One host's clock: the queue is on the way up (h1 sends the load).
    let (up, down) = (f(l, "/added_up_ms"), f(l, "/added_down_ms"));
    eprintln!("added up {up:.2} ms, down {down:.2} ms");
    assert!(up > 150.0 && down.abs() < 15.0, "up {up} ms, down {down} ms");
    // The grade is of the round trip's increase, in its band: C under 200 ms, D from 200.
    let letter = bufferbloat_letter(l, added);
    assert!(letter == "C" || letter == "D", "{letter}");
}

/// The bufferbloat grade's letter, checked to be the band of `added` (the run's one load: the
/// round trip's increase), and its rule printed.
fn bufferbloat_letter(l: &Value, added: f64) -> String {
    let g = l["grades"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["scale"] == "bufferbloat"))
        .expect("a bufferbloat grade");
    eprintln!("grade {}: {}", g["grade"], g["rule"]);
    assert_eq!(f(g, "/value"), added, "graded from the round trip's increase");
    let band = [(5.0, "A+"), (30.0, "A"), (60.0, "B"), (200.0, "C"), (400.0, "D")]
        .iter()
        .find(|(edge, _)| added < *edge)
        .map_or("F", |(_, name)| name);
    assert_eq!(g["grade"], band, "{g}");
    band.to_string()
}

/// The 5 ms FIFO: the load adds under 10 ms and still carries within 10 % of the link.
#[apply(timed!)]
fn issue_41_a_5ms_fifo_adds_under_10ms_and_fills_the_link() {
    let Some(lab) = Lab::up(2, &["rate=100mbit,delay=10ms,buffer=5ms"]) else {
        return;
    };
    let v = probed_load(&lab, "4");
    let l = &v["latency"];
    let (idle, added) = (f(l, "/idle_ms"), f(l, "/added_ms"));
    let bits = f(&v, "/summary/received/bits_per_second");
    eprintln!(
        "5 ms FIFO: idle {idle:.2} ms, added {added:.2} ms, {:.1} Mbit/s",
        bits / 1e6
    );
    assert!((19.5..=25.0).contains(&idle), "idle {idle} ms, want 20 ms");
    assert!(added < 10.0, "added {added} ms");
    assert!(bits >= 90e6, "{bits} bit/s: not within 10 % of 100 Mbit/s");
    let letter = bufferbloat_letter(l, added);
    assert!(letter == "A+" || letter == "A", "{letter}");
}
