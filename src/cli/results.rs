//! `linerate results`: the stored results, listed, shown again, exported, labelled, removed
//! (docs/results.md, "The results store"). Nothing here touches the network.

use super::common::DbArgs;
use anyhow::Context;
use linerate_core::result::TestResult;
use linerate_report::results::Exported;
use linerate_results::store::{Filter, Id, Store, parse_label};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate results --label nic=xframe2 --since 2h\n  linerate results show 42\n  linerate results export 41 42 --format csv"
)]
pub struct ResultsArgs {
    #[command(subcommand)]
    pub command: Option<ResultsCommand>,

    #[command(flatten)]
    pub list: ListArgs,

    /// The results database (default: $LINERATE_DB, else in ~/.local/share)
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
}

/// The kinds of document the store keeps, as `--kind` names them: a run, a sweep and a
/// repeated test of each kind, and a fleet's matrix of each kind a pattern runs (an unknown
/// one is a usage error, not an empty list).
const KINDS: [&str; 16] = [
    "tcp",
    "udp",
    "rr",
    "http",
    "rrul",
    "tcp sweep",
    "udp sweep",
    "rr sweep",
    "http sweep",
    "tcp repeat",
    "udp repeat",
    "rr repeat",
    "http repeat",
    "tcp matrix",
    "udp matrix",
    "rr matrix",
];

/// Which stored results `linerate results` lists.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only this test kind: tcp, udp, rr, http, "rr sweep", "tcp repeat", "tcp matrix", ...
    #[arg(long, value_name = "KIND", value_parser = clap::builder::PossibleValuesParser::new(KINDS))]
    pub kind: Option<String>,

    /// Only results with this label (repeatable: all of them)
    #[arg(long = "label", value_name = "KEY=VALUE", action = clap::ArgAction::Append, value_parser = label)]
    pub labels: Vec<(String, String)>,

    /// Only results started since: a time ago (2h, 7d) or a UTC date (2025-11-25)
    #[arg(long, value_name = "WHEN", value_parser = since)]
    pub since: Option<u64>,

    /// At most this many, the newest (0: all)
    #[arg(short = 'n', long, value_name = "N", default_value_t = 20)]
    pub limit: usize,

    /// Print the rows as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum ResultsCommand {
    /// Print a stored result's report again, as the run printed it (or its document)
    Show {
        /// The result's id (42 or #42)
        #[arg(value_name = "ID")]
        id: String,
        /// Print the stored JSON document instead
        #[arg(long)]
        json: bool,
    },
    /// Print stored results with their documents (json) or their headline figures (csv)
    Export {
        #[arg(value_name = "ID", required_unless_present = "campaign")]
        ids: Vec<String>,
        /// Every stored run of this campaign (its id, as `plan run` printed it), after any ID
        #[arg(long, value_name = "ID")]
        campaign: Option<String>,
        /// json: the rows with their whole documents; csv: one line per headline figure;
        /// openmetrics: the headline figures as gauges in base units, for node_exporter's
        /// textfile collector (docs/metrics.md)
        #[arg(long, value_name = "FORMAT", default_value = "json")]
        format: Format,
    },
    /// Remove stored results
    Rm {
        #[arg(value_name = "ID", required = true)]
        ids: Vec<String>,
    },
    /// Set labels on a stored result (a key it has takes the new value)
    Label {
        #[arg(value_name = "ID")]
        id: String,
        #[arg(value_name = "KEY=VALUE", required = true, value_parser = label)]
        labels: Vec<(String, String)>,
    },
    /// Check the database file (SQLite's integrity check); prints "ok" when sound
    Check,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Json,
    Csv,
    Openmetrics,
}

fn label(text: &str) -> Result<(String, String), String> {
    parse_label(text).map_err(|e| e.to_string())
}

/// `--since`: a time ago (a number with s, m, h or d) or a UTC date and time, as milliseconds
/// since the Unix epoch.
fn since(text: &str) -> Result<u64, String> {
    let now_ms = linerate_core::unixtime::now_unix_ms();
    since_at(text, now_ms)
}

