//! Flag groups that several subcommands share, declared once and flattened into each: the agents
//! (`HOST[:PORT]...`, `-p`), streams and pinning (`-P`, `--cpus`, `--peer-cpus`), the output
//! (`--json`, the store) and repeated runs (`--repeat`, `--best`, `--ci`, `--min-runs`,
//! `--max-runs`, `--pause`). How long a test runs is the group in `timing.rs`.

use super::usage::{Usage, usage};
use linerate_core::client::Target;
use linerate_core::spec::{Direction, MAX_STREAMS};
use linerate_core::units::{BitRate, ByteSize, CpuList, TimeSpan};

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
    pub fn count(&self) -> Result<u16, Usage> {
        match u16::try_from(self.streams) {
            Ok(n) if (1..=MAX_STREAMS).contains(&n) => Ok(n),
            _ => Err(usage!(
                "-P must be between 1 and {MAX_STREAMS} streams, not {}",
                self.streams
            )),
        }
    }

    pub fn peer_cpus(&self) -> Vec<usize> {
        self.peer_cpus.clone().map(|c| c.0).unwrap_or_default()
    }
}

/// The direction `-R` (`--reverse`) and `--bidir` ask for (tcp, udp); the client sends without
/// either.
pub fn direction(reverse: bool, bidir: bool) -> Direction {
    if bidir {
        Direction::Bidir
    } else if reverse {
        Direction::Reverse
    } else {
        Direction::Send
    }
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

/// A value parser for a time that must be above 0 (`--connect-timeout`, `--http-head-timeout`):
/// 0 is refused by the parser, a usage error, not when the time is first used.
pub fn positive_time(text: &str) -> Result<TimeSpan, String> {
    let t = not_negative::<TimeSpan>(text)?;
    if t.0.is_zero() {
        return Err("must be above 0".into());
    }
    Ok(t)
}

/// A value parser for a rate that must be above 0 (`calc --link`, `doctor --rate`, `rr --expect`).
pub fn positive_rate(text: &str) -> Result<BitRate, String> {
    match text.parse::<BitRate>() {
        Ok(r) if r.0 > 0.0 => Ok(r),
        Ok(_) => Err("must be above 0".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// What a test prints (`--json`, `--brief`) and where its result is kept (`--label`, `--db`,
/// `--no-store`).
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Print one JSON document (docs/results.md) instead of text
    #[arg(long)]
    pub json: bool,

    /// Print the headline line alone (and interval lines if -i is given)
    #[arg(
        long,
        conflicts_with = "json",
        long_help = "Print only the run's headline line, the one the full text ends with: the kind, the\n\
outcome (complete, partial, failed) and the kind's headline figures (README, \"Use\").\n\
Interval lines come too when -i is given on the command line; the stored id goes to\n\
stderr. A sweep or --repeat prints its own headline line (the aggregate).\n\
Example: linerate tcp h2 --brief"
    )]
    pub brief: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

impl OutputArgs {
    /// Whether interval lines are printed while a test runs: not with `--json` (the document
    /// owns stdout), nor with `--brief` unless `-i` was given on the command line.
    pub fn interval_lines(&self) -> bool {
        !self.json && (!self.brief || interval_given(std::env::args_os()))
    }
}

/// Whether `args` (a whole command line) give `-i`/`--interval` to their subcommand, as clap
/// parses them (not the default of 1 s).
fn interval_given(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    use clap::CommandFactory;
    let Ok(matches) = super::Cli::command().try_get_matches_from(args) else {
        return false;
    };
    matches.subcommand().is_some_and(|(_, sub)| {
        sub.ids().any(|id| id == "interval")
            && sub.value_source("interval") == Some(clap::parser::ValueSource::CommandLine)
    })
}

/// Where a test's result is stored and how it is labelled: every test kind, one meaning
/// (docs/results.md, "The results store").
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StoreArgs {
    /// Label the stored result (repeatable), e.g. --label nic=xframe2
    #[arg(
        long = "label",
        value_name = "KEY=VALUE",
        action = clap::ArgAction::Append,
        value_parser = parse_label,
        help_heading = "Results store",
        long_help = "Label the stored result (repeatable). KEY of letters, digits, '_', '-' and '.'; VALUE\n\
anything. `linerate results --label KEY=VALUE` selects by it. Example: --label nic=xframe2 --label mtu=9000"
    )]
    pub labels: Vec<(String, String)>,

    #[command(flatten)]
    pub db: DbArgs,

    /// Store nothing: the result is printed only
    #[arg(long, help_heading = "Results store", conflicts_with = "labels")]
    pub no_store: bool,

    /// The campaign the result belongs to (set by `linerate plan run` on each of its runs)
    #[arg(long, value_name = "ID", hide = true, conflicts_with = "no_store")]
    pub campaign: Option<String>,
}

