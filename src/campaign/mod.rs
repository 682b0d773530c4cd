//! `linerate plan`: a campaign's plan checked against the command line itself. Each point of a
//! plan becomes the command line it stands for (`tcp HOST --length 64K ...`), parsed by the
//! same clap definitions and validated by the same `into_spec` as a typed command, so a plan
//! accepts exactly what the commands accept, and an error points at the line and column that
//! caused it.

use crate::cli::usage::Usage;
use crate::cli::{Cli, Command};
use anyhow::Context;
use clap::{CommandFactory, Parser};
use linerate_core::fleet;
use linerate_core::result::Pattern;
use linerate_results::plan::{self, Kind, OptionValue, Plan, Point, Position, Setting};
use std::process::ExitCode;

mod profiles;
mod run;
pub use run::{run, show};

/// Runs a repeated point makes, at least and at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runs {
    pub min: u32,
    pub max: u32,
}

/// A point made ready to run: its command line, checked.
pub struct ReadyPoint {
    pub argv: Vec<String>,
    pub runs: Runs,
    /// One run's planned length, seconds; None when the run is limited by a count.
    pub run_seconds: Option<f64>,
    /// The pause between repeated runs, seconds.
    pub pause_seconds: f64,
    /// Run under an agent profile: the agent runs its commands before and after each run, for
    /// a time no plan can know.
    pub profiled: bool,
    /// The profile it asks of its agents, and how to reach them (checked before the first point).
    pub profile: Option<profiles::ProfileAsk>,
    /// A pattern point's cells and rounds (`pattern = "mesh"`); `run_seconds` is then all its
    /// rounds'.
    pub fleet: Option<FleetPlan>,
}

/// What a pattern point tests and how long its rounds take.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetPlan {
    pub pattern: Pattern,
    pub hosts: usize,
    pub cells: usize,
    pub rounds: usize,
    /// One test's planned length, seconds; None when limited by a count.
    pub test_seconds: Option<f64>,
    /// `--different-nodes`: the agents may leave pairs out, so fewer cells may run.
    pub different_nodes: bool,
}

impl FleetPlan {
    /// `mesh of 5 hosts: 20 cells in 10 rounds, about 70 s (each round 6 s + 1 s to start it)`.
    pub fn describe(&self) -> String {
        let time = match self.test_seconds {
            Some(s) => format!(
                "about {} (each round {s} s + {} s to start it)",
                duration_text(fleet::planned_seconds(self.rounds, s)),
                fleet::ROUND_SETUP_SECONDS
            ),
            None => "each test limited by a count".into(),
        };
        format!(
            "{} of {}: {} in {}, {time}{}",
            self.pattern,
            plural(self.hosts as u64, "host"),
            plural(self.cells as u64, "cell"),
            plural(self.rounds as u64, "round"),
            if self.different_nodes {
                "; fewer if --different-nodes leaves pairs on one node out"
            } else {
                ""
            }
        )
    }
}