fn since_at(text: &str, now_ms: u64) -> Result<u64, String> {
    let t = text.trim();
    let bad = || format!("'{text}' is neither a time ago (2h, 30m, 7d) nor a UTC date (2025-11-25, 2025-11-25T10:00)");
    if let Some(days) = t.strip_suffix('d') {
        let d: f64 = days.parse().map_err(|_| bad())?;
        if !(d.is_finite() && d >= 0.0) {
            return Err(bad());
        }
        return Ok(now_ms.saturating_sub((d * 86_400_000.0) as u64));
    }
    if t.len() < 10 || t.as_bytes().get(4) != Some(&b'-') {
        let span: linerate_core::units::TimeSpan = t.parse().map_err(|_| bad())?;
        return Ok(now_ms.saturating_sub(span.0.as_millis() as u64));
    }
    let (date, time) = t.split_once(['T', ' ']).unwrap_or((t, "00:00"));
    let d: Vec<i64> = date
        .split('-')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let h: Vec<i64> = time
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let ([y, m, day], [hh, mm, ss @ ..]) = (d.as_slice(), h.as_slice()) else {
        return Err(bad());
    };
    let sec = ss.first().copied().unwrap_or(0);
    let ok = (1..=12).contains(m)
        && (1..=31).contains(day)
        && (0..24).contains(hh)
        && (0..60).contains(mm)
        && (0..61).contains(&sec)
        && ss.len() <= 1;
    if !ok || *y < 1970 {
        return Err(bad());
    }
    let secs = days_from_civil(*y, *m, *day) * 86_400 + hh * 3600 + mm * 60 + sec;
    Ok(secs as u64 * 1000)
}

/// (year, month, day) as days since 1970-01-01: Howard Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn ids(texts: &[String]) -> anyhow::Result<Vec<Id>> {
    Ok(texts.iter().map(|t| t.parse()).collect::<Result<Vec<Id>, _>>()?)
}

fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// The database to read: `None` when there is none yet (nothing was stored).
fn reader(path: &std::path::Path) -> anyhow::Result<Option<Store>> {
    if !path.exists() {
        return Ok(None);
    }
    // Read-only, always: a reader never migrates, creates or locks for writing, so a database on
    // a read-only filesystem or in another user's directory still reads.
    Ok(Some(Store::open_read(path)?))
}

