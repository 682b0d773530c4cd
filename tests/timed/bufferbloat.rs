//! Bufferbloat in the lab: a link's queue (`buffer=`) where the kernel holds it and as the
//! record names it, and on a link of 100 Mbit/s and 10 ms each way whose queue holds 200 ms or
//! 5 ms, a saturating `linerate tcp` across it with ping (iputils) beside the load in the same
//! lab: the round trip the queue adds, measured by a tool of its own.

use crate::util::*;
use macro_rules_attribute::apply;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// Round trips ping printed from h1 to h2, ms, one per reply: `count` at 0.1 s.
fn ping(lab: &Lab, count: u32) -> Vec<f64> {
    crate::lab::ping_every(lab, "h1", "h2", count, "0.1")
}

/// What ping reads on an idle link and beside a 10 s `linerate tcp ARGS` from h1 to h2's agent
/// (50 pings from its 3rd second to its 8th, past its start-up), sorted; and the load's
/// throughput, Mbit/s of what h2 received.
struct Bloat {
    idle: Vec<f64>,
    loaded: Vec<f64>,
    mbps: f64,
}

impl Bloat {
    fn measure(lab: &Lab, tcp: &[&str]) -> Bloat {
        // The first echo also waits for ARP: left out.
        let mut idle = ping(lab, 31)[1..].to_vec();
        let mut cmd = linerate_command();
        cmd.args([
            "lab", "exec", "--name", &lab.name, "h1", "--", "linerate", "tcp", "--json", "h2", "-t", "10",
        ])
        .args(tcp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let load = cmd.spawn().expect("spawn linerate tcp");
        std::thread::sleep(Duration::from_secs(3));
        let mut loaded = ping(lab, 50);
        let v = json_of(&wait_bounded(load, LIMIT));
        idle.sort_by(f64::total_cmp);
        loaded.sort_by(f64::total_cmp);
        assert_eq!(loaded.len(), 50, "every ping beside the load answered: {loaded:?}");
        Bloat {
            idle,
            loaded,
            mbps: f(&v, "/summary/received/bits_per_second") / 1e6,
        }
    }

    fn median(v: &[f64]) -> f64 {
        v[v.len() / 2]
    }

    /// The loaded round trip less the idle median at the median, the 90th percentile and the
    /// largest, ms.
    fn added(&self) -> (f64, f64, f64) {
        let idle = Bloat::median(&self.idle);
        let at = |q: f64| self.loaded[((self.loaded.len() - 1) as f64 * q).round() as usize] - idle;
        (at(0.5), at(0.9), at(1.0))
    }

    fn say(&self, what: &str) -> String {
        let (m, p90, max) = self.added();
        format!(
            "{what}: idle median {:.1} ms; loaded median {:.1} ms, added median {m:.1} / p90 {p90:.1} / max {max:.1} ms; \
             {:.1} Mbit/s; idle {:?}; loaded {:?}",
            Bloat::median(&self.idle),
            Bloat::median(&self.loaded),
            self.mbps,
            self.idle,
            self.loaded
        )
    }
}

/// Whether the kernel offers congestion control `cc` to every namespace.
fn has_cc(cc: &str) -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .is_ok_and(|a| a.split_whitespace().any(|c| c == cc))
}

fn idle_is_20ms(b: &Bloat, say: &str) {
    let idle = Bloat::median(&b.idle);
    assert!(
        (19.5..=21.0).contains(&idle),
        "idle median {idle} ms, want 20 ± 1: {say}"
    );
}

