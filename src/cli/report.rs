//! `linerate report`: plots and a self-contained HTML page from result documents.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate tcp host --json > run.json && linerate report run.json -o run.html\n  linerate report sweep.json --svg plots/ --csv plots/"
)]
pub struct ReportArgs {
    /// Documents to report on: JSON files written by --json (a run or a sweep)
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
}
