//! `--repeat auto` across a shaped lab link: it converges on the link's rate.

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
    // A 3 s window each (-t 4 less the warm-up): the window's edges, a few ms either way, move a
    // run's figure well under 1 %, so three or four runs reach +-2 % on a machine where nothing
    // else runs (this target's rule). --max-runs 4 bounds the run: four runs of 4 s at most.
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
    assert_eq!(
        v["converged"], true,
        "not converged in {runs} runs over a steady link: {} Mbit/s, +-{:.2} %",
        recv["values"], recv["ci95_half_width_percent"]
    );
    assert!(
        (3..=4).contains(&runs),
        "{runs} runs to converge over a steady link: {}",
        recv["values"]
    );
    let half = f(recv, "/ci95_half_width_percent");
    assert!(half <= 2.0, "converged at +-{half:.2} %, want at most 2 %");
    let mean = f(recv, "/mean");
    assert!(
        (85.0..=100.0).contains(&mean),
        "{mean:.1} Mbit/s over a 100 Mbit/s link, want 85-100: {}",
        recv["values"]
    );
}
