//! Flag groups that several subcommands share, declared once and flattened into each: the agents
//! (`HOST[:PORT]...`, `-p`), streams and pinning (`-P`, `--cpus`, `--peer-cpus`), the output
//! (`--json`, the store, `--qoo` in `grade.rs`), repeated runs (`--repeat`, `--best`, `--ci`,
//! `--min-runs`, `--max-runs`, `--pause`) and latency probes (`--probe`, `probe.rs`). How long a
//! test runs is the group in `timing.rs`.

use super::usage::{Usage, usage};
use linerate_core::client::Target;
use linerate_core::spec::{Direction, Dscp, MAX_STREAMS};
use linerate_core::units::{BitRate, ByteSize, CpuList, TimeSpan};

/// The agents a test runs against.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// Agents to test against; several run at once (HOST, HOST:PORT, `[V6]:PORT`)
    #[arg(
        value_name = "HOST[:PORT]",
        required_unless_present = "pairs",
        long_help = "Agents to test against; several run at once: HOST, HOST:PORT, [V6]:PORT, dns:NAME\n\
(every address it resolves to) or @FILE (a host per line). tcp and udp also take one\n\
iperf3 server alone: iperf3://HOST[:PORT] (port 5201 by default; iperf3://[::1]:5201)\n\
runs the test against `iperf3 -s` (docs/results.md, \"iperf3\")."
    )]
    pub hosts: Vec<String>,

    /// Port for hosts given without one
    #[arg(short = 'p', long, value_name = "N", default_value_t = linerate_core::client::DEFAULT_PORT)]
    pub port: u16,

    #[command(flatten)]
    pub fleet: super::fleet::FleetArgs,
}

impl HostArgs {
    /// The agents named, `dns:NAME` (every address it resolves to) and `@FILE` (a host per line)
    /// expanded: a test runs against all of them at once.
    pub fn targets(&self) -> anyhow::Result<Vec<Target>> {
        let names = linerate_core::fleet::expand_all(&self.hosts, self.port)
            .map_err(|e| super::usage::Usage::Flag(e.to_string()))?;
        super::resolve_targets(&names, self.port)
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

    /// Checks the CPUs given against those this process may run on, for a test whose client
    /// half runs here (with `--from` or a pattern they are the sending agent's, checked there):
    /// `--cpus 7` on a 2-CPU host is a usage error before any traffic.
    pub fn check_here(&self) -> Result<(), Usage> {
        linerate_core::client::check_local_cpus(&self.list()).map_err(|e| usage!("--cpus: {e}"))
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

    /// Mark the streams' packets with a DSCP class (EF, CS5, BK, AF41, 0-63)
    #[arg(
        long,
        value_name = "CLASSES",
        value_parser = parse_dscp,
        long_help = "Mark the streams' packets with a DSCP class, on both ends (IP_TOS on IPv4,\n\
IPV6_TCLASS on IPv6): a name (BE, BK for CS1, CS2 to CS7, AF11 to AF43, EF, VA, LE)\n\
or a number 0 to 63. A comma list gives each direction's streams the classes in\n\
turn. The class each socket holds is read back into the result's grants. Default:\n\
none (the kernel's 0). Examples: --dscp EF, -P 4 --dscp BE,BK,CS5,EF"
    )]
    pub dscp: Option<DscpList>,
}

/// A `-P` count, checked against the most streams a test may have.
pub fn stream_count(streams: u32) -> Result<u16, Usage> {
    match u16::try_from(streams) {
        Ok(n) if (1..=MAX_STREAMS).contains(&n) => Ok(n),
        _ => Err(usage!("-P must be between 1 and {MAX_STREAMS} streams, not {streams}")),
    }
}

/// `--dscp`'s classes, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct DscpList(pub Vec<Dscp>);

fn parse_dscp(s: &str) -> Result<DscpList, String> {
    Dscp::parse_list(s).map(DscpList)
}

impl StreamArgs {
    /// `-P`, checked against the most streams a test may have.
    pub fn count(&self) -> Result<u16, Usage> {
        stream_count(self.streams)
    }

    pub fn peer_cpus(&self) -> Vec<usize> {
        self.peer_cpus.clone().map(|c| c.0).unwrap_or_default()
    }

    /// `--dscp`'s classes, or none.
    pub fn dscp(&self) -> Vec<Dscp> {
        self.dscp.clone().map(|d| d.0).unwrap_or_default()
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
/// -5`): a negative value is refused as such, not taken for an unknown flag. The flag
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

/// The flag groups udp, rr and http end with, in this order (tcp's has its line-rate flags
/// between `--repeat`'s and the connection's, so it flattens the three apart).
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub repeat: RepeatArgs,

    #[command(flatten)]
    pub reach: super::ConnectArgs,
}

/// What a test prints (`--json`, `--brief`), where its result is kept (`--label`, `--db`,
/// `--no-store`) and what its latency is graded for (`--qoo`).
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

    #[command(flatten)]
    pub grades: GradeArgs,
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

mod grade;
mod probe;
mod route;
#[cfg(test)]
mod tests;

pub use grade::GradeArgs;
pub use probe::ProbeArgs;
pub use route::{Fleet, Iperf3, Route};
