//! The fleet report: what one campaign measured on one device, as versioned JSON.
//!
//! The written schema is `fleet/SCHEMA.md`. Reading a report validates it: the schema name and
//! version first, then every field's presence and type (the error names the field's path), then
//! the values (no negative or non-finite time, a wrong variant never timed, …).

use kiln::DeviceProfile;
use serde::{Deserialize, Serialize};

use crate::error::{FleetError, Result};
use crate::text::clip;
use crate::{json, validate};

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

impl Report {
    /// Reads and validates a report from bytes (a request body): text that is not UTF-8 is
    /// refused like any other malformed report.
    pub fn parse_bytes(what: &str, bytes: &[u8]) -> Result<Report> {
        let json = std::str::from_utf8(bytes).map_err(|e| FleetError::InvalidReport {
            what: what.to_string(),
            detail: format!("not UTF-8 text: {e}"),
        })?;
        Report::parse(what, json)
    }

    /// Reads and validates a report; `what` names it in errors (a file name, "request body").
    pub fn parse(what: &str, json: &str) -> Result<Report> {
        let invalid = |detail: String| FleetError::InvalidReport {
            what: what.to_string(),
            detail,
        };
        // Duplicate keys are refused while reading: serde_json would keep the last silently.
        let value = json::parse_unique(json).map_err(|r| match r {
            json::Refusal::Syntax(e) => invalid(format!("not JSON: {e}")),
            json::Refusal::Rule(e) => invalid(e),
        })?;
        Report::from_value(what, value)
    }

    /// Validates a report already read as JSON (with its duplicate keys refused: see
    /// `parse`), as inside a collector's export.
    pub fn from_value(what: &str, value: serde_json::Value) -> Result<Report> {
        let invalid = |detail: String| FleetError::InvalidReport {
            what: what.to_string(),
            detail,
        };
        // Schema and version first, so that another document or a newer report says so
        // rather than failing on some field.
        let obj = value
            .as_object()
            .ok_or_else(|| invalid("not a JSON object".into()))?;
        match obj.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => {
                return Err(invalid(format!(
                    "schema `{}`, not `{SCHEMA}`",
                    clip(other, 80)
                )));
            }
            None => return Err(invalid(format!("no `schema` field: not a {SCHEMA}"))),
        }
        match obj.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => {
                return Err(invalid(format!(
                    "version {v}: this build reads version {VERSION}"
                )));
            }
            None => return Err(invalid("`version` is missing or not a whole number".into())),
        }
        let report: Report = serde_path_to_error::deserialize(&value)
            .map_err(|e| invalid(format!("{}: {}", e.path(), e.inner())))?;
        // Unknown fields at any depth, also inside `device` (kiln's type, which ignores them).
        json::unknown_field(&value, &report).map_err(invalid)?;
        validate::report(&report).map_err(invalid)?;
        Ok(report)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> Result<String> {
        validate::report(self).map_err(|detail| FleetError::InvalidReport {
            what: "report".into(),
            detail,
        })?;
        serde_json::to_string_pretty(self).map_err(|e| FleetError::InvalidReport {
            what: "report".into(),
            detail: e.to_string(),
        })
    }
}
