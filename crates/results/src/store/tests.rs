use super::*;

/// A directory of its own per test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("linerate-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A stored run of `kind` (tcp or udp) whose both sides moved `mbit` Mbit/s over 2 s.
fn record(kind: &str, started: u64, mbit: f64, labels: &[(&str, &str)]) -> Record {
    use linerate_wire::spec::{TcpSpec, TestSpec, UdpSpec};
    let spec = match kind {
        "udp" => TestSpec::Udp(UdpSpec::new()),
        _ => TestSpec::Tcp(TcpSpec::new()),
    };
    let mut summary = linerate_wire::result::Summary::default();
    for side in [&mut summary.received, &mut summary.sent] {
        side.seconds = 2.0;
        side.bits_per_second = mbit * 1e6;
    }
    let mut result = linerate_core::sweep::stub_result(spec, summary);
    result.started_unix_ms = started;
    Record {
        document: serde_json::to_string(&result).expect("a result serialises"),
        outcome: Outcome::Complete,
        targets: vec!["127.0.0.1:5201".to_string()],
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        command: "linerate tcp 127.0.0.1".to_string(),
        campaign: None,
    }
}

#[test]
fn put_list_get_label_and_remove() {
    let dir = TempDir::new("crud");
    let path = dir.0.join("sub/results.db");
    let mut store = Store::open(&path).expect("open creates the directory");
    assert_eq!(store.version(), schema::VERSION);
    let a = store.put(&record("tcp", 1_000, 900.0, &[("nic", "a")])).expect("put");
    let b = store.put(&record("udp", 3_000, 500.0, &[("nic", "b")])).expect("put");
    let c = store
        .put(&record("tcp", 2_000, 950.0, &[("nic", "b"), ("mtu", "9000")]))
        .expect("put");
    let all = store.list(&Filter::default()).expect("list");
    assert_eq!(
        all.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![b, c, a],
        "newest first"
    );
    assert_eq!(all[1].figures[0].value, Some(950.0));
    assert_eq!(all[1].labels.get("mtu").map(String::as_str), Some("9000"));
    assert_eq!(all[1].targets, vec!["127.0.0.1:5201"]);
    let tcp = Filter {
        kind: Some("tcp".into()),
        ..Filter::default()
    };
    assert_eq!(store.list(&tcp).expect("list").len(), 2);
    let nic_b = Filter {
        labels: vec![("nic".into(), "b".into())],
        limit: Some(1),
        ..Filter::default()
    };
    assert_eq!(
        store
            .list(&nic_b)
            .expect("list")
            .iter()
            .map(|r| r.id)
            .collect::<Vec<_>>(),
        vec![b]
    );
    let since = Filter {
        since_unix_ms: Some(2_000),
        ..Filter::default()
    };
    assert_eq!(store.list(&since).expect("list").len(), 2);
    assert!(store.document(a).expect("doc").contains("\"started_unix_ms\":1000"));

    store
        .label(a, &[("nic".into(), "c".into()), ("x".into(), "1".into())])
        .expect("label");
    let row = store.row(a).expect("row");
    assert_eq!(
        row.labels.get("nic").map(String::as_str),
        Some("c"),
        "a label's new value replaces the old"
    );
    assert_eq!(row.labels.len(), 2);

    assert!(matches!(store.remove(&[c, Id(99)]), Err(StoreError::NotFound { .. })));
    assert_eq!(
        store.list(&Filter::default()).expect("list").len(),
        3,
        "nothing removed"
    );
    store.remove(&[c]).expect("rm");
    assert!(matches!(store.document(c), Err(StoreError::NotFound { .. })));
    let d = store.put(&record("tcp", 4_000, 1.0, &[])).expect("put");
    assert!(d.0 > c.0, "ids are never reused");
    assert_eq!(store.integrity_check().expect("check"), vec!["ok"]);
}

#[test]
fn a_reopened_database_keeps_its_records_and_a_newer_one_is_read_only() {
    let dir = TempDir::new("newer");
    let path = dir.0.join("results.db");
    let id = Store::open(&path)
        .expect("open")
        .put(&record("tcp", 1, 1.0, &[]))
        .expect("put");
    let store = Store::open(&path).expect("reopen");
    assert_eq!(store.row(id).expect("row").kind, "tcp");
    store
        .conn
        .pragma_update(None, "user_version", schema::VERSION + 1)
        .expect("bump");
    drop(store);
    let mut newer = Store::open(&path).expect("a newer layout opens");
    assert_eq!(newer.list(&Filter::default()).expect("reads").len(), 1);
    let err = newer.put(&record("tcp", 2, 1.0, &[])).expect_err("refuses to write");
    assert!(err.to_string().contains("newer than this build's"), "{err}");
}

#[test]
fn a_file_that_is_not_a_database_fails_to_open() {
    let dir = TempDir::new("corrupt");
    let path = dir.0.join("results.db");
    std::fs::write(&path, vec![0x5a; 8192]).expect("write");
    let err = Store::open(&path).err().expect("not a database");
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
}

