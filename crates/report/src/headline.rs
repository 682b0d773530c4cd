//! The headline line: one line that says what a run, a repeated test or a sweep came to, printed
//! last (so `tail -1` finds it) and alone with `--brief` (iperf3 prints two
//! summary lines where the full report prints up to a hundred).
//!
//! In: a document. Out: one line, `KIND: OUTCOME; LABEL VALUE UNIT; ...`, fields separated by
//! `"; "`, each a figure of `linerate_results::headline` (the one list of what a run's headline
//! figures are: its name, label and unit), its value a plain number (no thousands separator, a
//! point for decimals) or `n/a` when the run did not measure it. Which of the kind's figures the
//! line shows is chosen here ([`LINE_FIGURES`]); what they are and how they are counted is not.

use linerate_results::headline::{Figure, headline};
use linerate_wire::result::{CellFigure, Matrix, Outcome, Repeated, TestResult};
use linerate_wire::spec::Direction;
use linerate_wire::sweep::{At, Sweep, SweepKind};

/// The figures each kind's line shows, by their headline names, in order: tcp the receivers'
/// throughput, both ends' host CPU and retransmits; udp throughput, loss and jitter; rr the rate
/// and the round trip's median and p99; http successful responses per second, the p99 response
/// time and the errors.
pub const LINE_FIGURES: [(&str, &[&str]); 5] = [
    (
        "tcp",
        &[
            "received_mbit_per_second",
            "sender_cpu_percent",
            "receiver_cpu_percent",
            "retransmits",
        ],
    ),
    ("udp", &["received_mbit_per_second", "loss_percent", "jitter_us"]),
    ("rr", &["transactions_per_second", "latency_p50_us", "latency_p99_us"]),
    (
        "http",
        &["successful_responses_per_second", "response_time_p99_us", "errors"],
    ),
    ("rpm", &["rpm", "mbit_per_second_down", "mbit_per_second_up"]),
];

/// The names of the figures the line of a `kind` run shows.
fn line_names(kind: &str) -> &'static [&'static str] {
    LINE_FIGURES
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, names)| *names)
}

/// `complete`, `partial` or `failed`: the exit status's word (README, "Exit status").
pub fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Complete => "complete",
        Outcome::Partial => "partial",
        Outcome::Failed => "failed",
    }
}

/// A figure's value as the line prints it: plain digits, fewer decimals as it grows, whole
/// counts without decimals, three significant digits below 1; `n/a` when unknown.
pub fn value_text(v: Option<f64>) -> String {
    let Some(v) = v else { return "n/a".into() };
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        format!("{v:.0}")
    } else if a >= 1000.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        // Three significant digits below 1 (a fitted slope of 0.0017 us/byte).
        let decimals = (2 - a.log10().floor() as i32).clamp(3, 12) as usize;
        format!("{v:.decimals$}")
    }
}

fn field(label: &str, value: Option<f64>, unit: &str) -> String {
    format!("{label} {} {unit}", value_text(value))
}

/// The names of the figures a line shows for a `kind` run, `bidir` or not: a `--bidir` run's
/// receiver throughput is each direction's, never their sum (iperf3 too reports each
/// direction of `--bidir` on its own).
fn line_names_for(kind: &str, bidir: bool) -> Vec<&'static str> {
    line_names(kind)
        .iter()
        .flat_map(|&name| match (bidir, name) {
            (true, "received_mbit_per_second") => {
                vec!["forward_received_mbit_per_second", "reverse_received_mbit_per_second"]
            }
            _ => vec![name],
        })
        .collect()
}

/// The headline figures of `r` that its line shows, in the line's order.
pub fn line_figures(r: &TestResult) -> Vec<Figure> {
    let all = headline(r);
    line_names_for(r.options.kind(), r.options.direction() == Direction::Bidir)
        .iter()
        .filter_map(|name| all.iter().find(|f| f.name == *name).copied())
        .collect()
}

/// A run's line: `tcp: complete; receiver throughput 941.52 Mbit/s; ...`, no newline.
pub fn run_line(r: &TestResult) -> String {
    let mut fields = vec![format!("{}: {}", r.test, outcome_word(r.outcome()))];
    fields.extend(line_figures(r).iter().map(|f| field(f.label, f.value, f.unit)));
    fields.extend(latency_fields(r));
    fields.join("; ")
}

/// A run with probes adds its headline latency: the median round trip under load and what the
/// load added to the idle one (`latency`'s `loaded_ms` and `added_ms`); nothing without probes.
fn latency_fields(r: &TestResult) -> Vec<String> {
    r.latency.as_ref().map_or_else(Vec::new, |l| {
        vec![
            field("loaded latency", l.loaded_ms, "ms"),
            field("added latency", l.added_ms, "ms"),
        ]
    })
}

