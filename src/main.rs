//! linerate: parse the command line and dispatch; nothing else. Every test command runs
//! through the one driver ([`drive`]), the others through a file of their own.

mod campaign;
mod cli;
mod compare;
mod drive;
mod finish;
mod host;
mod interrupt;
mod lab;
mod live;
mod quick;
mod repeat;
mod report;
mod serve;
mod sources;

use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind as K;
            if matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // Bare `linerate`: the subcommands, and the status of a usage error.
            if e.kind() == K::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                return ExitCode::from(EXIT_USAGE);
            }
            eprintln!("linerate: {} (see --help)", one_line(&e));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("linerate: {err:#}");
            // A range or combination refused after parsing is a usage error like clap's own.
            if cli::usage::is_usage(&err) {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// A usage error: a bad flag or value, found by clap or by a check after it (README, "Exit
/// status").
const EXIT_USAGE: u8 = 2;

/// Clap's error in one line naming the problem, not its usage block.
fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    // `-i -1`: a value with a sign, named as such, whatever the flag's parser says of it.
    if let (Some(arg), Some(value)) = (text(ContextKind::InvalidArg), text(ContextKind::InvalidValue))
        && cli::looks_negative(value)
    {
        let flag = arg.split_whitespace().next().unwrap_or(arg);
        return format!("{flag}: a negative value is not allowed, got {value}");
    }
    // `-t -1s` where the flag takes no hyphen: clap reads `-1s` as flags; name the flag before it.
    if e.kind() == clap::error::ErrorKind::UnknownArgument
        && let Some(arg) = text(ContextKind::InvalidArg)
        && cli::looks_negative(arg)
    {
        let args: Vec<String> = std::env::args().collect();
        if let Some(i) = args.iter().position(|a| a.starts_with(arg))
            && let Some(flag) = args[..i].last().filter(|f| f.starts_with('-'))
        {
            return format!("{flag}: a negative value is not allowed, got {}", args[i]);
        }
        return format!("{arg}: a negative value is not allowed");
    }
    let rendered = e.render().to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut first = lines.next().unwrap_or("bad arguments").to_string();
    // "the following required arguments were not provided:" names them on the next line.
    if first.ends_with(':')
        && let Some(next) = lines.next()
    {
        first = format!("{first} {next}");
    }
    // Keep clap's list of valid values and its suggestion ("tip: a similar argument exists:
    // '--window'") on the line.
    for tip in rendered
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip:") || l.starts_with("[possible values:"))
    {
        first = format!("{first}; {tip}");
    }
    first.trim_start_matches("error: ").to_string()
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::serve(&args),
        Command::Tcp(args) => drive::tcp::command(args),
        Command::Udp(args) => drive::udp::command(args),
        Command::Rr(args) => drive::rr::command(args),
        Command::Http(args) => drive::http::command(&args),
        Command::Quick(args) => quick::quick(&args),
        Command::Results(args) => cli::results::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Plan(args) => match args.command {
            cli::plan::PlanCommand::Check { file, quick, commands } => campaign::check(&file, quick, commands),
            cli::plan::PlanCommand::Run {
                file,
                quick,
                resume,
                db,
            } => campaign::run(&file, quick, resume.as_deref(), &db),
            cli::plan::PlanCommand::Show { id, json, db } => campaign::show(&id, json, &db),
        },
        Command::Report(args) => report::report(&args),
        Command::Lab(args) => lab::command(args.command),
        Command::Sys(args) => host::sys(&args),
        Command::Doctor(args) => host::doctor(&args),
        Command::Calc(args) => host::calc(&args),
        Command::Completions(args) => Ok(cli::complete::print_completions(args.shell).map(|()| ExitCode::SUCCESS)?),
        Command::Man(args) => Ok(cli::complete::man(&args).map(|()| ExitCode::SUCCESS)?),
    }
}
