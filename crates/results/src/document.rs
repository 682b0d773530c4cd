//! Any document linerate writes with `--json` or keeps in its store, read back as typed data:
//! one run (`"test": "tcp"`), a repeated test (`"tcp repeat"`), a sweep (`"rr sweep"`) or a
//! comparison (`"compare"`). Told apart by [`DocumentKind::of`], the one rule every reader uses;
//! `compare`, `report` and the store's readers all start here. [`to_json`] is the one writer:
//! `--json`, the store and the report's JSON all write a document's text through it.

use linerate_wire::result::{Comparison, DocumentKind, Matrix, Outcome, Repeated, TestResult};
use linerate_wire::sweep::{Sweep, SweepKind};
use linerate_wire::text::escape_controls;

/// A document as `--json` prints it and the store keeps it: pretty-printed, with a trailing
/// newline. Every document and headed `--json` body is written by this one function, so that
/// what is printed and what is stored read the same byte for byte.
pub fn to_json<T: serde::Serialize + ?Sized>(document: &T) -> String {
    let mut s = serde_json::to_string_pretty(document).expect("a document is plain data and always serialises");
    s.push('\n');
    s
}

/// How a sweep ended, as its exit status says: failed when no point measured anything, partial
/// when cut short, else complete (a point that failed is a row of the table, its error beside it).
pub fn sweep_outcome(s: &Sweep) -> Outcome {
    // A sweep none of whose points measured anything measured nothing: failed (exit 4).
    if s.points.iter().all(|p| p.result.is_none()) {
        Outcome::Failed
    } else if s.partial {
        Outcome::Partial
    } else {
        Outcome::Complete
    }
}

/// A result document of any kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Document {
    /// One run of a test.
    Run(Box<TestResult>),
    /// A test run several times, with its statistics.
    Repeated(Box<Repeated>),
    /// A sweep over sizes, gaps or user counts.
    Sweep(Box<Sweep>),
    /// Two sets of results compared.
    Comparison(Box<Comparison>),
    /// A pattern run over a fleet: every cell's run and the matrix's figures.
    Matrix(Box<Matrix>),
}

