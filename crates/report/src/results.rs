//! Stored results ([`linerate_results::store::Row`]) as text tables, CSV and JSON: what
//! `linerate results` and `results export` print. Times are UTC.
//!
//! A shared database may hold rows written by anyone: in the table and the CSV every string of
//! a row has its control characters escaped (`\u{1b}`), so no escape sequence or forged line
//! reaches a terminal, and CSV text cells are kept from reading as formulas
//! ([`crate::plot::csv`]).

use crate::text::grouped;
use linerate_results::store::{Figure, Row};
use linerate_wire::text::escape_controls;
use serde::Serialize;

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Days since 1970-01-01 as (year, month, day): Howard Hinnant's `civil_from_days`
/// (<https://howardhinnant.github.io/date_algorithms.html>).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A figure's value for a table: thousands grouped, decimals by size; `-` when unknown.
fn value(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if matches!(unit, "points" | "users") => grouped(v, 0),
        Some(v) if v.abs() >= 100.0 => grouped(v, 1),
        Some(v) if v.abs() >= 1.0 => grouped(v, 2),
        Some(v) => format!("{v:.4}"),
    }
}

/// `941.5 Mbit/s received`, `12,345.6 transactions/s`, `478.0 transactions/s (mean)`,
/// `12 datagrams lost`, `6 points`: a name that opens with its unit's word (`transactions`
/// counted in `transactions/s`) is not said twice.
pub fn figure_text(f: &Figure) -> String {
    let v = value(f.value, &f.unit);
    let word = f.unit.split('/').next().unwrap_or_default();
    let rest = (!word.is_empty())
        .then(|| f.name.strip_prefix(word))
        .flatten()
        .filter(|rest| rest.is_empty() || rest.starts_with(' '));
    if let Some(rest) = rest {
        format!("{v} {}{rest}", f.unit)
    } else if f.unit.starts_with('/') {
        format!("{v} {}{}", f.name, f.unit)
    } else {
        format!("{v} {} {}", f.unit, f.name)
    }
}