/// A 200 ms FIFO under four cubic flows: ping beside them waits about 200 ms more. cubic
/// fills a FIFO until it drops and then backs off to 0.7 of its window: with the window at
/// the bandwidth-delay product (250 kB) plus the FIFO (2.5 MB), that leaves the FIFO at least
/// 134 ms full, so its depth swings between about 134 and 200 ms (four flows, dropped at one
/// tail, back off together). The median added is therefore 150 to 205 ms; the largest cannot
/// pass 200 ms of queue plus the 2 ms bucket and a few ms of the relay's scheduling (210), and
/// reaches 185 as the FIFO fills. (bbr, which paces to its estimate of the path, kept this
/// FIFO about 20 ms full: the load is cubic on purpose.)
#[apply(timed!)]
fn a_200ms_fifo_adds_about_200ms_to_the_round_trip_under_load() {
    if !has_cc("cubic") {
        eprintln!("skipped: the kernel offers no cubic congestion control");
        return;
    }
    let Some(lab) = Lab::up(2, &["rate=100mbit,delay=10ms,buffer=200ms"]) else {
        return;
    };
    assert_eq!(
        lab.status["hosts"][0]["queues"][0]["text"],
        "tbf fifo 200 ms (2500000 bytes)"
    );
    let b = Bloat::measure(&lab, &["-C", "cubic", "-P", "4"]);
    let say = b.say("buffer=200ms, cubic -P 4");
    eprintln!("{say}");
    idle_is_20ms(&b, &say);
    let (median, _, max) = b.added();
    assert!(
        (150.0..=205.0).contains(&median),
        "added median {median:.1} ms, want 150-205: {say}"
    );
    assert!(
        (185.0..=210.0).contains(&max),
        "added max {max:.1} ms, want 185-210: {say}"
    );
    // The link stays full while the queue stands: 100 Mbit/s of frames carry 95.6 of TCP payload.
    assert!(b.mbps >= 90.0, "{:.1} Mbit/s: {say}", b.mbps);
}

/// A 5 ms FIFO: ping beside a saturating load waits under 10 ms more (the FIFO's 5 ms and the
/// 2 ms bucket; the median and the 90th percentile, as the relay's scheduling on a busy machine
/// adds the odd late reply), and the load still fills the link, within 10 % of 100 Mbit/s. The
/// load is four bbr flows, which keep a few ms standing in the FIFO: a queue a quarter of the
/// bandwidth-delay product is too short for cubic to keep the link busy after each back-off
/// (measured here: 83 Mbit/s with one cubic flow, 89 with four, 92 with sixteen), the textbook
/// buffer-sizing result, not the lab's; and one bbr flow, which keeps less standing, lets the
/// link idle when the relay is late on a busy machine (89.5 to 92.4 Mbit/s at a load average
/// of 15 on two vCPUs; four: 93.0 and 93.1).
#[apply(timed!)]
fn a_5ms_fifo_keeps_the_round_trip_and_fills_the_link() {
    if !has_cc("bbr") {
        eprintln!("skipped: the kernel offers no bbr congestion control");
        return;
    }
    let Some(lab) = Lab::up(2, &["rate=100mbit,delay=10ms,buffer=5ms"]) else {
        return;
    };
    assert_eq!(
        lab.status["hosts"][0]["queues"][0]["text"],
        "tbf fifo 5 ms (62500 bytes)"
    );
    let b = Bloat::measure(&lab, &["-C", "bbr", "-P", "4"]);
    let say = b.say("buffer=5ms, bbr -P 4");
    eprintln!("{say}");
    idle_is_20ms(&b, &say);
    let (median, p90, _) = b.added();
    assert!(
        median < 10.0 && p90 < 10.0,
        "added median {median:.1}, p90 {p90:.1} ms, want < 10: {say}"
    );
    assert!(b.mbps >= 90.0, "{:.1} Mbit/s, want within 10 % of 100: {say}", b.mbps);
}

/// A link's queue as tc holds it: (tbf's `lat` in µs, its burst in bytes) on `dev` in `ns`.
fn tbf_latency_us(ns: &str, dev: &str) -> (u64, u64) {
    let out = Command::new("tc")
        .args(["-n", ns, "-j", "qdisc", "show", "dev", dev])
        .output()
        .expect("tc");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("tc -j");
    let tbf = v
        .as_array()
        .and_then(|q| q.iter().find(|q| q["kind"] == "tbf"))
        .unwrap_or_else(|| panic!("no tbf on {ns} {dev}: {v}"));
    (u(tbf, "/options/lat"), u(tbf, "/options/burst"))
}

