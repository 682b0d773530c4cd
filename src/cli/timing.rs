//! How long a test runs and which part of it counts, one flag group per shape: tcp, udp and rr
//! take a count (`-n`) or a time (`-t`) with `--warmup`, `--cooldown` and `-i`; http takes
//! `--ramp`, `-t` (`-d`, `--duration`), `--cooldown` and `-i`. The spec's [`Timing`] is built here
//! alone. Times are [`TimeSpan`]s: a bare number is seconds, `250ms` and the other suffixes work.

use super::common::not_negative;
use linerate_core::spec::{Limit, Timing};
use linerate_core::units::TimeSpan;

/// How long a test runs and which part of it counts (tcp, udp, rr): a count (`-n`) or a time
/// (`-t`), the start left out (`--warmup`), the end left out (`--cooldown`) and the interval
/// (`-i`). The spec's [`Timing`] is made here alone ([`TimingArgs::timing`]).
#[derive(Debug, Clone, clap::Args)]
pub struct TimingArgs {
    /// Buffers, datagrams or transactions per stream, then stop (instead of -t)
    #[arg(short = 'n', long = "count", value_name = "COUNT", conflicts_with = "time",
          allow_negative_numbers = true, value_parser = not_negative::<u64>)]
    pub count: Option<u64>,

    /// Test length (10, 10s, 250ms) [default: 10s; rr: 2s per sweep point]
    #[arg(
        short = 't',
        long = "time",
        value_name = "DURATION",
        long_help = TIME_HELP,
        allow_hyphen_values = true,
        value_parser = not_negative::<TimeSpan>
    )]
    pub time: Option<TimeSpan>,

    /// Time at the start left out of the figures (500ms, 2s)
    #[arg(long, value_name = "DURATION", default_value = "0")]
    pub warmup: TimeSpan,

    #[command(flatten)]
    pub cooldown: CooldownArgs,

    #[command(flatten)]
    pub interval: IntervalArgs,
}

/// `-t`'s long help in tcp, udp and rr.
const TIME_HELP: &str = "How long the test runs. A bare number is seconds; suffixes ms, s, m, h also work.\n\
Default: 10s (rr with --sizes: 2s per sweep point). Example: -t 30, -t 1500ms, --time=2m";

/// The end of a timed run left out of the figures (`--cooldown`): every test kind, one meaning.
#[derive(Debug, Clone, clap::Args)]
pub struct CooldownArgs {
    /// Time at the end left out of the figures (needs -t)
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "0",
        long_help = "Time at the end of a timed run left out of the figures, while the load goes on\n\
(streams winding down do not count). Needs -t; warm-up plus cool-down must leave\n\
a window. A bare number is seconds. Example: --cooldown 1s"
    )]
    pub cooldown: TimeSpan,
}

impl CooldownArgs {
    pub fn seconds(&self) -> f64 {
        self.cooldown.as_secs_f64()
    }

    /// `timing` with this cool-down and the interval `-i`: the part every kind takes alike.
    fn ending(&self, interval: &IntervalArgs, timing: Timing) -> Timing {
        Timing {
            cooldown_seconds: self.seconds(),
            interval_seconds: interval.interval.as_secs_f64(),
            ..timing
        }
    }
}

impl TimingArgs {
    /// `-n` if given, else `-t`, else `default_seconds`.
    pub fn limit(&self, default_seconds: f64) -> Limit {
        match (self.count, self.time) {
            (Some(n), _) => Limit::Buffers(n),
            (None, Some(t)) => Limit::Seconds(t.as_secs_f64()),
            (None, None) => Limit::Seconds(default_seconds),
        }
    }

    /// The spec's timing; `default_seconds` without `-n` or `-t`.
    pub fn timing(&self, default_seconds: f64) -> Timing {
        let timing = Timing {
            warmup_seconds: self.warmup.as_secs_f64(),
            ..Timing::new(self.limit(default_seconds))
        };
        self.cooldown.ending(&self.interval, timing)
    }
}

/// How long an http test runs: users start over the ramp (`--ramp`, left out of the figures),
/// then the full load runs for `-t` (also `-d`, `--duration`), its end left out with
/// `--cooldown`; `-i` as in every kind.
#[derive(Debug, Clone, clap::Args)]
pub struct RampArgs {
    /// Users start evenly over this time; the figures leave it out (10s)
    #[arg(long, value_name = "DURATION", default_value = "0")]
    pub ramp: TimeSpan,

    /// Full load after the ramp: the test length (30s, 4m; also -d/--duration)
    #[arg(
        short = 't',
        long = "time",
        visible_short_alias = 'd',
        visible_alias = "duration",
        value_name = "DURATION",
        default_value = "10s",
        long_help = "How long the full load runs after --ramp: the window the figures cover, less any\n\
--cooldown. A bare number is seconds; suffixes ms, s, m, h also work. -d and\n\
--duration are other names for it. Example: -t 30, -t 4m, --duration=90s"
    )]
    pub time: TimeSpan,

    #[command(flatten)]
    pub cooldown: CooldownArgs,

    #[command(flatten)]
    pub interval: IntervalArgs,
}

impl RampArgs {
    /// The spec's timing: the ramp, then the full load.
    pub fn timing(&self) -> Timing {
        let timing = Timing::ramp(self.ramp.as_secs_f64(), self.time.as_secs_f64());
        self.cooldown.ending(&self.interval, timing)
    }
}

/// How often the figures are sampled and shown (`-i`).
#[derive(Debug, Clone, clap::Args)]
pub struct IntervalArgs {
    /// Seconds between interval lines (http: timeline entries); 0 for none
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value = "1",
          allow_hyphen_values = true, value_parser = not_negative::<TimeSpan>)]
    pub interval: TimeSpan,
}
