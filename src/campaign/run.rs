//! `linerate plan run FILE`: every point of a plan run as its own `linerate` command (the same
//! binary, the command line `plan check --commands` prints, plus the campaign's labels), so a
//! point is measured, stored and cut short exactly as a command typed by hand would be. The
//! campaign watches: a progress bar with points and runs done, elapsed time and ETA, and the
//! current point's live line; each run is stored as it ends, and the campaign finds it in the
//! store by its labels (campaign and point), not in what the child printed; Ctrl-C lets the
//! current point store what it measured and stops; `--resume ID` runs only what is missing; at
//! the end the campaign's tables are printed from the store.

use super::{ReadyPoint, load, shell_words};
use crate::cli::common::DbArgs;
use crate::cli::usage::Usage;
use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use linerate_results::plan::campaign::{
    COORDINATE_PREFIX, CampaignTable, PLAN_LABEL, POINT_LABEL, TEST_LABEL, VARIANT_LABEL,
};
use linerate_results::plan::{Plan, Point};
use linerate_results::store::{Filter, Outcome, Store};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a plan's setup or teardown command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(300);

/// `plan run`.
pub fn run(file: &Path, quick: bool, resume: Option<&str>, db: &DbArgs) -> anyhow::Result<ExitCode> {
    let (plan, ready) = load(file, quick).map_err(Usage::Plan)?;
    let db_path = db.path()?;
    let store = Store::open(&db_path).with_context(|| format!("the results database {}", db_path.display()))?;
    let (id, done) = match resume {
        None => (campaign_id(&plan.name), Vec::new()),
        Some(id) => {
            let done = finished_points(&store, id, &plan.name)?;
            // Resuming with other options is a bad combination of flags (status 2).
            same_points(&store, id, file, quick, &ready, db).map_err(Usage::Plan)?;
            (id.to_string(), done)
        }
    };
    drop(store);
    let interrupt = crate::interrupt::interrupt_flag()?;
    let todo: Vec<usize> = (0..ready.len()).filter(|i| !done.contains(i)).collect();
    eprintln!(
        "campaign {id}: plan '{}', {} of {} points to run{}",
        plan.name,
        todo.len(),
        ready.len(),
        if quick { " (quick)" } else { "" }
    );
    run_commands(&plan.setup, "setup")?;
    // The agents' profiles, before the first point: a missing one would have every point that
    // asks for it refused.
    let (_, missing) = super::check_profiles(todo.iter().map(|&i| &ready[i].1));
    if let Some(missing) = missing {
        eprint!("{}", super::say_missing(&missing));
        run_commands(&plan.teardown, "teardown")?;
        return Ok(ExitCode::FAILURE);
    }
    let estimate: Vec<f64> = ready.iter().map(|(_, r)| r.estimate_seconds()).collect();
    let total: f64 = todo.iter().map(|&i| estimate[i]).sum();
    // Runs as planned (an auto-repeated point counts its most); the child runs them.
    let runs_total: u32 = todo.iter().map(|&i| ready[i].1.runs.max).sum();
    let mut runs_done = 0u32;
    let bar = ProgressBar::with_draw_target(Some(todo.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:24} {pos}/{len} points, {msg}").expect("a fixed template is valid"),
    );
    let started = Instant::now();
    let mut counted = Counted::default();
    let mut estimated_done = 0.0;
    let mut current_test = None;
    for &i in &todo {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let (point, r) = &ready[i];
        let test = &plan.tests[point.test];
        if current_test != Some(point.test) {
            if let Some(t) = current_test {
                bar.suspend(|| run_commands(&plan.tests[t].teardown, "teardown"))?;
            }
            bar.suspend(|| run_commands(&test.setup, "setup"))?;
            current_test = Some(point.test);
        }
        let what = describe(&plan, point);
        let eta = |done: f64| {
            let elapsed = started.elapsed().as_secs_f64();
            let left = if done > 0.0 {
                elapsed / done * (total - done)
            } else {
                total
            };
            format!(
                "{}, ETA {}",
                super::duration_text(elapsed),
                super::duration_text(left.max(0.0))
            )
        };
        bar.set_message(format!(
            "{runs_done}/{runs_total} runs; {what}; {}",
            eta(estimated_done)
        ));
        let outcome = run_point(&plan, &id, i, point, r, db_path.as_path(), &bar, &what)?;
        estimated_done += estimate[i];
        runs_done += r.runs.max;
        counted.add(&outcome);
        bar.inc(1);
        let line = match &outcome {
            PointOutcome::Stored { id: rid, status } => format!("{what}: stored as #{rid}{}", status_words(*status)),
            PointOutcome::NotStored { status, last } => format!(
                "{what}: not stored{} {}",
                status_words(*status),
                last.as_deref().unwrap_or("")
            ),
        };
        bar.suspend(|| eprintln!("{line}"));
    }
    if let Some(t) = current_test {
        run_commands(&plan.tests[t].teardown, "teardown")?;
    }
    bar.finish_and_clear();
    run_commands(&plan.teardown, "teardown")?;
    if counted.stored > 0 || !done.is_empty() {
        show_tables(db, &id)?;
    }
    let stopped = interrupt.load(Ordering::Relaxed);
    eprintln!(
        "campaign {id}: {} points run ({} complete, {} partial, {} failed) in {}{}",
        counted.run,
        counted.complete,
        counted.partial,
        counted.failed,
        super::duration_text(started.elapsed().as_secs_f64()),
        if stopped {
            format!("; stopped: resume with `{}`", resume_command(file, &id, quick, db))
        } else {
            String::new()
        }
    );
    Ok(if stopped || counted.partial > 0 {
        ExitCode::from(crate::finish::EXIT_PARTIAL)
    } else if counted.failed > 0 {
        ExitCode::from(crate::finish::EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `plan show ID`: the campaign's tables again, from the store.
pub fn show(id: &str, json: bool, db: &DbArgs) -> anyhow::Result<ExitCode> {
    if json {
        let doc = serde_json::json!({
            "linerate": env!("CARGO_PKG_VERSION"),
            "schema": linerate_core::result::SCHEMA,
            "test": "campaign",
            "campaign": id,
            "tables": campaign_tables(id, db)?,
        });
        crate::finish::print_text(&linerate_results::document::to_json(&doc))?;
        return Ok(ExitCode::SUCCESS);
    }
    show_tables(db, id)?;
    Ok(ExitCode::SUCCESS)
}

/// A campaign's stored documents.
fn campaign_side(id: &str, db: &DbArgs) -> anyhow::Result<linerate_results::compare::SideInput> {
    let selection = crate::sources::Selection::Campaign {
        name: id.to_string(),
        variant: None,
    };
    selection.load(id, db)
}

/// A campaign's tables from its stored documents, as `linerate report ID` draws them: a
/// repeated point's cell carries its interval, which the store's rows alone do not keep.
fn campaign_tables(id: &str, db: &DbArgs) -> anyhow::Result<Vec<CampaignTable>> {
    Ok(linerate_report::figures::Campaign::from_side(&campaign_side(id, db)?).tables())
}

/// The campaign's tables and each pattern point's matrix as its own table, in the
/// plan's order (the matrices came after every table): each by the first record it
/// holds, since `plan run` stores its points in plan order.
fn show_tables(db: &DbArgs, id: &str) -> anyhow::Result<()> {
    let side = campaign_side(id, db)?;
    let tables = linerate_report::figures::Campaign::from_side(&side).tables();
    let mut parts: Vec<(Option<i64>, String)> = tables
        .iter()
        .map(|t| {
            (
                linerate_report::campaign::first_record(t),
                linerate_report::campaign::table_text(t),
            )
        })
        .collect();
    for e in &side.entries {
        if let linerate_results::document::Document::Matrix(m) = &e.document {
            let mut name = e.test.clone().unwrap_or_else(|| m.test.clone());
            for c in &e.coordinates {
                name += &format!(" {}={}", c.name, c.value);
            }
            let record = e.source.trim_start_matches('#').parse::<i64>().ok();
            parts.push((
                record,
                linerate_report::matrix::point(&format!("{name} ({})", e.source), m),
            ));
        }
    }
    // Stable: parts without a record keep their place after those with one.
    parts.sort_by_key(|(record, _)| record.unwrap_or(i64::MAX));
    let mut text = format!("campaign {id}\n");
    for (_, part) in parts {
        text += &part;
    }
    crate::finish::print_text(&text)
}

/// A campaign's id: the plan's name and the start time, short enough to type.
fn campaign_id(plan: &str) -> String {
    let name: String = plan
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-');
    let secs = linerate_core::unixtime::now_unix_secs();
    let mut n = secs;
    let mut stamp = String::new();
    while n > 0 {
        stamp.insert(0, char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
    }
    format!("{}-{stamp}", if name.is_empty() { "plan" } else { name })
}

/// The points of campaign `id` already stored complete; refuses another plan's campaign.
fn finished_points(store: &Store, id: &str, plan: &str) -> anyhow::Result<Vec<usize>> {
    let rows = store.list(&Filter {
        campaign: Some(id.to_string()),
        ..Filter::default()
    })?;
    anyhow::ensure!(
        !rows.is_empty(),
        "no campaign '{id}' to resume in {}",
        store.path().display()
    );
    if let Some(other) = rows
        .iter()
        .filter_map(|r| r.labels.get(PLAN_LABEL))
        .find(|p| *p != plan)
    {
        anyhow::bail!("campaign '{id}' ran plan '{other}', not '{plan}'");
    }
    Ok(rows
        .iter()
        .filter(|r| r.outcome == Outcome::Complete)
        .filter_map(|r| r.labels.get(POINT_LABEL)?.parse().ok())
        .collect())
}

/// The command that resumes campaign `id` with the flags it ran with (`--quick`, `--db`).
fn resume_command(file: &Path, id: &str, quick: bool, db: &DbArgs) -> String {
    use crate::finish::shell_quote;
    let mut words = vec![
        "linerate plan run".to_string(),
        shell_quote(&file.display().to_string()),
    ];
    if quick {
        words.push("--quick".into());
    }
    if let Some(path) = &db.db {
        words.push(format!("--db {}", shell_quote(&path.display().to_string())));
    }
    words.push(format!("--resume {}", shell_quote(id)));
    words.join(" ")
}

/// Refuses a resume whose points would differ from those campaign `id` stored: under
/// another `--quick` than the original, or from a plan changed since, a campaign would mix two
/// sets of options. Each stored record's command line holds its point's options as `plan run`
/// gave them, followed by the campaign's labels.
fn same_points(
    store: &Store,
    id: &str,
    file: &Path,
    quick: bool,
    ready: &[(Point, ReadyPoint)],
    db: &DbArgs,
) -> anyhow::Result<()> {
    let rows = store.list(&Filter {
        campaign: Some(id.to_string()),
        ..Filter::default()
    })?;
    let stored: Vec<(usize, &str)> = rows
        .iter()
        .filter_map(|r| Some((r.labels.get(POINT_LABEL)?.parse().ok()?, r.command.as_str())))
        .collect();
    let differs = |ready: &[(Point, ReadyPoint)]| {
        stored.iter().find(|(i, command)| {
            ready
                .get(*i)
                .is_none_or(|(_, r)| !command.contains(&format!(" {} --label ", shell_words(&r.argv[1..]))))
        })
    };
    let Some((point, command)) = differs(ready) else {
        return Ok(());
    };
    let other = load(file, !quick).ok().map(|(_, r)| r);
    if other.as_deref().is_some_and(|o| differs(o).is_none()) {
        let (was, now) = if quick {
            ("without --quick", "with it")
        } else {
            ("with --quick", "without it")
        };
        anyhow::bail!(
            "campaign '{id}' ran its points {was}; resuming {now} would mix full-length and quick points in one campaign: resume with `{}`",
            resume_command(file, id, !quick, db)
        );
    }
    let now = ready.get(*point).map_or("no such point".to_string(), |(_, r)| {
        format!("`{}`", shell_words(&r.argv))
    });
    anyhow::bail!(
        "campaign '{id}' ran point {point} as `{}`; the plan now makes it {now}: a resume would mix two sets of options in one campaign; start a new one (`linerate plan run {}`)",
        command.split(" --label ").next().unwrap_or(command),
        crate::finish::shell_quote(&file.display().to_string())
    )
}

/// `send length=64K variant B`.
fn describe(plan: &Plan, point: &Point) -> String {
    let test = &plan.tests[point.test];
    let mut s = test.name.clone();
    for (option, value) in &point.coordinates {
        s += &format!(" {option}={value}");
    }
    if let Some(v) = point.variant {
        s += &format!(" variant {}", test.variants[v].name);
    }
    s
}

fn status_words(status: Option<i32>) -> &'static str {
    match status {
        Some(0) => "",
        Some(3) => " (partial)",
        Some(4) => " (failed: nothing measured)",
        Some(1) => " (setup error)",
        _ => " (ended abnormally)",
    }
}

enum PointOutcome {
    Stored { id: i64, status: Option<i32> },
    NotStored { status: Option<i32>, last: Option<String> },
}

#[derive(Default)]
struct Counted {
    run: u32,
    stored: u32,
    complete: u32,
    partial: u32,
    failed: u32,
}

impl Counted {
    fn add(&mut self, o: &PointOutcome) {
        self.run += 1;
        if let PointOutcome::Stored { .. } = o {
            self.stored += 1;
        }
        let status = match o {
            PointOutcome::Stored { status, .. } | PointOutcome::NotStored { status, .. } => *status,
        };
        match status {
            Some(0) => self.complete += 1,
            Some(3) => self.partial += 1,
            _ => self.failed += 1,
        }
    }
}

/// Runs one point as a child `linerate`, its live lines shown in the bar, and finds its record
/// in the store: the newest stored under the campaign with the point's label, if newer than
/// any the point had before (a resumed point may have an earlier, partial one).
#[allow(clippy::too_many_arguments)]
fn run_point(
    plan: &Plan,
    campaign: &str,
    index: usize,
    point: &Point,
    ready: &ReadyPoint,
    db: &Path,
    bar: &ProgressBar,
    what: &str,
) -> anyhow::Result<PointOutcome> {
    let test = &plan.tests[point.test];
    let mut args: Vec<String> = ready.argv[1..].to_vec();
    let mut label = |k: &str, v: &str| args.extend(["--label".to_string(), format!("{k}={v}")]);
    label(PLAN_LABEL, &plan.name);
    label(TEST_LABEL, &test.name);
    label(POINT_LABEL, &index.to_string());
    if let Some(v) = point.variant {
        label(VARIANT_LABEL, &test.variants[v].name);
    }
    for (option, value) in &point.coordinates {
        label(
            &format!("{COORDINATE_PREFIX}{}", option.replace('_', "-")),
            &value.to_string(),
        );
    }
    args.extend(["--campaign".to_string(), campaign.to_string()]);
    args.extend(["--db".to_string(), db.display().to_string()]);
    let before = last_stored(db, campaign, index)?;
    let exe = std::env::current_exe().context("finding this linerate binary")?;
    let mut child = Command::new(exe)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", shell_words(&ready.argv)))?;
    let last_error = Arc::new(Mutex::new(None::<String>));
    let stderr = child.stderr.take().map(|e| {
        let last_error = Arc::clone(&last_error);
        std::thread::spawn(move || {
            for line in BufReader::new(e).lines().map_while(Result::ok) {
                if line.starts_with("linerate:") {
                    *last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(line);
                }
            }
        })
    });
    if let Some(out) = child.stdout.take() {
        // Bounded line reads: a child's line is ours, but a runaway one must not grow a buffer.
        for line in BufReader::new(out.take(64 << 20)).lines().map_while(Result::ok) {
            if !line.trim().is_empty() {
                let live: String = line.trim().chars().take(70).collect();
                bar.set_message(format!("{what}: {live}"));
            }
        }
    }
    let status = child.wait().context("waiting for a point's run")?.code();
    if let Some(t) = stderr {
        let _ = t.join();
    }
    let last = last_error.lock().unwrap_or_else(|p| p.into_inner()).take();
    Ok(
        match last_stored(db, campaign, index)?.filter(|id| Some(*id) > before) {
            Some(id) => PointOutcome::Stored { id, status },
            None => PointOutcome::NotStored { status, last },
        },
    )
}

/// The id of the newest record stored under `campaign` for its point `index`, if any.
fn last_stored(db: &Path, campaign: &str, index: usize) -> anyhow::Result<Option<i64>> {
    let store = Store::open_read(db).with_context(|| format!("the results database {}", db.display()))?;
    let rows = store.list(&Filter {
        campaign: Some(campaign.to_string()),
        labels: vec![(POINT_LABEL.to_string(), index.to_string())],
        ..Filter::default()
    })?;
    Ok(rows.iter().map(|r| r.id.0).max())
}

/// A plan's setup or teardown commands, one after another (`sh -c`), each bounded.
fn run_commands(commands: &[String], what: &str) -> anyhow::Result<()> {
    for c in commands {
        let mut child = Command::new("sh")
            .args(["-c", c])
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("{what} `{c}`"))?;
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if started.elapsed() > COMMAND_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!("{what} `{c}` ran past {} s and was stopped", COMMAND_LIMIT.as_secs());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        anyhow::ensure!(status.success(), "{what} `{c}` failed ({status})");
    }
    Ok(())
}
