//! Fleets timed: an incast's synchronised start (its skew) and a lab mesh whose one
//! host has a slower link.

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;
use serde_json::Value;
use std::time::Duration;

#[apply(timed!)]
fn issue_24_an_incast_starts_together_through_an_agent_whose_clock_is_2_s_off() {
    let (a, b, to) = (fleet_agent(&[]), fleet_agent(&[]), fleet_agent(&[]));
    let off = fleet_agent(&["--pretend-clock-offset-ms", "2000"]);
    let from = format!("{},{},{}", a.addr, b.addr, off.addr);
    let out = loopback_incast(&from, &to.addr);
    let m = json_of(&out);
    assert_eq!(m["test"], "tcp matrix");
    assert_eq!(m["pattern"], "incast");
    assert_eq!(cells(&m).len(), 3);
    assert_eq!(
        m["rounds"].as_array().expect("rounds").len(),
        1,
        "an incast is one round"
    );
    let host = |name: &str| {
        m["hosts"]
            .as_array()
            .expect("hosts")
            .iter()
            .find(|h| h["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in hosts"))
    };
    let offset_ms = f(&host(&off.addr), "/clock/offset_ns") / 1e6;
    assert!(
        (offset_ms - 2000.0).abs() < 1.0,
        "the 2 s offset estimated within 1 ms: {offset_ms:.3} ms"
    );
    let honest_ms = f(&host(&a.addr), "/clock/offset_ns") / 1e6;
    assert!(honest_ms.abs() < 1.0, "an honest clock reads ~0: {honest_ms:.3} ms");
    let skew_ms = f(&m, "/rounds/0/start_skew_ns") / 1e6;
    assert!(skew_ms < 10.0, "the group started within 10 ms: {skew_ms:.3} ms");
    for c in cells(&m) {
        assert!(c["error"].is_null(), "{}", c["error"]);
        assert!(f(c, "/value") > 0.0);
        let start = &c["start"];
        let late_ms = (f(start, "/actual_unix_ns") - f(start, "/scheduled_unix_ns")) / 1e6;
        assert!(
            (-5.0..200.0).contains(&late_ms),
            "started near its scheduled instant, in the controller's clock: {late_ms:.3} ms"
        );
        let answered_ms = (f(start, "/answered_unix_ns") - f(start, "/actual_unix_ns")) / 1e6;
        assert!(
            (0.0..1000.0).contains(&answered_ms),
            "the far end answered after the start went out: {answered_ms:.3} ms"
        );
        assert_eq!(c["result"]["from"], c["from"]);
    }
    // The sum is every byte the flows' receivers counted over the group's window,
    // never more than the cells' own rates added.
    let bytes: f64 = cells(&m).iter().map(|c| f(c, "/result/summary/received/bytes")).sum();
    let window = f(&m, "/sum_window_seconds");
    let sum = f(&m, "/sum");
    assert!(
        (sum - bytes * 8.0 / window / 1e6).abs() < 1e-6 * sum.max(1.0),
        "the sum is the bytes over the window: {sum} vs {bytes} B over {window} s"
    );
    let own: f64 = cells(&m).iter().map(|c| f(c, "/value")).sum();
    assert!(sum <= own * (1.0 + 1e-9), "{sum} above the cells' {own}");
    let jain = f(&m, "/jain");
    assert!(
        jain > 1.0 / 3.0 - 1e-9 && jain <= 1.0 + 1e-9,
        "Jain's index in [1/n, 1]: {jain}"
    );
}

/// A lab's matrix run from h1 (`lab exec` gives it the lab's secret).
fn lab_matrix(lab: &Lab, args: &[&str], limit: Duration) -> Value {
    let mut cmd = vec!["linerate", "tcp", "--json", "--no-store"];
    cmd.extend_from_slice(args);
    json_of(&lab.exec("h1", &cmd, limit))
}

