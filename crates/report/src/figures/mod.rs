//! Result documents to figures: which charts a document gets, built from its numbers alone.
//! In: a [`Subject`]: a document as `--json` wrote it (`linerate_results::document`), or a
//! campaign's stored runs. Out: [`Figure`]s for the renderers in [`crate::plot`] and the page in
//! [`crate::html`]. Every figure id is listed in docs/reports.md; a new document kind is one more
//! arm of the core's `Document` and one more builder here.
//!
//! By topic: `common` (every test: timeline, CPU and interrupts per CPU), `kinds` (what udp,
//! rr and http add), `sweeps` (the curves over a sweep's points), `campaign` (a campaign's
//! figures against its varied option), `sets` (a repeated test's runs, a comparison's bars),
//! `fleet` (a matrix's heat map and its concurrent flows over time), `latency` (a run's probes
//! beside its load: throughput and round trips on one time axis, each phase's distribution).

pub mod campaign;
mod common;
pub mod fleet;
mod kinds;
pub(crate) mod latency;
pub mod sets;
mod sweeps;

pub use campaign::Campaign;

use crate::plot::Figure;
use linerate_results::document::Document;
use linerate_wire::result::{Outcome, Repeated, TestResult};

/// What a report section is made from: a document linerate wrote (a run, a repeated test, a
/// sweep, a comparison), or a campaign's stored runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Subject {
    Document(Document),
    /// A campaign's stored runs (`linerate plan run`), or stored results by label.
    Campaign(Box<Campaign>),
}

impl Subject {
    /// The test kind as the section's heading names it: "tcp", "udp sweep", "campaign".
    pub fn test(&self) -> &str {
        match self {
            Subject::Document(d) => d.test(),
            Subject::Campaign(_) => "campaign",
        }
    }
}

/// The last complete run of a repeated test (the last run when none is complete).
pub fn last_complete(rep: &Repeated) -> Option<&TestResult> {
    rep.runs
        .iter()
        .rev()
        .find(|r| r.outcome() == Outcome::Complete)
        .or(rep.runs.last())
}

/// Every figure the subject has data for, in reading order.
pub fn figures(subject: &Subject) -> Vec<Figure> {
    let mut out = Vec::new();
    match subject {
        Subject::Document(Document::Run(r)) => out.extend(run_figures(r)),
        Subject::Document(Document::Sweep(s)) => out.extend(sweeps::figures(s)),
        Subject::Document(Document::Repeated(rep)) => {
            out.extend(sets::repeat_runs(rep));
            out.extend(last_complete(rep).map(run_figures).into_iter().flatten());
        }
        Subject::Document(Document::Comparison(c)) => out.extend(sets::compare(c)),
        Subject::Document(Document::Matrix(m)) => out.extend(fleet::figures(m)),
        Subject::Campaign(c) => out.extend(campaign::figures(c)),
    }
    // A figure with nothing to draw (every point's figure unknown) is left out.
    out.retain(Figure::has_data);
    out
}

/// Time series of fewer intervals than this are left out: one or two points say nothing over
/// time that the tables do not.
pub const TIME_SERIES_LEAST_POINTS: usize = 3;

/// Whether `f` is drawn against time and has too few intervals to show a course.
fn too_short_in_time(f: &Figure) -> bool {
    f.x.unit == "s"
        && f.x.label.starts_with("time")
        && f.series.iter().map(|s| s.points.len()).max().unwrap_or(0) < TIME_SERIES_LEAST_POINTS
}

/// The figures of one run, what its kind is about first: the throughput over time of a tcp
/// run, the histograms and loss of a udp run, the round trips of an rr run, the rates of an
/// http run; then its CPU.
fn run_figures(r: &TestResult) -> Vec<Figure> {
    let mut out = Vec::new();
    if r.summary.http.is_some() {
        out.extend(kinds::http(r));
    }
    if r.summary.udp.is_some() {
        out.extend(kinds::udp(r));
    }
    if r.summary.rr.is_some() {
        out.extend(kinds::rr(r));
    }
    if r.summary.http.is_none() {
        out.extend(common::timeline(r));
    }
    out.extend(latency::figures(r));
    out.extend(common::cpu_timeline(r));
    out.extend(common::per_cpu(r));
    out.retain(|f| !too_short_in_time(f));
    out
}

/// Bits per second in Mbit/s (10^6 bits per second), the text output's unit.
fn mbit(bits_per_second: f64) -> f64 {
    bits_per_second / 1e6
}

/// Where an interval's figure is drawn: its middle, seconds on its end's clock.
fn middle(start_ns: u64, end_ns: u64) -> f64 {
    (seconds(start_ns) + seconds(end_ns)) / 2.0
}

/// Nanoseconds on a side's clock in seconds.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}
