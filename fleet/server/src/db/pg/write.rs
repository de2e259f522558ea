//! Writing: the writer's connection (its prepared statements, its session made again after a
//! server restart, each report stored in one transaction under the write lock) and the health
//! probe, which takes the same lock and lets it go.

use postgres::{Client, Statement};

use super::schema::{check_identity, migrate};
use super::target::Target;
use crate::db::{Inserted, MIGRATIONS, NewReport};
use crate::error::{Result, ServerError};

/// How long the writer waits for the write lock another connection holds (the probe, another
/// process) before the write fails: SQLite's busy timeout.
const WRITE_LOCK_TIMEOUT: &str = "5s";
/// How long the health probe waits for the write lock before it says the database cannot be
/// written now.
const PROBE_LOCK_TIMEOUT: &str = "250ms";

/// The write lock: writers wait on each other, readers (`ACCESS SHARE`) never wait on it.
const WRITE_LOCK: &str = "LOCK TABLE reports IN EXCLUSIVE MODE";

/// The writer's statements, prepared once per connection.
struct Statements {
    existing: Statement,
    theirs: Statement,
    insert: Statement,
    audit: Statement,
}

impl Statements {
    fn prepare(client: &mut Client) -> std::result::Result<Statements, postgres::Error> {
        Ok(Statements {
            existing: client.prepare("SELECT id FROM reports WHERE sha256 = $1")?,
            theirs: client.prepare(
                "SELECT COUNT(*), CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM reports
                 WHERE sender = $1",
            )?,
            insert: client.prepare(
                "INSERT INTO reports
                 (sha256, received_unix, device_name, device_class, kiln_version, body, sender,
                  fingerprint, bytes, digest)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            )?,
            audit: client.prepare(
                "INSERT INTO audit (received_unix, report_id, bytes, sender)
                 VALUES ($1, $2, $3, $4)",
            )?,
        })
    }
}

/// The writer's session: every commit flushed to the WAL before it returns, and a bounded wait
/// for the write lock.
fn writer_settings() -> String {
    format!("SET synchronous_commit = on; SET lock_timeout = '{WRITE_LOCK_TIMEOUT}';")
}

/// The writer's connection and its statements.
struct Session {
    client: Client,
    statements: Statements,
}

/// The writer: its session, made again when the server closed it.
pub struct Writer {
    target: Target,
    /// Always there but while the writer is dropped (see `Drop`).
    session: Option<Session>,
}

/// The client's own drop blocks on its runtime, which panics on an async thread (where the
/// server's state goes at shutdown): the session is closed on a thread of its own.
impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            std::thread::spawn(move || drop(session));
        }
    }
}

impl Writer {
    /// Connects, checks that the database is ours (or empty, with `init`) and brings its schema
    /// up to date. Refused, with why: a server that cannot be reached, a database that does not
    /// exist, one that is empty without `init`, one that is another application's (tables but
    /// no marker: left as it is), one whose schema is newer than this server's.
    pub fn open(target: &Target, init: bool) -> Result<Writer> {
        let mut client = target.connect(&writer_settings())?;
        let version = check_identity(&mut client, target, init)?;
        migrate(&mut client, target, version)?;
        Ok(Writer {
            target: target.clone(),
            session: Some(Writer::session(target, client)?),
        })
    }

    fn session(target: &Target, mut client: Client) -> Result<Session> {
        let statements = Statements::prepare(&mut client)
            .map_err(|e| ServerError::pg_open(format!("database {target}"), e))?;
        Ok(Session { client, statements })
    }

    fn client(&mut self) -> Result<&mut Client> {
        self.session
            .as_mut()
            .map(|s| &mut s.client)
            .ok_or_else(|| ServerError::Internal("the writer's session is closed".into()))
    }

    /// Connects again if the server closed the connection (it restarted): the database must
    /// still be ours and up to date. Whether it did.
    pub fn reconnect_if_closed(&mut self) -> Result<bool> {
        if self.session.as_ref().is_some_and(|s| !s.client.is_closed()) {
            return Ok(false);
        }
        log::warn!(
            "database {}: the connection was closed: connecting again",
            self.target
        );
        let mut client = self.target.connect(&writer_settings())?;
        let version = check_identity(&mut client, &self.target, false)?;
        if version != MIGRATIONS.len() as i64 {
            return Err(ServerError::Config(format!(
                "database {}: its schema is now version {version}, not {}",
                self.target,
                MIGRATIONS.len()
            )));
        }
        // (On the writer's blocking thread: the old session can be dropped here.)
        self.session = Some(Writer::session(&self.target, client)?);
        Ok(true)
    }

