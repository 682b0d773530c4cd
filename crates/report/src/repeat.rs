//! A repeated test's document ([`linerate_wire::result::Repeated`]) as text and JSON, as
//! functions of the document alone: a stored one renders again without the network.
//!
//! The text comes in parts so that a running test can show each run as it ends: [`progress`]
//! after each run (the title before the first run's line), [`tail`] at the end (the aggregate
//! table, `--best`, the noise warning, the auto verdict); [`text`] is them all for a whole
//! document.

use crate::text::grouped;
use linerate_results::headline::headline;
use linerate_results::stats::NOISY_CV_PERCENT;
use linerate_wire::result::{Repeated, Runs, Stats, TestResult};
use std::fmt::Write;

/// The document, pretty-printed, with a trailing newline ([`linerate_results::document::to_json`]).
pub fn json(rep: &Repeated) -> String {
    linerate_results::document::to_json(rep)
}

/// The whole text of a repeated test: the title, every run's line, the tail.
pub fn text(rep: &Repeated) -> String {
    let mut out = head(rep);
    for k in 1..=rep.runs.len() {
        out += &run_line(rep, k);
    }
    out + &tail(rep)
}

/// What a running test shows after its latest run: its line, after the title for the first.
pub fn progress(rep: &Repeated) -> String {
    match rep.runs.len() {
        0 => String::new(),
        1 => head(rep) + &run_line(rep, 1),
        n => run_line(rep, n),
    }
}

/// The title: the kind, how many runs, the pause.
pub fn head(rep: &Repeated) -> String {
    let p = &rep.policy;
    let runs = match p.runs {
        Runs::Fixed { runs: 1 } => "1 run".to_string(),
        Runs::Fixed { runs } => format!("{runs} runs"),
        Runs::Auto {
            ci_percent,
            min_runs,
            max_runs,
        } => {
            format!("runs until the 95 % interval is within {ci_percent} % of the mean ({min_runs} to {max_runs} runs)")
        }
    };
    let target = rep
        .runs
        .first()
        .map(|r| {
            let names: Vec<&str> = r.summary.agents.iter().map(|a| a.agent.as_str()).collect();
            if names.is_empty() {
                String::new()
            } else {
                format!(" against {}", names.join(", "))
            }
        })
        .unwrap_or_default();
    let apart = if p.pause_seconds > 0.0 {
        format!("{} s apart", p.pause_seconds)
    } else {
        "back to back".to_string()
    };
    format!("linerate {} {}{target}: {runs}, {apart}\n", rep.linerate, rep.test)
}

/// A figure's value as text: fewer decimals as it grows.
pub(crate) fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        grouped(v, 1)
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Run `k` (from 1) in one line: its first headline figures.
pub fn run_line(rep: &Repeated, k: usize) -> String {
    let Some(run) = rep.runs.get(k - 1) else {
        return String::new();
    };
    let of = match rep.policy.runs {
        Runs::Fixed { runs } => format!("{runs}"),
        Runs::Auto { max_runs, .. } => format!("up to {max_runs}"),
    };
    format!("run {k} of {of}: {}{}\n", run_figures(run), run_state(run))
}

/// The primary figure and the next three a run measured.
fn run_figures(run: &TestResult) -> String {
    let figs: Vec<String> = headline(run)
        .iter()
        .filter_map(|f| f.value.map(|v| format!("{} {} {}", f.label, num(v), f.unit)))
        .take(4)
        .collect();
    if figs.is_empty() {
        "nothing measured".to_string()
    } else {
        figs.join(", ")
    }
}

fn run_state(run: &TestResult) -> &'static str {
    use linerate_wire::result::Outcome;
    match run.outcome() {
        Outcome::Complete => "",
        Outcome::Partial => " (PARTIAL: cut short, left out of the aggregate)",
        Outcome::Failed => " (FAILED, left out of the aggregate)",
    }
}

/// The 95 % interval as text: `low .. high (+-P %)`, or `-` without one.
fn interval(s: &Stats) -> String {
    match (s.ci95_low, s.ci95_high) {
        (Some(lo), Some(hi)) => format!(
            "{} .. {}{}",
            num(lo),
            num(hi),
            s.ci95_half_width_percent
                .map_or(String::new(), |p| format!(" (+-{p:.2} %)"))
        ),
        _ => "-".to_string(),
    }
}

