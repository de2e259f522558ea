//! The SQLite backend: one file, in WAL mode with full sync; its identity checked by `PRAGMA
//! application_id` and its pages by `PRAGMA integrity_check` when it opens.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use kiln_fleet::crowd::Head;

use super::{APPLICATION_ID, Inserted, MIGRATIONS, Merged, NewReport, Row, merged};
use crate::error::{Result, ServerError};

/// How long the writer waits for a lock another connection holds (a reader checkpointing, the
/// probe) before the write fails.
const WRITE_BUSY: Duration = Duration::from_secs(5);
/// How long the health probe waits for the write lock before it says the database cannot be
/// written now.
const PROBE_BUSY: Duration = Duration::from_millis(250);

/// The writer's connection.
pub struct Writer {
    conn: Connection,
    path: PathBuf,
}

impl Writer {
    /// Opens the database, or creates it with `init`, and brings its schema up to date. Refused:
    /// a name that keeps nothing (`""`, `:memory:`, a `file:` URI); a missing file without
    /// `init` (a deleted database is not recreated empty); `init` where a crash left a WAL or
    /// journal without its database; a file that is not a Kiln fleet database (another
    /// application's, by `PRAGMA application_id` and its tables); one that fails
    /// `PRAGMA integrity_check`.
    pub fn open(path: &Path, init: bool) -> Result<Writer> {
        let refuse =
            |why: String| ServerError::Config(format!("database {}: {why}", path.display()));
        let name = path.to_string_lossy();
        if name.is_empty() || name == ":memory:" || name.starts_with("file:") {
            return Err(refuse(
                "keeps nothing on disk: name a file (`database` in the configuration)".into(),
            ));
        }
        let exists = path.exists();
        if !exists {
            if !init {
                return Err(refuse(
                    "does not exist: start with --init to create it (a database that went \
                     missing is not recreated empty)"
                        .into(),
                ));
            }
            for suffix in ["-wal", "-journal"] {
                let mut left = path.as_os_str().to_owned();
                left.push(suffix);
                if Path::new(&left).exists() {
                    return Err(refuse(format!(
                        "is missing but its {suffix} file is there (a crash left it): restore \
                         the database rather than create a new one over it"
                    )));
                }
            }
        } else if path.is_dir() {
            return Err(refuse("is a directory".into()));
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if !exists {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let mut conn = Connection::open_with_flags(path, flags)
            .map_err(|e| ServerError::db(path.display(), e))?;
        check_identity(&conn, path, init)?;
        let problems: Vec<String> = conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .map_err(|e| refuse(format!("fails its integrity check: {e}")))?;
        if problems != ["ok"] {
            return Err(refuse(format!(
                "fails its integrity check: {}",
                problems.join("; ")
            )));
        }
        // WAL with full sync: a commit is on disk before the client hears of it, and a process
        // killed mid-write leaves the last committed state.
        conn.pragma_update(None, "journal_mode", "WAL")
            .and_then(|_| conn.pragma_update(None, "synchronous", "FULL"))
            .and_then(|_| conn.busy_timeout(WRITE_BUSY))
            .map_err(|e| ServerError::db(path.display(), e))?;
        migrate(&mut conn, path)?;
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(|e| ServerError::db(path.display(), e))?;
        Ok(Writer {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The sender salt, the reports stored and their bytes.
    pub fn totals(&mut self) -> Result<(String, i64, i64)> {
        let path = &self.path;
        let salt: String = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'sender_salt'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| ServerError::db(path.display(), e))?;
        let (count, bytes): (i64, i64) = self
            .conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM reports",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| ServerError::db(path.display(), e))?;
        Ok((salt, count, bytes))
    }

    /// Rows stored before fingerprints were kept: their ids and bodies.
    pub fn unfingerprinted(&mut self) -> Result<Vec<(i64, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, body FROM reports WHERE fingerprint = ''")
            .map_err(ServerError::sql)?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(ServerError::sql)
    }

    pub fn set_fingerprint(&mut self, id: i64, fingerprint: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE reports SET fingerprint = ?1 WHERE id = ?2",
                params![fingerprint, id],
            )
            .map_err(ServerError::sql)?;
        Ok(())
    }

    /// Up to `limit` rows after `after` without a digest: ids and bodies.
    pub fn undigested(&mut self, after: i64, limit: i64) -> Result<Vec<(i64, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, body FROM reports WHERE digest = '' AND id > ?1 ORDER BY id LIMIT ?2",
            )
            .map_err(ServerError::sql)?;
        stmt.query_map(params![after, limit], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(ServerError::sql)
    }

    pub fn set_digests(&mut self, digests: &[(i64, String)]) -> Result<()> {
        let tx = self.conn.transaction().map_err(ServerError::sql)?;
        for (id, digest) in digests {
            tx.execute(
                "UPDATE reports SET digest = ?1 WHERE id = ?2 AND digest = ''",
                params![digest, id],
            )
            .map_err(ServerError::sql)?;
        }
        tx.commit().map_err(ServerError::sql)
    }

    /// Stores `new` unless its content is already stored: `check` says whether its sender
    /// (given the reports and bytes it has stored) may store it. In one transaction that holds
    /// the write lock from the start, committed (on disk) before this returns.
    pub fn store(
        &mut self,
        new: &NewReport,
        check: impl FnOnce(i64, i64) -> Result<()>,
    ) -> Result<Inserted> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(ServerError::sql)?;
        let existing: Option<i64> = tx
            .query_row(
                "SELECT id FROM reports WHERE sha256 = ?1",
                [&new.sha256],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(ServerError::sql)?;
        if let Some(id) = existing {
            return Ok(Inserted::Duplicate(id));
        }
        let (theirs, their_bytes): (i64, i64) = tx
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM reports WHERE sender = ?1",
                [new.sender],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(ServerError::sql)?;
        check(theirs, their_bytes)?;
        tx.execute(
            "INSERT INTO reports
             (sha256, received_unix, device_name, device_class, kiln_version, body, sender,
              fingerprint, bytes, digest)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                new.sha256,
                new.received_unix,
                new.device_name,
                new.device_class,
                new.kiln_version,
                new.body,
                new.sender,
                new.fingerprint,
                new.bytes,
                new.digest
            ],
        )
        .map_err(ServerError::sql)?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO audit (received_unix, report_id, bytes, sender) VALUES (?1, ?2, ?3, ?4)",
            params![new.received_unix, id, new.received, new.sender],
        )
        .map_err(ServerError::sql)?;
        tx.commit().map_err(ServerError::sql)?;
        Ok(Inserted::New(id))
    }
}

/// Whether the file is a Kiln fleet database: ours by its application id; new (no table at
/// all, and `init` asked for it); or one an earlier fleet-server made before it set the id (its
/// `reports` table exactly as the first migration creates it). Anything else is another
/// application's file, and is left as it is.
fn check_identity(conn: &Connection, path: &Path, init: bool) -> Result<()> {
    let refuse = |why: String| ServerError::Config(format!("database {}: {why}", path.display()));
    let id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(|e| refuse(format!("is not an SQLite database: {e}")))?;
    if id == APPLICATION_ID {
        return Ok(());
    }
    let tables: Vec<(String, String)> = conn
        .prepare("SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| refuse(format!("is not an SQLite database: {e}")))?;
    if id == 0 && tables.is_empty() {
        return if init {
            Ok(())
        } else {
            Err(refuse(
                "is empty: start with --init to create the schema".into(),
            ))
        };
    }
    // The first migration's `CREATE TABLE reports (…` up to its closing parenthesis: later
    // migrations add columns there, so an earlier server's table begins with it.
    let first = MIGRATIONS[0];
    let create = first
        .find("CREATE TABLE reports (")
        .and_then(|a| first[a..].find("\n);").map(|b| &first[a..a + b]));
    let version: usize = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| refuse(format!("is not an SQLite database: {e}")))?;
    let earlier = id == 0
        && (1..=MIGRATIONS.len()).contains(&version)
        && create.is_some_and(|c| {
            tables
                .iter()
                .any(|(name, sql)| name == "reports" && sql.starts_with(c))
        });
    if earlier {
        log::info!(
            "database {}: made by an earlier fleet-server: adopted",
            path.display()
        );
        return Ok(());
    }
    Err(refuse(format!(
        "is not a Kiln fleet database (application_id {id:#x}; tables {}): refused, left as it is",
        tables
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// Runs the migrations the database has not had, each in its transaction.
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let version: usize = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| ServerError::db(path.display(), e))?;
    if version > MIGRATIONS.len() {
        return Err(ServerError::Config(format!(
            "{}: schema version {version} is newer than this server ({})",
            path.display(),
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        let tx = conn
            .transaction()
            .map_err(|e| ServerError::db(path.display(), e))?;
        tx.execute_batch(sql)
            .and_then(|_| tx.pragma_update(None, "user_version", i + 1))
            .and_then(|_| tx.commit())
            .map_err(|e| {
                let what = format!(
                    "{}: migration {} of {}",
                    path.display(),
                    i + 1,
                    MIGRATIONS.len()
                );
                ServerError::db(what, without_sql(e))
            })?;
    }
    Ok(())
}

/// A migration's error without the migration's SQL: rusqlite quotes the whole script of a
/// statement it could not run, which tells an operator nothing and puts the schema in the log.
fn without_sql(e: rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqlInputError { error, msg, .. } => {
            rusqlite::Error::SqliteFailure(error, Some(msg))
        }
        e => e,
    }
}

/// A read-only connection: the summary's and the export's.
pub struct Reader {
    conn: Connection,
}

impl Reader {
    pub fn open(path: &Path) -> Result<Reader> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| ServerError::db(path.display(), e))?;
        conn.busy_timeout(WRITE_BUSY)
            .map_err(|e| ServerError::db(path.display(), e))?;
        Ok(Reader { conn })
    }

    /// The identity for the crowd merge of every report stored after the id `after`, in id
    /// order (no body is read), and how many reports are stored: one snapshot.
    pub fn heads_after(&mut self, after: i64) -> Result<(Vec<Head>, i64)> {
        let tx = self.conn.transaction().map_err(ServerError::sql)?;
        let heads = tx
            .prepare_cached(
                "SELECT id, sender, device_class, fingerprint, device_name FROM reports
                 WHERE id > ?1 ORDER BY id",
            )
            .and_then(|mut stmt| {
                stmt.query_map([after], |r| {
                    Ok(Head {
                        id: r.get(0)?,
                        sender: r.get(1)?,
                        class: r.get(2)?,
                        fingerprint: r.get(3)?,
                        device: r.get(4)?,
                    })
                })
                .and_then(Iterator::collect)
            })
            .map_err(ServerError::sql)?;
        // Counted on an index, not the table's pages.
        let stored = tx
            .query_row("SELECT count(*) FROM reports", [], |r| r.get(0))
            .map_err(ServerError::sql)?;
        tx.commit().map_err(ServerError::sql)?;
        Ok((heads, stored))
    }

    /// Calls `f` with the id, sender and body of each of the reports `ids` still stored.
    pub fn bodies(&mut self, ids: &[i64], f: &mut dyn FnMut(i64, String, String)) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT sender, body FROM reports WHERE id = ?1")
            .map_err(ServerError::sql)?;
        for &id in ids {
            let row = stmt
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(ServerError::sql)?;
            if let Some((sender, body)) = row {
                f(id, sender, body);
            }
        }
        Ok(())
    }

    /// Calls `f` with the id and digest (without one: body) of each of the reports `ids` still
    /// stored.
    pub fn digests(&mut self, ids: &[i64], f: &mut dyn FnMut(i64, Merged)) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT digest, CASE WHEN digest = '' THEN body END FROM reports WHERE id = ?1",
            )
            .map_err(ServerError::sql)?;
        for &id in ids {
            let row: Option<(String, Option<String>)> = stmt
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(ServerError::sql)?;
            if let Some((digest, body)) = row {
                f(id, merged(digest, body));
            }
        }
        Ok(())
    }

