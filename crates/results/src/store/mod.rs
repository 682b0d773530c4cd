//! The results store: every run's document kept in an embedded SQLite database, with the
//! command line, labels, start time, kind, outcome, targets and headline figures in columns so
//! that lists, campaigns and comparisons need not parse documents.
//!
//! In: a [`Record`] (a document of any kind, keyed by its `test` string, plus what the document
//! does not hold), written in one transaction after the run ends. Out: [`Row`]s selected by a
//! [`Filter`] (kind, labels, campaign, time), and stored documents by [`Id`]. Nothing here
//! prints; the binary decides what a failure to store means and writes the fallback file. The
//! layout and its migrations are in [`schema`]; the headline figures per kind in [`headline`].
//! docs/results.md ("The results store") describes both.
//!
//! Concurrency: WAL mode and a busy timeout ([`BUSY_TIMEOUT`]), so several clients storing at
//! once each wait their turn; a writer killed mid-transaction leaves the database as it was.

pub mod cause;
pub mod document;
pub mod headline;
pub mod schema;

pub use cause::Cause;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a write waits for another writer before it gives up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where results go when neither `--db` nor `LINERATE_DB` says: `$XDG_DATA_HOME/linerate/results.db`,
/// else `~/.local/share/linerate/results.db`; `None` when neither variable is set.
pub fn default_path() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(data) => PathBuf::from(data),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/share"),
    };
    Some(base.join("linerate").join("results.db"))
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the directory {path}")]
    Directory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The cause in words ([`Cause`]), never SQLite's code number.
    #[error("cannot open the results database {path}: {cause}")]
    Open { path: PathBuf, cause: Cause },
    #[error(
        "the results database {path} has layout {found}, newer than this build's {known}: upgrade linerate to write to it"
    )]
    NewerSchema { path: PathBuf, found: u32, known: u32 },
    #[error("results database {path}: {cause}")]
    Sql { path: PathBuf, cause: Cause },
    #[error("no stored result {id}")]
    NotFound { id: String },
    #[error("'{text}' is not a result id (a number such as 42 or #42)")]
    BadId { text: String },
    #[error("'{text}' is not a label (KEY=VALUE; KEY of letters, digits, '_', '-', '.')")]
    BadLabel { text: String },
    #[error("the document to store is not JSON")]
    Document(#[source] serde_json::Error),
    #[error("a stored document is over {limit_mib} MiB of JSON, the most this build stores or reads: refused")]
    TooLarge { limit_mib: usize },
    #[error("a stored document does not read ({why})")]
    Corrupt { why: String },
}

impl StoreError {
    fn open(path: &Path, e: &rusqlite::Error) -> StoreError {
        StoreError::Open {
            path: path.to_path_buf(),
            cause: Cause::of(e, path),
        }
    }

    fn sql(path: &Path, e: &rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: path.to_path_buf(),
            cause: Cause::of(e, path),
        }
    }

    /// Why it failed, when SQLite or the filesystem said.
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            StoreError::Open { cause, .. } | StoreError::Sql { cause, .. } => Some(cause),
            _ => None,
        }
    }
}

/// A stored result's id: an integer, never reused (even after `rm`), printed `#42`; `42` and
/// `#42` both parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Id(pub i64);

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

impl std::str::FromStr for Id {
    type Err = StoreError;
    fn from_str(text: &str) -> Result<Id, StoreError> {
        let digits = text.trim().trim_start_matches('#');
        match digits.parse::<i64>() {
            Ok(n) if n > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(Id(n)),
            _ => Err(StoreError::BadId { text: text.to_string() }),
        }
    }
}

/// `KEY=VALUE` as a (key, value) pair: the key of ASCII letters, digits, `_`, `-` and `.`, the
/// value anything (possibly empty).
pub fn parse_label(text: &str) -> Result<(String, String), StoreError> {
    let bad = || StoreError::BadLabel { text: text.to_string() };
    let (key, value) = text.split_once('=').ok_or_else(bad)?;
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)) {
        return Err(bad());
    }
    Ok((key.to_string(), value.to_string()))
}

