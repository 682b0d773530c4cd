//! The end of every test command, in one place: the document it produced is printed, stored,
//! and its exit status decided (README, "Exit status"; docs/results.md, "The results store").
//!
//! Storing comes after the run and after the report is printed, never inside the measurement
//! window. A store that fails (a read-only directory, a full disk, a lock held past the busy
//! timeout, a file that is not a database, a layout newer than this build) costs no result: the
//! whole document goes to a fallback file whose path is printed, the error takes one line on
//! stderr, and the exit status stays the measurement's own: a run that measured is not reported
//! as failed because its record could not be written.

use crate::cli::common::StoreArgs;
use linerate_results::document::Document;
use linerate_results::store::{Id, Outcome, Record, Store};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A run cut short (Ctrl-C, an agent lost): README, "Exit status".
pub const EXIT_PARTIAL: u8 = 3;
/// A run that measured nothing.
pub const EXIT_FAILED: u8 = 4;

/// What a test command prints last as text (a sweep printed its rows as they came).
fn text(document: &Document) -> String {
    match document {
        Document::Run(r) => format!("\n{}", linerate_report::text::render(r)),
        Document::Sweep(s) => linerate_report::sweep::tail(s),
        Document::Repeated(r) => linerate_report::repeat::tail(r),
        Document::Matrix(m) => format!("\n{}", linerate_report::matrix::text(m)),
        Document::Comparison(c) => linerate_report::compare::text(c),
    }
}

/// How the command's document ended: a comparison, which measured nothing of its own, is
/// complete.
fn outcome(document: &Document) -> Outcome {
    document.outcome().map_or(Outcome::Complete, Into::into)
}

/// The exit status of a run that produced a document.
pub fn exit_code(outcome: Outcome) -> ExitCode {
    match outcome {
        Outcome::Complete => ExitCode::SUCCESS,
        Outcome::Partial => ExitCode::from(EXIT_PARTIAL),
        Outcome::Failed => ExitCode::from(EXIT_FAILED),
    }
}

/// Where and how a command's result is stored.
pub struct Keep<'a> {
    pub json: bool,
    /// `--brief`: the headline line alone on stdout, the stored id on stderr.
    pub brief: bool,
    pub store: &'a StoreArgs,
    /// The agents (HOST:PORT) or URLs as given.
    pub targets: Vec<String>,
    /// Labels the command adds to the user's (`quick`).
    pub labels: Vec<(String, String)>,
}

/// Prints the document (JSON or the text report), stores it, prints its id and returns the exit
/// status. The text ends with its headline line, printed last, after the id (`tail -1` finds
/// it); `--brief` prints that line alone. The id goes to stderr when the JSON or the brief line
/// owns stdout.
pub fn finish(produced: &Document, keep: &Keep<'_>) -> anyhow::Result<ExitCode> {
    let document = produced.to_json();
    let text = text(produced);
    // Every text ends with its headline line (linerate_report::headline).
    let (body, headline) = text
        .trim_end_matches('\n')
        .rsplit_once('\n')
        .map_or(("", text.trim_end_matches('\n')), |(b, h)| (b, h));
    if keep.json {
        print_text(&document)?;
    } else if !keep.brief && !body.is_empty() {
        print_text(&format!("{body}\n"))?;
    }
    if !keep.store.no_store {
        match store(produced, &document, keep) {
            Ok((id, _)) => {
                let line = format!("stored as {id}\n");
                if keep.json || keep.brief {
                    eprint!("{line}");
                } else {
                    print_text(&line)?;
                }
            }
            Err((path, err)) => fall_back(&document, path.as_deref(), &err),
        }
    }
    if !keep.json {
        print_text(&format!("{headline}\n"))?;
    }
    Ok(exit_code(outcome(produced)))
}

/// One write to the database; the error comes with the database's path where it is known.
fn store(
    produced: &Document,
    document: &str,
    keep: &Keep<'_>,
) -> Result<(Id, PathBuf), (Option<PathBuf>, anyhow::Error)> {
    let path = keep.store.db.path().map_err(|e| (None, e))?;
    let failed = |e: linerate_results::store::StoreError| (Some(path.clone()), anyhow::Error::from(e));
    let mut store = Store::open(&path).map_err(failed)?;
    let record = Record {
        document: document.to_string(),
        outcome: outcome(produced),
        targets: keep.targets.clone(),
        labels: keep.store.labels.iter().chain(&keep.labels).cloned().collect(),
        command: command_line(),
        campaign: keep.store.campaign.clone(),
    };
    let id = store.put(&record).map_err(failed)?;
    Ok((id, path))
}

/// The store failed: the document goes to a file beside the database, else in the temporary
/// directory, and one line on stderr says why and where.
fn fall_back(document: &str, db: Option<&Path>, err: &anyhow::Error) {
    let name = format!(
        "linerate-result-{}-{}.json",
        linerate_core::unixtime::now_unix_ms(),
        std::process::id()
    );
    let beside = db
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty() && d.is_dir());
    let mut tried = Vec::new();
    for dir in beside.map(Path::to_path_buf).into_iter().chain([std::env::temp_dir()]) {
        let file = dir.join(&name);
        match write_new(&file, document) {
            Ok(()) => {
                eprintln!(
                    "linerate: result not stored ({err:#}); the document is in {}",
                    file.display()
                );
                return;
            }
            Err(e) => tried.push(format!("{}: {e}", file.display())),
        }
    }
    eprintln!(
        "linerate: result not stored ({err:#}); nor written to a file ({})",
        tried.join("; ")
    );
}

/// Writes a file that must not exist yet, through to the disk; a file cut short (a full disk)
/// is removed, so that no half document is left behind.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // 0600: a result names hosts, addresses and commands; only its user reads it.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    let written = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
pub fn print_text(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// This process's command line, each argument quoted for a POSIX shell where it needs it.
fn command_line() -> String {
    std::env::args().map(|a| shell_quote(&a)).collect::<Vec<_>>().join(" ")
}

pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn arguments_are_quoted_only_where_a_shell_needs_it() {
        assert_eq!(shell_quote("--label"), "--label");
        assert_eq!(shell_quote("nic=x2"), "nic=x2");
        assert_eq!(shell_quote("[::1]:5201"), "'[::1]:5201'", "[ ] are glob characters");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
