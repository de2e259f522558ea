//! The PostgreSQL backend: a database on this machine, named by a `postgres://` URL. Its
//! identity is a marker table (`kiln_fleet`: the application id SQLite keeps in its header, and
//! the schema version), checked when it opens; a database without it is refused unless it is
//! empty and `--init` asks for the schema. Each commit is flushed to PostgreSQL's WAL before it
//! is acknowledged (`synchronous_commit = on`, whatever the server's default); the writer and
//! the health probe take the same table lock (writers wait on each other, readers never do),
//! and a connection the server dropped (a restart) is made again.
//!
//! Without TLS: the collector talks only to a PostgreSQL server on this machine (a loopback
//! address or a Unix socket, checked when the URL is read), where the traffic never leaves the
//! kernel and no one on the network can read or change it. A database on another host is
//! refused rather than reached in clear; reaching one needs a TLS connector this build does not
//! link.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use postgres::config::Host;
use postgres::error::SqlState;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, Config, IsolationLevel, NoTls, Statement};

use kiln_fleet::crowd::Head;

use super::{APPLICATION_ID, Inserted, MIGRATIONS, Merged, NewReport, Row, merged, postgres_text};
use crate::error::{Result, ServerError};

/// How long a connection may take to be made when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the writer waits for the write lock another connection holds (the probe, another
/// process) before the write fails: SQLite's busy timeout.
const WRITE_LOCK_TIMEOUT: &str = "5s";
/// How long the health probe waits for the write lock before it says the database cannot be
/// written now.
const PROBE_LOCK_TIMEOUT: &str = "250ms";
/// The longest one statement may run: far over any the collector makes (reading every report
/// for the summary included), so that a server that stops answering fails the request.
const STATEMENT_TIMEOUT: &str = "120s";
/// The marker table.
const MARKER: &str = "kiln_fleet";
/// The write lock: writers wait on each other, readers (`ACCESS SHARE`) never wait on it.
const WRITE_LOCK: &str = "LOCK TABLE reports IN EXCLUSIVE MODE";

