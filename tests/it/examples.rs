//! The shipped plans (examples/plans/, issue 16), each the campaign of one seed report, run in
//! quick mode against a three-host lab: every point runs and is stored complete, and the
//! campaign's tables are printed.

use crate::util::*;
use std::time::Duration;

fn run_example(lab: &Lab, name: &str, points: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let plan = format!("{}/examples/plans/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let out = lab.exec(
        "h1",
        &[
            "linerate",
            "plan",
            "run",
            &plan,
            "--quick",
            "--db",
            db.to_str().expect("path"),
        ],
        Duration::from_secs(400),
    );
    let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{name}: {text}{err}");
    assert!(
        err.contains(&format!("{points} points run ({points} complete, 0 partial, 0 failed)")),
        "{name}: {err}"
    );
    assert!(text.starts_with("campaign "), "{name}: the tables: {text}");
}

#[test]
fn issue_16_every_shipped_plan_runs_in_quick_mode_against_a_lab() {
    let Some(lab) = Lab::up(3, &[]) else { return };
    run_example(&lab, "ntttcp", 6);
    run_example(&lab, "udpmon", 18);
    run_example(&lab, "avalanche", 7);
    run_example(&lab, "toe", 16);
}
