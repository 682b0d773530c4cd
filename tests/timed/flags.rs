//! `--cooldown` shrinks the measured window in every kind: the window's seconds read.

use crate::util::*;
use macro_rules_attribute::apply;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

/// `--cooldown` leaves the end of a timed run out in every kind, as tcp's test checks for tcp.
#[apply(timed!)]
fn issue_13_cooldown_shrinks_the_window_in_every_kind() {
    let agent = Agent::start(&["--http-port", "0"]);
    let run = |args: &[&str]| {
        let v = json_of(&linerate(args, LIMIT));
        check_document(&v);
        v
    };
    for (kind, extra) in [("udp", &["-b", "10m"][..]), ("rr", &[])] {
        let mut args = vec![
            kind,
            agent.addr.as_str(),
            "--json",
            "-t",
            "2",
            "--warmup",
            "0.5",
            "--cooldown",
            "0.5",
        ];
        args.extend_from_slice(extra);
        let v = run(&args);
        assert_eq!(f(&v, "/options/cooldown_seconds"), 0.5, "{kind}");
        let secs = f(&v, "/summary/sent/seconds");
        assert!(
            (0.9..1.3).contains(&secs),
            "{kind}: a 2 s run less 1 s measured {secs} s"
        );
    }
    let url = agent.http_url("/bytes/1000");
    let v = run(&[
        "http",
        &url,
        "--json",
        "--users",
        "2",
        "-t",
        "2",
        "--cooldown",
        "1s",
        "--agent",
        &agent.addr,
    ]);
    assert_eq!(f(&v, "/options/cooldown_seconds"), 1.0);
    let secs = f(&v, "/summary/steady_seconds");
    assert!(
        (0.9..1.1).contains(&secs),
        "http: a 2 s load less 1 s measured {secs} s"
    );
}
