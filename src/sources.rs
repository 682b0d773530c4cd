//! Where `linerate compare` and `linerate report` get their documents: a result file, a stored
//! result, stored results by label, or a campaign (all of it, or one variant). One parser
//! ([`Selection::parse`]) names them and one loader ([`Selection::load`]) resolves them into a
//! [`SideInput`], the same for both commands.

use anyhow::Context;
use linerate_core::result::Coordinate;
use linerate_results::compare::{Entry, SideInput};
use linerate_results::document::Document;
use linerate_results::plan::campaign::{COORDINATE_PREFIX, TEST_LABEL, VARIANT_LABEL};
use linerate_results::store::{Filter, Id, Store};
use std::path::PathBuf;

/// What a side names.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// A document as `--json` wrote it (`run.json`).
    File(PathBuf),
    /// One stored result (`42`, `#42`).
    Id(i64),
    /// Stored results by label (`label:nic=x2,mtu=9000`).
    Labels(Vec<(String, String)>),
    /// A campaign's stored results (`ID`), or one variant's (`ID@VARIANT`).
    Campaign { name: String, variant: Option<String> },
}

impl Selection {
    /// An existing file first, then a label selection, a result id, a name that looks like a
    /// file (one that is missing), and else a campaign.
    pub fn parse(arg: &str) -> anyhow::Result<Selection> {
        let path = PathBuf::from(arg);
        if path.is_file() {
            return Ok(Selection::File(path));
        }
        if let Some(labels) = arg.strip_prefix("label:") {
            let labels = labels
                .split(',')
                .map(|l| linerate_results::store::parse_label(l.trim()).map_err(anyhow::Error::from))
                .collect::<anyhow::Result<Vec<_>>>()?;
            return Ok(Selection::Labels(labels));
        }
        if let Ok(id) = arg.trim_start_matches('#').parse::<i64>() {
            return Ok(Selection::Id(id));
        }
        if arg.ends_with(".json") || arg.contains('/') {
            return Ok(Selection::File(path));
        }
        let (name, variant) = match arg.split_once('@') {
            Some((c, v)) => (c.to_string(), Some(v.to_string())),
            None => (arg.to_string(), None),
        };
        Ok(Selection::Campaign { name, variant })
    }

    /// One document (a file, a result id) rather than a set.
    pub fn is_one(&self) -> bool {
        matches!(self, Selection::File(_) | Selection::Id(_))
    }

    /// Its documents, with their campaign tests and varied values.
    pub fn load(&self, source: &str, db: &crate::cli::common::DbArgs) -> anyhow::Result<SideInput> {
        if let Selection::File(path) = self {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            let document = Document::from_json(&text).with_context(|| path.display().to_string())?;
            return Ok(SideInput {
                source: source.to_string(),
                entries: vec![Entry {
                    source: path.display().to_string(),
                    document,
                    test: None,
                    coordinates: Vec::new(),
                }],
            });
        }
        let path = db.path()?;
        let store = Store::open_read(&path).with_context(|| format!("the results database {}", path.display()))?;
        let mut variant_chosen = false;
        let rows = match self {
            Selection::File(_) => unreachable!("read above"),
            Selection::Id(id) => vec![store.row(Id(*id))?],
            Selection::Labels(labels) => store.list(&Filter {
                labels: labels.clone(),
                ..Filter::default()
            })?,
            Selection::Campaign { name, variant } => {
                variant_chosen = variant.is_some();
                store.list(&Filter {
                    campaign: Some(name.clone()),
                    labels: variant.iter().map(|v| (VARIANT_LABEL.to_string(), v.clone())).collect(),
                    ..Filter::default()
                })?
            }
        };
        if rows.is_empty() {
            let db = path.display();
            match self {
                Selection::Campaign { name, variant: Some(v) } => {
                    anyhow::bail!("no campaign '{name}' in {db} has a variant '{v}'")
                }
                Selection::Campaign { name, .. } => {
                    anyhow::bail!("no campaign '{name}' in {db}")
                }
                _ => anyhow::bail!("no result in {db} has the labels of '{source}'"),
            }
        }
        let mut entries = Vec::new();
        for row in rows {
            let text = store.document(row.id)?;
            let document = Document::from_json(&text).with_context(|| format!("#{}", row.id.0))?;
            let mut coordinates: Vec<Coordinate> = row
                .labels
                .iter()
                .filter_map(|(k, v)| {
                    Some(Coordinate {
                        name: k.strip_prefix(COORDINATE_PREFIX)?.to_string(),
                        value: v.clone(),
                    })
                })
                .collect();
            if !variant_chosen && let Some(v) = row.labels.get(VARIANT_LABEL) {
                coordinates.push(Coordinate {
                    name: "variant".into(),
                    value: v.clone(),
                });
            }
            entries.push(Entry {
                source: format!("#{}", row.id.0),
                document,
                test: row.labels.get(TEST_LABEL).cloned(),
                coordinates,
            });
        }
        Ok(SideInput {
            source: source.to_string(),
            entries,
        })
    }
}

/// The measurements one side names (`linerate compare A B`: each of A and B, or a side of
/// `linerate report A..B`): a comparison is no side of another comparison.
pub fn side(source: &str, db: &crate::cli::common::DbArgs) -> anyhow::Result<SideInput> {
    let input = Selection::parse(source)?.load(source, db)?;
    if let Some(e) = input
        .entries
        .iter()
        .find(|e| matches!(e.document, Document::Comparison(_)))
    {
        anyhow::bail!("{}: a comparison is not a result to compare", e.source);
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_of_naming_a_side_parses_to_its_selection() {
        let campaign = |name: &str, variant: Option<&str>| Selection::Campaign {
            name: name.into(),
            variant: variant.map(Into::into),
        };
        assert_eq!(Selection::parse("42").unwrap(), Selection::Id(42));
        assert_eq!(Selection::parse("#42").unwrap(), Selection::Id(42));
        assert_eq!(
            Selection::parse("label:nic=x2, mtu=9000").unwrap(),
            Selection::Labels(vec![("nic".into(), "x2".into()), ("mtu".into(), "9000".into())])
        );
        assert_eq!(Selection::parse("toe-1").unwrap(), campaign("toe-1", None));
        assert_eq!(Selection::parse("toe-1@on").unwrap(), campaign("toe-1", Some("on")));
        // A name that looks like a file is a missing one, not a campaign.
        assert_eq!(
            Selection::parse("gone/run.json").unwrap(),
            Selection::File("gone/run.json".into())
        );
        assert!(Selection::parse("label:nokey").is_err());
        assert!(Selection::parse("1").unwrap().is_one() && !campaign("c", None).is_one());
    }
}
