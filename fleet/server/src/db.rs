//! The SQLite store: schema migrations from `migrations/`, each report stored once, nothing
//! acknowledged before it is committed to disk.

use std::path::Path;

use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};

use kiln_fleet::Report;

use crate::error::{Result, ServerError};

/// The migrations in order; `PRAGMA user_version` records how many have run.
const MIGRATIONS: [&str; 1] = [include_str!("../migrations/0001_reports.sql")];

/// What storing a report did.
#[derive(Debug, PartialEq, Eq)]
pub enum Stored {
    New(i64),
    /// The same report (by content) was already there.
    Duplicate(i64),
}

pub struct Db {
    conn: Connection,
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
        Ok(Db { conn })
    }

    /// Stores a validated report unless the same content is already stored.
    pub fn store(&mut self, report: &Report, now_unix: i64) -> Result<Stored> {
        // The canonical form: the parsed report written back out, so that whitespace or key
        // order does not make a duplicate look new (it was validated when parsed).
        let body =
            serde_json::to_string(report).map_err(|e| ServerError::Internal(e.to_string()))?;
        let sha = format!("{:x}", Sha256::digest(body.as_bytes()));
        let tx = self.conn.transaction().map_err(ServerError::sql)?;
        let inserted = tx
            .execute(
                "INSERT OR IGNORE INTO reports
                 (sha256, received_unix, device_name, device_class, kiln_version, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    sha,
                    now_unix,
                    report.device.name,
                    report.device.class(),
                    report.kiln_version,
                    body
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

    /// Every stored report, parsed again (a row that no longer validates is an error: the
    /// store only ever holds validated reports).
    pub fn reports(&self) -> Result<Vec<Report>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, body FROM reports ORDER BY id")
            .map_err(ServerError::sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(ServerError::sql)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, body) = row.map_err(ServerError::sql)?;
            out.push(
                Report::parse(&format!("stored report {id}"), &body)
                    .map_err(|e| ServerError::Internal(e.to_string()))?,
            );
        }
        Ok(out)
    }
}
