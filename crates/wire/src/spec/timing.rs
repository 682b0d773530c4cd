//! How long a test runs and which part of it counts: one [`Timing`] in every spec.
//!
//! In: the limit (`-t` or `-n`), the warm-up (http: the ramp), the cool-down and the interval, as
//! the CLI or a document gives them. Out: the same values, checked once ([`Timing::validate`]),
//! and read back from the keys documents have always carried them under (`limit`,
//! `warmup_seconds`, `cooldown_seconds`, `interval_seconds`; http: `ramp_seconds`,
//! `duration_seconds`). Each spec writes those keys where its documents have them (see
//! `spec.rs`). The runner (`engine::run::Deadlines`) is the only place they become deadlines and
//! counts; engines and checks ask it.

use super::{MAX_INTERVAL_SAMPLES, MAX_SECONDS, SpecError, check};
use serde::{Deserialize, Serialize};

/// How long each stream runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    /// Send for this many seconds (warm-up included, cool-down included).
    Seconds(f64),
    /// Send this many buffers on each stream, then stop.
    Buffers(u64),
}

impl Limit {
    /// The time limit, seconds; None for a count.
    pub fn seconds(self) -> Option<f64> {
        match self {
            Limit::Seconds(s) => Some(s),
            Limit::Buffers(_) => None,
        }
    }

    /// The count per stream (`-n`); None for a time limit.
    pub fn count(self) -> Option<u64> {
        match self {
            Limit::Buffers(n) => Some(n),
            Limit::Seconds(_) => None,
        }
    }
}

/// When a test ends and which part of it the figures cover. Seconds are kept as the `f64`s
/// documents carry, so a stored spec reads back to the same value and writes the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(try_from = "TimingKeys")]
pub struct Timing {
    /// How long each stream runs: seconds (`-t`) or a count per stream (`-n`).
    pub limit: Limit,
    /// Seconds at the start left out of the figures (`--warmup`; http: `--ramp`).
    pub warmup_seconds: f64,
    /// Seconds at the end left out of the figures, while the load goes on (`--cooldown`; time
    /// limit only).
    pub cooldown_seconds: f64,
    /// Seconds between interval samples (`-i`); 0 = one for the whole run.
    pub interval_seconds: f64,
    /// The warm-up is a ramp before the limit (http: users start over it, then the full load
    /// runs for the limit), not the limit's first part.
    pub ramp: bool,
}

impl Timing {
    /// `limit`, nothing left out, an interval sample a second.
    pub fn new(limit: Limit) -> Timing {
        Timing {
            limit,
            warmup_seconds: 0.0,
            cooldown_seconds: 0.0,
            interval_seconds: 1.0,
            ramp: false,
        }
    }

    /// http: users start evenly over `ramp_seconds`, then the full load runs `seconds`.
    pub fn ramp(ramp_seconds: f64, seconds: f64) -> Timing {
        Timing {
            warmup_seconds: ramp_seconds,
            ramp: true,
            ..Timing::new(Limit::Seconds(seconds))
        }
    }

    /// How long the run lasts from time zero, seconds: the limit, and the ramp before it; None
    /// for a count.
    pub fn length_seconds(&self) -> Option<f64> {
        let ramp = if self.ramp { self.warmup_seconds } else { 0.0 };
        self.limit.seconds().map(|s| ramp + s)
    }

    /// Whether nothing is left out at either end (a UDP side is then rated over its own window).
    pub fn whole_run_counts(&self) -> bool {
        self.warmup_seconds == 0.0 && self.cooldown_seconds == 0.0
    }