/// `buffer=200ms` on a two-host link: both ways are held on the switch's ports (past the
/// sending host, so that the queue fills as a router's does), each a tbf FIFO of 200 ms at the
/// rate, 2500000 bytes; the record names it and `lab status` prints it.
#[apply(timed!)]
fn a_buffer_in_time_is_the_switch_ports_fifo_and_the_record_names_it() {
    let Some(lab) = Lab::up(2, &["rate=100mbit,delay=1ms,buffer=200ms"]) else {
        return;
    };
    assert_eq!(lab.status["topology"], "relay");
    crate::unit_check::check_units("lab status", &lab.status);
    for (i, h) in lab.status["hosts"].as_array().expect("hosts").iter().enumerate() {
        let queues = h["queues"].as_array().expect("queues");
        assert_eq!(queues.len(), 2, "{h}");
        let (out, inn) = (&queues[0], &queues[1]);
        assert_eq!((out["way"].as_str(), inn["way"].as_str()), (Some("out"), Some("in")));
        // What h1 sends waits at the port toward h2, and the other way round.
        assert_eq!(out["at"], format!("switch port p{}", 2 - i), "{h}");
        assert_eq!(inn["at"], format!("switch port p{}", i + 1), "{h}");
        for q in queues {
            assert_eq!(q["shaper"], "tbf");
            assert_eq!(q["kind"], "fifo");
            assert_eq!(f(q, "/depth_ms"), 200.0);
            assert_eq!(u(q, "/depth_bytes"), 2_500_000);
            assert_eq!(q["default_depth"], false);
            assert_eq!(q["text"], "tbf fifo 200 ms (2500000 bytes)");
        }
        assert_eq!(h["backends"]["rate"], format!("tbf on switch port p{}", 2 - i));
        // The sending host's own eth0 is left unshaped: its queue would be the host's own.
        let eth0 = Command::new("tc")
            .args([
                "-n",
                &lab.namespace(&format!("h{}", i + 1)),
                "qdisc",
                "show",
                "dev",
                "eth0",
            ])
            .output()
            .expect("tc");
        assert!(
            !String::from_utf8_lossy(&eth0.stdout).contains("tbf"),
            "h{} eth0",
            i + 1
        );
        // tc holds what the record says: 200 ms of bytes less the 2 ms bucket, as tbf's `lat`.
        let (lat, burst) = tbf_latency_us(&format!("{}-sw", lab.name), &format!("p{}", i + 1));
        assert_eq!(burst, 25_000);
        assert_eq!(lat, 198_000, "p{}", i + 1);
    }
    let text = linerate(&["lab", "status", "--name", &lab.name], LIMIT);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    let h1 = text.lines().find(|l| l.starts_with("h1 ")).expect("h1's line");
    assert!(
        h1.contains("queue:tbf fifo 200 ms (2500000 bytes), out on switch port p2, in on switch port p1"),
        "{text}"
    );
    assert!(h1.contains("buffer=200ms"), "{text}");
    // The lab carries traffic through its queue.
    let v = lab.tcp("h1", "h2", &["-n", "20"]);
    assert_eq!(u(&v, "/summary/received/bytes"), 20 * 131_072);
}

/// `buffer=300p` on one host of three: its own eth0 (what it sends) and the switch port toward
/// it (what it receives) each hold 300 frames; the other hosts keep tbf's default 50 ms, which
/// the record says is the default.
#[apply(timed!)]
fn a_buffer_in_packets_applies_to_each_tbf_of_its_link() {
    let Some(lab) = Lab::up(3, &["rate=100mbit", "h3:buffer=300p"]) else {
        return;
    };
    // A queue past the hosts needs the switch the relay makes; no delay, so it only forwards.
    assert_eq!(lab.status["topology"], "relay");
    let h3 = &lab.status["hosts"][2];
    let queues = h3["queues"].as_array().expect("queues");
    let at: Vec<&str> = queues.iter().filter_map(|q| q["at"].as_str()).collect();
    assert_eq!(at, ["h3's eth0", "switch port p3"]);
    for q in queues {
        assert_eq!(u(q, "/depth_packets"), 300);
        assert_eq!(u(q, "/depth_bytes"), 300 * 1514);
        assert!(q["depth_ms"].is_null(), "{q}");
    }
    let h1 = &lab.status["hosts"][0];
    assert_eq!(h1["queues"][0]["default_depth"], true, "{h1}");
    assert_eq!(h1["queues"][0]["text"], "tbf fifo 50 ms (default; 650000 bytes)");
    let v = lab.tcp("h1", "h3", &["-n", "20"]);
    assert_eq!(u(&v, "/summary/received/bytes"), 20 * 131_072);
}
