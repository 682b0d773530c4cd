//! `linerate plan`: campaigns written once in a TOML file (docs/plans.md).

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    pub command: PlanCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum PlanCommand {
    /// Check a plan without running it: every option of every point, how many runs, how long
    Check {
        /// The plan file (TOML)
        file: PathBuf,
        /// Check the plan as `plan run --quick` would run it (the `[quick]` overlay laid on)
        #[arg(long)]
        quick: bool,
        /// Print the command line each point stands for
        #[arg(long)]
        commands: bool,
    },
}