fn labels_text(row: &Row) -> String {
    row.labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The options a record was run with, from its stored command line: the words after the
/// program and its command, without the targets (their own column), the labels (theirs too)
/// and the flags that only choose the output (`--json`, `--brief`): so a pinned run (`--cpus
/// 0,1`) and an unpinned one do not look alike. `-` when there are none.
fn options_text(row: &Row) -> String {
    let is_target = |w: &str| {
        row.targets.iter().any(|t| {
            let host = t.rsplit_once(':').map_or(t.as_str(), |(h, _)| h);
            w == t || w == host || w == host.trim_start_matches('[').trim_end_matches(']')
        })
    };
    let mut words = row.command.split_whitespace().skip(2);
    let mut kept = Vec::new();
    while let Some(w) = words.next() {
        match w {
            "--json" | "--brief" => {}
            "--label" => {
                words.next();
            }
            w if w.starts_with("--label=") || is_target(w) => {}
            w => kept.push(w),
        }
    }
    if kept.is_empty() {
        "-".to_string()
    } else {
        kept.join(" ")
    }
}

/// The list `linerate results` prints: one line per record, newest first as given.
pub fn list(rows: &[Row]) -> String {
    if rows.is_empty() {
        return "no stored results match\n".to_string();
    }
    let head = [
        "id",
        "started (UTC)",
        "kind",
        "outcome",
        "headline",
        "targets",
        "options",
        "labels",
    ];
    let lines: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            let r = &escape_controls(r.clone());
            [
                r.id.to_string(),
                utc(r.started_unix_ms),
                r.kind.clone(),
                r.outcome.as_str().to_string(),
                r.figures.first().map(figure_text).unwrap_or_else(|| "-".to_string()),
                r.targets.join(" "),
                options_text(r),
                labels_text(r),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for l in &lines {
        for (w, c) in width.iter_mut().zip(l) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 8]| {
        let mut s = format!("{:>w$}", cells[0], w = width[0]);
        for (i, c) in cells.iter().enumerate().skip(1) {
            s += "  ";
            s += &format!("{c:<w$}", w = width[i]);
        }
        out += s.trim_end();
        out.push('\n');
    };
    line(head);
    for l in &lines {
        line(l.each_ref().map(String::as_str));
    }
    out
}

/// One stored record as `results export --format json` and `results --json` give it: the
/// row's columns, and the document when it was read.
#[derive(Serialize)]
pub struct Exported<'a> {
    #[serde(flatten)]
    pub row: &'a Row,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<serde_json::Value>,
}

/// Records as one JSON document (`{"linerate", "schema", "results": [...]}`), pretty-printed.
pub fn json(records: &[Exported<'_>]) -> String {
    crate::json::headed(&std::collections::BTreeMap::from([("results", records)]), true)
}

/// Records as CSV, one line per headline figure (RFC 4180 quoting):
/// `id,started_utc,kind,outcome,targets,labels,figure,unit,value`; an unknown value is empty.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from("id,started_utc,kind,outcome,targets,labels,figure,unit,value\n");
    for r in rows {
        let r = &escape_controls(r.clone());
        let fixed = [
            r.id.0.to_string(),
            utc(r.started_unix_ms),
            r.kind.clone(),
            r.outcome.as_str().to_string(),
            r.targets.join(" "),
            labels_text(r),
        ];
        let fixed: Vec<String> = fixed.iter().map(|c| crate::plot::csv::field(c)).collect();
        for f in &r.figures {
            let value = f.value.map(|v| v.to_string()).unwrap_or_default();
            out += &format!(
                "{},{},{},{}\n",
                fixed.join(","),
                crate::plot::csv::field(&f.name),
                crate::plot::csv::field(&f.unit),
                value
            );
        }
        if r.figures.is_empty() {
            out += &format!("{},,,\n", fixed.join(","));
        }
    }
    out
}

/// A stored figure's unit as Prometheus wants it: the base unit's name for the metric's end
/// and the factor from the stored value (`Mbit/s` -> `bytes_per_second`, 125,000); None for a unit
/// with no base-unit form (an efficiency in Mbit/s per % of host: PromQL divides the two).
fn base_unit(unit: &str) -> Option<(&'static str, f64)> {
    Some(match unit {
        // Prometheus' base unit of data is the byte (promtool says so of `bits`).
        "Mbit/s" => ("bytes_per_second", 1e6 / 8.0),
        "us" | "us of one core" => ("seconds", 1e-6),
        "% of host" | "%" => ("ratio", 0.01),
        "us/B" => ("seconds_per_byte", 1e-6),
        u if u.ends_with("/s") && !u.contains(' ') => ("per_second", 1.0),
        // Counts (datagrams, segments, requests, cells, points, users) and pure numbers.
        u if u.chars().all(|c| c.is_ascii_alphabetic()) => ("", 1.0),
        _ => return None,
    })
}

/// `receiver throughput, client to agents` -> `receiver_throughput_client_to_agents`.
fn snake(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().filter(|c| *c != '\'') {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// A stored figure as a metric's name and the factor to its base unit: `linerate_result_`, the
/// figure's name, the unit's count word when the name lacks it, the base unit.
pub fn openmetrics_name(f: &Figure) -> Option<(String, f64)> {
    let (suffix, factor) = base_unit(&f.unit)?;
    let mut name = format!("linerate_result_{}", snake(&f.name));
    let word = snake(f.unit.split('/').next().unwrap_or_default());
    if (suffix.is_empty() || suffix == "per_second") && !word.is_empty() && !name.split('_').any(|w| w == word) {
        name = format!("{name}_{word}");
    }
    if !suffix.is_empty() {
        name = format!("{name}_{suffix}");
    }
    Some((name, factor))
}

/// A record's label key as a Prometheus label name: other characters become `_`; a key that is
/// one of the export's own labels (or reserved, `__...`) gets a `label_` prefix.
fn label_name(key: &str) -> String {
    let mut n: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if n.is_empty() || n.starts_with(|c: char| c.is_ascii_digit()) || n.starts_with("__") {
        n = format!("label_{n}");
    }
    if OWN_LABELS.contains(&n.as_str()) {
        n = format!("label_{n}");
    }
    n
}

const OWN_LABELS: [&str; 4] = ["id", "kind", "outcome", "campaign"];

/// Records' headline figures as gauges in base units, one metric per figure, for
/// node_exporter's textfile collector or a push: OpenMetrics text (`# TYPE`, `# HELP`, `# UNIT`,
/// `# EOF`) that the collector's Prometheus text parser (0.0.4) reads as it is: the lines it does
/// not know are comments to it, and there are no counters or timestamps. Labels: the record's
/// `id`, `kind`, `outcome`, `campaign` and its own labels; every sample carries every label name
/// (empty where a record has none, which Prometheus reads as absent). An unknown figure has no
/// sample; an efficiency figure (Mbit/s per % of host) is left out: PromQL divides the two.
/// `linerate_result_started_timestamp_seconds` says when each run started.
pub fn openmetrics(rows: &[Row]) -> String {
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::registry::Registry;
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::atomic::AtomicU64;
    type Gauges = Family<Vec<(String, String)>, Gauge<f64, AtomicU64>>;
    let keys: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| r.labels.keys().map(|k| label_name(k)))
        .collect();
    let mut registry = Registry::default();
    let mut families: BTreeMap<String, Gauges> = BTreeMap::new();
    let mut gauge = |registry: &mut Registry, name: &str, help: String, labels: &Vec<(String, String)>, v: f64| {
        let family = families.entry(name.to_string()).or_insert_with(|| {
            let f = Gauges::default();
            registry.register(name, help, f.clone());
            f
        });
        family.get_or_create(labels).set(v);
    };
    for r in rows {
        let mut labels = vec![
            ("id".to_string(), r.id.0.to_string()),
            ("kind".to_string(), r.kind.clone()),
            ("outcome".to_string(), r.outcome.as_str().to_string()),
            ("campaign".to_string(), r.campaign.clone().unwrap_or_default()),
        ];
        let own: BTreeMap<String, &String> = r.labels.iter().map(|(k, v)| (label_name(k), v)).collect();
        labels.extend(
            keys.iter()
                .map(|k| (k.clone(), own.get(k).map(|v| v.to_string()).unwrap_or_default())),
        );
        gauge(
            &mut registry,
            "linerate_result_started_timestamp_seconds",
            "When the stored run started, seconds since the Unix epoch".into(),
            &labels,
            r.started_unix_ms as f64 / 1000.0,
        );
        for f in &r.figures {
            let (Some((name, factor)), Some(v)) = (openmetrics_name(f), f.value) else {
                continue;
            };
            // Text a shared database holds, in a line of its own: no control character, and a
            // backslash escaped as the format wants.
            let help: String = format!("A stored run's {} (its record's unit: {})", f.name, f.unit)
                .chars()
                .filter(|c| !c.is_control())
                .collect::<String>()
                .replace('\\', "\\\\");
            gauge(&mut registry, &name, help, &labels, v * factor);
        }
    }
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry).expect("writing to a String does not fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_results::store::{Id, Outcome};

    fn row(id: i64, kind: &str, figures: Vec<Figure>) -> Row {
        Row {
            id: Id(id),
            started_unix_ms: 1_764_034_212_000,
            stored_unix_ms: 1_764_034_223_000,
            kind: kind.to_string(),
            outcome: Outcome::Complete,
            targets: vec!["127.0.0.1:5201".to_string()],
            labels: [
                ("nic".to_string(), "x2".to_string()),
                ("note".to_string(), "a,b".to_string()),
            ]
            .into_iter()
            .collect(),
            command: "linerate tcp 127.0.0.1".to_string(),
            campaign: None,
            linerate: "0.1.0".to_string(),
            figures,
        }
    }

    fn fig(name: &str, unit: &str, value: Option<f64>) -> Figure {
        Figure {
            name: name.into(),
            unit: unit.into(),
            value,
        }
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_764_034_212_345), "2025-11-25 01:30:12");
    }

    #[test]
    fn the_list_is_a_table_with_the_headline_figure_and_its_unit() {
        let rows = [
            row(12, "tcp", vec![fig("received", "Mbit/s", Some(941.52))]),
            row(3, "rr", vec![fig("transactions", "/s", Some(12345.67))]),
            row(2, "udp sweep", vec![fig("points", "points", Some(6.0))]),
            row(1, "http", vec![fig("responses", "/s", None)]),
        ];
        let mut rows = rows;
        rows[0].command = "linerate tcp 127.0.0.1 -P 4 --cpus 0,1 --json --label nic=x2".to_string();
        let expected = [
            " id  started (UTC)        kind       outcome   headline                 targets         options          labels",
            "#12  2025-11-25 01:30:12  tcp        complete  941.5 Mbit/s received    127.0.0.1:5201  -P 4 --cpus 0,1  nic=x2 note=a,b",
            " #3  2025-11-25 01:30:12  rr         complete  12,345.7 transactions/s  127.0.0.1:5201  -                nic=x2 note=a,b",
            " #2  2025-11-25 01:30:12  udp sweep  complete  6 points                 127.0.0.1:5201  -                nic=x2 note=a,b",
            " #1  2025-11-25 01:30:12  http       complete  - responses/s            127.0.0.1:5201  -                nic=x2 note=a,b",
            "",
        ]
        .join("\n");
        assert_eq!(list(&rows), expected);
        assert_eq!(list(&[]), "no stored results match\n");
    }

    /// A stored rr headline read "478.0 transactions/s transactions (mean)".
    #[test]
    fn issue_23_a_headline_says_its_unit_once() {
        let text = |name: &str, unit: &str, v: f64| figure_text(&fig(name, unit, Some(v)));
        assert_eq!(
            text("transactions (mean)", "transactions/s", 478.0),
            "478.0 transactions/s (mean)"
        );
        assert_eq!(text("transactions", "transactions/s", 478.0), "478.0 transactions/s");
        assert_eq!(text("datagrams lost", "datagrams", 12.0), "12.00 datagrams lost");
        assert_eq!(
            text("receiver throughput (mean)", "Mbit/s", 941.5),
            "941.5 Mbit/s receiver throughput (mean)"
        );
        assert_eq!(text("points", "points", 6.0), "6 points");
    }

    #[test]
    fn issue_22_hostile_rows_are_escaped_and_csv_formulas_are_text() {
        let mut r = row(
            5,
            "tcp\u{1b}[2J",
            vec![fig("=1+1", "\u{7}%", Some(-5.0)), fig("@x", "-", None)],
        );
        r.labels.insert("-k".into(), "v\n#99  forged".into());
        r.targets = vec!["+x".into()];
        let table = list(std::slice::from_ref(&r));
        assert_eq!(table.lines().count(), 2, "{table}");
        assert!(!table.chars().any(|c| c != '\n' && c.is_control()), "{table}");
        assert!(table.contains("tcp\\u{1b}[2J"), "{table}");
        let text = csv(&[r]);
        assert_eq!(
            text.lines().nth(1),
            Some(
                "5,2025-11-25 01:30:12,tcp\\u{1b}[2J,complete,'+x,\"'-k=v\\u{a}#99  forged nic=x2 note=a,b\",'=1+1,\\u{7}%,-5"
            )
        );
        assert_eq!(
            text.lines().nth(2),
            Some("5,2025-11-25 01:30:12,tcp\\u{1b}[2J,complete,'+x,\"'-k=v\\u{a}#99  forged nic=x2 note=a,b\",'@x,'-,")
        );
    }

    #[test]
    fn csv_has_a_line_per_figure_and_quotes_what_needs_it() {
        let r = row(
            7,
            "tcp",
            vec![fig("received", "Mbit/s", Some(941.5)), fig("sender CPU", "%", None)],
        );
        assert_eq!(
            csv(&[r]),
            "id,started_utc,kind,outcome,targets,labels,figure,unit,value\n\
             7,2025-11-25 01:30:12,tcp,complete,127.0.0.1:5201,\"nic=x2 note=a,b\",received,Mbit/s,941.5\n\
             7,2025-11-25 01:30:12,tcp,complete,127.0.0.1:5201,\"nic=x2 note=a,b\",sender CPU,%,\n"
        );
    }

    #[test]
    fn issue_25_openmetrics_export_is_gauges_in_base_units_with_the_records_labels() {
        let mut a = row(
            7,
            "tcp",
            vec![
                fig("receiver throughput", "Mbit/s", Some(941.5)),
                fig("sender's host CPU", "% of host", Some(20.0)),
                fig("receiver's host CPU", "% of host", None),
                fig("sender efficiency", "Mbit/s per % of host", Some(47.0)),
                fig("latency p99", "us", Some(250.0)),
                fig("failed", "requests", Some(3.0)),
            ],
        );
        a.labels.insert("id".into(), "x\"y\n".into());
        let mut b = row(8, "rr", vec![fig("transactions", "transactions/s", Some(12.0))]);
        b.labels.clear();
        b.campaign = Some("nightly".into());
        let text = openmetrics(&[a, b]);
        assert!(text.ends_with("# EOF\n"), "{text}");
        for want in [
            "# TYPE linerate_result_receiver_throughput_bytes_per_second gauge\n",
            "linerate_result_receiver_throughput_bytes_per_second{id=\"7\",kind=\"tcp\",outcome=\"complete\",campaign=\"\",label_id=\"x\\\"y\\n\",nic=\"x2\",note=\"a,b\"} 117687500.0\n",
            "linerate_result_senders_host_cpu_ratio{",
            "} 0.2\n",
            "linerate_result_latency_p99_seconds{",
            "} 0.00025\n",
            "linerate_result_failed_requests{",
            "linerate_result_transactions_per_second{id=\"8\",kind=\"rr\",outcome=\"complete\",campaign=\"nightly\",label_id=\"\",nic=\"\",note=\"\"} 12.0\n",
            "linerate_result_started_timestamp_seconds{id=\"8\"",
        ] {
            assert!(text.contains(want), "{want} not in:\n{text}");
        }
        assert!(
            !text.contains("receivers_host_cpu"),
            "unknown is absent, not 0:\n{text}"
        );
        assert!(!text.contains("efficiency"), "{text}");
        assert!(
            !text.contains("_total") && !text.contains("mbit") && !text.contains("percent"),
            "{text}"
        );
    }
}
