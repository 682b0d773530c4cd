//! What the report crate's test files share: the snapshot check and a bare result document.
#![allow(dead_code)] // each test file uses what it needs

use linerate_core::result::{Fit, Optimum, RrSummary, Summary, TestResult};
use linerate_core::spec::{RrProto, TestSpec};
use linerate_core::sweep::{At, Parameter, RrSweep, RrSweepSummary, RrVaries, Sweep, SweepKind, SweepPoint};
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
        started_unix_ms: 1_700_000_000_000,
        ..linerate_core::sweep::stub_result(options, summary)
    }
}

/// A sweep point that ran at `at`: a document of `options` with `summary`.
pub fn ran(at: At, note: &str, options: TestSpec, summary: Summary) -> SweepPoint {
    SweepPoint::ran(at, note.into(), result(options, summary))
}

/// A sweep point that did not run: `error` says why, `note` what the sweep wrote beside it.
pub fn failed(at: At, note: &str, error: &str) -> SweepPoint {
    SweepPoint {
        at,
        note: note.into(),
        result: None,
        error: Some(error.into()),
    }
}

/// A summary with rr's figures and nothing else.
pub fn rr_only(rr: RrSummary) -> Summary {
    Summary {
        rr: Some(rr),
        ..Summary::default()
    }
}

/// An rr sweep over UDP on `interface` (MTU 1500) with no points yet: its p50 fitted by `fit`,
/// the slope expected (`--expect`, one 10 Gbit/s stage) `expected_slope_us_per_byte`.
pub fn rr_sweep(
    sweep: RrVaries,
    interface: &str,
    fit: Fit,
    expected_slope_us_per_byte: f64,
    parameters: Vec<Parameter>,
) -> Sweep {
    let summary = RrSweepSummary {
        fit: Some(fit),
        fit_of: "p50".into(),
        expected_slope_us_per_byte: Some(expected_slope_us_per_byte),
        expected_from: Some("--expect".into()),
        expected_stages_bits_per_second: vec![10e9],
    };
    let kind = RrSweep {
        proto: RrProto::Udp,
        sweep,
        interface: Some(interface.into()),
        mtu_bytes: Some(1500),
        summary,
    };
    Sweep::new(SweepKind::Rr(kind), parameters)
}

/// A least-squares line: `slope` µs per byte, `intercept` µs, r² `r2` over `points` points.
pub fn fit(slope: f64, intercept: f64, r2: f64, points: usize) -> Fit {
    Fit {
        slope_us_per_byte: slope,
        intercept_us: intercept,
        r2,
        points,
    }
}

/// An http sweep's optimum at 64 users (9600 responses/s, 80.5 Mbit/s in, 6.6 ms mean), found
/// by `rule`.
pub fn optimum_at_64(rule: &str) -> Option<Optimum> {
    Some(Optimum {
        users: 64,
        responses_per_second: 9600.0,
        bits_per_second_in: 80.5e6,
        response_time_mean_us: 6600.0,
        rule: rule.into(),
    })
}