#[test]
fn ids_and_labels_parse() {
    assert_eq!("42".parse::<Id>().expect("id"), Id(42));
    assert_eq!("#7".parse::<Id>().expect("id"), Id(7));
    assert_eq!(Id(7).to_string(), "#7");
    for bad in ["", "#", "0", "-1", "4x", "+3"] {
        assert!(bad.parse::<Id>().is_err(), "{bad}");
    }
    assert_eq!(
        parse_label("nic=xframe2").expect("label"),
        ("nic".into(), "xframe2".into())
    );
    assert_eq!(parse_label("note=a=b").expect("label"), ("note".into(), "a=b".into()));
    assert_eq!(parse_label("empty=").expect("label"), ("empty".into(), String::new()));
    for bad in ["nic", "=x", "a b=c"] {
        assert!(parse_label(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_database_of_this_layout_migrates_to_the_next_with_its_records() {
    let dir = TempDir::new("migrate");
    let path = dir.0.join("results.db");
    let id = Store::open(&path)
        .expect("open")
        .put(&record("tcp", 5, 2.0, &[("nic", "a")]))
        .expect("put");
    let mut store = Store::open(&path).expect("reopen");
    let next: Vec<&str> = schema::MIGRATIONS
        .iter()
        .copied()
        .chain(["ALTER TABLE records ADD COLUMN note TEXT;"])
        .collect();
    store.migrate_with(&next).expect("the next layout's migration");
    assert_eq!(store.version(), schema::VERSION + 1);
    let version: u32 = store
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(version, schema::VERSION + 1, "recorded in the file");
    let row = store.row(id).expect("the old record");
    assert_eq!((row.kind.as_str(), row.figures[0].value), ("tcp", Some(2.0)));
    assert_eq!(row.labels.get("nic").map(String::as_str), Some("a"));
    store.migrate_with(&next).expect("runs once");
    assert_eq!(store.integrity_check().expect("check"), vec!["ok"]);
}

#[test]
fn a_document_is_stored_on_one_line_compressed_and_reads_back_whole() {
    let dir = TempDir::new("compact");
    let path = dir.0.join("results.db");
    let mut store = Store::open(&path).expect("open");
    let mut r = record("tcp", 7, 3.0, &[]);
    let value: serde_json::Value = serde_json::from_str(&r.document).expect("JSON");
    r.document = document::pretty(&r.document).expect("pretty");
    assert!(r.document.lines().count() > 20, "as --json prints it");
    let id = store.put(&r).expect("put");
    let (stored, encoding): (Vec<u8>, String) = store
        .conn
        .query_row(
            "SELECT json, encoding FROM documents WHERE record_id = ?1",
            params![id.0],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("the stored row");
    assert_eq!(encoding, "zlib");
    assert!(
        stored.len() * 3 < r.document.len(),
        "{} bytes stored of {}",
        stored.len(),
        r.document.len()
    );
    let text = store.document(id).expect("document");
    assert!(!text.contains('\n'), "one line: {text}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&text).expect("JSON"), value);
    assert_eq!(
        document::pretty(&text).expect("pretty"),
        r.document,
        "as printed, byte for byte"
    );
}

/// A database written by a build of layout 1: its tables and one record stored the way that
/// build stored it (the pretty text in `documents.json`).
fn layout_1_database(path: &Path, pretty: &str) -> Id {
    let conn = Connection::open(path).expect("create");
    conn.execute_batch(schema::MIGRATIONS[0]).expect("layout 1");
    conn.pragma_update(None, "user_version", 1).expect("version");
    conn.execute(
        "INSERT INTO records (started_unix_ms, stored_unix_ms, kind, outcome, targets, command,
             campaign, linerate, figure_name, figure_unit, figure_value)
         VALUES (5, 6, 'tcp', 'complete', '[\"127.0.0.1:5201\"]', 'linerate tcp 127.0.0.1', NULL,
             '0.1.0', 'receiver throughput', 'Mbit/s', 2.0)",
        [],
    )
    .expect("record");
    let id = conn.last_insert_rowid();
    conn.execute(
        "INSERT INTO documents (record_id, json) VALUES (?1, ?2)",
        params![id, pretty],
    )
    .expect("document");
    Id(id)
}

#[test]
fn a_pretty_document_of_layout_1_still_reads_after_the_migration_and_read_only() {
    let dir = TempDir::new("layout1");
    let path = dir.0.join("results.db");
    let pretty = document::pretty(&record("tcp", 5, 2.0, &[]).document).expect("pretty");
    let old = layout_1_database(&path, &pretty);

    let read_only = Store::open_read(&path).expect("open for reading");
    assert_eq!(read_only.version(), 1, "not migrated");
    assert_eq!(read_only.document(old).expect("reads"), pretty);
    drop(read_only);

    let mut store = Store::open(&path).expect("open migrates");
    assert_eq!(store.version(), schema::VERSION);
    assert_eq!(
        store.document(old).expect("the old document"),
        pretty,
        "as it was stored"
    );
    assert_eq!(
        document::pretty(&store.document(old).expect("doc")).expect("pretty"),
        pretty
    );
    let new = store.put(&record("tcp", 9, 4.0, &[])).expect("a new record beside it");
    let rows = store.list(&Filter::default()).expect("list");
    assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![new, old]);
    assert!(!store.document(new).expect("new").contains('\n'));
    assert_eq!(store.integrity_check().expect("check"), vec!["ok"]);
}

#[test]
fn a_stored_document_that_does_not_read_is_an_error_not_a_panic() {
    let dir = TempDir::new("badblob");
    let path = dir.0.join("results.db");
    let mut store = Store::open(&path).expect("open");
    let id = store.put(&record("tcp", 1, 1.0, &[])).expect("put");
    store
        .conn
        .execute(
            "UPDATE documents SET json = x'78da0102' WHERE record_id = ?1",
            params![id.0],
        )
        .expect("cut");
    let err = store.document(id).expect_err("a cut stream");
    assert!(err.to_string().contains("does not read"), "{err}");
    store
        .conn
        .execute(
            "UPDATE documents SET encoding = 'lz9' WHERE record_id = ?1",
            params![id.0],
        )
        .expect("encoding");
    let err = store.document(id).expect_err("an unknown encoding");
    assert!(err.to_string().contains("'lz9'"), "{err}");
}
