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
#[test]
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
#[test]
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

/// Whether this kernel takes qdisc `kind`, tried in a namespace of the test's own.
fn kernel_has(kind: &str, ns: &str) -> bool {
    let run = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    assert!(run(&["ip", "netns", "add", ns]), "ip netns add {ns}");
    let has = run(&["ip", "-n", ns, "link", "set", "lo", "up"])
        && run(&["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", kind]);
    run(&["ip", "netns", "del", ns]);
    has
}

/// `aqm=fq_codel` / `aqm=cake`: where the kernel lacks the qdisc, `lab up` refuses in one line
/// naming the module, exit 2, and leaves nothing behind; where it has it, the AQM is the child
/// of the link's tbf and the record says so.
#[test]
fn an_aqm_is_tbfs_child_or_refused_naming_the_module() {
    if !can_run(&[Need::Root { why: NAMESPACES }]) {
        return;
    }
    for (aqm, module) in [("fq_codel", "sch_fq_codel"), ("cake", "sch_cake")] {
        let name = format!("aq{}-{}", std::process::id() % 100_000, &aqm[..2]);
        let link = format!("rate=100mbit,aqm={aqm}");
        let out = linerate(&["lab", "up", "--name", &name, "--link", &link, "--json"], LIMIT);
        let has = kernel_has(aqm, &format!("{name}-k"));
        if !has {
            let err = stderr(&out);
            let _ = linerate(&["lab", "down", "--name", &name], LIMIT);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(err.contains(module) && err.contains(&format!("--link {link}")), "{err}");
            let list = Command::new("ip").args(["netns", "list"]).output().expect("ip");
            assert!(!String::from_utf8_lossy(&list.stdout).contains(&name), "left behind");
            assert!(!std::path::Path::new(&format!("/run/linerate/labs/{name}")).exists());
            eprintln!("skipped the {aqm} path itself: this kernel has no {module}");
            continue;
        }
        let status = json_of(&out);
        let shown = Command::new("tc")
            .args(["-n", &format!("{name}-sw"), "qdisc", "show", "dev", "p2"])
            .output()
            .expect("tc");
        let _ = linerate(&["lab", "down", "--name", &name], LIMIT);
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.contains("tbf 1:") && shown.contains(&format!("{aqm} 10: ")),
            "{shown}"
        );
        assert!(shown.contains("parent 1:1"), "{shown}");
        let q = &status["hosts"][0]["queues"][0];
        assert_eq!(q["kind"], aqm, "{q}");
        assert_eq!(q["text"], format!("tbf + {aqm}"), "{q}");
    }
}
