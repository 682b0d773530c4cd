//! What the report crate's test files share: the snapshot check and a bare result document.
#![allow(dead_code)] // each test file uses what it needs

use linerate_core::result::{Summary, TestResult};
use linerate_core::spec::TestSpec;
use std::path::Path;

/// Compares `text` with the reviewed file tests/snapshots/NAME; `UPDATE_SNAPSHOTS=1` rewrites it.
pub fn check(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, text).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        text, want,
        "{name} differs from its snapshot (UPDATE_SNAPSHOTS=1 to accept)"
    );
}

/// A document of `options` with `summary` and nothing else, at a fixed start time.
pub fn result(options: TestSpec, summary: Summary) -> TestResult {
    TestResult {
        linerate: "0.1.0".into(),
        schema: linerate_core::result::SCHEMA,
        test: options.kind().into(),
        started_unix_ms: 1_700_000_000_000,
        partial: false,
        error: None,
        options,
        hosts: Default::default(),
        intervals: Vec::new(),
        summary,
        notes: Vec::new(),
        lab: None,
    }
}
