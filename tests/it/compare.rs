//! `linerate compare` on real runs across lab links of known rates: 200 Mbit/s
//! against 100 Mbit/s is better by about 100 % and significant, with the link's rate named in
//! the configuration difference; the same link twice is no significant change; and
//! `--fail-if-worse` gates on the worse direction only.

use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn issue_16_compare_refuses_what_is_not_a_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"x\": 1}").expect("write");
    let out = linerate(
        &["compare", junk.to_str().expect("path"), junk.to_str().expect("path")],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    let out = linerate(&["compare", "no-such-file.json", "x", "--fail-if-worse", "-1"], LIMIT);
    assert_ne!(out.status.code(), Some(0));
}
