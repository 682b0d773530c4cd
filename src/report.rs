//! `linerate report`: loads each source, builds its section of figures and tables (the report
//! crate), and writes the page, the SVG files and the CSV files asked for; prints each path.
//!
//! A source is anything a side of `linerate compare` can be (a JSON document, a stored result, a
//! campaign, a label selection: [`crate::sources::Selection`]), or a comparison `A..B`.

use crate::cli::common::DbArgs;
use crate::cli::report::ReportArgs;
use crate::cli::usage::{Usage, usage};
use crate::sources::{Selection, side};
use anyhow::{Context, bail};
use linerate_report::figures::{Campaign, Subject};
use linerate_report::html::{self, Section};
use linerate_report::plot;
use linerate_results::document::Document;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where a section comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Anything one side of `linerate compare` names: a document file or a stored result is
    /// drawn as itself, a campaign or a label selection as a campaign.
    One(String, Selection),
    /// `A..B`: B compared against A, each side anything `linerate compare` takes.
    Comparison(String, String),
}

impl Source {
    /// What the user named: an existing file first, then `A..B`, then what a side can be.
    pub fn parse(arg: &str) -> anyhow::Result<Source> {
        if !std::path::Path::new(arg).is_file()
            && let Some((a, b)) = arg.split_once("..")
            && !a.is_empty()
            && !b.is_empty()
            && !a.ends_with('/')
            && !b.starts_with('/')
        {
            return Ok(Source::Comparison(a.to_string(), b.to_string()));
        }
        Ok(Source::One(arg.to_string(), Selection::parse(arg)?))
    }

    /// How the page names it.
    pub fn name(&self) -> String {
        match self {
            Source::One(_, Selection::File(p)) => p
                .file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned()),
            Source::One(_, Selection::Id(id)) => format!("#{id}"),
            Source::One(arg, _) => arg.clone(),
            Source::Comparison(a, b) => format!("{a}..{b}"),
        }
    }

    pub fn load(&self, db: &DbArgs) -> anyhow::Result<Subject> {
        match self {
            Source::One(arg, selection) => {
                let input = selection.load(arg, db)?;
                if selection.is_one() {
                    let entry = input.entries.into_iter().next().context("no document")?;
                    Ok(Subject::Document(entry.document))
                } else {
                    Ok(Subject::Campaign(Box::new(Campaign::from_side(&input))))
                }
            }
            Source::Comparison(a, b) => {
                let a = side(a, db).with_context(|| format!("side A '{a}'"))?;
                let b = side(b, db).with_context(|| format!("side B '{b}'"))?;
                Ok(Subject::Document(Document::Comparison(Box::new(
                    linerate_results::compare::compare(&a, &b, linerate_results::compare::DEFAULT_THRESHOLD_PERCENT),
                ))))
            }
        }
    }
}

/// What to write, checked before anything is read.
enum Output {
    Html(PathBuf),
    Svg(PathBuf),
}

/// What `-o`, `--svg` and `--csv` ask to write; refused before anything is read.
fn output(args: &ReportArgs) -> Result<Option<Output>, Usage> {
    let output = match &args.output {
        Some(p) => match p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("html" | "htm") => Some(Output::Html(p.clone())),
            Some("svg") => Some(Output::Svg(p.clone())),
            _ => return Err(usage!("-o {}: give a file ending in .html or .svg", p.display())),
        },
        None => None,
    };
    if output.is_none() && args.svg.is_none() && args.csv.is_none() {
        return Err(usage!(
            "nothing to write: give -o FILE.html, -o FILE.svg, --svg DIR or --csv DIR"
        ));
    }
    Ok(output)
}

pub fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let output = output(args)?;
    // A source that cannot be read as one (a malformed label selection) is the command line's.
    let sources = args
        .sources
        .iter()
        .map(|s| Source::parse(s).map_err(|e| usage!("source '{s}': {e:#}")))
        .collect::<Result<Vec<Source>, Usage>>()?;
    let mut sections = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let doc = s.load(&args.db).with_context(|| format!("source '{}'", s.name()))?;
        let mut section = html::section(&doc, &s.name(), i + 1, sources.len());
        if let Source::One(_, Selection::Id(id)) = s {
            section.insert_first_table(stored_record(*id, &args.db)?);
        }
        sections.push(section);
    }
    let figures: Vec<&plot::Figure> = sections.iter().flat_map(Section::figures).collect();
    let mut written = Vec::new();
    match &output {
        Some(Output::Html(p)) => {
            let title = format!(
                "linerate report: {}",
                sources.iter().map(Source::name).collect::<Vec<_>>().join(", ")
            );
            write(p, &html::page(&title, &sections))?;
            written.push(p.clone());
        }
        Some(Output::Svg(p)) => {
            if figures.is_empty() {
                bail!("the sources have nothing to plot");
            }
            write(p, &html::svg_file(&figures))?;
            written.push(p.clone());
        }
        None => {}
    }
    for (dir, ext) in [(&args.svg, "svg"), (&args.csv, "csv")] {
        let Some(dir) = dir else { continue };
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for f in &figures {
            let path = dir.join(format!("{}.{ext}", f.id));
            let text = if ext == "svg" {
                plot::svg::render(f) + "\n"
            } else {
                plot::csv::render(f)
            };
            write(&path, &text)?;
            written.push(path);
        }
    }
    for p in written {
        println!("{}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `tab-stored`: a stored result's id, the command line that made it and its labels, as the store
/// keeps them beside the document.
fn stored_record(n: i64, db: &DbArgs) -> anyhow::Result<html::Table> {
    use linerate_results::store::{Id, Store};
    let path = db.path()?;
    let store = Store::open_read(&path).with_context(|| format!("the results database {}", path.display()))?;
    let row = store.row(Id(n))?;
    let mut rows = vec![
        vec!["stored as".to_string(), format!("#{n}")],
        vec!["command".to_string(), row.command.clone()],
    ];
    if let Some(c) = &row.campaign {
        rows.push(vec!["campaign".to_string(), c.clone()]);
    }
    rows.extend(row.labels.iter().map(|(k, v)| vec![format!("label {k}"), v.clone()]));
    Ok(html::Table {
        id: "tab-stored".to_string(),
        caption: "The stored record: command line and labels".to_string(),
        head: vec![String::new(), "value".to_string()],
        rows,
    })
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
