//! bench/: the scripts are not run by CI (they need a quiet machine), but `bench/all.py --list`
//! imports every registered bench, so a broken import or an unregistered bench fails here.

use std::process::Command;
use std::time::Duration;

use crate::util::{on_path, run_bounded};

/// `python3 bench/all.py --list` exits 0 and lists every bench/*_vs_*.py and iperf3_interop:
/// all.py imports each bench it lists, and fails when a *_vs_* file is not in its registry.
#[test]
fn issue_28_bench_all_lists_every_bench() {
    if !on_path("python3") {
        eprintln!("skipped: python3 is not on PATH");
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let out = run_bounded(
        Command::new("python3")
            .arg(format!("{root}/bench/all.py"))
            .arg("--list")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench/all.py --list failed: {}{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<&str> = stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    let mut expected = vec!["iperf3_interop".to_string()];
    for entry in std::fs::read_dir(format!("{root}/bench")).expect("bench/ exists") {
        let name = entry.expect("dir entry").file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".py")
            && stem.contains("_vs_")
        {
            expected.push(stem.to_string());
        }
    }
    assert!(expected.len() >= 8, "bench/ lost its comparisons: {expected:?}");
    for bench in &expected {
        assert!(
            listed.contains(&bench.as_str()),
            "{bench} is not in bench/all.py --list:\n{stdout}"
        );
    }
}
