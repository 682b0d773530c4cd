//! Flag groups that several subcommands share, declared once and flattened into each: the agents
//! (`HOST[:PORT]...`, `-p`), streams and pinning (`-P`, `--cpus`, `--peer-cpus`), how long a test
//! runs (`-n`, `-t`, `--warmup`, `--cooldown`), the interval (`-i`) and the output (`--json`).
//! Times are [`TimeSpan`]s: a bare number is seconds, `250ms` and the other suffixes also work.

use anyhow::bail;
use linerate_core::client::Target;
use linerate_core::spec::{Limit, MAX_STREAMS};
use linerate_core::units::{CpuList, TimeSpan};

/// The agents a test runs against.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// Agents to test against; several run at once (HOST, HOST:PORT, `[V6]:PORT`)
    #[arg(value_name = "HOST[:PORT]", required = true)]
    pub hosts: Vec<String>,

    /// Port for hosts given without one
    #[arg(short = 'p', long, value_name = "N", default_value_t = linerate_core::client::DEFAULT_PORT)]
    pub port: u16,
}

impl HostArgs {
    pub fn targets(&self) -> anyhow::Result<Vec<Target>> {
        super::resolve_targets(&self.hosts, self.port)
    }
}

/// Where the client's workers run (`--cpus`).
#[derive(Debug, Clone, clap::Args)]
pub struct CpuArgs {
    /// Pin the client's workers to these CPUs (worker i on the i-th), e.g. 0,2 or 0-3
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
}

impl CpuArgs {
    /// The CPUs given, or none (not pinned).
    pub fn list(&self) -> Vec<usize> {
        self.cpus.clone().map(|c| c.0).unwrap_or_default()
    }
}

/// How many streams, and where each end's workers run.
#[derive(Debug, Clone, clap::Args)]
pub struct StreamArgs {
    /// Streams per agent (and per direction with --bidir)
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 1,
          allow_negative_numbers = true, value_parser = not_negative::<u32>)]
    pub streams: u32,

    #[command(flatten)]
    pub cpus: CpuArgs,

    /// Pin the agents' workers to these CPUs
    #[arg(long, value_name = "LIST")]
    pub peer_cpus: Option<CpuList>,
}

impl StreamArgs {
    /// `-P`, checked against the most streams a test may have.
    pub fn count(&self) -> anyhow::Result<u16> {
        match u16::try_from(self.streams) {
            Ok(n) if (1..=MAX_STREAMS).contains(&n) => Ok(n),
            _ => bail!("-P must be between 1 and {MAX_STREAMS} streams, not {}", self.streams),
        }
    }

    pub fn peer_cpus(&self) -> Vec<usize> {
        self.peer_cpus.clone().map(|c| c.0).unwrap_or_default()
    }
}

/// How long a test runs: a count (`-n`) or a time (`-t`), the start left out (`--warmup`) and
/// the end left out (`--cooldown`).
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
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
}

impl RunArgs {
    /// `-n` if given, else `-t`, else `default_seconds`.
    pub fn limit(&self, default_seconds: f64) -> Limit {
        match (self.count, self.time) {
            (Some(n), _) => Limit::Buffers(n),
            (None, Some(t)) => Limit::Seconds(t.as_secs_f64()),
            (None, None) => Limit::Seconds(default_seconds),
        }
    }
}

/// How often the figures are sampled and shown (`-i`).
#[derive(Debug, Clone, clap::Args)]
pub struct IntervalArgs {
    /// Seconds between interval lines (http: timeline entries); 0 for none
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value = "1")]
    pub interval: TimeSpan,
}

/// A value parser for a flag whose value has a sign that can be wrong (`-t -1`, `-P -3`, `--gap
/// -5`): a negative value is refused as such, not taken for an unknown flag (issue 13). The flag
/// must allow a leading hyphen (`allow_negative_numbers`, or `allow_hyphen_values` for values
/// with a unit suffix).
pub fn not_negative<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    if text.trim_start().starts_with('-') {
        return Err(format!("must be positive, got {text}"));
    }
    text.parse::<T>().map_err(|e| e.to_string())
}

