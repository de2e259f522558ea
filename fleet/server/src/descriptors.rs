//! The process's open-file limit: raised to its hard limit at start, and the connection cap
//! checked to fit under it. Past the limit `accept` fails and so does every file the database
//! opens (`/health` once answered "unable to open database file" to every probe), so a cap that
//! does not fit is refused before anything is opened.

use crate::error::{Result, ServerError};

/// Descriptors kept for all but the connections: the listener, standard streams, the database's
/// files and readers (SQLite's file, WAL and shared memory for the writer, the summary, the
/// probe and exports; PostgreSQL's sockets) and the runtime's own.
pub const RESERVE: u64 = 64;

/// Raises the soft open-file limit to the hard one and returns it; refuses `max_connections`
/// when it and [`RESERVE`] do not fit under it.
pub fn fit(max_connections: usize) -> Result<u64> {
    let limit = raise()?;
    let needed = (max_connections as u64).saturating_add(RESERVE);
    if needed > limit {
        return Err(ServerError::Config(format!(
            "max_connections = {max_connections} does not fit under this process's open-file \
             limit of {limit} ({RESERVE} are kept for the database, the listener and the \
             runtime): set max_connections to at most {} or raise the limit (ulimit -n)",
            limit.saturating_sub(RESERVE)
        )));
    }
    Ok(limit)
}

#[cfg(unix)]
fn raise() -> Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
        .map_err(|e| ServerError::Config(format!("the open-file limit: {e}")))
}

/// Elsewhere the limit is the system's own business: nothing to raise or check against.
#[cfg(not(unix))]
fn raise() -> Result<u64> {
    Ok(u64::MAX)
}