/// How a stored run ended (the same rule as the exit status: README, "Exit status").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Complete,
    Partial,
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Partial => "partial",
            Outcome::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Outcome {
        match text {
            "complete" => Outcome::Complete,
            "failed" => Outcome::Failed,
            _ => Outcome::Partial,
        }
    }
}

impl From<linerate_wire::result::Outcome> for Outcome {
    fn from(o: linerate_wire::result::Outcome) -> Outcome {
        match o {
            linerate_wire::result::Outcome::Complete => Outcome::Complete,
            linerate_wire::result::Outcome::Partial => Outcome::Partial,
            linerate_wire::result::Outcome::Failed => Outcome::Failed,
        }
    }
}

/// What is stored of one run: the document and what it does not hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The whole document as `--json` prints it, of any kind; its `test` field is the kind. It
    /// is stored on one line, compressed ([`document`]).
    pub document: String,
    pub outcome: Outcome,
    /// The agents (HOST:PORT) or URLs as the user gave them.
    pub targets: Vec<String>,
    pub labels: BTreeMap<String, String>,
    /// The command line, shell-quoted.
    pub command: String,
    /// The campaign (a plan's run) the record belongs to; none for a run of its own.
    pub campaign: Option<String>,
}

/// A headline figure: what it counts, its unit, its value (null: unknown).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub name: String,
    pub unit: String,
    pub value: Option<f64>,
}

/// One stored record without its document: what lists and comparisons read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub id: Id,
    /// The document's start, milliseconds since the Unix epoch (the store time when the
    /// document has none).
    pub started_unix_ms: u64,
    pub stored_unix_ms: u64,
    /// The document's `test`: `"tcp"`, `"rr sweep"`, ...
    pub kind: String,
    pub outcome: Outcome,
    pub targets: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub command: String,
    pub campaign: Option<String>,
    /// The version of linerate that stored it.
    pub linerate: String,
    /// The headline figures ([`headline::figures`]), the first the one a list shows.
    pub figures: Vec<Figure>,
}

/// Which records a [`Store::list`] returns, newest first; every field set narrows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// The document kind, exactly (`"tcp"`, `"rr sweep"`).
    pub kind: Option<String>,
    /// Every one of these labels, with these values.
    pub labels: Vec<(String, String)>,
    pub campaign: Option<String>,
    /// Started at or after, milliseconds since the Unix epoch.
    pub since_unix_ms: Option<u64>,
    /// At most this many (the newest); none: all.
    pub limit: Option<usize>,
}

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The layout the file has; above [`schema::VERSION`] the store only reads.
    version: u32,
}

/// Whether SQLite said the database is busy or locked by another connection.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