/// The aggregate table and what it says: the agents' profiles, `--best`, noise, the auto
/// verdict, notes, and the headline line last.
pub fn tail(rep: &Repeated) -> String {
    let mut out = String::new();
    let runs = rep.runs.len();
    let _ = writeln!(
        out,
        "\n{}: {runs} run{}, {} aggregated{}",
        rep.test,
        if runs == 1 { "" } else { "s" },
        rep.aggregated_runs.len(),
        if rep.aggregated_runs.len() == runs {
            String::new()
        } else {
            format!(
                " (runs {})",
                rep.aggregated_runs
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    profiles(&mut out, rep);
    if rep.aggregate.is_empty() {
        out.push_str("no complete run: nothing to aggregate\n");
    } else {
        table(&mut out, rep);
    }
    if let Some(b) = &rep.best {
        let plain = rep.figure(&b.figure).map(|f| f.stats.mean);
        let label = rep.figure(&b.figure).map_or(b.figure.as_str(), |f| f.label.as_str());
        let kept: Vec<String> = b.runs_kept.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "best {} of {}: {label} {} {} (runs {} kept){}",
            b.k,
            rep.aggregated_runs.len(),
            num(b.mean),
            b.unit,
            kept.join(", "),
            plain.map_or(String::new(), |m| format!("; mean of all {}", num(m)))
        );
    } else if let Some(k) = rep.policy.best {
        let _ = writeln!(
            out,
            "best {k}: not enough complete runs ({} of {k})",
            rep.aggregated_runs.len()
        );
    }
    noise(&mut out, rep);
    if let Runs::Auto {
        ci_percent, max_runs, ..
    } = rep.policy.runs
    {
        let width = rep
            .primary()
            .and_then(|f| f.stats.ci95_half_width_percent)
            .map_or(String::new(), |p| format!(" (+-{p:.2} %)"));
        let _ = match rep.converged {
            Some(true) => writeln!(
                out,
                "converged after {runs} runs: the 95 % interval is within {ci_percent} % of the mean{width}"
            ),
            _ if rep.partial => writeln!(out, "stopped after {runs} runs, before converging{width}"),
            _ => writeln!(
                out,
                "did not converge within {max_runs} runs (--max-runs): the 95 % interval is wider than {ci_percent} % of the mean{width}"
            ),
        };
    }
    out.push_str(
        "95 % CI: the confidence interval of the mean (Student t over the aggregated runs); CV = stddev / mean.\n",
    );
    if rep.partial {
        out.push_str("PARTIAL: stopped before every run was made; the figures cover the complete runs.\n");
    }
    for n in &rep.notes {
        let _ = writeln!(out, "note: {n}");
    }
    // The headline line last, so that `tail -1` finds the aggregate.
    let _ = writeln!(out, "{}", crate::headline::repeat_line(rep));
    out
}

/// One line per agent that ran a `--profile`: which profile, in which runs. The runs
/// of one repeated test ask the same profile; a run whose agent ran none, or another, says so.
fn profiles(out: &mut String, rep: &Repeated) {
    use linerate_wire::text::peer_text;
    // Per agent, per profile name ("" for none): the runs (from 1).
    let mut agents: std::collections::BTreeMap<&str, Vec<(&str, Vec<usize>)>> = Default::default();
    for (k, run) in rep.runs.iter().enumerate() {
        for (host, record) in run.hosts.iter().filter(|(_, h)| h.role != "client") {
            let name = record.profile.as_ref().map_or("", |p| p.name.as_str());
            let names = agents.entry(host.as_str()).or_default();
            match names.iter_mut().find(|(n, _)| *n == name) {
                Some((_, runs)) => runs.push(k + 1),
                None => names.push((name, vec![k + 1])),
            }
        }
    }
    for (host, names) in agents {
        if names.iter().all(|(n, _)| n.is_empty()) {
            continue;
        }
        let every = names.len() == 1 && names[0].1.len() == rep.runs.len();
        let parts: Vec<String> = names
            .iter()
            .map(|(name, runs)| {
                let what = if name.is_empty() {
                    "no profile".to_string()
                } else {
                    format!("profile {}", peer_text(name))
                };
                if every {
                    format!("{what} in every run")
                } else {
                    let runs: Vec<String> = runs.iter().map(ToString::to_string).collect();
                    format!(
                        "{what} in run{} {}",
                        if runs.len() == 1 { "" } else { "s" },
                        runs.join(", ")
                    )
                }
            })
            .collect();
        let _ = writeln!(out, "agent {}: {}", peer_text(host), parts.join("; "));
    }
}

/// One row per figure: mean, median, min, max, stddev, CV %, 95 % CI.
fn table(out: &mut String, rep: &Repeated) {
    let lw = rep
        .aggregate
        .iter()
        .map(|f| f.label.len())
        .max()
        .unwrap_or(0)
        .max("figure".len());
    let uw = rep
        .aggregate
        .iter()
        .map(|f| f.stats.unit.len())
        .max()
        .unwrap_or(0)
        .max("unit".len());
    let _ = writeln!(
        out,
        "{:<lw$}  {:<uw$} {:>12} {:>12} {:>12} {:>12} {:>10} {:>6}  95 % CI",
        "figure", "unit", "mean", "median", "min", "max", "stddev", "CV %"
    );
    for f in &rep.aggregate {
        let s = &f.stats;
        let _ = writeln!(
            out,
            "{:<lw$}  {:<uw$} {:>12} {:>12} {:>12} {:>12} {:>10} {:>6}  {}",
            f.label,
            s.unit,
            num(s.mean),
            num(s.median),
            num(s.min),
            num(s.max),
            s.stddev.map_or("-".into(), num),
            s.cv_percent.map_or("-".into(), |c| format!("{c:.1}")),
            interval(s)
        );
    }
}

/// The warning of a noisy primary figure (CV over 5 %) with the runs a +-2 % interval would
/// take, and the other noisy figures named.
fn noise(out: &mut String, rep: &Repeated) {
    let noisy = |s: &Stats| s.cv_percent.is_some_and(|c| c > NOISY_CV_PERCENT);
    if let Some(p) = rep.primary().filter(|f| noisy(&f.stats)) {
        let runs = rep.runs_needed_for_2_percent.map_or(String::new(), |n| {
            format!("; about {n} runs would give a +-2 % interval")
        });
        let _ = writeln!(
            out,
            "WARNING: {} is noisy: CV {:.1} % (over {NOISY_CV_PERCENT} %){runs}",
            p.label,
            p.stats.cv_percent.unwrap_or_default()
        );
    }
    let others: Vec<String> = rep
        .aggregate
        .iter()
        .filter(|f| f.figure != rep.primary && noisy(&f.stats))
        .map(|f| format!("{} (CV {:.1} %)", f.label, f.stats.cv_percent.unwrap_or_default()))
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "noisy too: {}", others.join(", "));
    }
}
