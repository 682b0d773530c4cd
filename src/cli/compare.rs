//! `linerate compare A B`: did B beat A, and by more than the noise?

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A and B are each: a result document written by --json (FILE.json); a stored result (42);\nstored results by label (label:nic=x2,mtu=9000); a campaign (ID), or one of its variants\n(ID@VARIANT). Points match by test and varied values.\nExamples:\n  linerate compare before.json after.json --fail-if-worse 5\n  linerate compare label:kernel=6.1 label:kernel=6.6\n  linerate compare toe-tp1d5j@off toe-tp1d5j@on"
)]
pub struct CompareArgs {
    /// The baseline: FILE.json, a result id, label:K=V[,K=V], a campaign ID or ID@VARIANT
    pub a: String,
    /// What is compared against it
    pub b: String,

    /// Exit with status 3 when any headline figure is significantly worse by more than PCT %
    /// (status 2 when the sides share no figure to compare)
    #[arg(long, value_name = "PCT")]
    pub fail_if_worse: Option<f64>,

    /// The smallest change, % of A's value, called better or worse: a significant change under it
    /// is no significant change [default: 2]
    #[arg(long, value_name = "PCT", default_value_t = linerate_results::compare::DEFAULT_THRESHOLD_PERCENT)]
    pub threshold: f64,

    /// Compare (and gate on) only this figure, by its name in the document (repeatable), e.g.
    /// --figure received_mbit_per_second
    #[arg(long = "figure", value_name = "NAME")]
    pub figures: Vec<String>,

    /// Print the comparison document (JSON) instead of the tables
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub db: super::common::DbArgs,
}

impl CompareArgs {
    pub fn check(&self) -> Result<(), super::usage::Usage> {
        if let Some(p) = self.fail_if_worse
            && !(p.is_finite() && p >= 0.0)
        {
            return Err(super::usage::usage!(
                "--fail-if-worse takes a percentage of 0 or more, got {p}"
            ));
        }
        if !(self.threshold.is_finite() && self.threshold >= 0.0) {
            return Err(super::usage::usage!(
                "--threshold takes a percentage of 0 or more, got {}",
                self.threshold
            ));
        }
        Ok(())
    }
}
