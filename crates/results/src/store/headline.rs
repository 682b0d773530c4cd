//! The headline figures of a stored document, one function per document kind, so that lists and
//! comparisons read columns instead of parsing documents.
//!
//! In: a document as JSON (any kind: the store keeps kinds it does not know, with no figures).
//! Out: [`Figure`]s, the first the headline; a figure the document lacks is null, never 0. A new
//! document kind adds one arm to [`figures`].

use super::Figure;
use crate::headline::headline;
use linerate_wire::result::{CellFigure, DocumentKind, Matrix, Repeated, TestResult};
use serde::Deserialize;
use serde_json::Value;

/// The headline figures of `document`, whose `test` field is `kind`; the first is the one a
/// list shows. A single run's and a repeated test's are `summary::headline`'s, the one list of
/// each kind's figures (a repeated test's are the means over its runs). Empty for a kind this
/// build does not know or a document that does not read.
pub fn figures(kind: &str, document: &Value) -> Vec<Figure> {
    match DocumentKind::of(kind) {
        DocumentKind::Run => match TestResult::deserialize(document) {
            Ok(r) => headline(&r)
                .iter()
                .map(|f| Figure {
                    name: f.label.to_string(),
                    unit: f.unit.to_string(),
                    value: f.value,
                })
                .collect(),
            Err(_) => Vec::new(),
        },
        DocumentKind::Repeated => match Repeated::deserialize(document) {
            Ok(rep) => rep
                .aggregate
                .iter()
                .map(|f| Figure {
                    name: format!("{} (mean)", f.label),
                    unit: f.stats.unit.clone(),
                    value: Some(f.stats.mean),
                })
                .collect(),
            Err(_) => Vec::new(),
        },
        DocumentKind::Sweep => sweep_figures(document),
        DocumentKind::Comparison => Vec::new(),
        DocumentKind::Matrix => match Matrix::deserialize(document) {
            Ok(m) => matrix_figures(&m),
            Err(_) => Vec::new(),
        },
    }
}

fn num(v: &Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer).and_then(Value::as_f64)
}

fn figure(name: &str, unit: &str, value: Option<f64>) -> Figure {
    Figure {
        name: name.to_string(),
        unit: unit.to_string(),
        value,
    }
}

/// Sweeps: the number of points first, then the derived figures where the kind has them (the rr
/// size fit, the http optimum).
fn sweep_figures(d: &Value) -> Vec<Figure> {
    let points = d.get("points").and_then(Value::as_array).map(|p| p.len() as f64);
    let mut out = vec![figure("points", "points", points)];
    match d.get("test").and_then(Value::as_str) {
        Some("rr sweep") => {
            out.push(figure("fit slope", "us/B", num(d, "/summary/fit/slope_us_per_byte")));
            out.push(figure("fit intercept", "us", num(d, "/summary/fit/intercept_us")));
        }
        Some("http sweep") => {
            out.push(figure("optimum users", "users", num(d, "/summary/optimum/users")));
            out.push(figure(
                "optimum responses",
                "/s",
                num(d, "/summary/optimum/responses_per_second"),
            ));
        }
        _ => {}
    }
    out
}

