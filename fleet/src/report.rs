//! The fleet report: what one campaign measured on one device, as versioned JSON.
//!
//! The written schema is `fleet/SCHEMA.md`. This module holds the types; `parse.rs` reads and
//! writes them as JSON, validating on the way (`validate.rs`).

use kiln::DeviceProfile;
use serde::{Deserialize, Serialize};

/// The `schema` field of every report.
pub const SCHEMA: &str = "kiln-fleet-report";
/// The report version this build writes and reads.
pub const VERSION: u32 = 1;

/// One campaign on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub schema: String,
    pub version: u32,
    /// The Kiln build that ran the campaign.
    pub kiln_version: String,
    pub platform: Platform,
    /// What the kernels were rendered for.
    pub device: DeviceProfile,
    /// The campaign's time budget and how long it took, in seconds.
    pub budget_s: f64,
    pub elapsed_s: f64,
    pub ceilings: Ceilings,
    pub results: Vec<VariantResult>,
    /// Variants not run, with why (the budget ran out, the campaign was cancelled).
    pub skipped: Vec<Skipped>,
}

/// Where the campaign ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// `linux`, `macos`, `windows`, or `web`.
    pub os: String,
    pub arch: String,
    /// The browser's user agent on the web, else absent.
    pub browser: Option<String>,
    /// The driver name and version the adapter reports.
    pub driver: String,
}

/// The device's measured ceilings, against which each variant's efficiency is given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ceilings {
    /// Bytes read plus written per second by the `copy` kernel, GB/s.
    pub copy_gb_per_s: f64,
    /// Floating-point operations per second of the `fma_chain` kernel, GFLOP/s.
    pub fma_gflop_per_s: f64,
    /// Median wall time of submitting one tiny dispatch and waiting for it, µs.
    pub dispatch_latency_us: f64,
    /// Median time to build one variant's pipeline (WGSL to a driver binary), ms.
    pub compile_ms: f64,
    /// The clock the two rates were timed with (`gpu_timestamps` or `wall_clock`).
    pub clock: String,
}

/// How a variant did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Matched the CPU reference, then timed.
    Ok,
    /// Ran, and its result did not match the CPU reference: never timed, never chosen.
    Wrong,
    /// Could not run (the pipeline did not build, the device reported an error).
    Failed,
}

/// One variant on one case (a family's fixed shape).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantResult {
    pub family: String,
    pub variant: String,
    /// The case's name (`matmul 256x256x256 f32`, …).
    pub case: String,
    /// The shape bucket tuned-table entries use for this call.
    pub bucket: String,
    pub outcome: Outcome,
    /// Relative L2 error against the CPU reference (absent when it could not be computed).
    pub rel_l2: Option<f64>,
    pub tolerance: f64,
    /// What went wrong, for `wrong` and `failed`.
    pub error: Option<String>,
    /// Pipeline build time of this variant, ms (absent when it was already built).
    pub compile_ms: Option<f64>,
    /// Present exactly when the outcome is `ok`.
    pub timing: Option<Timing>,
    /// Achieved rates, and the fraction of the nearer ceiling (arithmetic or memory).
    pub gflop_per_s: Option<f64>,
    pub gb_per_s: Option<f64>,
    pub efficiency: Option<f64>,
}

/// A variant's timing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// `gpu_timestamps` or `wall_clock`.
    pub clock: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub warmup: u32,
    pub repeats: u32,
    /// The grid the clock rounds its readings to (Chrome's WebGPU: 65.536 µs), when it does:
    /// `median_ms` then holds the readings' mean, which the rounding leaves unbiased (their
    /// median lands on one of two neighbouring grid values). Absent for a clock that does not
    /// round, and in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum_ms: Option<f64>,
}

/// A variant the campaign did not run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    pub family: String,
    pub variant: String,
    pub case: String,
    pub why: String,
}