/// `linerate plan check FILE`.
pub fn check(file: &std::path::Path, quick: bool, commands: bool) -> anyhow::Result<ExitCode> {
    // A plan that does not read is a usage error (status 2), as a bad flag is.
    let (plan, ready) = load(file, quick).map_err(Usage::Plan)?;
    let mut text = format!("plan '{}' ({}): valid\n", plan.name, file.display());
    let mut all = Tally::default();
    for (ti, test) in plan.tests.iter().enumerate() {
        let mut tally = Tally::default();
        for (_, r) in ready.iter().filter(|(p, _)| p.test == ti) {
            tally.add(r);
        }
        let mut shape: Vec<String> = test
            .vary
            .iter()
            .map(|v| format!("{} {}", v.values.len(), v.option))
            .collect();
        if !test.variants.is_empty() {
            shape.push(format!("{} variants", test.variants.len()));
        }
        text += &format!(
            "  test {} ({}): {}{}, {}\n",
            test.name,
            test.kind.name(),
            plural(tally.points as u64, "point"),
            if shape.is_empty() {
                String::new()
            } else {
                format!(" ({})", shape.join(" x "))
            },
            tally.describe()
        );
        all.merge(&tally);
        let mut shapes: Vec<String> = Vec::new();
        for f in ready
            .iter()
            .filter(|(p, _)| p.test == ti)
            .filter_map(|(_, r)| r.fleet.as_ref())
        {
            let shape = f.describe();
            if !shapes.contains(&shape) {
                text += &format!("    {shape}\n");
                shapes.push(shape);
            }
        }
        if commands {
            for (_, r) in ready.iter().filter(|(p, _)| p.test == ti) {
                text += &format!("    {}\n", shell_words(&r.argv));
            }
        }
    }
    text += &format!("in all: {}, {}\n", plural(all.points as u64, "point"), all.describe());
    let (lines, missing) = check_profiles(ready.iter().map(|(_, r)| r));
    crate::finish::print_text(&(text + &lines))?;
    if let Some(missing) = missing {
        // The agents lack what the plan asks: a setup error (status 1), as an unreachable agent is.
        eprint!("{}", say_missing(&missing));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a plan and makes every point ready, or says which line is wrong.
pub fn load(file: &std::path::Path, quick: bool) -> anyhow::Result<(Plan, Vec<(Point, ReadyPoint)>)> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading plan {}", file.display()))?;
    let plan = plan::parse(&text).with_context(|| format!("plan {}", file.display()))?;
    let mut ready = Vec::new();
    for point in plan.points(quick, conflicting) {
        let test = &plan.tests[point.test];
        let r = prepare(test.kind, &point).map_err(|(at, message)| {
            let at = at.unwrap_or(test.at);
            anyhow::anyhow!("plan {}: {at}: {message}", file.display())
        })?;
        ready.push((point, r));
    }
    Ok((plan, ready))
}

/// Whether two options of a kind exclude each other (clap's `conflicts_with`, either way).
fn conflicting(kind: Kind, a: &str, b: &str) -> bool {
    let cli = Cli::command();
    let Some(cmd) = cli.find_subcommand(kind.name()) else {
        return false;
    };
    let find = |name: &str| {
        let name = name.replace('_', "-");
        cmd.get_arguments().find(|x| x.get_long() == Some(name.as_str()))
    };
    let (Some(x), Some(y)) = (find(a), find(b)) else {
        return false;
    };
    let hits = |p: &clap::Arg, q: &clap::Arg| cmd.get_arg_conflicts_with(p).iter().any(|c| c.get_id() == q.get_id());
    hits(x, y) || hits(y, x)
}

/// The long flags a test kind takes, without dashes.
fn long_flags(kind: Kind) -> Vec<String> {
    let cli = Cli::command();
    cli.find_subcommand(kind.name())
        .map(|c| {
            c.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The command line a point stands for.
pub fn argv(kind: Kind, point: &Point) -> Vec<String> {
    let mut args = vec!["linerate".to_string(), kind.name().to_string()];
    args.extend(point.targets.iter().cloned());
    for s in &point.settings {
        let flag = format!("--{}", s.option.replace('_', "-"));
        match &s.value {
            OptionValue::Switch(true) => args.push(flag),
            OptionValue::Switch(false) => {}
            OptionValue::One(v) => args.push(format!("{flag}={v}")),
            OptionValue::Many(vs) => args.extend(vs.iter().map(|v| format!("{flag}={v}"))),
        }
    }
    args
}

type PointError = (Option<Position>, String);

fn prepare(kind: Kind, point: &Point) -> Result<ReadyPoint, PointError> {
    let flags = long_flags(kind);
    for s in &point.settings {
        let name = s.option.replace('_', "-");
        if !flags.contains(&name) {
            let hint = plan::nearest(&name, flags.iter().map(String::as_str))
                .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
            return Err((
                Some(s.at),
                format!("`{}` is not an option of `linerate {}`{hint}", s.option, kind.name()),
            ));
        }
    }
    let argv = argv(kind, point);
    let at_flag = |message: &str| -> Option<Position> {
        point
            .settings
            .iter()
            .find(|s| message.contains(&format!("--{}", s.option.replace('_', "-"))))
            .map(|s| s.at)
    };
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        let text = e.render().to_string();
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("bad option")
            .trim_start_matches("error: ")
            .to_string();
        (at_flag(&text), first)
    })?;
    let setting =
        |name: &str| -> Option<&Setting> { point.settings.iter().find(|s| plan::same_option(&s.option, name)) };
    let profile = profile_ask(&cli.command);
    let layout = fleet_layout(&cli.command).map_err(|e| (setting("pattern").map(|s| s.at), e.to_string()))?;
    let run_seconds = validate(cli.command).map_err(|e| {
        let message = format!("{e:#}");
        (at_flag(&message), message)
    })?;
    let fleet = layout.map(|(pattern, layout, different_nodes)| FleetPlan {
        pattern,
        hosts: layout.hosts.len(),
        cells: layout.cells.len(),
        rounds: layout.rounds.len(),
        test_seconds: run_seconds,
        different_nodes,
    });
    let run_seconds = match &fleet {
        Some(f) => run_seconds.map(|s| fleet::planned_seconds(f.rounds, s)),
        None => run_seconds,
    };
    let number = |name: &str, default: u32| -> u32 {
        setting(name)
            .and_then(|s| s.value.to_string().parse().ok())
            .unwrap_or(default)
    };
    let runs = match setting("repeat").map(|s| s.value.to_string()) {
        Some(v) if v == "auto" => Runs {
            min: number("min-runs", 3),
            max: number("max-runs", 10),
        },
        Some(v) => {
            let n = v.parse().unwrap_or(1);
            Runs { min: n, max: n }
        }
        None => Runs { min: 1, max: 1 },
    };
    let pause_seconds = setting("pause")
        .and_then(|s| s.value.to_string().parse::<linerate_core::units::TimeSpan>().ok())
        .map_or(1.0, |t| t.as_secs_f64());
    Ok(ReadyPoint {
        argv,
        runs,
        run_seconds,
        pause_seconds,
        profiled: setting("profile").is_some(),
        profile,
        fleet,
    })
}

/// A pattern point's layout (its targets expanded, `dns:NAME` and `@FILE`), and whether it
/// asks for different nodes; None for a test of one pair.
fn fleet_layout(command: &Command) -> Result<Option<(Pattern, fleet::Layout, bool)>, fleet::FleetError> {
    let hosts = match command {
        Command::Tcp(a) => &a.hosts,
        Command::Udp(a) => &a.hosts,
        Command::Rr(a) => &a.hosts,
        _ => return Ok(None),
    };
    let f = &hosts.fleet;
    let Some(pattern) = f.pattern else {
        return Ok(None);
    };
    let selection = fleet::Selection::expand(pattern, &hosts.hosts, &f.from, &f.pairs, hosts.port)?;
    Ok(Some((pattern, selection.layout()?, f.different_nodes)))
}

/// The missing profiles' lines as errors, each `linerate: ...`.
pub fn say_missing(missing: &str) -> String {
    missing.lines().map(|l| format!("linerate: {l}\n")).collect()
}

/// The profile a point's command asks of its agents, and how it reaches them; None without one.
fn profile_ask(command: &Command) -> Option<profiles::ProfileAsk> {
    let (agents, port, reach) = match command {
        Command::Tcp(a) => (a.hosts.hosts.clone(), a.hosts.port, &a.reach),
        Command::Udp(a) => (a.hosts.hosts.clone(), a.hosts.port, &a.common.reach),
        Command::Rr(a) => (a.hosts.hosts.clone(), a.hosts.port, &a.common.reach),
        Command::Http(a) => (a.agent.to_vec(), linerate_core::client::DEFAULT_PORT, &a.common.reach),
        _ => return None,
    };
    Some(profiles::ProfileAsk {
        profile: reach.profile.clone()?,
        agents,
        port,
        reach: reach.clone(),
    })
}

/// Asks the agents of the plan's profiled points which profiles they have: the lines to print,
/// and the lines naming what is missing, if anything is. Inside a lab (`linerate lab exec`) the
/// hint names `lab up --profile`.
pub fn check_profiles<'a>(ready: impl IntoIterator<Item = &'a ReadyPoint>) -> (String, Option<String>) {
    let lab = std::env::var("LINERATE_LAB").ok();
    profiles::report(&profiles::check(ready), lab.as_deref())
}

/// Validates a point's options as its command would, and gives one run's planned seconds.
fn validate(command: Command) -> anyhow::Result<Option<f64>> {
    Ok(match command {
        Command::Tcp(a) => a.into_spec()?.timing.length_seconds(),
        Command::Udp(a) => {
            let points = a.sweep()?.map_or(1, |p| p.sizes_bytes.len() * p.gaps_ns.len());
            a.into_spec()?.timing.length_seconds().map(|s| s * points as f64)
        }
        Command::Rr(a) => {
            let points = a.sizes()?.map_or(1, |s| s.len());
            a.into_spec()?.timing.length_seconds().map(|s| s * points as f64)
        }
        Command::Http(a) => {
            let counts = a.user_counts()?;
            a.parsed_urls()?;
            let spec = a.spec_for(counts[0])?;
            spec.timing.length_seconds().map(|s| s * counts.len() as f64)
        }
        _ => anyhow::bail!("a plan runs tcp, udp, rr and http tests"),
    })
}

impl ReadyPoint {
    /// Seconds this point is planned to take at most: its runs, a second each for connecting,
    /// draining and storing, and the pauses between them; 0 when its runs are limited by a count.
    pub fn estimate_seconds(&self) -> f64 {
        self.seconds(self.runs.max)
    }

    fn seconds(&self, runs: u32) -> f64 {
        match self.run_seconds {
            Some(s) => f64::from(runs) * (s + 1.0) + f64::from(runs.saturating_sub(1)) * self.pause_seconds,
            None => 0.0,
        }
    }
}

/// Points, runs and time, added up.
#[derive(Default)]
struct Tally {
    points: usize,
    runs_min: u64,
    runs_max: u64,
    seconds_min: f64,
    seconds_max: f64,
    /// Runs limited by a count, whose length is not known before they run.
    unknown: u64,
    /// Runs under an agent profile, whose commands' time is not known either.
    profiled: u64,
}

impl Tally {
    fn add(&mut self, r: &ReadyPoint) {
        self.points += 1;
        self.runs_min += u64::from(r.runs.min);
        self.runs_max += u64::from(r.runs.max);
        self.seconds_min += r.seconds(r.runs.min);
        self.seconds_max += r.seconds(r.runs.max);
        if r.run_seconds.is_none() {
            self.unknown += u64::from(r.runs.max);
        }
        if r.profiled {
            self.profiled += u64::from(r.runs.max);
        }
    }

    fn merge(&mut self, o: &Tally) {
        self.points += o.points;
        self.runs_min += o.runs_min;
        self.runs_max += o.runs_max;
        self.seconds_min += o.seconds_min;
        self.seconds_max += o.seconds_max;
        self.unknown += o.unknown;
        self.profiled += o.profiled;
    }

    fn describe(&self) -> String {
        let runs = if self.runs_min == self.runs_max {
            plural(self.runs_min, "run")
        } else {
            format!("{} to {} runs", self.runs_min, self.runs_max)
        };
        let time = if self.seconds_max == 0.0 && self.unknown > 0 {
            "each limited by a count".to_string()
        } else if (self.seconds_max - self.seconds_min).abs() < 0.5 {
            format!("about {}", duration_text(self.seconds_min))
        } else {
            format!(
                "about {} to {}",
                duration_text(self.seconds_min),
                duration_text(self.seconds_max)
            )
        };
        let unknown = if self.unknown > 0 && self.seconds_max > 0.0 {
            format!(" (+ {} limited by a count, not timed)", plural(self.unknown, "run"))
        } else {
            String::new()
        };
        let profiled = if self.profiled > 0 {
            format!(
                " (+ the agents' profile commands around {}, not timed)",
                plural(self.profiled, "run")
            )
        } else {
            String::new()
        };
        format!("{runs}, {time}{unknown}{profiled}")
    }
}

/// `1 run`, `3 runs`.
fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `45 s`, `12 min`, `2.5 h`.
fn duration_text(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 5400.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// A command line as a shell would take it back.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| crate::finish::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}
