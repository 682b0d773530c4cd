//! `--repeat` in the binary: the test's run closure handed to `linerate_results::repeat`, each
//! run's line shown as it ends, and the repeated document printed with its exit status. The
//! commands (`tcp`, `udp`, `rr`, `http`) call [`repeat_test`]; what a run is stays theirs.

use crate::{interrupt_flag, print_text};
use linerate_core::result::{RepeatPolicy, Repeated, TestResult};

/// Runs `run` (one whole test, quiet: no interval lines) under `policy`, showing each run's
/// line as it ends (on stderr with `--json`), and returns the document for `finish` to print
/// (the aggregate or the JSON) and store.
pub fn repeat_test(
    kind: &str,
    policy: &RepeatPolicy,
    json: bool,
    run: impl FnMut(u32) -> anyhow::Result<TestResult>,
) -> anyhow::Result<Repeated> {
    let interrupt = interrupt_flag()?;
    let rep = linerate_results::repeat::repeat(kind, policy, &interrupt, run, |rep| {
        let lines = linerate_report::repeat::progress(rep);
        if json {
            // The document owns stdout; the runs' lines still tell a watcher how far it got.
            eprint!("{lines}");
            return Ok(());
        }
        print_text(&lines)
    })?;
    Ok(rep)
}

/// Repeats and sweeps do not combine yet: one line naming both.
pub fn refuse_with_sweep(policy: Option<&RepeatPolicy>, sweep: Option<&str>) -> anyhow::Result<()> {
    if let (Some(_), Some(flags)) = (policy, sweep) {
        anyhow::bail!("--repeat does not combine with a sweep ({flags}) yet: repeat single tests");
    }
    Ok(())
}
