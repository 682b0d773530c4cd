//! A comparison document ([`linerate_wire::result::Comparison`]) as text and JSON: per point a
//! table of each headline figure on both sides, the change, the 95 % interval of the
//! difference and the verdict; then what differs between the configurations.

use crate::repeat::num;
use linerate_wire::result::{Comparison, FigureComparison, IntervalMethod, PointComparison, Verdict};
use std::fmt::Write;

/// The document, pretty-printed, with a trailing newline ([`linerate_results::document::to_json`]).
pub fn json(c: &Comparison) -> String {
    linerate_results::document::to_json(c)
}

/// A point by its test and varied values: `tcp from=h1 to=h2` (a matrix's cell), `udp gap_us=10`.
pub fn point_name(p: &PointComparison) -> String {
    let mut s = p.test.clone();
    for x in &p.coordinates {
        s += &format!(" {}={}", x.name, x.value);
    }
    s
}

/// The comparison as text.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    let docs = |d: &[String]| {
        if d.len() == 1 {
            String::new()
        } else {
            format!(" ({} documents)", d.len())
        }
    };
    let _ = writeln!(out, "A: {}{}", c.a.source, docs(&c.a.documents));
    let _ = writeln!(out, "B: {}{}", c.b.source, docs(&c.b.documents));
    if let Some(t) = c.threshold_percent {
        let _ = writeln!(
            out,
            "verdicts: better or worse when the 95 % interval of B - A leaves out zero and the change is at least {t} % (--threshold)"
        );
    }
    for p in &c.points {
        let _ = writeln!(out, "\n{}  (runs: A {}, B {})", point_name(p), p.runs_a, p.runs_b);
        let _ = writeln!(
            out,
            "{:<44} {:>12} {:>12} {:>9}  {:<28} verdict",
            "figure", "A", "B", "change", "95 % interval of B - A"
        );
        for f in &p.figures {
            row(&mut out, f);
        }
    }
    if !c.only_a.is_empty() {
        let _ = writeln!(out, "\nonly in A: {}", c.only_a.join("; "));
    }
    if !c.only_b.is_empty() {
        let _ = writeln!(out, "only in B: {}", c.only_b.join("; "));
    }
    if c.config.is_empty() {
        out.push_str("\nconfiguration: no difference recorded between the two sides' options and hosts\n");
    } else {
        out.push_str("\nconfiguration difference (A -> B):\n");
        for ch in &c.config {
            let _ = writeln!(
                out,
                "  {:<12} {:<44} {} -> {}",
                ch.host,
                ch.key,
                ch.a.as_deref().unwrap_or("(none)"),
                ch.b.as_deref().unwrap_or("(none)")
            );
        }
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn row(out: &mut String, f: &FigureComparison) {
    let side = |s: &Option<linerate_wire::result::SideFigure>| s.as_ref().map_or("-".to_string(), |s| num(s.value));
    let change = f.change_percent.map_or("-".to_string(), |c| format!("{c:+.1} %"));
    let interval = match (f.difference_ci95_low, f.difference_ci95_high) {
        (Some(lo), Some(hi)) => format!(
            "{} .. {}{}",
            num(lo),
            num(hi),
            match f.method {
                Some(IntervalMethod::Bootstrap) => " (bootstrap)",
                _ => "",
            }
        ),
        _ => "-".to_string(),
    };
    let verdict = match (f.verdict, f.p_value) {
        (Verdict::Better | Verdict::Worse, Some(p)) => format!("{} (p = {p:.3})", f.verdict.words()),
        (v, _) => v.words().to_string(),
    };
    let _ = writeln!(
        out,
        "{:<44} {:>12} {:>12} {:>9}  {:<28} {verdict}",
        format!("{} ({})", f.label, f.unit),
        side(&f.a),
        side(&f.b),
        change,
        interval
    );
}
