//! Repeated runs as data (`--repeat N`, `--repeat auto`, `--best K`): one test run again and
//! again, each run's whole result kept, and the statistics of every headline figure over them.
//!
//! In: a [`RepeatPolicy`], a closure that runs the test once (the client in the binary, a stub
//! in tests), and the Ctrl-C flag. Out: a [`Repeated`] document, handed to a progress callback
//! after each run so the caller can show it as it grows. Nothing here prints or touches the
//! network; the figures come from `crate::headline`, the statistics from
//! `crate::stats`. docs/results.md describes the document.

use crate::headline::headline;
use crate::stats;
use linerate_wire::result::{Best, Better, FigureStats, Outcome, RepeatPolicy, Repeated, Runs, TestResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Default `--min-runs` and `--max-runs` of `--repeat auto`, and its default `--ci`.
pub const DEFAULT_MIN_RUNS: u32 = 3;
pub const DEFAULT_MAX_RUNS: u32 = 10;
pub const DEFAULT_CI_PERCENT: f64 = 2.0;
/// Runs the test under `policy` (validated by the caller): `run(k)` makes run k (from 1),
/// `progress` sees the document after each run. Stops early, as partial, on Ctrl-C (`stop`
/// set during a run or a pause), on a run cut short (an agent lost), or on a run that fails
/// to start after others ran (its error becomes a note); a first run that fails to start
/// ends the test with its error.
pub fn repeat<E: std::fmt::Display>(
    kind: &str,
    policy: &RepeatPolicy,
    stop: &AtomicBool,
    mut run: impl FnMut(u32) -> Result<TestResult, E>,
    mut progress: impl FnMut(&Repeated) -> Result<(), E>,
) -> Result<Repeated, E> {
    let mut rep = Repeated::new(kind, policy.clone());
    loop {
        let k = rep.runs.len() as u32 + 1;
        match run(k) {
            Ok(result) => rep.runs.push(result),
            Err(e) if rep.runs.is_empty() => return Err(e),
            Err(e) => {
                rep.notes.push(format!("run {k} did not run: {e}"));
                rep.partial = true;
                break;
            }
        }
        let cut = rep.runs.last().is_some_and(|r| r.partial) || stop.load(Ordering::Relaxed);
        if cut {
            rep.partial = true;
            rep.notes.push(format!(
                "run {k} was cut short; the aggregate leaves it out and no run followed"
            ));
        }
        aggregate(&mut rep);
        if cut || done(&mut rep) {
            progress(&rep)?;
            break;
        }
        progress(&rep)?;
        if !pause(Duration::from_secs_f64(policy.pause_seconds), stop) {
            rep.partial = true;
            rep.notes.push(format!("stopped by Ctrl-C after run {k}"));
            break;
        }
    }
    aggregate(&mut rep);
    Ok(rep)
}

/// Sleeps `pause` unless `stop` is set meanwhile; false when it was.
fn pause(pause: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + pause;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// Whether the policy is met; with auto, sets `converged`.
fn done(rep: &mut Repeated) -> bool {
    match rep.policy.runs {
        Runs::Fixed { runs } => rep.runs.len() >= runs as usize,
        Runs::Auto {
            ci_percent,
            min_runs,
            max_runs,
        } => {
            let within = rep.primary().is_some_and(|f| {
                f.stats.n >= min_runs as usize && f.stats.ci95_half_width_percent.is_some_and(|h| h <= ci_percent)
            });
            rep.converged = Some(within);
            within || rep.runs.len() >= max_runs as usize
        }
    }
}

/// The statistics of every headline figure over the complete runs, and `--best`.
fn aggregate(rep: &mut Repeated) {
    let counted: Vec<bool> = rep.runs.iter().map(|r| r.outcome() == Outcome::Complete).collect();
    rep.aggregated_runs = (1..=rep.runs.len()).filter(|k| counted[k - 1]).collect();
    let per_run: Vec<_> = rep.runs.iter().map(headline).collect();
    // The figures of the kind, in its order, from the first run (a spec's figures are fixed).
    let Some(first) = per_run.first() else { return };
    rep.primary = first.first().map_or(String::new(), |f| f.name.to_string());
    rep.aggregate = first
        .iter()
        .enumerate()
        .filter_map(|(i, fig)| {
            let values: Vec<Option<f64>> = per_run
                .iter()
                .zip(&counted)
                .map(|(figs, ok)| figs.get(i).filter(|_| *ok).and_then(|f| f.value))
                .collect();
            let present: Vec<f64> = values.iter().flatten().copied().collect();
            Some(FigureStats {
                figure: fig.name.to_string(),
                label: fig.label.to_string(),
                better: fig.better,
                values,
                stats: stats::describe(&present, fig.unit)?,
            })
        })
        .collect();
    let primary = rep.aggregate.iter().find(|f| f.figure == rep.primary);
    rep.runs_needed_for_2_percent = primary.and_then(|f| f.stats.runs_for_2_percent);
    rep.best = rep.policy.best.and_then(|k| primary.and_then(|p| best_of(p, k)));
}

/// The mean of the `k` best runs by `figure`; None with fewer than `k` values.
fn best_of(figure: &FigureStats, k: u32) -> Option<Best> {
    let mut runs: Vec<(usize, f64)> = figure
        .values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i + 1, v)))
        .collect();
    if runs.len() < k as usize {
        return None;
    }
    runs.sort_by(|a, b| match figure.better {
        Better::Up => b.1.total_cmp(&a.1),
        Better::Down => a.1.total_cmp(&b.1),
    });
    runs.truncate(k as usize);
    let mean = runs.iter().map(|r| r.1).sum::<f64>() / f64::from(k);
    let mut runs_kept: Vec<usize> = runs.into_iter().map(|r| r.0).collect();
    runs_kept.sort_unstable();
    Some(Best {
        k,
        figure: figure.figure.clone(),
        unit: figure.stats.unit.clone(),
        mean,
        runs_kept,
    })
}

#[cfg(test)]
mod tests;
