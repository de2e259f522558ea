//! The fleet's one error type.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum FleetError {
    /// A report that does not validate: which one, and the first reason.
    #[error("{what}: invalid report: {detail}")]
    InvalidReport { what: String, detail: String },
    /// A kernel could not be set up or run.
    #[error(transparent)]
    Kiln(#[from] kiln::Error),
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// Nothing to merge, an empty campaign, …
    #[error("{0}")]
    Usage(String),
}

pub type Result<T> = std::result::Result<T, FleetError>;