/// Matrices: first the sum of the flows of a concurrent throughput pattern (incast,
/// outcast), else the median cell, in the figure's unit; then Jain's index over every cell, the
/// cells that measured nothing and those that measured.
fn matrix_figures(m: &Matrix) -> Vec<Figure> {
    let values = m.values();
    let unit = m.figure.unit();
    let head = if m.pattern.concurrent() && m.figure == CellFigure::ThroughputMbps {
        figure("sum of flows", unit, m.sum)
    } else {
        figure("median cell", unit, crate::headline::median_cell(m))
    };
    vec![
        head,
        figure("Jain's index", "", m.jain),
        figure("cells failed", "cells", Some((m.cells.len() - values.len()) as f64)),
        figure("cells measured", "cells", Some(values.len() as f64)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_single_run_has_the_kinds_headline_and_a_missing_figure_is_null() {
        let spec = linerate_wire::spec::TestSpec::Tcp(linerate_wire::spec::TcpSpec::new());
        let mut summary = linerate_wire::result::Summary::default();
        summary.received.seconds = 2.0;
        summary.received.bits_per_second = 941.5e6;
        summary.sent.cpu.host_percent = None;
        let d = serde_json::to_value(linerate_core::sweep::stub_result(spec, summary)).expect("document");
        let f = figures("tcp", &d);
        assert_eq!(f[0], figure("receiver throughput", "Mbit/s", Some(941.5)));
        assert!(
            f.iter().any(|x| x.unit == "% of host" && x.value.is_none()),
            "null stays null: {f:?}"
        );
        assert!(
            figures("tcp", &json!({"test": "tcp"})).is_empty(),
            "a document that does not read"
        );
    }

    #[test]
    fn a_probed_run_stores_its_latency_figures_after_the_headline() {
        use linerate_wire::result::LatencyUnderLoad;
        use linerate_wire::spec::{ProbeSpec, ProbeVia, TcpSpec, TestSpec};
        let mut spec = TcpSpec::new();
        spec.probe = Some(ProbeSpec::new(ProbeVia::Rr));
        let mut r = linerate_core::sweep::stub_result(TestSpec::Tcp(spec), Default::default());
        r.latency = Some(LatencyUnderLoad {
            loaded_ms: Some(221.0),
            ..LatencyUnderLoad::default()
        });
        let f = figures("tcp", &serde_json::to_value(&r).expect("document"));
        assert_eq!(f[0].name, "receiver throughput", "the headline column is the kind's");
        assert!(f.contains(&figure("loaded latency p50", "ms", Some(221.0))), "{f:?}");
        assert!(
            f.contains(&figure("idle latency p50", "ms", None)),
            "unknown stays null: {f:?}"
        );
    }

    #[test]
    fn sweeps_have_their_own_headline() {
        let sweep = json!({"test": "rr sweep", "points": [{}, {}, {}],
            "summary": {"fit": {"slope_us_per_byte": 0.01, "intercept_us": 30.0}}});
        let f = figures("rr sweep", &sweep);
        assert_eq!(
            (f[0].value, f[1].value, f[2].value),
            (Some(3.0), Some(0.01), Some(30.0))
        );
        let http_sweep = json!({"test": "http sweep", "points": [{}], "summary": {"optimum": null}});
        let f = figures("http sweep", &http_sweep);
        assert_eq!((f[0].value, f[1].value), (Some(1.0), None));
        assert!(
            figures("sctp", &http_sweep).is_empty(),
            "an unknown kind has no figures"
        );
    }

    #[test]
    fn issue_24_a_matrix_has_its_sum_or_median_cell_jain_s_index_and_failed_cells() {
        use linerate_core::sweep::stub_matrix;
        use linerate_wire::result::Pattern;
        let incast = stub_matrix(
            Pattern::Incast,
            &["h1", "h2", "h3"],
            &[("h2", "h1", Ok(40.0)), ("h3", "h1", Ok(50.0))],
        );
        let f = figures("tcp matrix", &serde_json::to_value(&incast).expect("document"));
        // Every byte over the group's window: two 10 s flows started 0.4 ms apart.
        assert_eq!((f[0].name.as_str(), f[0].unit.as_str()), ("sum of flows", "Mbit/s"));
        let sum = f[0].value.expect("a sum");
        assert!((sum - 90.0 * 10.0 / 10.0004).abs() < 1e-9, "{sum}");
        assert_eq!(f[1].name, "Jain's index");
        assert!((f[1].value.expect("jain") - 8100.0 / 8200.0).abs() < 1e-12, "{f:?}");
        assert_eq!((f[2].value, f[3].value), (Some(0.0), Some(2.0)));
        let mesh = stub_matrix(
            Pattern::Mesh,
            &["h1", "h2", "h3"],
            &[
                ("h1", "h2", Ok(90.0)),
                ("h2", "h1", Ok(94.0)),
                ("h1", "h3", Err("h3 unreachable")),
                ("h3", "h1", Ok(10.0)),
            ],
        );
        let f = figures("tcp matrix", &serde_json::to_value(&mesh).expect("document"));
        assert_eq!(f[0], figure("median cell", "Mbit/s", Some(90.0)));
        assert_eq!(
            (f[2].name.as_str(), f[2].value, f[3].value),
            ("cells failed", Some(1.0), Some(3.0))
        );
        assert!(
            figures("tcp matrix", &json!({"test": "tcp matrix"})).is_empty(),
            "a matrix that does not read"
        );
    }
}