/// What a test prints (`--json`).
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Print one JSON document (docs/results.md) instead of text
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        let mut full = vec!["linerate"];
        full.extend_from_slice(args);
        Cli::try_parse_from(full).map(|c| c.command)
    }

    /// (-P, client CPUs, peer CPUs, -n, -t seconds, warm-up seconds, interval seconds, json, targets)
    type Shared = (
        u16,
        Vec<usize>,
        Vec<usize>,
        Option<u64>,
        Option<f64>,
        f64,
        f64,
        bool,
        Vec<String>,
    );

    fn shared(cmd: Command) -> Shared {
        let (h, s, r, i, o) = match cmd {
            Command::Tcp(a) => (a.hosts, a.streams, a.run, a.interval, a.output),
            Command::Udp(a) => (a.hosts, a.streams, a.run, a.interval, a.output),
            Command::Rr(a) => (a.hosts, a.streams, a.run, a.interval, a.output),
            other => panic!("parsed as {other:?}"),
        };
        let targets = h
            .targets()
            .expect("resolve")
            .iter()
            .map(|t| t.addr.to_string())
            .collect();
        (
            s.count().expect("-P"),
            s.cpus.list(),
            s.peer_cpus(),
            r.count,
            r.time.map(|t| t.as_secs_f64()),
            r.warmup.as_secs_f64(),
            i.interval.as_secs_f64(),
            o.json,
            targets,
        )
    }

    #[test]
    fn every_test_kind_takes_the_shared_flags_alike() {
        for kind in ["tcp", "udp", "rr"] {
            let args = [
                kind,
                "127.0.0.1",
                "-p",
                "6000",
                "-P",
                "3",
                "--cpus",
                "0-1",
                "--peer-cpus=1",
                "-t",
                "1500ms",
                "--warmup",
                "0.5",
                "-i",
                "250ms",
                "--json",
            ];
            let s = shared(parse(&args).expect(kind));
            assert_eq!(
                s,
                (
                    3,
                    vec![0, 1],
                    vec![1],
                    None,
                    Some(1.5),
                    0.5,
                    0.25,
                    true,
                    vec!["127.0.0.1:6000".to_string()]
                ),
                "{kind}"
            );
            let s = shared(parse(&[kind, "127.0.0.1", "--parallel=2", "-n", "7", "--interval", "0"]).expect(kind));
            assert_eq!((s.0, s.3, s.4, s.6, s.7), (2, Some(7), None, 0.0, false), "{kind}");
            let e = parse(&[kind, "h", "-n", "5", "-t", "3"])
                .expect_err("-n with -t")
                .to_string();
            assert!(e.contains("cannot be used with"), "{kind}: {e}");
            let e = parse(&[kind, "h", "--warmup", "soon"])
                .expect_err("bad time")
                .to_string();
            assert!(e.contains("'soon' is not a time"), "{kind}: {e}");
        }
    }

    #[test]
    fn streams_are_checked_once_for_every_kind() {
        for kind in ["tcp", "udp", "rr"] {
            let s = match parse(&[kind, "h", "-P", "100000"]).expect(kind) {
                Command::Tcp(a) => a.streams,
                Command::Udp(a) => a.streams,
                Command::Rr(a) => a.streams,
                other => panic!("parsed as {other:?}"),
            };
            let e = s.count().expect_err("too many").to_string();
            assert_eq!(e, "-P must be between 1 and 1024 streams, not 100000");
        }
    }

    #[test]
    fn time_and_cooldown_mean_the_same_in_every_kind() {
        for kind in ["tcp", "udp", "rr"] {
            let run = |args: &[&str]| match parse(args).expect(kind) {
                Command::Tcp(a) => a.run,
                Command::Udp(a) => a.run,
                Command::Rr(a) => a.run,
                other => panic!("parsed as {other:?}"),
            };
            let r = run(&[kind, "h", "--time=2s", "--cooldown", "500ms"]);
            assert_eq!(
                (r.time.map(|t| t.as_secs_f64()), r.cooldown.seconds()),
                (Some(2.0), 0.5),
                "{kind}"
            );
            let r = run(&[kind, "h", "-t", "10", "--cooldown=1"]);
            assert_eq!(
                (r.time.map(|t| t.as_secs_f64()), r.cooldown.seconds()),
                (Some(10.0), 1.0),
                "{kind}"
            );
            assert_eq!(run(&[kind, "h"]).cooldown.seconds(), 0.0, "{kind}");
            let e = parse(&[kind, "h", "--cooldown", "soon"])
                .expect_err("bad time")
                .to_string();
            assert!(e.contains("'soon' is not a time"), "{kind}: {e}");
        }
        let Command::Http(a) = parse(&["http", "http://h/", "--time", "3s", "--cooldown", "1s"]).expect("http") else {
            panic!("not http")
        };
        assert_eq!((a.time.as_secs_f64(), a.cooldown.seconds()), (3.0, 1.0));
    }

    #[test]
    fn http_takes_cpus_interval_json_and_times() {
        let Command::Http(a) = parse(&[
            "http",
            "http://127.0.0.1/",
            "--cpus",
            "1",
            "-i",
            "2",
            "--json",
            "--ramp",
            "1.5",
            "--think",
            "20ms",
            "-d",
            "4m",
            "--timeout",
            "500ms",
        ])
        .expect("valid") else {
            panic!("not http")
        };
        assert_eq!(
            (a.cpus.list(), a.interval.interval.as_secs_f64(), a.output.json),
            (vec![1], 2.0, true)
        );
        let s = a.spec_for(1).expect("valid");
        assert_eq!(
            (s.ramp_seconds, s.think_ms, s.duration_seconds, s.timeout_ms),
            (1.5, 20.0, 240.0, 500)
        );
    }

    #[test]
    fn connect_timeout_and_doctor_rtt_are_times() {
        let Command::Tcp(a) = parse(&["tcp", "h", "--connect-timeout", "250ms"]).expect("valid") else {
            panic!("not tcp")
        };
        assert_eq!(a.reach.options().expect("ok").connect_timeout.as_millis(), 250);
        let Command::Doctor(d) = parse(&["doctor", "--rtt", "0.2"]).expect("valid") else {
            panic!("not doctor")
        };
        assert_eq!(d.rtt.map(|t| t.0.as_millis()), Some(200), "a bare number is seconds");
    }

    #[test]
    fn bind_sets_the_clients_source_address_in_every_test_command() {
        for cmd in ["tcp", "udp", "rr"] {
            for args in [vec![cmd, "h", "-B", "127.0.0.2"], vec![cmd, "h", "--bind=127.0.0.2"]] {
                let opts = match parse(&args).expect("valid") {
                    Command::Tcp(a) => a.reach.options(),
                    Command::Udp(a) => a.reach.options(),
                    Command::Rr(a) => a.reach.options(),
                    _ => panic!("not a test command"),
                };
                assert_eq!(
                    opts.expect("ok").bind,
                    Some("127.0.0.2".parse().expect("ip")),
                    "{args:?}"
                );
            }
        }
        assert!(parse(&["tcp", "h", "-B", "not-an-address"]).is_err());
    }

    /// Issue 13: a wrong-sign value says so, not `unexpected argument '-1' found`.
    fn refused_as_negative(args: &[&str], flag: &str, value: &str) {
        let err = parse(args).expect_err("a negative value is refused").to_string();
        assert!(err.contains(flag), "names {flag}: {err}");
        assert!(err.contains(&format!("must be positive, got {value}")), "{err}");
    }

    #[test]
    fn issue_13_negative_time_is_refused_as_negative() {
        refused_as_negative(&["tcp", "h", "-t", "-1"], "--time", "-1");
        refused_as_negative(&["udp", "h", "--time=-2.5"], "--time", "-2.5");
        refused_as_negative(&["rr", "h", "-t", "-1s"], "--time", "-1s");
    }

    #[test]
    fn issue_13_negative_parallel_is_refused_as_negative() {
        refused_as_negative(&["tcp", "h", "-P", "-3"], "--parallel", "-3");
        refused_as_negative(&["rr", "h", "--parallel", "-1"], "--parallel", "-1");
    }

    #[test]
    fn issue_13_negative_gap_is_refused_as_negative() {
        refused_as_negative(&["udp", "h", "--gap", "-5"], "--gap", "-5");
    }

    #[test]
    fn issue_13_negative_count_is_refused_as_negative() {
        refused_as_negative(&["udp", "h", "-n", "-2"], "--count", "-2");
    }

    #[test]
    fn issue_13_positive_values_still_parse() {
        assert!(parse(&["udp", "h", "-t", "1.5", "-P", "2", "--gap", "10"]).is_ok());
        assert!(parse(&["tcp", "h", "-n", "3"]).is_ok());
    }
}
