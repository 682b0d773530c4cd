//! `linerate plan check` (issue 16): a plan is read, every point's options are checked by the
//! test command's own definitions, and the runs and time are counted; a wrong plan names its
//! line and column. Nothing here sends traffic.

use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn check(text: &str, extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, text).expect("write plan");
    let mut args = vec!["plan", "check", path.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    linerate(&args, LIMIT)
}

const PLAN: &str = r#"name = "sizes"
[defaults]
time = "20s"
[quick]
time = "1s"

[[test]]
name = "toe"
kind = "tcp"
targets = ["127.0.0.1"]
repeat = 3
pause = "2s"
vary = { length = ["4K", "64K", "1M"] }
[[test.variant]]
name = "A"
window = "1M"
[[test.variant]]
name = "B"
window = "4M"

[[test]]
kind = "rr"
targets = ["127.0.0.1"]
count = 500
"#;

#[test]
fn issue_16_plan_check_counts_points_runs_and_time() {
    let out = check(PLAN, &["--commands"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    // 3 lengths x 2 variants x 3 repeats of (20 s + 1 s) plus 2 pauses of 2 s each point.
    assert!(
        text.contains("test toe (tcp): 6 points (3 length x 2 variants), 18 runs, about 7 min"),
        "{text}"
    );
    assert!(
        text.contains("linerate tcp 127.0.0.1 --time=20s --repeat=3 --pause=2s --window=4M --length=1M"),
        "{text}"
    );
    // The default time gives way to the test's count, which excludes it.
    assert!(text.contains("linerate rr 127.0.0.1 --count=500\n"), "{text}");
    let quick = check(PLAN, &["--quick"]);
    let text = String::from_utf8_lossy(&quick.stdout);
    assert!(
        text.contains("18 runs, about 60 s"),
        "quick: 18 x (1 + 1) s + 12 x 2 s pauses: {text}"
    );
    assert!(
        text.contains("test rr (rr): 1 point, 1 run, each limited by a count"),
        "quick keeps a count: {text}"
    );
}

#[test]
fn issue_16_a_wrong_plan_names_line_column_and_the_nearest_option() {
    let typo = PLAN.replace("repeat = 3", "lenght = \"1K\"\nrepeat = 3");
    let out = check(&typo, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("line 11, column 1: `lenght` is not an option of `linerate tcp` (did you mean `length`?)"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");

    let bad_value = PLAN.replace("window = \"4M\"", "window = \"4Q\"");
    let err = stderr(&check(&bad_value, &[]));
    assert!(err.contains("line 19, column 1"), "the variant's window: {err}");

    let bad_toml = PLAN.replace("count = 500", "count = [500");
    let out = check(&bad_toml, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 24"), "{}", stderr(&out));
}
