//! The server's one error type, and how each kind answers over HTTP.

use std::path::Path;

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
    /// The database could not be opened or migrated.
    #[error("{path}: {source}")]
    Db {
        path: String,
        source: rusqlite::Error,
    },
    /// A query failed.
    #[error("database: {0}")]
    Sql(rusqlite::Error),
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
    /// The client did not say the user agreed to send the report.
    #[error("a report is accepted only with the user's consent (header X-Kiln-Consent: yes)")]
    NoConsent,
    #[error("{0}")]
    Internal(String),
}

impl ServerError {
    pub fn db(path: &Path, source: rusqlite::Error) -> Self {
        ServerError::Db {
            path: path.display().to_string(),
            source,
        }
    }

    pub fn sql(e: rusqlite::Error) -> Self {
        ServerError::Sql(e)
    }
}

pub type Result<T> = std::result::Result<T, ServerError>;

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let status = match &self {
            ServerError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ServerError::Quota(_) => StatusCode::INSUFFICIENT_STORAGE,
            ServerError::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ServerError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            // The database is there but cannot take the write now (locked, damaged, full).
            ServerError::Sql(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServerError::NoConsent => StatusCode::FORBIDDEN,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() && status != StatusCode::INSUFFICIENT_STORAGE {
            log::error!("{self}");
        }
        (status, Json(json!({ "error": self.to_string() }))).into_response()
    }
}
