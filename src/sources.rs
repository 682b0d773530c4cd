//! Where `linerate compare` and `linerate report` get their documents: a result file, a stored
//! result, stored results by label, or a campaign (all of it, or one variant), resolved the same
//! way for both commands into a [`SideInput`].

use crate::cli::compare::file_of;
use anyhow::Context;
use linerate_core::compare::{Document, Entry, SideInput};
use linerate_core::plan::campaign::{COORDINATE_PREFIX, TEST_LABEL, VARIANT_LABEL};
use linerate_core::result::Coordinate;
use linerate_core::store::{Filter, Id, Store};

/// The documents one side names: a result file, a stored result (`42`, `#42`), stored results
/// by label (`label:nic=x2,mtu=9000`), or a campaign (`ID`, or `ID@VARIANT` for one variant).
pub fn side(source: &str, db: &crate::cli::common::DbArgs) -> anyhow::Result<SideInput> {
    if let Some(path) = file_of(source) {
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let document = Document::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
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
    let (rows, variant_chosen) = if let Some(labels) = source.strip_prefix("label:") {
        let labels = labels
            .split(',')
            .map(|l| linerate_core::store::parse_label(l.trim()).map_err(anyhow::Error::from))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let filter = Filter {
            labels,
            ..Filter::default()
        };
        (store.list(&filter)?, false)
    } else if let Ok(id) = source.trim_start_matches('#').parse::<i64>() {
        (vec![store.row(Id(id))?], false)
    } else {
        let (campaign, variant) = match source.split_once('@') {
            Some((c, v)) => (c, Some(v)),
            None => (source, None),
        };
        let mut labels = Vec::new();
        if let Some(v) = variant {
            labels.push((VARIANT_LABEL.to_string(), v.to_string()));
        }
        let filter = Filter {
            campaign: Some(campaign.to_string()),
            labels,
            ..Filter::default()
        };
        (store.list(&filter)?, variant.is_some())
    };
    anyhow::ensure!(
        !rows.is_empty(),
        "'{source}' is no result file, and selects nothing in {}",
        path.display()
    );
    let mut entries = Vec::new();
    for row in rows {
        let text = store.document(row.id)?;
        let document = Document::from_json(&text).map_err(|e| anyhow::anyhow!("#{}: {e}", row.id.0))?;
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
