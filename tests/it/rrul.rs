//! `linerate rrul` on loopback against a local agent, phases of one second: the five phases in
//! order on one time axis, each class's streams carrying bytes in the phases that run them and
//! in no other, a probe series per class answered in every phase; bad input one line, exit 2.

use crate::util::*;
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);
const PHASES: [&str; 5] = ["baseline", "download", "upload", "both", "recovery"];

/// Bytes each stream received in intervals whose middle falls in `[start_s, end_s)`.
fn received_in(v: &Value, start_s: f64, end_s: f64) -> Vec<u64> {
    let mut bytes = vec![0u64; 8];
    for r in v["intervals"].as_array().expect("intervals") {
        if r["kind"] != "stream" || r["side"] != "received" {
            continue;
        }
        let mid = (r["start_ns"].as_f64().expect("start") + r["end_ns"].as_f64().expect("end")) / 2e9;
        if mid >= start_s && mid < end_s {
            bytes[r["stream"].as_u64().expect("stream") as usize] += r["bytes"].as_u64().expect("bytes");
        }
    }
    bytes
}

#[test]
fn five_phases_on_one_axis_each_class_loaded_in_its_phases_and_probed_in_all() {
    let agent = Agent::start(&[]);
    let out = linerate(
        &[
            "rrul",
            &agent.addr,
            "--phase",
            "1s",
            "-i",
            "0.25s",
            "--probe-rate",
            "20",
            "--probe",
            "udp",
            "--json",
        ],
        LIMIT,
    );
    let v = json_of(&out);
    assert_eq!(v["test"], "rrul");
    assert_eq!(v["options"]["dscp"], serde_json::json!([0, 8, 40, 46]));
    assert_eq!(v["options"]["direction"], "bidir");
    let phases = v["latency"]["phases"].as_array().expect("phases");
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().expect("name")).collect();
    assert_eq!(names, PHASES);
    let window = |i: usize| (f(&phases[i], "/start_s"), f(&phases[i], "/end_s"));
    let mut before = f64::NEG_INFINITY;
    for i in 0..5 {
        let (start, end) = window(i);
        assert!(
            start >= before - 1e-9 && end > start,
            "phase {i}: {start}..{end} after {before}"
        );
        // Each about its second (a load phase from its zero to its last interval).
        assert!(end - start > 0.5 && end - start < 3.0, "phase {i}: {start}..{end}");
        before = end;
    }
    assert!(
        window(0).0 < 0.0 && window(1).0 == 0.0,
        "the axis' zero is the download's"
    );
    // Streams 0-3 upload (BE, BK, CS5, EF), 4-7 download, as the bidir spec numbers them.
    let up = |b: &[u64]| b[..4].iter().all(|x| *x > 0);
    let down = |b: &[u64]| b[4..].iter().all(|x| *x > 0);
    let none = |b: &[u64], r: std::ops::Range<usize>| b[r].iter().all(|x| *x == 0);
    let (bl, dl, ul, both, rec) = (
        received_in(&v, window(0).0, window(0).1),
        received_in(&v, window(1).0, window(1).1),
        received_in(&v, window(2).0, window(2).1),
        received_in(&v, window(3).0, window(3).1),
        received_in(&v, window(4).0, window(4).1),
    );
    assert!(
        none(&bl, 0..8) && none(&rec, 0..8),
        "no load in baseline {bl:?} or recovery {rec:?}"
    );
    assert!(down(&dl) && none(&dl, 0..4), "download: {dl:?}");
    assert!(up(&ul) && none(&ul, 4..8), "upload: {ul:?}");
    assert!(up(&both) && down(&both), "both: {both:?}");
    // The phases' own figures per class and direction agree.
    let loads = |i: usize| -> Vec<(String, String, u64)> {
        phases[i]["load"]
            .as_array()
            .expect("load")
            .iter()
            .map(|c| {
                (
                    c["class"].as_str().expect("class").to_string(),
                    c["direction"].as_str().expect("direction").to_string(),
                    c["bytes"].as_u64().expect("bytes"),
                )
            })
            .collect()
    };
    assert!(loads(0).is_empty() && loads(4).is_empty());
    let classes = ["BE", "BK", "CS5", "EF"];
    for (i, dirs) in [
        (1, &["download"][..]),
        (2, &["upload"][..]),
        (3, &["upload", "download"][..]),
    ] {
        let l = loads(i);
        assert_eq!(l.len(), 4 * dirs.len(), "{}: {l:?}", PHASES[i]);
        for (class, dir, bytes) in &l {
            assert!(
                classes.contains(&class.as_str()) && dirs.contains(&dir.as_str()) && *bytes > 0,
                "{l:?}"
            );
        }
    }
    // A probe series per class, answered in every phase, its identity whole.
    let series = v["latency"]["series"].as_array().expect("series");
    let names: Vec<&str> = series.iter().map(|s| s["name"].as_str().expect("name")).collect();
    assert_eq!(
        names,
        [
            "udp round trip BE",
            "udp round trip BK",
            "udp round trip CS5",
            "udp round trip EF"
        ]
    );
    for s in series {
        let by = s["by_phase"].as_array().expect("by_phase");
        assert_eq!(by.len(), 5, "{}", s["name"]);
        for (i, p) in by.iter().enumerate() {
            assert!(u(p, "/answered") >= 5, "{} {}: {p}", s["name"], PHASES[i]);
            assert!(f(p, "/rtt_ms/p50") > 0.0);
        }
        assert!(u(s, "/sent") >= u(s, "/answered") + u(s, "/lost"), "{s}");
    }
    // Every load socket was marked on both ends with its class.
    for s in v["summary"]["streams"].as_array().expect("streams") {
        let class = [0, 8, 40, 46][(s["stream"].as_u64().expect("stream") % 4) as usize];
        assert_eq!(s["sender_socket"]["dscp"], class, "{s}");
        assert_eq!(s["receiver_socket"]["dscp"], class, "{s}");
    }
}

#[test]
fn the_phase_table_names_every_phase_and_class_and_the_run_is_stored_as_rrul() {
    let agent = Agent::start(&[]);
    let db = std::env::temp_dir().join(format!("linerate-rrul-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&db);
    let db = db.to_str().expect("path").to_string();
    let out = linerate(
        &[
            "rrul",
            &agent.addr,
            "--phase",
            "0.5s",
            "--classes",
            "BE,EF",
            "-P",
            "2",
            "--db",
            &db,
        ],
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for phase in PHASES {
        assert_eq!(
            text.lines().filter(|l| l.starts_with(phase)).count(),
            2,
            "{phase}, a row per class: {text}"
        );
    }
    // Stored as a run of its own kind.
    let listed = linerate(&["results", "--kind", "rrul", "--db", &db], LIMIT);
    let rows = String::from_utf8_lossy(&listed.stdout).to_string();
    let _ = std::fs::remove_file(&db);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert_eq!(rows.lines().filter(|l| l.contains(" rrul ")).count(), 1, "{rows}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["--classes", "XX"][..],
        &["-P", "0"][..],
        &["--phase", "0s"][..],
        &["--probe", "http"][..],
        &["--probe", "udp", "--probe-idle", "1s"][..],
    ] {
        let full = [&["rrul", "127.0.0.1"][..], args].concat();
        let out = linerate(&full, LIMIT);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{args:?}: {}", stderr(&out));
    }
}
