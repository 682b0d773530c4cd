//! `linerate report`: loads each source, builds its section of figures and tables (the report
//! crate), and writes the page, the SVG files and the CSV files asked for; prints each path.
//!
//! A source is a JSON document, a stored result, a campaign (or anything else a side of
//! `linerate compare` can be, resolved by [`crate::sources::side`]), or a comparison `A..B`.

use crate::cli::common::DbArgs;
use crate::cli::report::ReportArgs;
use crate::sources::side;
use anyhow::{Context, bail};
use linerate_report::figures::{Campaign, Document};
use linerate_report::html::{self, Section};
use linerate_report::plot;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where a document comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A JSON document as `--json` wrote it.
    File(PathBuf),
    /// A stored result (`42`): its own document.
    Stored(String),
    /// Several stored results: a campaign (`ID`, `ID@VARIANT`) or a label selection.
    Set(String),
    /// `A..B`: B compared against A, each side anything `linerate compare` takes.
    Comparison(String, String),
}

impl Source {
    /// What the user named: an existing file first, then `A..B`, a result id, a set.
    pub fn parse(arg: &str) -> Source {
        let path = PathBuf::from(arg);
        if path.is_file() {
            return Source::File(path);
        }
        if let Some((a, b)) = arg.split_once("..")
            && !a.is_empty()
            && !b.is_empty()
            && !a.ends_with('/')
            && !b.starts_with('/')
        {
            return Source::Comparison(a.to_string(), b.to_string());
        }
        if arg.trim_start_matches('#').parse::<i64>().is_ok() {
            return Source::Stored(arg.to_string());
        }
        // A name that looks like a file is one that is missing.
        if arg.ends_with(".json") || arg.contains('/') {
            return Source::File(path);
        }
        Source::Set(arg.to_string())
    }

    /// How the page names it.
    pub fn name(&self) -> String {
        match self {
            Source::File(p) => p
                .file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned()),
            Source::Stored(id) => format!("#{}", id.trim_start_matches('#')),
            Source::Set(s) => s.clone(),
            Source::Comparison(a, b) => format!("{a}..{b}"),
        }
    }

    pub fn load(&self, db: &DbArgs) -> anyhow::Result<Document> {
        match self {
            Source::File(p) => {
                let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
                Document::parse(&text).with_context(|| format!("{}", p.display()))
            }
            Source::Stored(id) => {
                let input = side(id, db)?;
                let entry = input.entries.into_iter().next().context("the store gave no document")?;
                Ok(Document::from(entry.document))
            }
            Source::Set(s) => Ok(Document::Campaign(Box::new(Campaign::from_side(&side(s, db)?)))),
            Source::Comparison(a, b) => {
                let a = side(a, db).with_context(|| format!("side A '{a}'"))?;
                let b = side(b, db).with_context(|| format!("side B '{b}'"))?;
                Ok(Document::Comparison(Box::new(linerate_core::compare::compare(&a, &b))))
            }
        }
    }
}

/// What to write, checked before anything is read.
enum Output {
    Html(PathBuf),
    Svg(PathBuf),
}

pub fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let output = match &args.output {
        Some(p) => match p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("html" | "htm") => Some(Output::Html(p.clone())),
            Some("svg") => Some(Output::Svg(p.clone())),
            _ => bail!("-o {}: give a file ending in .html or .svg", p.display()),
        },
        None => None,
    };
    if output.is_none() && args.svg.is_none() && args.csv.is_none() {
        bail!("nothing to write: give -o FILE.html, -o FILE.svg, --svg DIR or --csv DIR");
    }
    let sources: Vec<Source> = args.sources.iter().map(|s| Source::parse(s)).collect();
    let mut sections = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let doc = s.load(&args.db).with_context(|| format!("source '{}'", s.name()))?;
        let mut section = html::section(&doc, &s.name(), i + 1, sources.len());
        if let Source::Stored(id) = s {
            section
                .blocks
                .insert(0, html::Block::Table(stored_record(id, &args.db)?));
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
fn stored_record(id: &str, db: &DbArgs) -> anyhow::Result<html::Table> {
    use linerate_core::store::{Id, Store};
    let path = db.path()?;
    let store = Store::open_read(&path).with_context(|| format!("the results database {}", path.display()))?;
    let n: i64 = id.trim_start_matches('#').parse().context("a result id")?;
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