/// A repeated test's line: its outcome, runs aggregated, and the mean over them of the same
/// figures a run's line shows (with the 95 % interval's half-width where there is one).
pub fn repeat_line(rep: &Repeated) -> String {
    let kind = rep.test.trim_end_matches(" repeat");
    let mut fields = vec![
        format!("{}: {}", rep.test, outcome_word(rep.outcome())),
        format!("{} of {} runs aggregated", rep.aggregated_runs.len(), rep.runs.len()),
    ];
    let bidir = rep
        .runs
        .first()
        .is_some_and(|r| r.options.direction() == Direction::Bidir);
    for name in &line_names_for(kind, bidir) {
        let Some(f) = rep.figure(name) else {
            // No aggregated run measured it: its label from a run, if any.
            if let Some(fig) = rep
                .runs
                .first()
                .and_then(|r| headline(r).into_iter().find(|f| f.name == *name))
            {
                fields.push(field(&format!("mean {}", fig.label), None, fig.unit));
            }
            continue;
        };
        let ci = f
            .stats
            .ci95_half_width_percent
            .map_or(String::new(), |p| format!(" (95 % CI +-{p:.2} %)"));
        fields.push(format!(
            "{}{ci}",
            field(&format!("mean {}", f.label), Some(f.stats.mean), &f.stats.unit)
        ));
    }
    fields.join("; ")
}

/// How a sweep ended, as its exit status says ([`linerate_results::document::sweep_outcome`]).
pub use linerate_results::document::sweep_outcome;

/// Where a sweep's point ran, in words.
fn at_text(at: &At) -> String {
    match at {
        At::Udp { payload_bytes, gap_us } => format!("{payload_bytes} B every {gap_us} us"),
        At::Rr {
            request_bytes,
            response_bytes,
        } => format!("request {request_bytes} B, response {response_bytes} B"),
        At::Http { users } => format!("{users} users"),
        At::Tcp { buffer_bytes } => format!("{buffer_bytes} B transfers"),
    }
}

/// A sweep's line: its outcome, the points run and failed, the best point by the kind's primary
/// figure, and what the sweep derived (rr's fitted slope, http's optimum).
pub fn sweep_line(s: &Sweep) -> String {
    let test = match &s.kind {
        SweepKind::Udp => "udp sweep",
        SweepKind::Rr(_) => "rr sweep",
        SweepKind::Http(_) => "http sweep",
        SweepKind::Tcp(_) => "tcp sweep",
    };
    let failed = s.points.iter().filter(|p| p.result.is_none()).count();
    let mut fields = vec![
        format!("{test}: {}", outcome_word(sweep_outcome(s))),
        format!("points {} ({failed} failed)", s.points.len()),
    ];
    // The best point by the primary figure, the way that figure is better.
    let best = s
        .points
        .iter()
        .filter_map(|p| {
            let r = p.result.as_ref()?;
            let f = *headline(r).first()?;
            Some((p, f, f.value?))
        })
        .max_by(|a, b| {
            let (x, y) = match a.1.better {
                linerate_wire::result::Better::Up => (a.2, b.2),
                linerate_wire::result::Better::Down => (b.2, a.2),
            };
            x.total_cmp(&y)
        });
    if let Some((p, f, v)) = best {
        fields.push(format!(
            "best {} at {}",
            field(f.label, Some(v), f.unit),
            at_text(&p.at)
        ));
    }
    match &s.kind {
        SweepKind::Rr(rr) => {
            let fit = rr.summary.fit.as_ref();
            fields.push(field("fit slope", fit.map(|f| f.slope_us_per_byte), "us/byte"));
        }
        SweepKind::Http(h) => {
            fields.push(field(
                "optimum",
                h.summary.optimum.as_ref().map(|o| f64::from(o.users)),
                "users",
            ));
        }
        _ => {}
    }
    fields.join("; ")
}

/// A matrix's line: its outcome, the cells and how many measured nothing, the sum
/// (throughput), the median cell in the figure's unit and Jain's index over every cell.
pub fn matrix_line(m: &Matrix) -> String {
    let measured = m.values().len();
    let unit = m.figure.unit();
    let mut fields = vec![
        format!("{}: {}", m.test, outcome_word(m.outcome())),
        format!("cells {} ({} failed)", m.cells.len(), m.cells.len() - measured),
    ];
    if m.figure == CellFigure::ThroughputMbps {
        fields.push(field("sum", m.sum, unit));
    }
    fields.push(field("median cell", linerate_results::headline::median_cell(m), unit));
    fields.push(format!("Jain's index {}", value_text(m.jain)));
    fields.join("; ")
}

#[cfg(test)]
mod tests {
    use super::value_text;

    #[test]
    fn values_are_plain_numbers() {
        assert_eq!(value_text(None), "n/a");
        assert_eq!(value_text(Some(4.0)), "4");
        assert_eq!(value_text(Some(9793.24)), "9793.2");
        assert_eq!(value_text(Some(799.2013)), "799.20");
        assert_eq!(value_text(Some(0.5)), "0.500");
        assert_eq!(value_text(Some(0.0017)), "0.00170");
    }

    #[test]
    fn issue_23_a_sweep_whose_every_point_failed_is_failed() {
        use linerate_wire::result::Outcome;
        use linerate_wire::sweep::{At, Sweep, SweepKind, SweepPoint};
        let failed = |users| SweepPoint {
            at: At::Http { users },
            note: "failed: refused".into(),
            result: None,
            error: Some("refused".into()),
        };
        let mut s = Sweep {
            linerate: "test".into(),
            schema: 1,
            kind: SweepKind::Udp,
            partial: false,
            parameters: Vec::new(),
            points: vec![failed(1), failed(2)],
        };
        assert_eq!(super::sweep_outcome(&s), Outcome::Failed);
        assert!(
            super::sweep_line(&s).starts_with("udp sweep: failed"),
            "{}",
            super::sweep_line(&s)
        );
        s.points = Vec::new();
        assert_eq!(super::sweep_outcome(&s), Outcome::Failed);
    }
}
