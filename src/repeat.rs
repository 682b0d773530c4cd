//! `--repeat` in the binary: the test's run closure handed to `linerate_results::repeat`, each
//! run's line shown as it ends, and the repeated document printed with its exit status. The
//! driver ([`crate::drive`]) calls [`repeat_test`] for every kind; what a run is stays the kind's.

use crate::finish::print_text;
use crate::interrupt::interrupt_flag;
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
