//! Result documents to figures: which charts a document gets, built from its numbers alone.
//! In: a [`Document`] (a single result or a sweep, as `--json` wrote it). Out: [`Figure`]s for
//! the renderers in [`crate::plot`] and the page in [`crate::html`]. Every figure id is listed
//! in docs/reports.md; a new document kind (a campaign, a comparison) is one more arm of
//! [`Document`] and one more builder here.
//!
//! By topic: `common` (every test: timeline, CPU and interrupts per CPU), `kinds` (what udp,
//! rr and http add), `sweeps` (the curves over a sweep's points), `campaign` (a campaign's
//! figures against its varied option), `sets` (a repeated test's runs, a comparison's bars).

pub mod campaign;
mod common;
mod kinds;
pub mod sets;
mod sweeps;

pub use campaign::Campaign;

use crate::plot::Figure;
use linerate_core::result::{Comparison, Outcome, Repeated, TestResult};
use linerate_core::sweep::Sweep;

/// A document a report is made from.
#[derive(Clone, Debug, PartialEq)]
pub enum Document {
    /// One run of a test (`"test": "tcp"`).
    Result(Box<TestResult>),
    /// A sweep (`"test": "udp sweep"`).
    Sweep(Box<Sweep>),
    /// A repeated test (`"test": "tcp repeat"`).
    Repeated(Box<Repeated>),
    /// A campaign's stored runs (`linerate plan run`).
    Campaign(Box<Campaign>),
    /// A comparison (`"test": "compare"`).
    Comparison(Box<Comparison>),
}

impl From<linerate_core::compare::Document> for Document {
    fn from(d: linerate_core::compare::Document) -> Document {
        use linerate_core::compare::Document as D;
        match d {
            D::Test(r) => Document::Result(r),
            D::Repeated(r) => Document::Repeated(r),
            D::Sweep(s) => Document::Sweep(s),
        }
    }
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("not JSON")]
    Json(#[source] serde_json::Error),
    #[error("not a linerate result or sweep document (no \"test\" field)")]
    NoTest,
    #[error("a \"{test}\" document that does not match its schema")]
    Schema {
        test: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Document {
    /// Reads a document as `linerate ... --json` printed it.
    pub fn parse(text: &str) -> Result<Document, DocumentError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(DocumentError::Json)?;
        let test = v
            .get("test")
            .and_then(|t| t.as_str())
            .ok_or(DocumentError::NoTest)?
            .to_string();
        let schema = |source| DocumentError::Schema {
            test: test.clone(),
            source,
        };
        use linerate_core::result::DocumentKind;
        Ok(match DocumentKind::of(&test) {
            DocumentKind::Sweep => Document::Sweep(Box::new(serde_json::from_value(v).map_err(schema)?)),
            DocumentKind::Repeated => Document::Repeated(Box::new(serde_json::from_value(v).map_err(schema)?)),
            DocumentKind::Comparison => Document::Comparison(Box::new(serde_json::from_value(v).map_err(schema)?)),
            DocumentKind::Run => Document::Result(Box::new(serde_json::from_value(v).map_err(schema)?)),
        })
    }

    /// The test kind as the document names it: "tcp", "udp sweep".
    pub fn test(&self) -> String {
        match self {
            Document::Result(r) => r.test.clone(),
            Document::Sweep(s) => match &s.kind {
                linerate_core::sweep::SweepKind::Udp => "udp sweep".to_string(),
                linerate_core::sweep::SweepKind::Rr(_) => "rr sweep".to_string(),
                linerate_core::sweep::SweepKind::Http(_) => "http sweep".to_string(),
                linerate_core::sweep::SweepKind::Tcp(_) => "tcp sweep".to_string(),
            },
            Document::Repeated(r) => r.test.clone(),
            Document::Campaign(_) => "campaign".to_string(),
            Document::Comparison(_) => "compare".to_string(),
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

/// Every figure the document has data for, in reading order.
pub fn figures(doc: &Document) -> Vec<Figure> {
    let mut out = Vec::new();
    match doc {
        Document::Result(r) => out.extend(run_figures(r)),
        Document::Sweep(s) => out.extend(sweeps::figures(s)),
        Document::Repeated(rep) => {
            out.extend(sets::repeat_runs(rep));
            out.extend(last_complete(rep).map(run_figures).into_iter().flatten());
        }
        Document::Campaign(c) => out.extend(campaign::figures(c)),
        Document::Comparison(c) => out.extend(sets::compare(c)),
    }
    // A figure with nothing to draw (every point's figure unknown) is left out.
    out.retain(Figure::has_data);
    out
}

/// The figures of one run.
fn run_figures(r: &TestResult) -> Vec<Figure> {
    let mut out = Vec::new();
    if r.summary.http.is_some() {
        out.extend(kinds::http(r));
    } else {
        out.extend(common::timeline(r));
    }
    out.extend(common::cpu_timeline(r));
    out.extend(common::per_cpu(r));
    if r.summary.udp.is_some() {
        out.extend(kinds::udp(r));
    }
    if r.summary.rr.is_some() {
        out.extend(kinds::rr(r));
    }
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
