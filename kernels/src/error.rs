//! The one error type of the kernel crate.

/// Everything that can go wrong in Kiln, each variant naming what failed and why.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Inputs whose shapes do not fit the op (mismatch, zero size, wrong rank).
    #[error("{op}: bad shape: {detail}")]
    Shape { op: &'static str, detail: String },

    /// An argument out of its allowed range (a NaN epsilon, a zero repeat count, …).
    #[error("{op}: invalid argument: {detail}")]
    InvalidArgument { op: &'static str, detail: String },

    /// The adapter lacks a feature the op or variant needs.
    #[error("{op}: unsupported on adapter '{adapter}': {detail}")]
    Unsupported {
        op: &'static str,
        adapter: String,
        detail: String,
    },

    /// The work would exceed one of the device's limits.
    #[error(
        "{op}: {what} is over the device limit {limit}: needs {needed}, the adapter allows {allowed}"
    )]
    OverLimit {
        op: &'static str,
        what: String,
        limit: &'static str,
        needed: u64,
        allowed: u64,
    },

    /// A template could not be rendered (unknown variable, syntax error, bad contract).
    #[error("template {family}/{variant}{}: {detail}", line_suffix(*.line))]
    Template {
        family: String,
        variant: String,
        line: Option<usize>,
        detail: String,
    },

    /// Rendered WGSL that naga or the driver rejected.
    #[error("shader {family}/{variant}{}: {detail}", line_suffix(*.line))]
    ShaderValidation {
        family: String,
        variant: String,
        line: Option<usize>,
        detail: String,
    },

    /// A family or variant name that the registry does not know.
    #[error("unknown kernel {0}")]
    UnknownKernel(String),

    /// A stored file (profile, tuned table, contract) that does not parse.
    #[error("cannot read {what}: {detail}")]
    Parse { what: String, detail: String },

    /// No adapter could be found or the device could not be created.
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),

    /// The device ran out of memory.
    #[error("out of GPU memory: {0}")]
    OutOfMemory(String),

    /// The device was lost (driver reset, removal, destroyed).
    #[error("GPU device lost: {0}")]
    DeviceLost(String),

    /// A validation error reported by wgpu while running work.
    #[error("GPU error: {0}")]
    Gpu(String),

    /// Copying a result back to the CPU failed.
    #[error("readback failed: {0}")]
    Readback(String),
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(" line {l}")).unwrap_or_default()
}

/// Result with Kiln's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn shape(op: &'static str, detail: impl Into<String>) -> Self {
        Error::Shape {
            op,
            detail: detail.into(),
        }
    }
}