    /// The sender salt, the reports stored and their bytes.
    pub fn totals(&mut self) -> Result<(String, i64, i64)> {
        let what = format!("database {}", self.target);
        let client = self.client()?;
        let salt: String = client
            .query_one("SELECT value FROM meta WHERE key = 'sender_salt'", &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| ServerError::pg_open(&what, e))?;
        let (count, bytes): (i64, i64) = client
            .query_one(
                "SELECT COUNT(*), CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM reports",
                &[],
            )
            .and_then(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .map_err(|e| ServerError::pg_open(&what, e))?;
        Ok((salt, count, bytes))
    }

    /// Rows stored before fingerprints were kept: their ids and bodies.
    pub fn unfingerprinted(&mut self) -> Result<Vec<(i64, String)>> {
        self.client()?
            .query("SELECT id, body FROM reports WHERE fingerprint = ''", &[])
            .and_then(|rows| {
                rows.iter()
                    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                    .collect()
            })
            .map_err(ServerError::pg)
    }

    pub fn set_fingerprint(&mut self, id: i64, fingerprint: &str) -> Result<()> {
        self.client()?
            .execute(
                "UPDATE reports SET fingerprint = $1 WHERE id = $2",
                &[&fingerprint, &id],
            )
            .map_err(ServerError::pg)?;
        Ok(())
    }

    /// Up to `limit` rows after `after` without a digest: ids and bodies.
    pub fn undigested(&mut self, after: i64, limit: i64) -> Result<Vec<(i64, String)>> {
        self.client()?
            .query(
                "SELECT id, body FROM reports WHERE digest = '' AND id > $1 ORDER BY id LIMIT $2",
                &[&after, &limit],
            )
            .and_then(|rows| {
                rows.iter()
                    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                    .collect()
            })
            .map_err(ServerError::pg)
    }

    pub fn set_digests(&mut self, digests: &[(i64, String)]) -> Result<()> {
        let mut tx = self.client()?.transaction().map_err(ServerError::pg)?;
        for (id, digest) in digests {
            tx.execute(
                "UPDATE reports SET digest = $1 WHERE id = $2 AND digest = ''",
                &[digest, id],
            )
            .map_err(ServerError::pg)?;
        }
        tx.commit().map_err(ServerError::pg)
    }

    /// Stores `new` unless its content is already stored: `check` says whether its sender
    /// (given the reports and bytes it has stored) may store it. In one transaction that takes
    /// the write lock first, committed (flushed to the WAL) before this returns.
    pub fn store(
        &mut self,
        new: &NewReport,
        check: impl FnOnce(i64, i64) -> Result<()>,
    ) -> Result<Inserted> {
        let Some(Session {
            client,
            statements: s,
        }) = self.session.as_mut()
        else {
            return Err(ServerError::Internal(
                "the writer's session is closed".into(),
            ));
        };
        let mut tx = client.transaction().map_err(ServerError::pg)?;
        tx.batch_execute(WRITE_LOCK).map_err(ServerError::pg)?;
        // (Returning drops the transaction, which rolls it back.)
        if let Some(row) = tx
            .query_opt(&s.existing, &[&new.sha256])
            .map_err(ServerError::pg)?
        {
            return Ok(Inserted::Duplicate(
                row.try_get(0).map_err(ServerError::pg)?,
            ));
        }
        let row = tx
            .query_one(&s.theirs, &[&new.sender])
            .map_err(ServerError::pg)?;
        check(
            row.try_get(0).map_err(ServerError::pg)?,
            row.try_get(1).map_err(ServerError::pg)?,
        )?;
        let id: i64 = tx
            .query_one(
                &s.insert,
                &[
                    &new.sha256,
                    &new.received_unix,
                    &new.device_name,
                    &new.device_class,
                    &new.kiln_version,
                    &new.body,
                    &new.sender,
                    &new.fingerprint,
                    &new.bytes,
                    &new.digest,
                ],
            )
            .and_then(|r| r.try_get(0))
            .map_err(ServerError::pg)?;
        tx.execute(
            &s.audit,
            &[&new.received_unix, &id, &new.received, &new.sender],
        )
        .map_err(ServerError::pg)?;
        tx.commit().map_err(ServerError::pg)?;
        Ok(Inserted::New(id))
    }
}

/// The health probe's connection: it asks for the write lock and lets it go; a connection the
/// server closed is made again at the next check.
pub struct Probe {
    target: Target,
    client: Option<Client>,
}

fn probe_settings() -> String {
    format!("SET lock_timeout = '{PROBE_LOCK_TIMEOUT}';")
}

impl Probe {
    pub fn open(target: &Target) -> Result<Probe> {
        Ok(Probe {
            target: target.clone(),
            client: Some(target.connect(&probe_settings())?),
        })
    }

    /// Whether a write could start now: the write lock taken and given back (nothing written;
    /// a read-only server or transaction refuses the lock).
    pub fn check(&mut self) -> Result<()> {
        let client = match &mut self.client {
            Some(c) if !c.is_closed() => c,
            _ => self.client.insert(self.target.connect(&probe_settings())?),
        };
        let result = client
            .transaction()
            .and_then(|mut tx| {
                tx.batch_execute(WRITE_LOCK)?;
                tx.rollback()
            })
            .map_err(ServerError::pg);
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        result
    }
}
