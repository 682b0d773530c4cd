//! `linerate compare A B`: did B beat A, and by more than the noise?

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A and B are each a result document written by --json (FILE.json).\nExamples:\n  linerate compare before.json after.json\n  linerate compare before.json after.json --fail-if-worse 5"
)]
pub struct CompareArgs {
    /// The baseline: a result document (FILE.json)
    pub a: String,
    /// What is compared against it
    pub b: String,

    /// Exit with status 3 when any headline figure is significantly worse by more than PCT %
    #[arg(long, value_name = "PCT")]
    pub fail_if_worse: Option<f64>,

    /// Print the comparison document (JSON) instead of the tables
    #[arg(long)]
    pub json: bool,
}

impl CompareArgs {
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(p) = self.fail_if_worse {
            anyhow::ensure!(
                p.is_finite() && p >= 0.0,
                "--fail-if-worse takes a percentage of 0 or more, got {p}"
            );
        }
        Ok(())
    }
}

/// A side's source read from a file.
pub fn file_of(source: &str) -> Option<PathBuf> {
    let path = PathBuf::from(source);
    path.is_file().then_some(path)
}
