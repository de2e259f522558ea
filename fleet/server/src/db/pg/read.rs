//! Reading: the summary's and the export's read-only connection, its rows streamed as they
//! arrive.

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, IsolationLevel};

use kiln_fleet::crowd::Head;

use super::target::Target;
use crate::db::{Merged, Row, merged};
use crate::error::{Result, ServerError};

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
                "SELECT id, received_unix, sender, body, digest <> '' FROM reports WHERE id > $1
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
                digested: r.try_get(4).map_err(ServerError::pg)?,
            };
            if !f(row) {
                break;
            }
        }
        Ok(())
    }
}