impl Store {
    /// Opens (creating it and its directory if needed) the database at `path`, in WAL mode,
    /// migrated to this build's layout. A database of a newer layout opens for reading only.
    ///
    /// What it creates only its user may read: directories 0700, the file 0600 (SQLite gives
    /// its `-wal` and `-shm` files the database's mode). Existing ones keep theirs.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| StoreError::Directory {
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        let open_err = |e: rusqlite::Error| StoreError::open(path, &e);
        // An empty file is an empty database; made here, before SQLite makes it with the umask's
        // mode (0644). One that exists already, or cannot be made, is left to SQLite to judge.
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // Reading the version reads the header: a file that is not a database fails here.
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(open_err)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            version,
        };
        if version > schema::VERSION {
            return Ok(store);
        }
        // WAL: readers never block the writer, and a commit is one append to the log. The mode
        // is kept in the file; switching to it takes the database for a moment and SQLite then
        // answers "locked" without waiting, so the first openers of a new file take turns.
        let started = std::time::Instant::now();
        loop {
            let mode: String = store
                .conn
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .map_err(open_err)?;
            if mode.eq_ignore_ascii_case("wal") {
                break;
            }
            match store.conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(open_err(e)),
            }
        }
        store.conn.pragma_update(None, "foreign_keys", "ON").map_err(open_err)?;
        store.migrate()?;
        Ok(store)
    }

    /// Opens an existing database for reading only: no directory or file created, no
    /// migration, nothing written (`SQLITE_OPEN_READ_ONLY`).
    ///
    /// A WAL database is read through its `-shm` index, which SQLite makes beside the file when
    /// none is there. Where it cannot (a read-only filesystem or a directory not this user's),
    /// the file is opened `immutable=1` (<https://sqlite.org/uri.html#uriimmutable>): read as it
    /// lies, with no lock and no log. Only then, and only when no `-wal` log holds commits not
    /// yet in the file: a writer at work would have made the `-shm` this open found missing.
    pub fn open_read(path: &Path) -> Result<Store, StoreError> {
        match Store::open_read_with(path, false) {
            Err(e) if Store::immutable_will_do(path, &e) => Store::open_read_with(path, true),
            other => other,
        }
    }

    /// Whether a read-only open that failed with `e` may read the file `immutable=1` instead.
    fn immutable_will_do(path: &Path, e: &StoreError) -> bool {
        let cannot_write_beside = matches!(
            e.cause(),
            Some(Cause::ReadOnlyFilesystem | Cause::PermissionDenied | Cause::Other(_))
        );
        let name = |suffix: &str| {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            PathBuf::from(p)
        };
        let log_empty = std::fs::metadata(name("-wal")).map(|m| m.len() == 0).unwrap_or(true);
        cannot_write_beside && log_empty && !name("-shm").exists() && cause::access(path, libc::R_OK)
    }

    fn open_read_with(path: &Path, immutable: bool) -> Result<Store, StoreError> {
        let open_err = |e: rusqlite::Error| StoreError::open(path, &e);
        let mut flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if immutable {
            flags |= OpenFlags::SQLITE_OPEN_URI;
            Connection::open_with_flags(uri_immutable(path), flags)
        } else {
            Connection::open_with_flags(path, flags)
        }
        .map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // The first read opens the log and its index: a WAL database that cannot have them fails here.
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(open_err)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            version,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The layout version of the file (this build writes [`schema::VERSION`]).
    pub fn version(&self) -> u32 {
        self.version
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| StoreError::sql(&self.path, &e)
    }

    /// Runs the migrations this file lacks, all in one immediate transaction: two processes
    /// opening a new file at once migrate it once.
    fn migrate(&mut self) -> Result<(), StoreError> {
        self.migrate_with(schema::MIGRATIONS)
    }

    /// [`Store::migrate`] over a given list (tests add a layout this build does not have).
    fn migrate_with(&mut self, migrations: &[&str]) -> Result<(), StoreError> {
        if self.version as usize == migrations.len() {
            return Ok(());
        }
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| StoreError::sql(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        // Read again inside the lock: another process may have migrated meanwhile.
        let mut version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(sql)?;
        while (version as usize) < migrations.len() {
            tx.execute_batch(migrations[version as usize]).map_err(sql)?;
            version += 1;
        }
        tx.pragma_update(None, "user_version", version).map_err(sql)?;
        tx.commit().map_err(sql)?;
        self.version = version;
        Ok(())
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.version > schema::VERSION {
            return Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found: self.version,
                known: schema::VERSION,
            });
        }
        Ok(())
    }

    /// Stores one record in one transaction and returns its id.
    pub fn put(&mut self, record: &Record) -> Result<Id, StoreError> {
        self.writable()?;
        let document: serde_json::Value = serde_json::from_str(&record.document).map_err(StoreError::Document)?;
        let kind = document.get("test").and_then(|t| t.as_str()).unwrap_or("unknown");
        let stored = now_unix_ms();
        let started = document
            .get("started_unix_ms")
            .and_then(|v| v.as_u64())
            .or_else(|| first_point_start(&document))
            .unwrap_or(stored);
        let figures = headline::figures(kind, &document);
        let head = figures.first();
        let targets = serde_json::to_string(&record.targets).map_err(StoreError::Document)?;
        let stored_document = document::encode(&record.document)?;
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| StoreError::sql(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute(
            "INSERT INTO records (started_unix_ms, stored_unix_ms, kind, outcome, targets, command,
                 campaign, linerate, figure_name, figure_unit, figure_value)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                started as i64,
                stored as i64,
                kind,
                record.outcome.as_str(),
                targets,
                record.command,
                record.campaign,
                linerate_wire::VERSION,
                head.map(|f| &f.name),
                head.map(|f| &f.unit),
                head.and_then(|f| f.value),
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO documents (record_id, json, encoding) VALUES (?1, ?2, ?3)",
            params![id, stored_document, document::Encoding::Zlib.as_str()],
        )
        .map_err(sql)?;
        for (i, f) in figures.iter().enumerate() {
            tx.execute(
                "INSERT INTO figures (record_id, position, name, unit, value) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, i as i64, f.name, f.unit, f.value],
            )
            .map_err(sql)?;
        }
        for (k, v) in &record.labels {
            tx.execute(
                "INSERT INTO labels (record_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(Id(id))
    }

    /// The records `filter` selects, newest first (by start, then id), with labels and figures.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Row>, StoreError> {
        let mut sql = String::from(
            "SELECT id, started_unix_ms, stored_unix_ms, kind, outcome, targets, command, campaign, linerate
             FROM records WHERE 1",
        );
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(kind) = &filter.kind {
            args.push(kind.clone().into());
            sql += &format!(" AND kind = ?{}", args.len());
        }
        if let Some(c) = &filter.campaign {
            args.push(c.clone().into());
            sql += &format!(" AND campaign = ?{}", args.len());
        }
        if let Some(t) = filter.since_unix_ms {
            args.push((t as i64).into());
            sql += &format!(" AND started_unix_ms >= ?{}", args.len());
        }
        for (k, v) in &filter.labels {
            args.push(k.clone().into());
            args.push(v.clone().into());
            sql += &format!(
                " AND id IN (SELECT record_id FROM labels WHERE key = ?{} AND value = ?{})",
                args.len() - 1,
                args.len()
            );
        }
        sql += " ORDER BY started_unix_ms DESC, id DESC";
        if let Some(n) = filter.limit {
            sql += &format!(" LIMIT {n}");
        }
        let mut rows = self.select(&sql, rusqlite::params_from_iter(args))?;
        self.attach(&mut rows)?;
        Ok(rows)
    }

    fn select(&self, sql: &str, args: impl rusqlite::Params) -> Result<Vec<Row>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(self.sql())?;
        let rows = stmt
            .query_map(args, |r| {
                let targets: String = r.get(5)?;
                Ok(Row {
                    id: Id(r.get(0)?),
                    started_unix_ms: r.get::<_, i64>(1)?.max(0) as u64,
                    stored_unix_ms: r.get::<_, i64>(2)?.max(0) as u64,
                    kind: r.get(3)?,
                    outcome: Outcome::parse(&r.get::<_, String>(4)?),
                    targets: serde_json::from_str(&targets).unwrap_or_default(),
                    labels: BTreeMap::new(),
                    command: r.get(6)?,
                    campaign: r.get(7)?,
                    linerate: r.get(8)?,
                    figures: Vec::new(),
                })
            })
            .map_err(self.sql())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())?;
        Ok(rows)
    }

    /// Fills in the rows' labels and figures: one query each over the rows' id range.
    fn attach(&self, rows: &mut [Row]) -> Result<(), StoreError> {
        let (Some(lo), Some(hi)) = (rows.iter().map(|r| r.id.0).min(), rows.iter().map(|r| r.id.0).max()) else {
            return Ok(());
        };
        let at: std::collections::HashMap<i64, usize> = rows.iter().enumerate().map(|(i, r)| (r.id.0, i)).collect();
        let mut stmt = self
            .conn
            .prepare("SELECT record_id, key, value FROM labels WHERE record_id BETWEEN ?1 AND ?2")
            .map_err(self.sql())?;
        let mut q = stmt.query(params![lo, hi]).map_err(self.sql())?;
        while let Some(r) = q.next().map_err(self.sql())? {
            if let Some(&i) = at.get(&r.get::<_, i64>(0).map_err(self.sql())?) {
                rows[i]
                    .labels
                    .insert(r.get(1).map_err(self.sql())?, r.get(2).map_err(self.sql())?);
            }
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT record_id, name, unit, value FROM figures WHERE record_id BETWEEN ?1 AND ?2
                 ORDER BY record_id, position",
            )
            .map_err(self.sql())?;
        let mut q = stmt.query(params![lo, hi]).map_err(self.sql())?;
        while let Some(r) = q.next().map_err(self.sql())? {
            if let Some(&i) = at.get(&r.get::<_, i64>(0).map_err(self.sql())?) {
                rows[i].figures.push(Figure {
                    name: r.get(1).map_err(self.sql())?,
                    unit: r.get(2).map_err(self.sql())?,
                    value: r.get(3).map_err(self.sql())?,
                });
            }
        }
        Ok(())
    }

    /// One record's row.
    pub fn row(&self, id: Id) -> Result<Row, StoreError> {
        let mut rows = self.select(
            "SELECT id, started_unix_ms, stored_unix_ms, kind, outcome, targets, command, campaign, linerate
             FROM records WHERE id = ?1",
            params![id.0],
        )?;
        self.attach(&mut rows)?;
        rows.pop().ok_or(StoreError::NotFound { id: id.to_string() })
    }

    /// One record's document as JSON text: on one line (pretty-printed for a record stored
    /// under layout 1); [`document::pretty`] gives it as `--json` printed it.
    pub fn document(&self, id: Id) -> Result<String, StoreError> {
        // A layout 1 file opened for reading only has no `encoding` column: all its text is JSON.
        let sql = if self.version >= 2 {
            "SELECT json, encoding FROM documents WHERE record_id = ?1"
        } else {
            "SELECT json, 'json' FROM documents WHERE record_id = ?1"
        };
        let (bytes, encoding) = self
            .conn
            .query_row(sql, params![id.0], |r| {
                // Text (layout 1) or a blob (compressed): either as its bytes.
                let bytes = match r.get_ref(0)? {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
                    other => {
                        return Err(rusqlite::Error::InvalidColumnType(
                            0,
                            "json".to_string(),
                            other.data_type(),
                        ));
                    }
                };
                Ok((bytes, r.get::<_, String>(1)?))
            })
            .optional()
            .map_err(self.sql())?
            .ok_or(StoreError::NotFound { id: id.to_string() })?;
        let encoding = document::Encoding::parse(&encoding).ok_or_else(|| StoreError::Corrupt {
            why: format!("record {id} has the unknown encoding '{encoding}'"),
        })?;
        document::decode(&bytes, encoding)
    }

    /// Removes records; every id must exist (none is removed otherwise).
    pub fn remove(&mut self, ids: &[Id]) -> Result<(), StoreError> {
        self.writable()?;
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| StoreError::sql(&path, &e);
        let tx = self.conn.transaction().map_err(sql)?;
        for id in ids {
            if tx
                .execute("DELETE FROM records WHERE id = ?1", params![id.0])
                .map_err(sql)?
                == 0
            {
                return Err(StoreError::NotFound { id: id.to_string() });
            }
        }
        tx.commit().map_err(sql)
    }

    /// Sets labels on a record (a key it has already takes the new value).
    pub fn label(&mut self, id: Id, labels: &[(String, String)]) -> Result<(), StoreError> {
        self.writable()?;
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| StoreError::sql(&path, &e);
        let tx = self.conn.transaction().map_err(sql)?;
        let found: Option<i64> = tx
            .query_row("SELECT id FROM records WHERE id = ?1", params![id.0], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        if found.is_none() {
            return Err(StoreError::NotFound { id: id.to_string() });
        }
        for (k, v) in labels {
            tx.execute(
                "INSERT INTO labels (record_id, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT (record_id, key) DO UPDATE SET value = excluded.value",
                params![id.0, k, v],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }

    /// SQLite's own check of the file (`PRAGMA integrity_check`): `["ok"]` when sound, else the
    /// problems it found.
    pub fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare("PRAGMA integrity_check").map_err(self.sql())?;
        stmt.query_map([], |r| r.get::<_, String>(0))
            .map_err(self.sql())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())
    }
}

/// `file:PATH?immutable=1`, the path percent-encoded where a URI needs it.
fn uri_immutable(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri += &format!("%{b:02X}");
        }
    }
    uri + "?immutable=1"
}

/// A sweep has no start of its own: its first point's.
fn first_point_start(document: &serde_json::Value) -> Option<u64> {
    document.pointer("/points/0/result/started_unix_ms")?.as_u64()
}

fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
