//! The demo's one error type: kiln's errors, and what goes wrong with files and settings.

/// What can go wrong in the flash demo.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kiln(#[from] kiln_app::kiln::Error),
    /// A training text the demo cannot use.
    #[error("data: {0}")]
    Data(String),
    /// A checkpoint that is corrupt or does not match the run.
    #[error("checkpoint {path}: {detail}")]
    Checkpoint { path: String, detail: String },
    /// Settings that do not make a run.
    #[error("settings: {0}")]
    Config(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

impl From<Error> for kiln_app::kiln::Error {
    /// For the harness, which speaks kiln's error.
    fn from(e: Error) -> Self {
        match e {
            Error::Kiln(k) => k,
            other => kiln_app::kiln::Error::InvalidArgument {
                op: "flash",
                detail: other.to_string(),
            },
        }
    }
}