/// Why a text is not a document.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("not JSON")]
    Json(#[source] serde_json::Error),
    #[error("not a linerate result document (no \"test\" field)")]
    NoTest,
    #[error("a \"{test}\" document that does not match its schema")]
    Schema {
        test: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Document {
    /// Reads a document as `linerate ... --json` printed it or the store keeps it, every string
    /// with its control characters escaped (a document may come from anyone; its renderers
    /// print it to terminals and files).
    pub fn from_json(text: &str) -> Result<Document, DocumentError> {
        #[derive(serde::Deserialize)]
        struct Head {
            test: Option<String>,
        }
        let head: Head = serde_json::from_str(text).map_err(DocumentError::Json)?;
        let test = head.test.ok_or(DocumentError::NoTest)?;
        fn read<T: serde::Serialize + serde::de::DeserializeOwned>(text: &str, test: &str) -> Result<T, DocumentError> {
            let typed = serde_json::from_str(text).map_err(|source| DocumentError::Schema {
                test: test.to_string(),
                source,
            })?;
            Ok(escape_controls(typed))
        }
        Ok(match DocumentKind::of(&test) {
            DocumentKind::Run => Document::Run(Box::new(read(text, &test)?)),
            DocumentKind::Repeated => Document::Repeated(Box::new(read(text, &test)?)),
            DocumentKind::Sweep => Document::Sweep(Box::new(read(text, &test)?)),
            DocumentKind::Comparison => Document::Comparison(Box::new(read(text, &test)?)),
            DocumentKind::Matrix => Document::Matrix(Box::new(read(text, &test)?)),
        })
    }

    /// The document as [`to_json`] writes it: the same text as its typed value's.
    pub fn to_json(&self) -> String {
        match self {
            Document::Run(r) => to_json(r),
            Document::Repeated(r) => to_json(r),
            Document::Sweep(s) => to_json(s),
            Document::Comparison(c) => to_json(c),
            Document::Matrix(m) => to_json(m),
        }
    }

    /// How the run, repeated test, sweep or matrix ended, the one rule its exit status and its
    /// stored record follow; None for a comparison, which measured nothing of its own.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Document::Run(r) => Some(r.outcome()),
            Document::Repeated(r) => Some(r.outcome()),
            Document::Sweep(s) => Some(sweep_outcome(s)),
            Document::Comparison(_) => None,
            Document::Matrix(m) => Some(m.outcome()),
        }
    }

    /// The test kind as the document names it: `tcp`, `udp sweep`, `rr repeat`, `compare`.
    pub fn test(&self) -> &str {
        match self {
            Document::Run(r) => &r.test,
            Document::Repeated(r) => &r.test,
            Document::Sweep(s) => match &s.kind {
                SweepKind::Udp => "udp sweep",
                SweepKind::Rr(_) => "rr sweep",
                SweepKind::Http(_) => "http sweep",
                SweepKind::Tcp(_) => "tcp sweep",
            },
            Document::Comparison(c) => &c.test,
            Document::Matrix(m) => &m.test,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::result::Summary;
    use linerate_wire::spec::{TcpSpec, TestSpec};

    #[test]
    fn a_sweep_is_failed_with_no_point_measured_else_partial_or_complete() {
        use linerate_wire::sweep::{At, SweepPoint};
        let point = |result: Option<TestResult>| SweepPoint {
            at: At::Udp {
                payload_bytes: 1000,
                gap_us: 10.0,
            },
            note: String::new(),
            error: result.is_none().then(|| "refused".into()),
            result,
        };
        let run = linerate_core::sweep::stub_result(TestSpec::Tcp(TcpSpec::new()), Summary::default());
        let mut s = Sweep {
            linerate: "test".into(),
            schema: 1,
            kind: SweepKind::Udp,
            partial: false,
            parameters: Vec::new(),
            points: Vec::new(),
        };
        assert_eq!(sweep_outcome(&s), Outcome::Failed, "no point at all");
        s.points = vec![point(None), point(Some(run))];
        assert_eq!(sweep_outcome(&s), Outcome::Complete, "one failed point is a row");
        s.partial = true;
        assert_eq!(sweep_outcome(&s), Outcome::Partial);
        s.points.remove(1);
        assert_eq!(sweep_outcome(&s), Outcome::Failed, "cut short with nothing measured");
        let doc = Document::Sweep(Box::new(s));
        assert_eq!(doc.outcome(), Some(Outcome::Failed));
    }

    #[test]
    fn the_one_writer_indents_and_ends_in_one_newline() {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            test: &'a str,
            rows: [u32; 2],
        }
        let text = to_json(&Body {
            test: "tcp",
            rows: [1, 2],
        });
        assert_eq!(text, "{\n  \"test\": \"tcp\",\n  \"rows\": [\n    1,\n    2\n  ]\n}\n");
        assert_eq!(to_json(&Vec::<u8>::new()), "[]\n");
    }

    #[test]
    fn each_kind_reads_back_as_itself_and_bad_text_says_why() {
        let run = linerate_core::sweep::stub_result(TestSpec::Tcp(TcpSpec::new()), Summary::default());
        let text = serde_json::to_string(&run).expect("serialize");
        let doc = Document::from_json(&text).expect("a run");
        assert_eq!(doc, Document::Run(Box::new(run.clone())));
        assert_eq!(doc.test(), run.test);
        assert_eq!(Document::from_json(&doc.to_json()).expect("written back"), doc);
        assert_eq!(doc.outcome(), Some(run.outcome()));

        let not_json = Document::from_json("{").expect_err("not JSON");
        assert!(matches!(not_json, DocumentError::Json(_)));
        let no_test = Document::from_json(r#"{"schema": 4}"#).expect_err("no test");
        assert!(matches!(no_test, DocumentError::NoTest));
        let bad = Document::from_json(r#"{"test": "rr sweep", "points": 3}"#).expect_err("schema");
        assert_eq!(
            bad.to_string(),
            "a \"rr sweep\" document that does not match its schema"
        );
    }
}
