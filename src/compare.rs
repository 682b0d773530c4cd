//! `linerate compare A B`: each side's documents gathered, compared point by point by
//! `linerate_results::compare`, printed as tables or JSON; `--fail-if-worse` turns a significant
//! loss into exit status 3 so that a CI job can gate a change on it. Sides that share no point
//! or no figure compared nothing: that is status 2, with or without `--fail-if-worse`, never a
//! pass.

use crate::cli::compare::CompareArgs;
use crate::cli::usage::usage;
use crate::sources::{Selection, side};
use anyhow::Context;
use linerate_results::compare::{compare, nothing_compared};
use std::process::ExitCode;

/// Status of a comparison that found a figure worse by more than `--fail-if-worse`.
const EXIT_WORSE: u8 = 3;
/// Status of a comparison that compared nothing (no shared point or figure): the sides named
/// cannot be compared, a usage error (README, "Exit status").
const EXIT_NOTHING_COMPARED: u8 = 2;

pub fn run(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    args.check()?;
    for (name, s) in [("A", &args.a), ("B", &args.b)] {
        Selection::parse(s).map_err(|e| usage!("side {name} '{s}': {e:#}"))?;
    }
    let a = side(&args.a, &args.db).with_context(|| format!("side A '{}'", args.a))?;
    let b = side(&args.b, &args.db).with_context(|| format!("side B '{}'", args.b))?;
    let mut c = compare(&a, &b, args.threshold);
    // Sides with no point in common have no figures to name: that is said below.
    if !args.figures.is_empty() && !c.points.is_empty() {
        let known: std::collections::BTreeSet<&str> = c
            .points
            .iter()
            .flat_map(|p| p.figures.iter().map(|f| f.figure.as_str()))
            .collect();
        if let Some(bad) = args.figures.iter().find(|f| !known.contains(f.as_str())) {
            return Err(usage!(
                "no figure '{bad}' in these results; they have {}",
                known.into_iter().collect::<Vec<_>>().join(", ")
            )
            .into());
        }
        for p in &mut c.points {
            p.figures.retain(|f| args.figures.contains(&f.figure));
        }
    }
    crate::finish::print_text(&if args.json {
        linerate_report::compare::json(&c)
    } else {
        linerate_report::compare::text(&c)
    })?;
    if let Some(why) = nothing_compared(&c) {
        eprintln!("linerate: nothing compared: {why}");
        return Ok(ExitCode::from(EXIT_NOTHING_COMPARED));
    }
    if let Some(pct) = args.fail_if_worse {
        let worse = c.worse_by_more_than(pct);
        if let Some((p, f)) = worse.first() {
            eprintln!(
                "linerate: {} {} is worse by {:.1} % (more than {pct} %){}",
                linerate_report::compare::point_name(p),
                f.label,
                f.change_percent.unwrap_or(0.0).abs(),
                if worse.len() > 1 {
                    format!(", and {} more figures", worse.len() - 1)
                } else {
                    String::new()
                }
            );
            return Ok(ExitCode::from(EXIT_WORSE));
        }
    }
    Ok(ExitCode::SUCCESS)
}
