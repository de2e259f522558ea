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

/// Back to kiln's error where a kiln interface asks for one (the `fleet talk` window is a
/// `kiln_app::Demo`): a kiln error as it was, anything else as an invalid argument of "fleet".
impl From<FleetError> for kiln::Error {
    fn from(e: FleetError) -> kiln::Error {
        match e {
            FleetError::Kiln(e) => e,
            other => kiln::Error::InvalidArgument {
                op: "fleet",
                detail: other.to_string(),
            },
        }
    }
}