/// A PostgreSQL database on this machine.
#[derive(Clone)]
pub struct Target {
    config: Config,
    /// The URL without its password, for messages and logs.
    name: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Whether connecting to `host` stays on this machine.
fn on_this_machine(host: &Host) -> bool {
    match host {
        Host::Tcp(h) => {
            let h = h.trim_start_matches('[').trim_end_matches(']');
            h.eq_ignore_ascii_case("localhost")
                || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        #[cfg(unix)]
        Host::Unix(_) => true,
    }
}

fn host_name(host: &Host) -> String {
    match host {
        Host::Tcp(h) => h.clone(),
        #[cfg(unix)]
        Host::Unix(path) => path.display().to_string(),
    }
}

impl Target {
    /// Reads a `postgres://` URL (libpq's form: user, password, hosts, ports, database name,
    /// and parameters such as `connect_timeout`). Refused: a URL that does not parse, names no
    /// host, or a host that is not this machine.
    pub fn parse(url: &str) -> Result<Target> {
        // The URL is not repeated in a message: it may hold a password.
        let mut config: Config = url.parse().map_err(|e| {
            ServerError::Config(format!(
                "database: not a PostgreSQL URL ({})",
                crate::error::pg_text(&e)
            ))
        })?;
        let hosts = config.get_hosts();
        let ports = config.get_ports();
        let user = config.get_user().unwrap_or_default();
        let name = format!(
            "postgres://{user}@{}:{}/{}",
            hosts.iter().map(host_name).collect::<Vec<_>>().join(","),
            if ports.is_empty() {
                "5432".to_string()
            } else {
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
            config.get_dbname().unwrap_or(user),
        );
        let refuse = |why: &str| ServerError::Config(format!("database {name}: {why}"));
        if hosts.is_empty() {
            return Err(refuse(
                "names no host: give one on this machine (127.0.0.1, or a Unix socket's directory)",
            ));
        }
        let remote = !hosts.iter().all(on_this_machine)
            || !config.get_hostaddrs().iter().all(IpAddr::is_loopback);
        if remote {
            return Err(refuse(
                "is not on this machine: the collector reaches PostgreSQL only over loopback or \
                 a Unix socket (it has no TLS to cross a network)",
            ));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("kiln-fleet-server");
        }
        Ok(Target { config, name })
    }

    /// A connection with `settings` (`SET …;` statements) made, or why not: the server did not
    /// answer, refused the login, or has no such database.
    fn connect(&self, settings: &str) -> Result<Client> {
        let mut client = self.config.connect(NoTls).map_err(|e| {
            let missing = e
                .as_db_error()
                .is_some_and(|d| *d.code() == SqlState::INVALID_CATALOG_NAME);
            if missing {
                ServerError::Config(format!(
                    "database {}: does not exist on the server: create it (createdb) and start \
                     with --init",
                    self.name
                ))
            } else if e.as_db_error().is_some() {
                ServerError::pg_open(
                    format!("database {}: the server refused the connection", self.name),
                    e,
                )
            } else {
                ServerError::pg_open(
                    format!("database {}: PostgreSQL cannot be reached", self.name),
                    e,
                )
            }
        })?;
        client
            .batch_execute(&format!(
                "SET statement_timeout = '{STATEMENT_TIMEOUT}'; {settings}"
            ))
            .map_err(|e| ServerError::pg_open(format!("database {}", self.name), e))?;
        Ok(client)
    }
}

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

/// The schema version of the database (0 for an empty one that `init` may fill), if it is a Kiln
/// fleet database: ours by the marker table's application id; empty (no table, view or sequence
/// in its schema), and `init` asked for it. Anything else is another application's database,
/// left as it is.
fn check_identity(client: &mut Client, target: &Target, init: bool) -> Result<i64> {
    let refuse = |why: String| ServerError::Config(format!("database {target}: {why}"));
    let what = format!("database {target}");
    let schema: Option<String> = client
        .query_one("SELECT CAST(current_schema() AS TEXT)", &[])
        .and_then(|r| r.try_get(0))
        .map_err(|e| ServerError::pg_open(&what, e))?;
    let Some(schema) = schema else {
        return Err(refuse(
            "has no schema to create tables in (search_path names none that exists)".into(),
        ));
    };
    // Every relation of the schema, whoever may read it (information_schema would show only
    // those this user may).
    let relations: Vec<String> = client
        .query(
            "SELECT CAST(c.relname AS TEXT) FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
             ORDER BY 1",
            &[&schema],
        )
        .and_then(|rows| rows.iter().map(|r| r.try_get(0)).collect())
        .map_err(|e| ServerError::pg_open(&what, e))?;
    if relations.iter().any(|r| r == MARKER) {
        let marker = client
            .query_opt(
                &format!("SELECT application_id, version FROM {MARKER}"),
                &[],
            )
            .map_err(|e| ServerError::pg_open(&what, e))?;
        let (id, version): (i64, i64) = match marker {
            Some(r) => (
                r.try_get(0).map_err(|e| ServerError::pg_open(&what, e))?,
                r.try_get(1).map_err(|e| ServerError::pg_open(&what, e))?,
            ),
            None => (0, 0),
        };
        if id == i64::from(APPLICATION_ID) {
            return Ok(version);
        }
        return Err(refuse(format!(
            "its {MARKER} table is not a Kiln fleet marker (application_id {id:#x}): refused, \
             left as it is"
        )));
    }
    if relations.is_empty() {
        return if init {
            Ok(0)
        } else {
            Err(refuse(
                "is empty: start with --init to create the schema".into(),
            ))
        };
    }
    Err(refuse(format!(
        "is not a Kiln fleet database (no {MARKER} table; schema {schema} holds {}): refused, \
         left as it is",
        relations.join(", ")
    )))
}

/// Runs the migrations the database has not had, each in its transaction (PostgreSQL's DDL is
/// transactional: a migration is all there or not at all), the marker table made with the
/// first. Collectors started at once on a new database take turns (an advisory lock), and the
/// later finds the work done.
fn migrate(client: &mut Client, target: &Target, version: i64) -> Result<()> {
    let what = format!("database {target}");
    if version > MIGRATIONS.len() as i64 {
        return Err(ServerError::Config(format!(
            "{what}: schema version {version} is newer than this server ({})",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let next = i as i64 + 1;
        let mut tx = client
            .transaction()
            .map_err(|e| ServerError::pg_open(&what, e))?;
        tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({APPLICATION_ID})"))
            .map_err(|e| ServerError::pg_open(&what, e))?;
        let marked: bool = tx
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&MARKER])
            .and_then(|r| r.try_get(0))
            .map_err(|e| ServerError::pg_open(&what, e))?;
        let done: i64 = if marked {
            tx.query_one(&format!("SELECT version FROM {MARKER}"), &[])
                .and_then(|r| r.try_get(0))
                .map_err(|e| ServerError::pg_open(&what, e))?
        } else {
            tx.batch_execute(&format!(
                "CREATE TABLE {MARKER} (application_id BIGINT NOT NULL, version BIGINT NOT NULL);
                 INSERT INTO {MARKER} (application_id, version) VALUES ({APPLICATION_ID}, 0);"
            ))
            .map_err(|e| ServerError::pg_open(&what, e))?;
            0
        };
        if done >= next {
            continue;
        }
        tx.batch_execute(&postgres_text(sql))
            .and_then(|()| tx.execute(&format!("UPDATE {MARKER} SET version = $1"), &[&next]))
            .map_err(|e| ServerError::pg_open(format!("{what}: migration {next}"), e))?;
        tx.commit().map_err(|e| ServerError::pg_open(&what, e))?;
    }
    Ok(())
}

/// A read-only connection: the summary's and the export's.
pub struct Reader {
    client: Client,
}

impl Reader {
    pub fn open(target: &Target) -> Result<Reader> {
        Ok(Reader {
            client: target.connect("SET default_transaction_read_only = on;")?,
        })
    }

    /// The identity for the crowd merge of every report stored after the id `after`, in id
    /// order (no body is read), and how many reports are stored: one snapshot.
    pub fn heads_after(&mut self, after: i64) -> Result<(Vec<Head>, i64)> {
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(ServerError::pg)?;
        let heads = tx
            .query(
                "SELECT id, sender, device_class, fingerprint, device_name FROM reports
                 WHERE id > $1 ORDER BY id",
                &[&after],
            )
            .and_then(|rows| {
                rows.iter()
                    .map(|r| {
                        Ok(Head {
                            id: r.try_get(0)?,
                            sender: r.try_get(1)?,
                            class: r.try_get(2)?,
                            fingerprint: r.try_get(3)?,
                            device: r.try_get(4)?,
                        })
                    })
                    .collect()
            })
            .map_err(ServerError::pg)?;
        let stored = tx
            .query_one("SELECT count(*) FROM reports", &[])
            .and_then(|r| r.try_get(0))
            .map_err(ServerError::pg)?;
        tx.commit().map_err(ServerError::pg)?;
        Ok((heads, stored))
    }

    /// Calls `f` with the id, sender and body of each of the reports `ids` still stored, in id
    /// order; rows are read as they arrive, not all at once.
    pub fn bodies(&mut self, ids: &[i64], f: &mut dyn FnMut(i64, String, String)) -> Result<()> {
        let params: [&(dyn ToSql + Sync); 1] = [&ids];
        let mut rows = self
            .client
            .query_raw(
                "SELECT id, sender, body FROM reports WHERE id = ANY($1) ORDER BY id",
                params,
            )
            .map_err(ServerError::pg)?;
        while let Some(r) = rows.next().map_err(ServerError::pg)? {
            f(
                r.try_get(0).map_err(ServerError::pg)?,
                r.try_get(1).map_err(ServerError::pg)?,
                r.try_get(2).map_err(ServerError::pg)?,
            );
        }
        Ok(())
    }

    /// Calls `f` with the id and digest (without one: body) of each of the reports `ids` still
    /// stored, in id order; rows are read as they arrive, not all at once.
    pub fn digests(&mut self, ids: &[i64], f: &mut dyn FnMut(i64, Merged)) -> Result<()> {
        let params: [&(dyn ToSql + Sync); 1] = [&ids];
        let mut rows = self
            .client
            .query_raw(
                "SELECT id, digest, CASE WHEN digest = '' THEN body END FROM reports
                 WHERE id = ANY($1) ORDER BY id",
                params,
            )
            .map_err(ServerError::pg)?;
        while let Some(r) = rows.next().map_err(ServerError::pg)? {
            f(
                r.try_get(0).map_err(ServerError::pg)?,
                merged(
                    r.try_get(1).map_err(ServerError::pg)?,
                    r.try_get(2).map_err(ServerError::pg)?,
                ),
            );
        }
        Ok(())
    }

    /// Calls `f` with up to `limit` stored rows after the id `after`, in id order, until it
    /// says to stop; rows are read as they arrive, not all at once.
    pub fn rows_after(
        &mut self,
        after: i64,
        limit: i64,
        f: &mut dyn FnMut(Row) -> bool,
    ) -> Result<()> {
        let params: [&(dyn ToSql + Sync); 2] = [&after, &limit];
        let mut rows = self
            .client
            .query_raw(
                "SELECT id, received_unix, sender, body FROM reports WHERE id > $1
                 ORDER BY id LIMIT $2",
                params,
            )
            .map_err(ServerError::pg)?;
        while let Some(r) = rows.next().map_err(ServerError::pg)? {
            let row = Row {
                id: r.try_get(0).map_err(ServerError::pg)?,
                received_unix: r.try_get(1).map_err(ServerError::pg)?,
                sender: r.try_get(2).map_err(ServerError::pg)?,
                body: r.try_get(3).map_err(ServerError::pg)?,
            };
            if !f(row) {
                break;
            }
        }
        Ok(())
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
