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
