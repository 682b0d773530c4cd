//! A host file is refused at its bound at once, however much it could give.

use crate::util::*;
use macro_rules_attribute::apply;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

/// `tcp @/dev/zero` under a 1 GiB address-space cap: on main, read until the cap (exit 134
/// after about 1 s here; 2.1 GB uncapped). Now: refused at the 1 MiB bound (exit 2). Bound: 1 s
/// for a process that starts, reads 1 MiB and exits, on a loaded 2-core box (it takes about
/// 10 ms unloaded); the unbounded read cannot end within it.
#[apply(timed!)]
fn issue_39_at_dev_zero_is_refused_within_a_second() {
    let mut cmd = std::process::Command::new("prlimit");
    cmd.args(["--as=1073741824", BIN, "tcp", "@/dev/zero", "--no-store"]);
    let started = Instant::now();
    let out = run_bounded(&mut cmd, LIMIT);
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("1048576 bytes"), "{err}");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    eprintln!("@/dev/zero refused in {took:?}");
}