    /// Checks the values against what the test kind allows: each in range, a window left after
    /// the warm-up and cool-down, and interval samples within the cap on kept samples.
    pub fn validate(&self, kind: &TimingRules) -> Result<(), SpecError> {
        if self.ramp != kind.ramp {
            return Err(SpecError::Conflict(if kind.ramp {
                "an http test's timing is a ramp and a duration".into()
            } else {
                "only an http test ramps its load up".into()
            }));
        }
        let (warmup, seconds) = if self.ramp {
            ("ramp seconds", "duration seconds")
        } else {
            ("warm-up seconds", "seconds (-t)")
        };
        check(warmup, self.warmup_seconds, 0.0, MAX_SECONDS)?;
        check("cool-down seconds", self.cooldown_seconds, 0.0, MAX_SECONDS)?;
        check("interval seconds", self.interval_seconds, 0.0, MAX_SECONDS)?;
        if self.interval_seconds > 0.0 {
            check("interval seconds", self.interval_seconds, 0.01, MAX_SECONDS)?;
        }
        match (self.limit, kind.count) {
            (Limit::Seconds(s), _) => {
                check(seconds, s, 0.01, MAX_SECONDS)?;
                // A ramp comes before the limit; a warm-up is the limit's first part.
                let left_out = self.cooldown_seconds + if self.ramp { 0.0 } else { self.warmup_seconds };
                if left_out >= s {
                    return Err(SpecError::NoWindow {
                        total: left_out,
                        seconds: s,
                    });
                }
                self.check_samples(s, kind.sampled_streams)
            }
            (Limit::Buffers(n), Some((name, max))) => {
                check(name, n as f64, 1.0, max)?;
                if self.cooldown_seconds > 0.0 {
                    return Err(SpecError::CooldownWithCount);
                }
                Ok(())
            }
            (Limit::Buffers(_), None) => Err(SpecError::Conflict(
                "this test runs for a time (-t), not a count (-n)".into(),
            )),
        }
    }

    /// Interval samples of `streams` streams over `seconds` fit the cap on kept samples.
    fn check_samples(&self, seconds: f64, streams: usize) -> Result<(), SpecError> {
        let interval = self.interval_seconds;
        if interval > 0.0 {
            let samples = streams as f64 * (seconds / interval).ceil();
            if samples > MAX_INTERVAL_SAMPLES as f64 {
                return Err(SpecError::TooManySamples {
                    streams,
                    seconds,
                    interval,
                    samples,
                    max: MAX_INTERVAL_SAMPLES,
                });
            }
        }
        Ok(())
    }
}

/// What a test kind allows of its [`Timing`].
pub struct TimingRules {
    /// The count limit's name in messages and its largest value; None: a time limit only.
    pub count: Option<(&'static str, f64)>,
    /// Streams per agent whose interval samples count against the cap on kept samples; 0: the
    /// kind leaves the cap to the runner (it keeps the first samples and says so).
    pub sampled_streams: usize,
    /// The warm-up is a ramp before the limit (http).
    pub ramp: bool,
}

/// The timing keys of every document layout: `limit` and `warmup_seconds` (tcp, udp, rr), or
/// `ramp_seconds` and `duration_seconds` (http); `cooldown_seconds` absent before it existed.
#[derive(Deserialize)]
struct TimingKeys {
    limit: Option<Limit>,
    warmup_seconds: Option<f64>,
    ramp_seconds: Option<f64>,
    duration_seconds: Option<f64>,
    #[serde(default)]
    cooldown_seconds: f64,
    interval_seconds: f64,
}

impl TryFrom<TimingKeys> for Timing {
    type Error = String;

    fn try_from(k: TimingKeys) -> Result<Timing, String> {
        let missing = |key: &str| format!("missing field `{key}`");
        let timing = match k.duration_seconds {
            Some(seconds) => Timing::ramp(k.ramp_seconds.ok_or_else(|| missing("ramp_seconds"))?, seconds),
            None => Timing {
                warmup_seconds: k.warmup_seconds.ok_or_else(|| missing("warmup_seconds"))?,
                ..Timing::new(k.limit.ok_or_else(|| missing("limit"))?)
            },
        };
        Ok(Timing {
            cooldown_seconds: k.cooldown_seconds,
            interval_seconds: k.interval_seconds,
            ..timing
        })
    }
}
