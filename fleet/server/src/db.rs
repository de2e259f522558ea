//! The SQLite store: schema migrations from `migrations/`, each report stored once, nothing
//! acknowledged before it is committed to disk.

use std::path::Path;

use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};

use kiln_fleet::Report;
use kiln_fleet::crowd::{Submission, fingerprint};

use crate::error::{Result, ServerError};

/// The migrations in order; `PRAGMA user_version` records how many have run.
const MIGRATIONS: [&str; 2] = [
    include_str!("../migrations/0001_reports.sql"),
    include_str!("../migrations/0002_senders.sql"),
];

/// What storing a report did.
#[derive(Debug, PartialEq, Eq)]
pub enum Stored {
    New(i64),
    /// The same report (by content) was already there.
    Duplicate(i64),
}

pub struct Db {
    conn: Connection,
    salt: String,
}

/// One stored report as the export gives it.
#[derive(Debug)]
pub struct Row {
    pub id: i64,
    pub received_unix: i64,
    pub sender: String,
    pub body: String,
}

impl Db {
    /// Opens (creating if needed) the database and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Db> {
        let mut conn = Connection::open(path).map_err(|e| ServerError::db(path, e))?;
        // WAL with full sync: a commit is on disk before the client hears of it, and a process
        // killed mid-write leaves the last committed state.
        conn.pragma_update(None, "journal_mode", "WAL")
            .and_then(|_| conn.pragma_update(None, "synchronous", "FULL"))
            .and_then(|_| conn.busy_timeout(std::time::Duration::from_secs(5)))
            .map_err(|e| ServerError::db(path, e))?;
        let version: usize = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| ServerError::db(path, e))?;
        if version > MIGRATIONS.len() {
            return Err(ServerError::Config(format!(
                "{}: schema version {version} is newer than this server ({})",
                path.display(),
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
            let tx = conn.transaction().map_err(|e| ServerError::db(path, e))?;
            tx.execute_batch(sql)
                .and_then(|_| tx.pragma_update(None, "user_version", i + 1))
                .and_then(|_| tx.commit())
                .map_err(|e| ServerError::db(path, e))?;
        }
        let salt: String = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'sender_salt'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| ServerError::db(path, e))?;
        let db = Db { conn, salt };
        db.fill_fingerprints()?;
        Ok(db)
    }

    /// The salt of the sender hashes.
    pub fn salt(&self) -> &str {
        &self.salt
    }

    /// Rows stored before fingerprints were kept get theirs (a row that no longer parses is
    /// left without one, and logged).
    fn fill_fingerprints(&self) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, body FROM reports WHERE fingerprint = ''")
            .map_err(ServerError::sql)?;
        let rows: Vec<(i64, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(ServerError::sql)?;
        for (id, body) in rows {
            match Report::parse(&format!("stored report {id}"), &body) {
                Ok(r) => {
                    self.conn
                        .execute(
                            "UPDATE reports SET fingerprint = ?1 WHERE id = ?2",
                            params![fingerprint(&r.device), id],
                        )
                        .map_err(ServerError::sql)?;
                }
                Err(e) => log::warn!("{e}: left without a fingerprint"),
            }
        }
        Ok(())
    }

    /// Stores a validated report from `sender` (its salted hash) unless the same content is
    /// already stored.
    pub fn store(&mut self, report: &Report, now_unix: i64, sender: &str) -> Result<Stored> {
        // The canonical form: the parsed report written back out, so that whitespace or key
        // order does not make a duplicate look new (it was validated when parsed).
        let body =
            serde_json::to_string(report).map_err(|e| ServerError::Internal(e.to_string()))?;
        let sha = format!("{:x}", Sha256::digest(body.as_bytes()));
        let tx = self.conn.transaction().map_err(ServerError::sql)?;
        let inserted = tx
            .execute(
                "INSERT OR IGNORE INTO reports
                 (sha256, received_unix, device_name, device_class, kiln_version, body, sender,
                  fingerprint, bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    sha,
                    now_unix,
                    report.device.name,
                    report.device.class(),
                    report.kiln_version,
                    body,
                    sender,
                    fingerprint(&report.device),
                    body.len() as i64
                ],
            )
            .map_err(ServerError::sql)?;
        let id: i64 = tx
            .query_row("SELECT id FROM reports WHERE sha256 = ?1", [&sha], |r| {
                r.get(0)
            })
            .map_err(ServerError::sql)?;
        tx.commit().map_err(ServerError::sql)?;
        Ok(if inserted == 1 {
            Stored::New(id)
        } else {
            Stored::Duplicate(id)
        })
    }

    pub fn count(&self) -> Result<i64> {
        self.conn
            .query_row("SELECT COUNT(*) FROM reports", [], |r| r.get(0))
            .map_err(ServerError::sql)
    }

    /// Up to `max_rows` stored rows after `after`, in id order, stopping early past
    /// `max_bytes` of bodies; and whether more follow.
    pub fn export_page(
        &self,
        after: i64,
        max_rows: usize,
        max_bytes: usize,
    ) -> Result<(Vec<Row>, bool)> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, received_unix, sender, body FROM reports WHERE id > ?1
                 ORDER BY id LIMIT ?2",
            )
            .map_err(ServerError::sql)?;
        let mut rows = stmt
            .query(params![after, max_rows as i64 + 1])
            .map_err(ServerError::sql)?;
        let (mut out, mut bytes) = (Vec::new(), 0);
        while let Some(r) = rows.next().map_err(ServerError::sql)? {
            if out.len() == max_rows || (bytes > max_bytes && !out.is_empty()) {
                return Ok((out, true));
            }
            let row = Row {
                id: r.get(0).map_err(ServerError::sql)?,
                received_unix: r.get(1).map_err(ServerError::sql)?,
                sender: r.get(2).map_err(ServerError::sql)?,
                body: r.get(3).map_err(ServerError::sql)?,
            };
            bytes += row.body.len();
            out.push(row);
        }
        Ok((out, false))
    }

    /// Every stored report as a crowd submission, parsed again (a row that no longer
    /// validates is skipped and logged).
    pub fn submissions(&self) -> Result<Vec<Submission>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, sender, body FROM reports ORDER BY id")
            .map_err(ServerError::sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(ServerError::sql)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, sender, body) = row.map_err(ServerError::sql)?;
            match Report::parse(&format!("stored report {id}"), &body) {
                Ok(report) => out.push(Submission { id, sender, report }),
                Err(e) => log::warn!("{e}: skipped"),
            }
        }
        Ok(out)
    }
}
