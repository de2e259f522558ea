//! The database's identity and schema: the marker table checked when a writer opens, and the
//! migrations it has not had run.

use postgres::Client;

use super::target::Target;
use crate::db::{APPLICATION_ID, MIGRATIONS, postgres_text};
use crate::error::{Result, ServerError};

/// The marker table.
const MARKER: &str = "kiln_fleet";

/// The schema version of the database (0 for an empty one that `init` may fill), if it is a Kiln
/// fleet database: ours by the marker table's application id; empty (no table, view or sequence
/// in its schema), and `init` asked for it. Anything else is another application's database,
/// left as it is.
pub(super) fn check_identity(client: &mut Client, target: &Target, init: bool) -> Result<i64> {
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
pub(super) fn migrate(client: &mut Client, target: &Target, version: i64) -> Result<()> {
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