#[apply(timed!)]
fn issue_24_a_lab_mesh_reads_half_on_the_slow_hosts_row_and_column_and_its_incast_meets_its_link() {
    let Some(lab) = Lab::up(6, &["rate=100mbit", "h5:rate=50mbit"]) else {
        return;
    };
    let m = lab_matrix(
        &lab,
        &[
            "--pattern",
            "mesh",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "-t",
            "2",
            "--warmup",
            "0.5",
        ],
        Duration::from_secs(240),
    );
    assert_eq!(cells(&m).len(), 20, "every ordered pair of 5");
    assert_eq!(
        m["rounds"].as_array().expect("rounds").len(),
        10,
        "2n rounds for odd n = 5"
    );
    for c in cells(&m) {
        assert!(c["error"].is_null(), "{} -> {}: {}", c["from"], c["to"], c["error"]);
        let mbps = f(c, "/value");
        let slow = c["from"] == "h5" || c["to"] == "h5";
        let want = if slow { 40.0..=52.0 } else { 80.0..=101.0 };
        assert!(
            want.contains(&mbps),
            "{} -> {}: {mbps:.1} Mbit/s (h5's link is 50, the others' 100)",
            c["from"],
            c["to"]
        );
    }

    let m = lab_matrix(
        &lab,
        &[
            "--pattern",
            "incast",
            "--from",
            "h2,h3,h4,h6",
            "h5",
            "-t",
            "3",
            "--warmup",
            "1",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(cells(&m).len(), 4);
    let sum = f(&m, "/sum");
    // The sum is every byte over the group's common window, so it can never pass what
    // h5's link carries: TCP's goodput through tbf at 50 Mbit/s (1448 payload bytes of every
    // 1514 tbf counts), plus the one burst tbf lets through at its rate for 2 ms (lab/shape.rs)
    // over that window.
    let window = f(&m, "/sum_window_seconds");
    let goodput = 50.0 * 1448.0 / 1514.0;
    let burst = 50e6 / 8.0 * 0.002 * 8.0 / 1e6 / window;
    assert!(
        (45.0..=goodput + burst).contains(&sum),
        "4 senders into h5's 50 Mbit/s link: {sum:.3} Mbit/s over {window:.3} s, at most {goodput:.3} + {burst:.3}"
    );
    let own: f64 = cells(&m).iter().map(|c| f(c, "/value")).sum();
    assert!(
        own >= sum,
        "each cell's own rate is over its own (shorter) window: {own:.3} vs {sum:.3}"
    );
    let jain = f(&m, "/jain");
    assert!((0.25..=1.0).contains(&jain), "Jain's index: {jain}");
    for c in cells(&m) {
        let share = f(c, "/value") / sum;
        assert!(share > 0.0, "every flow got a share: {} {share:.3}", c["from"]);
    }
}

/// Two busy loops at nice 19 for as long as this lives: they take whatever CPU the test leaves,
/// so the machine's CPUs are all busy while costing the test's own processes little.
struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    fn start() -> BusyLoops {
        BusyLoops(
            (0..2)
                .map(|_| {
                    std::process::Command::new("nice")
                        .args(["-n", "19", "sh", "-c", "while :; do :; done"])
                        .spawn()
                        .expect("a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A mesh whose hosts' CPUs are all busy, under a line rate it cannot reach
/// (`--link-speed 100G`), says so: every cell's run names its CPU-bound hosts with the figure,
/// and the matrix's text marks those cells `!`.
#[apply(timed!)]
fn issue_38_a_mesh_on_cpu_bound_hosts_says_so() {
    let Some(lab) = Lab::up(3, &[]) else {
        return;
    };
    let busy = BusyLoops::start();
    let m = lab_matrix(
        &lab,
        &["--pattern", "mesh", "h2", "h3", "-t", "1", "--link-speed", "100G"],
        Duration::from_secs(120),
    );
    drop(busy);
    for c in cells(&m) {
        assert!(c["error"].is_null(), "{} -> {}: {}", c["from"], c["to"], c["error"]);
        let notes = c["result"]["notes"].to_string();
        let bound: Vec<&str> = notes.matches(" was CPU-bound: ").collect();
        assert!(
            !bound.is_empty(),
            "{} -> {}: no CPU-bound note in {notes}",
            c["from"],
            c["to"]
        );
        let busy = f(&c["result"], "/summary/received/cpu/host_percent");
        assert!(busy >= 95.0, "the note's figure is the host's: {busy:.1} %");
    }
    let text = linerate_report::matrix::text(&serde_json::from_value(m).expect("a matrix"));
    assert!(text.contains("! a host of this cell was CPU-bound"), "{text}");
    let marked = text
        .lines()
        .filter(|l| l.starts_with("h2 ") || l.starts_with("h3 "))
        .filter(|l| l.contains('!'))
        .count();
    assert_eq!(marked, 2, "each row's one cell marked: {text}");
}
