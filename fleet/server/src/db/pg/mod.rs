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
//!
//! The connection is made in `target`, the identity and migrations are in `schema`, the writer
//! and the health probe in `write`, the read-only connection in `read`.

mod read;
mod schema;
mod target;
mod write;

pub use read::Reader;
pub use target::Target;
pub use write::{Probe, Writer};
