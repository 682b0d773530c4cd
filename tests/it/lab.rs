//! `linerate lab`: links with a known delay, loss and rate, and what linerate reports across them.

use crate::util::*;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn three_hosts_through_a_bridge_resolve_each_other_by_name() {
    let Some(lab) = Lab::up(3, &[]) else { return };
    assert_eq!(lab.status["topology"], "bridge");
    let v = lab.tcp("h3", "h1", &["-n", "20"]);
    assert_eq!(u(&v, "/summary/received/bytes"), 20 * 131_072);
    let v = lab.tcp("h1", "h2", &["-n", "20", "--reverse"]);
    assert_eq!(u(&v, "/summary/received/bytes"), 20 * 131_072);
}

#[test]
fn a_crashed_lab_is_cleaned_by_down() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    // Simulate a crash: the state is gone, the namespaces and agents remain.
    std::fs::remove_dir_all(format!("/run/linerate/labs/{}", lab.name)).expect("remove state");
    let out = linerate(&["lab", "up", "--name", &lab.name], LIMIT);
    assert!(
        !out.status.success() && stderr(&out).contains("left-overs"),
        "{}",
        stderr(&out)
    );
    let out = linerate(&["lab", "down", "--name", &lab.name], LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let list =
        String::from_utf8_lossy(&Command::new("ip").args(["netns", "list"]).output().expect("ip").stdout).into_owned();
    assert!(!list.contains(&lab.name), "{list}");
}

#[test]
fn bad_lab_input_is_one_line() {
    for (args, needle) in [
        (&["lab", "up", "--name", "Bad_Name"][..], "lab name"),
        (&["lab", "up", "--link", "speed=1"][..], "unknown link property"),
        (&["lab", "up", "--hosts", "1"][..], "--hosts must be between 2"),
        (
            &["lab", "up", "--hosts", "3", "--link", "h1-h2:delay=1ms"][..],
            "need --hosts 2",
        ),
        (&["lab", "status", "--name", "nosuchlab"][..], "no lab 'nosuchlab'"),
        (
            &["lab", "exec", "--name", "nosuchlab", "h1", "--", "true"][..],
            "no lab 'nosuchlab'",
        ),
    ] {
        let out = linerate(args, LIMIT);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

/// `lab status` for a lab that does not exist, while another is up, said `no lab
/// 'lab' (os error 2)`. It names the labs that are up and how to address one, and exits
/// non-zero; `lab status` shows each host's HTTP server (`:8080`), which answers.
#[test]
fn issue_23_lab_status_names_the_labs_up_and_each_hosts_http_server() {
    let Some(lab) = Lab::up(2, &[]) else {
        return;
    };
    let out = linerate(&["lab", "status", "--name", "nosuchlab"], LIMIT);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&format!("'{}'", lab.name)), "names the lab up: {err}");
    assert!(err.contains("--name"), "says how to address one: {err}");
    assert!(!err.contains("os error"), "{err}");

    for (i, h) in lab.status["hosts"].as_array().expect("hosts").iter().enumerate() {
        assert_eq!(h["http"], format!("10.211.0.{}:8080", i + 1), "{h}");
    }
    let text = linerate(&["lab", "status", "--name", &lab.name], LIMIT);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    let h2 = text.lines().find(|l| l.starts_with("h2 ")).expect("h2's line");
    assert!(h2.contains(" :8080 "), "{text}");
    // What the status says runs does: h1 fetches from h2's server.
    let out = lab.exec(
        "h1",
        &[
            "linerate",
            "http",
            "http://h2:8080/bytes/1024",
            "-t",
            "0.5",
            "-i",
            "0",
            "--json",
            "--no-store",
        ],
        LIMIT,
    );
    let doc = json_of(&out);
    assert!(
        doc["summary"]["status"]["2xx"].as_u64().is_some_and(|n| n > 0),
        "h2's server answered with 2xx: {}",
        doc["summary"]
    );
}
