//! `--qoo`: the applications a test's latency under load is graded for (Quality of Outcome),
//! beside the grades every run with probes gets (bufferbloat, the RPM category of its loaded
//! round trip). docs/results.md, "Grades", has the rules.

use crate::cli::usage::Usage;
use linerate_results::qoo::QooRequirement;

/// The Quality of Outcome requirements to grade against.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GradeArgs {
    /// Grade the latency under load for an application (repeatable): video-call, gaming,
    /// streaming, or FILE.toml
    #[arg(
        long = "qoo",
        value_name = "NAME|FILE.toml",
        action = clap::ArgAction::Append,
        help_heading = "Grades",
        long_help = "Grade the probes' latency under load for an application by Quality of Outcome\n\
(draft-ietf-ippm-qoo): 0 to 100 % between the latency at which it works perfectly and the\n\
one at which it is useless, per percentile, and likewise for loss; the least counts.\n\
Built in: video-call, gaming, streaming; or your own in a TOML file (docs/results.md,\n\
\"Grades\"). Repeatable. Needs --probe (a run without probes has no latency to grade).\n\
Example: --probe rr --qoo video-call --qoo ./voip.toml"
    )]
    pub qoo: Vec<String>,
}

impl GradeArgs {
    /// The requirements named, each read and checked before any traffic: a bad name or file is a
    /// usage error, in one line.
    pub fn requirements(&self) -> Result<Vec<QooRequirement>, Usage> {
        self.qoo
            .iter()
            .map(|a| linerate_results::qoo::requirement(a).map_err(Usage::Flag))
            .collect()
    }
}
