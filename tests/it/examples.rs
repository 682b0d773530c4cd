//! The shipped plans (examples/plans/), each the campaign of one seed report, run in
//! quick mode against a three-host lab: every point runs and is stored complete, and the
//! campaign's tables are printed. It loads the machine for a minute and asserts no figure of
//! time: functional.

use crate::util::*;
use std::time::Duration;

/// The TOE plan's offload A/B: every agent started with the profiles the plan asks for.
const OFFLOAD_PROFILES: [&str; 3] = [
    "offload-on=ethtool -K eth0 tso on gso on gro on",
    "offload-off=ethtool -K eth0 tso off gso off gro off",
    "offload-off.undo=ethtool -K eth0 tso on gso on gro on",
];

#[test]
fn issue_16_every_shipped_plan_runs_in_quick_mode_against_a_lab() {
    let ethtool = Need::Program {
        name: "ethtool",
        package: "ethtool",
    };
    if !can_run(&[ethtool]) {
        return;
    }
    let Some(lab) = Lab::up_with_profiles(3, &[], &OFFLOAD_PROFILES) else {
        return;
    };
    run_example(&lab, "ntttcp", 6);
    run_example(&lab, "udpmon", 18);
    run_example(&lab, "avalanche", 7);
    run_example(&lab, "toe", 24);
    // The offload variant ran under its profile: the agent's configuration says TSO was off.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("r.db");
    let db = db.to_str().expect("path");
    let out = lab.exec(
        "h1",
        &[
            "linerate",
            "tcp",
            "h2",
            "-t",
            "0.3",
            "-i",
            "0",
            "--profile",
            "offload-off",
            "--json",
            "--db",
            db,
        ],
        Duration::from_secs(60),
    );
    let v = json_of(&out);
    let agent = v["hosts"]
        .as_object()
        .expect("hosts")
        .values()
        .find(|h| h["role"] == "agent")
        .expect("the agent's record");
    assert_eq!(agent["profile"]["name"], "offload-off", "{}", agent["profile"]);
    let eth0 = agent["config"]["interfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .find(|i| i["name"] == "eth0")
        .expect("eth0");
    assert_eq!(
        eth0["offloads"]["tso"], false,
        "read under the profile: {}",
        eth0["offloads"]
    );
}

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
