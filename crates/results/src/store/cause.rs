//! Why the store failed, in words: SQLite says "unable to open database file" with
//! its code 14 whether the filesystem is read-only, the directory is not the user's or the file
//! is missing; the user needs the cause to act on it.
//!
//! In: a `rusqlite::Error` and the database's path. Out: a [`Cause`], SQLite's code turned into
//! words, and where SQLite cannot tell (cannot open, read-only, I/O error) the filesystem asked:
//! `statvfs(3)`'s read-only flag, then `access(2)` on the file and its directory. The errors that
//! carry it are [`super::StoreError`]'s `Open` and `Sql`.

use rusqlite::ErrorCode;
use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What stopped the store, as its user can act on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The filesystem holding the database is mounted read-only.
    ReadOnlyFilesystem,
    /// The file, or its directory, may not be read or written by this user.
    PermissionDenied,
    /// No space left for the database or its log.
    DiskFull,
    /// The file exists but is not an SQLite database.
    NotADatabase,
    /// Another process held the database past the busy timeout.
    Locked,
    /// SQLite found the file damaged.
    Corrupt,
    /// The database's directory does not exist.
    Missing,
    /// Anything else: SQLite's own words, without its code number.
    Other(String),
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cause::ReadOnlyFilesystem => "the filesystem is read-only",
            Cause::PermissionDenied => "permission denied (the file or its directory is not this user's to use)",
            Cause::DiskFull => "the disk is full",
            Cause::NotADatabase => "the file is not a database",
            Cause::Locked => "the database is locked by another process (waited 5 s)",
            Cause::Corrupt => "the database file is damaged (corrupt)",
            Cause::Missing => "no such file or directory",
            Cause::Other(words) => words,
        })
    }
}

impl Cause {
    /// The cause of `e`, met on the database at `path`.
    pub fn of(e: &rusqlite::Error, path: &Path) -> Cause {
        let Some(code) = e.sqlite_error_code() else {
            return Cause::Other(e.to_string());
        };
        match code {
            ErrorCode::DiskFull => Cause::DiskFull,
            ErrorCode::NotADatabase => Cause::NotADatabase,
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Cause::Locked,
            ErrorCode::DatabaseCorrupt => Cause::Corrupt,
            ErrorCode::CannotOpen
            | ErrorCode::ReadOnly
            | ErrorCode::SystemIoFailure
            | ErrorCode::PermissionDenied
            | ErrorCode::AuthorizationForStatementDenied => probe(path).unwrap_or_else(|| Cause::Other(words(e))),
            _ => Cause::Other(words(e)),
        }
    }
}

/// SQLite's message without "Error code N:".
fn words(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        rusqlite::Error::SqliteFailure(err, None) => {
            let text = err.to_string();
            match text.split_once(": ") {
                Some((_, words)) => words.to_lowercase(),
                None => text,
            }
        }
        other => other.to_string(),
    }
}

/// What the filesystem says of the database at `path`: read-only, or not this user's.
fn probe(path: &Path) -> Option<Cause> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.exists() {
        return Some(Cause::Missing);
    }
    if read_only_filesystem(dir) {
        return Some(Cause::ReadOnlyFilesystem);
    }
    let exists = path.exists();
    let denied = (exists && (!access(path, libc::R_OK) || !access(path, libc::W_OK)))
        || !access(dir, libc::W_OK)
        || !access(dir, libc::X_OK);
    denied.then_some(Cause::PermissionDenied)
}

/// Whether the filesystem holding `dir` is mounted read-only (`ST_RDONLY` in `statvfs(3)`).
pub(crate) fn read_only_filesystem(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path that outlives the call; `st` is written by statvfs
    // and read only when it returns 0.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return false;
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    st.f_flag & libc::ST_RDONLY != 0
}

/// Whether this process may use `path` as `mode` asks (`access(2)`, with the real ids).
pub(crate) fn access(path: &Path, mode: libc::c_int) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    unsafe { libc::access(c.as_ptr(), mode) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_codes_become_words() {
        let failure = |code: i32| rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
        let here = Path::new("/nonexistent-dir-of-linerate/results.db");
        assert_eq!(Cause::of(&failure(rusqlite::ffi::SQLITE_FULL), here), Cause::DiskFull);
        assert_eq!(
            Cause::of(&failure(rusqlite::ffi::SQLITE_NOTADB), here),
            Cause::NotADatabase
        );
        assert_eq!(Cause::of(&failure(rusqlite::ffi::SQLITE_BUSY), here), Cause::Locked);
        let other = Cause::of(&failure(rusqlite::ffi::SQLITE_MISMATCH), here);
        assert!(!other.to_string().contains("Error code"), "{other}");
        assert!(
            !Cause::of(&failure(rusqlite::ffi::SQLITE_CANTOPEN), here)
                .to_string()
                .contains("Error code")
        );
    }
}