/// The results database: `--db`, else `LINERATE_DB`, else the default path.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DbArgs {
    /// The results database (default: $LINERATE_DB, else in ~/.local/share)
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Results store",
        long_help = "The results database (SQLite). Default: the LINERATE_DB environment variable, else\n\
$XDG_DATA_HOME/linerate/results.db, else ~/.local/share/linerate/results.db. Example: --db ./lab.db"
    )]
    pub db: Option<std::path::PathBuf>,
}

impl DbArgs {
    /// The database to use.
    pub fn path(&self) -> anyhow::Result<std::path::PathBuf> {
        if let Some(p) = &self.db {
            return Ok(p.clone());
        }
        if let Some(p) = std::env::var_os("LINERATE_DB").filter(|v| !v.is_empty()) {
            return Ok(p.into());
        }
        linerate_results::store::default_path()
            .ok_or_else(|| anyhow::anyhow!("no results database: set HOME, XDG_DATA_HOME or LINERATE_DB, or give --db"))
    }
}

/// `--label KEY=VALUE`.
fn parse_label(text: &str) -> Result<(String, String), String> {
    linerate_results::store::parse_label(text).map_err(|e| e.to_string())
}

/// How many times a test runs (`--repeat N|auto`), and what is reported over the runs.
#[derive(Debug, Clone, clap::Args)]
pub struct RepeatArgs {
    /// Run the test N times, or until the 95 % CI is within --ci (auto)
    #[arg(
        long,
        value_name = "N|auto",
        allow_hyphen_values = true,
        long_help = "Run the test N times against the same agents and report every run and, for each\n\
headline figure, mean, median, min, max, stddev, CV and the 95 % confidence interval of\n\
the mean (Student t). `auto` runs until that interval's half-width is within --ci of\n\
the mean, between --min-runs and --max-runs. Example: --repeat 5, --repeat auto --ci 2%"
    )]
    pub repeat: Option<RepeatCount>,

    /// Also the mean of the K best runs by the primary figure
    #[arg(
        long,
        value_name = "K",
        allow_negative_numbers = true,
        value_parser = not_negative::<u32>,
        long_help = "Also report the mean of the K best runs by the kind's primary figure (receiver\n\
Mbit/s, transactions/s, responses/s), beside the plain mean, and which runs were kept\n\
(NTttcp's method). Needs --repeat; K at most N (auto: at most --min-runs). Example:\n\
--repeat 5 --best 3"
    )]
    pub best: Option<u32>,

    /// Auto: the 95 % CI half-width to reach, % of the mean [default: 2%]
    #[arg(
        long,
        value_name = "P%",
        allow_hyphen_values = true,
        value_parser = percent,
        long_help = "With --repeat auto: run until the 95 % confidence interval of the primary figure's\n\
mean is within P % of the mean (netperf's -I). Default: 2%. Example: --ci 1%"
    )]
    pub ci: Option<f64>,

    /// Auto: the fewest runs [default: 3]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = not_negative::<u32>)]
    pub min_runs: Option<u32>,

    /// Auto: the most runs [default: 10]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = not_negative::<u32>)]
    pub max_runs: Option<u32>,

    /// Pause between repeated runs [default: 1s]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        value_parser = not_negative::<TimeSpan>,
        long_help = "Time between the end of one repeated run and the start of the next; Ctrl-C in it\n\
stops. A bare number is seconds. Default: 1s. Example: --pause 5s, --pause 0"
    )]
    pub pause: Option<TimeSpan>,
}

/// `--repeat`'s value: a count or `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RepeatCount {
    Runs(u32),
    Auto,
}

impl std::str::FromStr for RepeatCount {
    type Err = String;

    fn from_str(s: &str) -> Result<RepeatCount, String> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(RepeatCount::Auto);
        }
        if s.trim_start().starts_with('-') {
            return Err(format!("must be positive, got {s}"));
        }
        s.parse()
            .map(RepeatCount::Runs)
            .map_err(|_| format!("'{s}' is neither a number of runs nor auto"))
    }
}

