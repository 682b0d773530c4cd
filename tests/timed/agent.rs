//! Ctrl-C on a client reports what was measured, over the seconds it ran.

use crate::util::*;
use macro_rules_attribute::apply;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

const LIMIT: Duration = Duration::from_secs(60);

#[apply(timed!)]
fn ctrl_c_reports_what_was_measured() {
    let agent = Agent::start(&[]);
    for direction in [&[][..], &["--reverse"][..]] {
        let mut args = vec!["tcp", agent.addr.as_str(), "-t", "30", "--json"];
        args.extend_from_slice(direction);
        let child = linerate_command()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let port = port_of(&agent.addr);
        poll_until(LIMIT, "the test's data to flow", || data_segments_at(port) > 100);
        // Not a wait for the test to reach a state: the run has to measure over a second
        // before the interrupt, as the check of its measured seconds below asks.
        std::thread::sleep(Duration::from_millis(1300));
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let start = Instant::now();
        let out = wait_bounded(child, Duration::from_secs(20));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "stopped after {:?}",
            start.elapsed()
        );
        let v = json_with_status(&out, 3);
        assert_eq!(v["partial"], true, "{direction:?}");
        assert!(u(&v, "/summary/received/bytes") > 0, "{direction:?}");
        let secs = f(&v, "/summary/received/seconds");
        assert!((1.0..5.0).contains(&secs), "{direction:?}: {secs} s measured");
    }
}
