//! `linerate report`: plots and a self-contained HTML page from result documents.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A SOURCE is: a document written by --json (FILE.json: a run, a repeated run, a sweep, a\ncomparison); a stored result (42); a campaign (ID, or ID@VARIANT); stored results by label\n(label:K=V[,K=V]); a comparison A..B of any two of these.\nExamples:\n  linerate tcp host --json > run.json && linerate report run.json -o run.html\n  linerate report sweep.json --svg plots/ --csv plots/\n  linerate report toe-tp1d5j -o campaign.html\n  linerate report toe-tp1d5j@off..toe-tp1d5j@on -o ab.html"
)]
pub struct ReportArgs {
    /// What to report on: FILE.json, a result id, a campaign `ID` or `ID@VARIANT`, `label:K=V`, or `A..B`
    #[arg(value_name = "SOURCE", required = true)]
    pub sources: Vec<String>,

    /// Write the report here: FILE.html (the page) or FILE.svg (the plots alone)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Write each plot as DIR/ID.svg
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,

    /// Write each plot's series as DIR/ID.csv (headed columns with units)
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,

    #[command(flatten)]
    pub db: super::common::DbArgs,
}