/// A percentage: `2%`, `2 %` or `2`.
fn percent(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let n = t.strip_suffix('%').unwrap_or(t).trim();
    match n.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 100.0 => Ok(v),
        Ok(_) => Err(format!("must be above 0 % and below 100 %, got {text}")),
        Err(_) => Err(format!("'{text}' is not a percentage (2%, 0.5%)")),
    }
}

impl RepeatArgs {
    /// The policy asked for, checked; None without `--repeat` (then no other flag of the group
    /// may be given).
    pub fn policy(&self) -> Result<Option<linerate_core::result::RepeatPolicy>, Usage> {
        use linerate_core::result::{RepeatPolicy, Runs};
        use linerate_results::repeat::{DEFAULT_CI_PERCENT, DEFAULT_MAX_RUNS, DEFAULT_MIN_RUNS};
        let Some(count) = self.repeat else {
            let given = [
                ("--best", self.best.is_some()),
                ("--ci", self.ci.is_some()),
                ("--min-runs", self.min_runs.is_some()),
                ("--max-runs", self.max_runs.is_some()),
                ("--pause", self.pause.is_some()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
                return Err(usage!("{flag} needs --repeat N or --repeat auto"));
            }
            return Ok(None);
        };
        let runs = match count {
            RepeatCount::Runs(runs) => {
                for (flag, given) in [
                    ("--ci", self.ci.is_some()),
                    ("--min-runs", self.min_runs.is_some()),
                    ("--max-runs", self.max_runs.is_some()),
                ] {
                    if given {
                        return Err(usage!("{flag} goes with --repeat auto, not --repeat {runs}"));
                    }
                }
                Runs::Fixed { runs }
            }
            RepeatCount::Auto => Runs::Auto {
                ci_percent: self.ci.unwrap_or(DEFAULT_CI_PERCENT),
                min_runs: self.min_runs.unwrap_or(DEFAULT_MIN_RUNS),
                max_runs: self
                    .max_runs
                    .unwrap_or(DEFAULT_MAX_RUNS.max(self.min_runs.unwrap_or(0))),
            },
        };
        let policy = RepeatPolicy {
            runs,
            pause_seconds: self.pause.map_or(1.0, |p| p.as_secs_f64()),
            best: self.best,
        };
        policy.validate()?;
        Ok(Some(policy))
    }
}

/// The most points a sweep list (`--sizes`, `--gaps`) may have.
pub const MAX_SWEEP_POINTS: usize = 10_000;

/// `a,b,c` or `START:END:STEP` (END included), each value parsed by `parse`; at most
/// [`MAX_SWEEP_POINTS`] values. Everything it refuses is the flag's text: a usage error.
pub fn parse_list<T: Copy>(text: &str, flag: &str, parse: impl Fn(&str) -> anyhow::Result<T>) -> Result<Vec<T>, Usage> {
    let values = if text.split(':').count() == 3 {
        linerate_results::plan::expand_range(text).map_err(|e| usage!("{flag} {e}"))?
    } else {
        text.split(',').map(|v| v.trim().to_string()).collect()
    };
    parse_values(&values, flag, parse)
}

/// Each of a sweep's values parsed by `parse`, at most [`MAX_SWEEP_POINTS`] of them.
fn parse_values<T>(values: &[String], flag: &str, parse: impl Fn(&str) -> anyhow::Result<T>) -> Result<Vec<T>, Usage> {
    if values.len() > MAX_SWEEP_POINTS {
        return Err(usage!("{flag} has {} points, over {MAX_SWEEP_POINTS}", values.len()));
    }
    values
        .iter()
        .map(|v| parse(v).map_err(|e| usage!("{flag}: '{v}': {e:#}")))
        .collect()
}

/// A `--sizes` list of byte sizes (K = 1024: `64,1K,64K`, or `START:END:STEP` whose parts may
/// carry the suffix too: `1K:8K:1K`), in the order given, each converted by `convert` (udp and
/// rr take u32, tcp a [`ByteSize`]).
pub fn parse_sizes<T: Copy>(text: &str, convert: impl Fn(ByteSize) -> anyhow::Result<T>) -> Result<Vec<T>, Usage> {
    let parts: Vec<&str> = text.split(':').collect();
    let [start, end, step] = parts[..] else {
        return parse_list(text, "--sizes", |v| convert(v.parse()?));
    };
    let bytes = |v: &str| {
        v.trim()
            .parse::<ByteSize>()
            .map(|b| b.0.to_string())
            .map_err(|e| usage!("--sizes '{text}': {e}"))
    };
    let range = format!("{}:{}:{}", bytes(start)?, bytes(end)?, bytes(step)?);
    // The range's own words, about the text as the user wrote it.
    let values =
        linerate_results::plan::expand_range(&range).map_err(|e| usage!("--sizes {}", e.replace(&range, text)))?;
    parse_values(&values, "--sizes", |v| convert(v.parse()?))
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use linerate_core::spec::Timing;

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
        let (h, s, r, o) = match cmd {
            Command::Tcp(a) => (a.hosts, a.streams, a.timing, a.output),
            Command::Udp(a) => (a.hosts, a.streams, a.timing, a.output),
            Command::Rr(a) => (a.hosts, a.streams, a.timing, a.output),
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
            r.interval.interval.as_secs_f64(),
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
                Command::Tcp(a) => a.timing,
                Command::Udp(a) => a.timing,
                Command::Rr(a) => a.timing,
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
        assert_eq!((a.timing.time.as_secs_f64(), a.timing.cooldown.seconds()), (3.0, 1.0));
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
            (a.cpus.list(), a.timing.interval.interval.as_secs_f64(), a.output.json),
            (vec![1], 2.0, true)
        );
        let s = a.spec_for(1).expect("valid");
        assert_eq!(
            (s.timing, s.think_ms, s.timeout_ms),
            (
                Timing {
                    interval_seconds: 2.0,
                    ..Timing::ramp(1.5, 240.0)
                },
                20.0,
                500
            )
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

    fn repeat_args(cmd: Command) -> super::RepeatArgs {
        match cmd {
            Command::Tcp(a) => a.repeat,
            Command::Udp(a) => a.repeat,
            Command::Rr(a) => a.repeat,
            Command::Http(a) => a.repeat,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn issue_15_every_test_kind_takes_the_repeat_flags_alike() {
        use linerate_core::result::{RepeatPolicy, Runs};
        for (kind, host) in [("tcp", "h"), ("udp", "h"), ("rr", "h"), ("http", "http://h/")] {
            let policy = |args: &[&str]| {
                let mut full = vec![kind, host];
                full.extend_from_slice(args);
                repeat_args(parse(&full).expect(kind)).policy()
            };
            assert_eq!(policy(&[]).expect("no --repeat"), None, "{kind}");
            assert_eq!(
                policy(&["--repeat", "5", "--best=3", "--pause", "250ms"]).expect(kind),
                Some(RepeatPolicy {
                    runs: Runs::Fixed { runs: 5 },
                    pause_seconds: 0.25,
                    best: Some(3)
                }),
                "{kind}"
            );
            assert_eq!(
                policy(&["--repeat=auto", "--ci", "1.5%", "--min-runs", "4", "--max-runs=8"]).expect(kind),
                Some(RepeatPolicy {
                    runs: Runs::Auto {
                        ci_percent: 1.5,
                        min_runs: 4,
                        max_runs: 8
                    },
                    pause_seconds: 1.0,
                    best: None
                }),
                "{kind}"
            );
            let auto = policy(&["--repeat", "AUTO", "--ci", "3"]).expect(kind).expect("auto");
            assert_eq!(
                auto.runs,
                Runs::Auto {
                    ci_percent: 3.0,
                    min_runs: 3,
                    max_runs: 10
                },
                "defaults: 3 to 10 runs"
            );
            assert_eq!(
                policy(&["--repeat", "2", "--repeat", "4"])
                    .expect("last one wins")
                    .map(|p| p.runs),
                Some(Runs::Fixed { runs: 4 })
            );
            let err = |args: &[&str]| policy(args).expect_err("refused").to_string();
            assert_eq!(err(&["--pause", "2s"]), "--pause needs --repeat N or --repeat auto");
            assert_eq!(
                err(&["--repeat", "3", "--max-runs", "5"]),
                "--max-runs goes with --repeat auto, not --repeat 3"
            );
            assert!(
                err(&["--repeat", "0"]).contains("--repeat must be between 1 and"),
                "{kind}"
            );
            let clap = |args: &[&str]| {
                let mut full = vec![kind, host];
                full.extend_from_slice(args);
                parse(&full).expect_err("refused by the parser").to_string()
            };
            assert!(clap(&["--repeat", "-2"]).contains("must be positive, got -2"), "{kind}");
            assert!(clap(&["--ci", "two"]).contains("'two' is not a percentage"), "{kind}");
            assert!(
                clap(&["--pause", "-1s"]).contains("must be positive, got -1s"),
                "{kind}"
            );
        }
    }

    /// Every test command, with a target where it takes one.
    const TEST_COMMANDS: [&[&str]; 5] = [
        &["tcp", "h"],
        &["udp", "h"],
        &["rr", "h"],
        &["http", "http://h/"],
        &["quick"],
    ];

    /// A test command's output flags.
    fn output_of(cmd: Command) -> super::OutputArgs {
        match cmd {
            Command::Tcp(a) => a.output,
            Command::Udp(a) => a.output,
            Command::Rr(a) => a.output,
            Command::Http(a) => a.output,
            Command::Quick(a) => a.output,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn every_test_kind_takes_the_store_flags_alike() {
        for args in TEST_COMMANDS {
            let mut full = args.to_vec();
            full.extend(["--label", "nic=x2", "--db", "/tmp/r.db", "--label=mtu=9000"]);
            let s = output_of(parse(&full).expect("valid")).store;
            assert_eq!(
                s.labels,
                vec![("nic".into(), "x2".into()), ("mtu".into(), "9000".into())],
                "{args:?}: repeatable, in order"
            );
            assert_eq!(s.db.db.as_deref(), Some(std::path::Path::new("/tmp/r.db")));
            assert!(!s.no_store);
            let mut full = args.to_vec();
            full.push("--no-store");
            assert!(parse(&full).is_ok(), "{args:?}");
            let mut full = args.to_vec();
            full.extend(["--label", "nic"]);
            let e = parse(&full).expect_err("no =").to_string();
            assert!(e.contains("'nic' is not a label (KEY=VALUE"), "{e}");
            let mut full = args.to_vec();
            full.extend(["--no-store", "--label", "a=b"]);
            assert!(parse(&full).is_err(), "{args:?}: --no-store with --label");
        }
    }

    #[test]
    fn issue_23_brief_is_an_output_flag_of_every_test_command() {
        for args in TEST_COMMANDS {
            let output = |extra: &[&str]| {
                let mut full = args.to_vec();
                full.extend(extra);
                output_of(parse(&full).expect("valid"))
            };
            assert!(output(&["--brief"]).brief, "{args:?}");
            assert!(!output(&[]).brief, "{args:?}: off by default");
            let mut full = args.to_vec();
            full.extend(["--brief", "--json"]);
            let e = parse(&full).expect_err("one output at a time");
            assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{args:?}");
        }
        let given = |line: &[&str]| super::interval_given(line.iter().map(std::ffi::OsString::from));
        assert!(
            given(&["linerate", "tcp", "h", "--brief", "-i", "1"]),
            "even at the default"
        );
        assert!(given(&["linerate", "udp", "h", "--interval=0.5"]));
        assert!(given(&["linerate", "http", "http://h/", "-i0.5"]));
        assert!(
            !given(&["linerate", "tcp", "h", "--brief"]),
            "the default is not asked for"
        );
        assert!(!given(&["linerate", "quick", "--brief"]), "quick has no -i");
        assert!(!given(&["linerate", "tcp"]), "a line that does not parse");
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
    fn issue_23_sizes_ranges_take_suffixes_and_refuse_as_usage() {
        use super::{parse_list, parse_sizes};
        use linerate_core::units::ByteSize;
        assert_eq!(
            parse_sizes("1K:4K:1K", Ok).expect("a range of sizes"),
            [1024, 2048, 3072, 4096].map(ByteSize)
        );
        assert_eq!(parse_sizes("64, 1K", Ok).expect("a list"), [64, 1024].map(ByteSize));
        let e = parse_sizes("8K:1K:1K", Ok).expect_err("end below start").to_string();
        assert_eq!(
            e,
            "--sizes '8K:1K:1K': the step must be above 0 and the end at or above the start"
        );
        let e = parse_sizes("1K,x", Ok).expect_err("not a size").to_string();
        assert!(e.starts_with("--sizes: 'x': "), "{e}");
        let e = parse_list("1:20000:1", "--gaps", |v| Ok(v.parse::<f64>()?))
            .expect_err("too many")
            .to_string();
        assert!(e.contains("more than 10000 values"), "{e}");
    }

    #[test]
    fn issue_13_positive_values_still_parse() {
        assert!(parse(&["udp", "h", "-t", "1.5", "-P", "2", "--gap", "10"]).is_ok());
        assert!(parse(&["tcp", "h", "-n", "3"]).is_ok());
    }
}
