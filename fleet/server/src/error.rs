//! The server's one error type, and how each kind answers over HTTP.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServerError {
    /// A bad configuration or command line.
    #[error("{0}")]
    Config(String),
    /// The SQLite database could not be opened or migrated.
    #[error("{what}: {source}")]
    Db {
        what: String,
        source: rusqlite::Error,
    },
    /// A query failed (SQLite).
    #[error("database: {0}")]
    Sql(rusqlite::Error),
    /// The PostgreSQL database could not be reached, opened or migrated.
    #[error("{what}: {}", pg_text(.source))]
    PgOpen {
        what: String,
        source: postgres::Error,
    },
    /// A query failed, or the connection did (PostgreSQL).
    #[error("database: {}", pg_text(.0))]
    Pg(postgres::Error),
    /// The request body is not a valid report.
    #[error("{0}")]
    Invalid(String),
    /// A storage quota (per address or in total) is used up.
    #[error("{0}")]
    Quota(String),
    /// The body did not arrive in time.
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    /// The body is over the size limit.
    #[error("the body is over the limit of {0} bytes")]
    TooLarge(usize),
    /// An address asked more than its share (one export at a time, its building time): it may
    /// try again in `retry_s` seconds.
    #[error("{why}")]
    TooMany { why: String, retry_s: u64 },
    /// The collector serves as much of this kind as it takes at once: try again in `retry_s`.
    #[error("{why}")]
    Busy { why: String, retry_s: u64 },
    /// The client did not say the user agreed to send the report.
    #[error("a report is accepted only with the user's consent (header X-Kiln-Consent: yes)")]
    NoConsent,
    #[error("{0}")]
    Internal(String),
}

impl ServerError {
    pub fn db(what: impl std::fmt::Display, source: rusqlite::Error) -> Self {
        ServerError::Db {
            what: what.to_string(),
            source,
        }
    }

    pub fn sql(e: rusqlite::Error) -> Self {
        ServerError::Sql(e)
    }

    pub fn pg_open(what: impl std::fmt::Display, source: postgres::Error) -> Self {
        ServerError::PgOpen {
            what: what.to_string(),
            source,
        }
    }

    pub fn pg(e: postgres::Error) -> Self {
        ServerError::Pg(e)
    }

    /// A failed query or connection (either backend; a PostgreSQL server that cannot be reached
    /// again after it closed the connection): the database cannot take a write now.
    pub fn is_database(&self) -> bool {
        matches!(
            self,
            ServerError::Sql(_) | ServerError::Pg(_) | ServerError::PgOpen { .. }
        )
    }
}

/// A PostgreSQL error with what it stands for: the server's message and code, or the cause of
/// a failed connection (the error's own text is only its kind, "db error" or "error connecting
/// to server").
pub(crate) fn pg_text(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({}: {})", db.message(), db.severity(), db.code().code());
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

pub type Result<T> = std::result::Result<T, ServerError>;

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let status = match &self {
            ServerError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ServerError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            ServerError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ServerError::Quota(_) => StatusCode::INSUFFICIENT_STORAGE,
            ServerError::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ServerError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            // The database is there but cannot take the write now (locked, damaged, full).
            _ if self.is_database() => StatusCode::SERVICE_UNAVAILABLE,
            ServerError::NoConsent => StatusCode::FORBIDDEN,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        // A full quota or a busy collector is the load it is built for, not an error of its own.
        let expected = matches!(self, ServerError::Quota(_) | ServerError::Busy { .. });
        if status.is_server_error() && !expected {
            log::error!("{self}");
        }
        let retry = match &self {
            ServerError::TooMany { retry_s, .. } | ServerError::Busy { retry_s, .. } => {
                Some(*retry_s)
            }
            _ => None,
        };
        let mut response = (status, Json(json!({ "error": self.to_string() }))).into_response();
        if let Some(v) = retry.and_then(|s| axum::http::HeaderValue::from_str(&s.to_string()).ok())
        {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, v);
        }
        response
    }
}
