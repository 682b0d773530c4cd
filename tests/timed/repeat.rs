//! `--repeat auto` (issue 15) across a shaped lab link: it converges on the link's rate.

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[apply(timed!)]
fn issue_15_repeat_auto_converges_on_a_shaped_link() {
    let Some(lab) = Lab::up(2, &["rate=100mbit"]) else {
        return;
    };
    // The link is steady; a box loaded by other tests is not. Starved of CPU (loopback tests
    // beside it hold both cores, softirqs included), a receiver reads late: its window closes
    // and the sender stalls, or what sits in its socket buffer when the window ends goes
    // uncounted; runs 5-15 % low were seen here that way. So an attempt that does not converge
    // within four runs is tried again, twice at most: each attempt must meet the whole claim
    // (converged, in 3 or 4 runs, within +-2 %), and on a quiet box the first one does.
    let args = [
        "linerate",
        "tcp",
        "h2",
        "--json",
        "--repeat",
        "auto",
        "--ci",
        "2%",
        "--max-runs",
        "4",
        "-t",
        "4",
        "--warmup",
        "1",
        "-i",
        "0",
        "--pause",
        "0",
    ];
    let mut seen = Vec::new();
    for _ in 0..3 {
        // Four runs of 4 s at most.
        let v = json_of(&lab.exec("h1", &args, LIMIT));
        check_repeated(&v);
        assert_eq!(v["policy"]["mode"], "auto");
        assert_eq!(
            (
                f(&v, "/policy/ci_percent"),
                u(&v, "/policy/min_runs"),
                u(&v, "/policy/max_runs")
            ),
            (2.0, 3, 4)
        );
        assert_eq!(v["partial"], false);
        let runs = v["runs"].as_array().expect("runs").len();
        let recv = figure(&v, "received_mbit_per_second");
        let mean = f(recv, "/mean");
        assert!(
            (80.0..=100.0).contains(&mean),
            "{mean:.1} Mbit/s over a 100 Mbit/s link"
        );
        let half = f(recv, "/ci95_half_width_percent");
        if v["converged"] == true {
            assert!((3..=4).contains(&runs), "{runs} runs");
            assert!(half <= 2.0, "converged at +-{half:.2} %");
            return;
        }
        assert_eq!(runs, 4, "not converged: it ran to --max-runs");
        assert!(half > 2.0, "+-{half:.2} % and not converged");
        seen.push(recv["values"].to_string());
    }
    panic!("no attempt converged within 4 runs: {seen:?}");
}
