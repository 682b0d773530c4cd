//! The wall clock as Unix time, written once at the bottom of the house (imports std only), so
//! the client, the agent, the HTTP server and the binary read it the same way: nanoseconds
//! signed (a clock set before 1970 reads negative, not 0), milliseconds and seconds unsigned
//! (before 1970 they read 0: their readers are stamps and deadlines, never differences).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `t` as Unix nanoseconds, negative before 1970, saturating at the ends of `i64`.
pub fn unix_ns(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

/// A Unix-nanosecond instant as this host's [`SystemTime`]: the inverse of [`unix_ns`].
pub fn system_time(unix_ns: i64) -> SystemTime {
    if unix_ns >= 0 {
        UNIX_EPOCH + Duration::from_nanos(unix_ns as u64)
    } else {
        UNIX_EPOCH - Duration::from_nanos(unix_ns.unsigned_abs())
    }
}

/// Now, since the Unix epoch (0 before it).
fn since_epoch() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// Now, Unix milliseconds (0 before 1970).
pub fn now_unix_ms() -> u64 {
    since_epoch().as_millis() as u64
}

/// Now, Unix seconds (0 before 1970).
pub fn now_unix_secs() -> u64 {
    since_epoch().as_secs()
}

/// Now, Unix nanoseconds as an unsigned stamp (0 before 1970; wraps in 2554).
pub fn now_unix_ns_stamp() -> u64 {
    since_epoch().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_go_both_ways_either_side_of_1970() {
        for ns in [0, 1, -1, 1_700_000_000_123_456_789, -86_400_000_000_000] {
            assert_eq!(unix_ns(system_time(ns)), ns);
        }
        assert!(unix_ns(UNIX_EPOCH - Duration::from_secs(1)) < 0);
    }

    #[test]
    fn the_units_agree_on_now() {
        let (ms, secs) = (now_unix_ms(), now_unix_secs());
        // Two reads of the clock a moment apart: the same second, or the next.
        assert!((ms / 1000).abs_diff(secs) <= 1, "{ms} ms, {secs} s");
        assert!(secs > 1_600_000_000, "a clock after 2020: {secs}");
    }
}