pub fn run(args: &ResultsArgs) -> anyhow::Result<ExitCode> {
    let path = DbArgs { db: args.db.clone() }.path()?;
    let missing = |id: &str| anyhow::anyhow!("no stored result {id} (no database at {})", path.display());
    match &args.command {
        None => {
            let l = &args.list;
            let filter = Filter {
                kind: l.kind.clone(),
                labels: l.labels.clone(),
                campaign: None,
                since_unix_ms: l.since,
                limit: (l.limit > 0).then_some(l.limit),
            };
            let rows = match reader(&path)? {
                Some(store) => store.list(&filter)?,
                None => Vec::new(),
            };
            print(&if l.json {
                let exported: Vec<Exported<'_>> = rows.iter().map(|row| Exported { row, document: None }).collect();
                linerate_report::results::json(&exported)
            } else {
                linerate_report::results::list(&rows)
            })?;
        }
        Some(ResultsCommand::Show { id, json }) => {
            // The id is the user's: a bad one is a usage error whether or not a database exists.
            let parsed: Id = id.parse()?;
            let store = reader(&path)?.ok_or_else(|| missing(id))?;
            let id = parsed;
            let row = store.row(id)?;
            let document = store.document(id)?;
            print(&if *json {
                linerate_results::store::document::pretty(&document)?
            } else {
                show_text(&row.kind, &document)?
            })?;
        }
        Some(ResultsCommand::Export {
            ids: texts,
            campaign,
            format,
        }) => {
            let mut ids = ids(texts)?;
            let name = texts.first().or(campaign.as_ref()).map_or("", String::as_str);
            let store = reader(&path)?.ok_or_else(|| missing(name))?;
            if let Some(c) = campaign {
                let filter = Filter {
                    campaign: Some(c.clone()),
                    ..Filter::default()
                };
                let runs = store.list(&filter)?;
                anyhow::ensure!(!runs.is_empty(), "no stored run of campaign {c}");
                // Oldest first, as the campaign ran them.
                for run in runs.iter().rev() {
                    if !ids.contains(&run.id) {
                        ids.push(run.id);
                    }
                }
            }
            let rows = ids.iter().map(|id| store.row(*id)).collect::<Result<Vec<_>, _>>()?;
            print(&match format {
                Format::Csv => linerate_report::results::csv(&rows),
                Format::Openmetrics => linerate_report::results::openmetrics(&rows),
                Format::Json => {
                    let docs = ids
                        .iter()
                        .map(|id| {
                            let text = store.document(*id)?;
                            serde_json::from_str(&text).with_context(|| format!("stored document {id}"))
                        })
                        .collect::<anyhow::Result<Vec<serde_json::Value>>>()?;
                    let exported: Vec<Exported<'_>> = rows
                        .iter()
                        .zip(docs)
                        .map(|(row, d)| Exported { row, document: Some(d) })
                        .collect();
                    linerate_report::results::json(&exported)
                }
            })?;
        }
        Some(ResultsCommand::Rm { ids: texts }) => {
            let ids = ids(texts)?;
            reader(&path)?.ok_or_else(|| missing(&texts[0]))?;
            Store::open(&path)?.remove(&ids)?;
            let names: Vec<String> = ids.iter().map(Id::to_string).collect();
            print(&format!("removed {}\n", names.join(" ")))?;
        }
        Some(ResultsCommand::Label { id, labels }) => {
            let parsed: Id = id.parse()?;
            reader(&path)?.ok_or_else(|| missing(id))?;
            let id = parsed;
            Store::open(&path)?.label(id, labels)?;
            print(&format!("labelled {id}\n"))?;
        }
        Some(ResultsCommand::Check) => {
            let store = reader(&path)?.ok_or_else(|| anyhow::anyhow!("no database at {}", path.display()))?;
            let problems = store.integrity_check()?;
            print(&format!("{}\n", problems.join("\n")))?;
            if problems != ["ok"] {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The text report a stored document's run printed, from the document alone: a single run's
/// report block, a sweep's whole table, a repeated test's runs and aggregate, a matrix's or a comparison's table; an http test's
/// `--baseline` line first, as the run printed it (a sweep's is in its table's head). Every
/// string of the document has its control characters escaped first: a shared database may hold
/// a document written by anyone.
fn show_text(kind: &str, document: &str) -> anyhow::Result<String> {
    use linerate_results::document::Document;
    match Document::from_json(document) {
        Ok(Document::Run(r)) => Ok(baseline_line(&r) + &linerate_report::text::render(&r)),
        Ok(Document::Sweep(s)) => Ok(linerate_report::sweep::text(&s)),
        Ok(Document::Repeated(rep)) => {
            let first = rep.runs.first().map(baseline_line).unwrap_or_default();
            Ok(first + &linerate_report::repeat::text(&rep))
        }
        Ok(Document::Matrix(m)) => Ok(linerate_report::matrix::text(&m)),
        Ok(Document::Comparison(c)) => Ok(linerate_report::compare::text(&c)),
        Err(e) => anyhow::bail!(
            "no text report for a '{kind}' document in this build ({e}); `results show ID --json` prints it"
        ),
    }
}

/// The `--baseline` line an http run printed before it ran; empty without one (or from a
/// document stored before results kept the baseline's object size and users).
fn baseline_line(r: &TestResult) -> String {
    r.summary
        .http
        .as_ref()
        .and_then(|h| h.baseline.as_ref())
        .and_then(linerate_core::sweep::http::HttpBaseline::of)
        .map(|b| linerate_report::sweep::baseline_line(&b))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::since_at;

    #[test]
    fn since_takes_a_time_ago_or_a_utc_date() {
        let now = 1_764_034_212_000; // 2025-11-25 01:30:12 UTC
        assert_eq!(since_at("2h", now), Ok(now - 7_200_000));
        assert_eq!(since_at("30m", now), Ok(now - 1_800_000));
        assert_eq!(since_at("7d", now), Ok(now - 7 * 86_400_000));
        assert_eq!(since_at("2025-11-25", now), Ok(1_764_028_800_000));
        assert_eq!(since_at("2025-11-25T01:30", now), Ok(1_764_034_200_000));
        assert_eq!(since_at("2025-11-25 01:30:12", now), Ok(now));
        for bad in ["soon", "2025-13-01", "2025-11-25T25:00", "-2h", "2025-11"] {
            assert!(since_at(bad, now).is_err(), "{bad}");
        }
    }
}
