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
mod secret;
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
                return ExitCode::from(cli::usage::EXIT_USAGE);
            }
            eprintln!("linerate: {} (see --help)", cli::usage::one_line(&e));
            return ExitCode::from(cli::usage::EXIT_USAGE);
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
                ExitCode::from(cli::usage::EXIT_USAGE)
            } else if err.chain().any(|e| {
                matches!(
                    e.downcast_ref::<linerate_core::client::ClientError>(),
                    Some(linerate_core::client::ClientError::RelayedRefused { .. })
                )
            }) {
                // A third-party run came back and could not be true: the far end ran
                // it, so this is a run whose figures are refused, as a matrix's cell would be.
                ExitCode::from(finish::EXIT_PARTIAL)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::serve(&args),
        Command::Tcp(args) => drive::tcp::command(args),
        Command::Udp(args) => drive::udp::command(args),
        Command::Rr(args) => drive::rr::command(args),
        Command::Rrul(args) => drive::rrul::command(args),
        Command::Http(args) => drive::http::command(&args),
        Command::Rpm(args) => drive::rpm::command(&args),
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
        Command::Secret(args) => secret::command(&args),
        Command::Lab(args) => lab::command(args.command),
        Command::Sys(args) => host::sys(&args),
        Command::Doctor(args) => host::doctor(&args),
        Command::Calc(args) => host::calc(&args),
        Command::Completions(args) => Ok(cli::complete::print_completions(args.shell).map(|()| ExitCode::SUCCESS)?),
        Command::Man(args) => Ok(cli::complete::man(&args).map(|()| ExitCode::SUCCESS)?),
    }
}