    /// Calls `f` with up to `limit` stored rows after the id `after`, in id order, until it
    /// says to stop.
    pub fn rows_after(
        &mut self,
        after: i64,
        limit: i64,
        f: &mut dyn FnMut(Row) -> bool,
    ) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, received_unix, sender, body, digest <> '' FROM reports WHERE id > ?1
                 ORDER BY id LIMIT ?2",
            )
            .map_err(ServerError::sql)?;
        let mut rows = stmt
            .query(params![after, limit])
            .map_err(ServerError::sql)?;
        while let Some(r) = rows.next().map_err(ServerError::sql)? {
            let row = Row {
                id: r.get(0).map_err(ServerError::sql)?,
                received_unix: r.get(1).map_err(ServerError::sql)?,
                sender: r.get(2).map_err(ServerError::sql)?,
                body: r.get(3).map_err(ServerError::sql)?,
                digested: r.get(4).map_err(ServerError::sql)?,
            };
            if !f(row) {
                break;
            }
        }
        Ok(())
    }
}

/// The health probe's connection: it asks for the write lock and lets it go.
pub struct Probe {
    conn: Connection,
}

impl Probe {
    pub fn open(path: &Path) -> Result<Probe> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| ServerError::db(path.display(), e))?;
        conn.busy_timeout(PROBE_BUSY)
            .map_err(|e| ServerError::db(path.display(), e))?;
        Ok(Probe { conn })
    }

    /// Whether a write could start now: the write lock taken and given back (nothing written).
    pub fn check(&mut self) -> Result<()> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
            .map_err(ServerError::sql)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// A database that claims to be ours but whose `reports` table is not the one the first
    /// migration creates: the migration fails, and the error says why without the SQL.
    #[test]
    fn a_failed_migration_is_refused_without_its_sql() {
        let dir = std::env::temp_dir().join(format!("kiln-fleet-migrate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fleet.sqlite");
        let _ = std::fs::remove_file(&path);
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.execute_batch("CREATE TABLE reports (x INTEGER);")
                .unwrap();
        }
        let e = Writer::open(&path, false)
            .err()
            .expect("refused")
            .to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        eprintln!("{e}");
        assert!(e.contains("fleet.sqlite: migration 1 of"), "{e}");
        assert!(e.contains("table reports already exists"), "{e}");
        assert!(!e.contains("CREATE") && !e.contains("INSERT"), "{e}");
    }
}
