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
    /// Run a plan: every point stored as it ends, the campaign's tables at the end
    Run {
        /// The plan file (TOML)
        file: PathBuf,
        /// Shorten every duration with the plan's `[quick]` overlay
        #[arg(long)]
        quick: bool,
        /// Run only the points campaign ID has not stored complete
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        #[command(flatten)]
        db: super::common::DbArgs,
    },
    /// A campaign's tables again, from the store
    Show {
        /// The campaign's id (`plan run` prints it)
        id: String,
        /// The tables as a JSON document
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: super::common::DbArgs,
    },
}
