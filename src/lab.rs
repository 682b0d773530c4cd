//! `linerate lab`: emulated hosts and links on this machine (up, status, exec, down) and the
//! link relay a lab runs; the work is `linerate_lab`'s, this file prints what it returns.

use crate::cli::lab::LabCommand;
use crate::finish::print_text;
use anyhow::Context;
use linerate_lab as lab;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `linerate lab ...`.
pub fn command(cmd: LabCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        LabCommand::Up {
            name,
            hosts,
            links,
            no_netem,
            profiles,
            json,
        } => {
            let state = lab::up(&lab::UpOptions {
                name: name.name,
                hosts,
                links,
                no_netem,
                profiles,
            })?;
            show(&lab::status(&state), json)?;
        }
        LabCommand::Status { name, json } => show(&lab::status(&lab::load(&name.name)?), json)?,
        LabCommand::Exec { name, host, command } => return Err(lab::exec(&name.name, &host, &command).into()),
        LabCommand::Down { name } => {
            let removed = lab::down(&name.name)?;
            print_text(&removed.iter().map(|r| format!("removed {r}\n")).collect::<String>())?;
        }
        LabCommand::Relay { config } => {
            let text = std::fs::read_to_string(&config).with_context(|| format!("reading {}", config.display()))?;
            let config: lab::relay::RelayConfig = serde_json::from_str(&text)?;
            let stop = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop))?;
            signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))?;
            if let Err(e) = lab::relay::raise_priority() {
                // To the relay's log: the lab runs, its delays less steady on a busy machine.
                eprintln!("linerate: the relay's priority stays as it was: {e}");
            }
            lab::relay::run(&config, &stop).context("link relay")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A lab's state as text, or as JSON with `--json`.
fn show(record: &lab::LabRecord, json: bool) -> anyhow::Result<()> {
    print_text(&if json {
        linerate_results::document::to_json(record)
    } else {
        linerate_report::lab::status_text(record, lab::SUBNET)
    })
}
