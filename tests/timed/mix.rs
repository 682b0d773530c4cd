//! `tcp --mix` with a time limit ends between transfers, its window within the time asked.

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;

#[apply(timed!)]
fn mix_with_a_time_limit_ends_between_transfers() {
    let v = mixed(&["--mix", "70:30", "-t", "1"]);
    let m = &v["summary"]["mix"];
    let transfers = u(m, "/transfers");
    assert!(transfers > 0);
    assert_eq!(u(m, "/read/bytes") + u(m, "/write/bytes"), transfers * MIX_LENGTH);
    let secs = f(m, "/seconds");
    assert!((0.9..3.0).contains(&secs), "{secs} s of a 1 s test");
    assert_exact_per_stream(&v);
    assert_efficiency(m, true);
    if transfers >= 1000 {
        let share = f(m, "/read_share_percent");
        assert!((share - 70.0).abs() <= 1.0, "read share {share} %");
    }
}
