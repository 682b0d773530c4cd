//! The database's layout and its migrations. `PRAGMA user_version` holds the number of
//! migrations applied; a database opens in every later build (each migration runs once, in
//! order, inside one transaction) and a build meets a newer database by reading it and refusing
//! to write. docs/results.md ("The results store") mirrors this file.

/// The layout this build writes: the number of entries in [`MIGRATIONS`].
pub const VERSION: u32 = MIGRATIONS.len() as u32;

/// Each entry turns layout `i` into `i + 1`. Append only: an entry that shipped never changes.
pub const MIGRATIONS: &[&str] = &[
    // 1: records, their documents, their headline figures and labels.
    "
    CREATE TABLE records (
        id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, even after rm
        started_unix_ms INTEGER NOT NULL,      -- the document's start (or the store time)
        stored_unix_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,                    -- the document's `test`: 'tcp', 'rr sweep', ...
        outcome TEXT NOT NULL,                 -- 'complete', 'partial' or 'failed'
        targets TEXT NOT NULL,                 -- JSON array of the agents or URLs, as given
        command TEXT NOT NULL,                 -- the command line, shell-quoted
        campaign TEXT,                         -- the campaign (plan run) it belongs to, if any
        linerate TEXT NOT NULL,                -- the version that stored it
        figure_name TEXT,                      -- the headline figure, also in `figures`
        figure_unit TEXT,
        figure_value REAL
    );
    CREATE INDEX records_started ON records(started_unix_ms);
    CREATE INDEX records_kind ON records(kind, started_unix_ms);
    CREATE INDEX records_campaign ON records(campaign) WHERE campaign IS NOT NULL;
    CREATE TABLE documents (
        record_id INTEGER PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
        json TEXT NOT NULL                     -- the whole document, as --json prints it
    );
    CREATE TABLE figures (
        record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,             -- 0 is the headline figure
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        value REAL,                            -- null: unknown
        PRIMARY KEY (record_id, position)
    ) WITHOUT ROWID;
    CREATE TABLE labels (
        record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (record_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX labels_key_value ON labels(key, value);
    ",
    // 2: documents kept on one line and compressed (`document`); the pretty-printed text of
    // layout 1 stays as it was and reads as before.
    "
    ALTER TABLE documents ADD COLUMN encoding TEXT NOT NULL DEFAULT 'json';  -- 'json' or 'zlib'
    ",
];
