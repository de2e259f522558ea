//! The fleet report: what one campaign measured on one device, as versioned JSON.
//!
//! The written schema is `fleet/SCHEMA.md`. Reading a report validates it: the schema name and
//! version first, then every field's presence and type (the error names the field's path), then
//! the values (no negative or non-finite time, a wrong variant never timed, …).

use kiln::DeviceProfile;
use serde::{Deserialize, Serialize};

use crate::error::{FleetError, Result};

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

/// Longest string field accepted: names and errors are short; anything longer is not a report.
const MAX_TEXT: usize = 4096;

impl Report {
    /// Reads and validates a report; `what` names it in errors (a file name, "request body").
    pub fn parse(what: &str, json: &str) -> Result<Report> {
        let invalid = |detail: String| FleetError::InvalidReport {
            what: what.to_string(),
            detail,
        };
        // Schema and version first, so that another document or a newer report says so
        // rather than failing on some field.
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| invalid(format!("not JSON: {e}")))?;
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
        let report: Report = serde_path_to_error::deserialize(value)
            .map_err(|e| invalid(format!("{}: {}", e.path(), e.inner())))?;
        report.validate().map_err(invalid)?;
        Ok(report)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> Result<String> {
        self.validate()
            .map_err(|detail| FleetError::InvalidReport {
                what: "report".into(),
                detail,
            })?;
        serde_json::to_string_pretty(self).map_err(|e| FleetError::InvalidReport {
            what: "report".into(),
            detail: e.to_string(),
        })
    }

    /// The checks types cannot express.
    fn validate(&self) -> std::result::Result<(), String> {
        positive("budget_s", self.budget_s)?;
        non_negative("elapsed_s", self.elapsed_s)?;
        let c = &self.ceilings;
        positive("ceilings.copy_gb_per_s", c.copy_gb_per_s)?;
        positive("ceilings.fma_gflop_per_s", c.fma_gflop_per_s)?;
        positive("ceilings.dispatch_latency_us", c.dispatch_latency_us)?;
        non_negative("ceilings.compile_ms", c.compile_ms)?;
        clock("ceilings.clock", &c.clock)?;
        for (name, text) in [
            ("kiln_version", &self.kiln_version),
            ("platform.os", &self.platform.os),
            ("platform.arch", &self.platform.arch),
            ("platform.driver", &self.platform.driver),
            ("device.name", &self.device.name),
        ] {
            bounded(name, text)?;
        }
        if let Some(b) = &self.platform.browser {
            bounded("platform.browser", b)?;
        }
        let mut seen = std::collections::HashSet::new();
        for (i, r) in self.results.iter().enumerate() {
            let at = |field: &str| format!("results[{i}].{field}");
            for (name, text) in [
                ("family", &r.family),
                ("variant", &r.variant),
                ("case", &r.case),
                ("bucket", &r.bucket),
            ] {
                bounded(&at(name), text)?;
            }
            if r.family.is_empty() || r.variant.is_empty() || r.case.is_empty() {
                return Err(format!(
                    "{}: family, variant and case must be named",
                    at("")
                ));
            }
            if !seen.insert((&r.family, &r.variant, &r.case)) {
                return Err(format!(
                    "results[{i}]: {} {} on `{}` appears twice",
                    r.family, r.variant, r.case
                ));
            }
            positive(&at("tolerance"), r.tolerance)?;
            if let Some(e) = r.rel_l2 {
                non_negative(&at("rel_l2"), e)?;
            }
            if let Some(e) = &r.error {
                bounded(&at("error"), e)?;
            }
            if let Some(ms) = r.compile_ms {
                non_negative(&at("compile_ms"), ms)?;
            }
            for (name, v) in [
                ("gflop_per_s", r.gflop_per_s),
                ("gb_per_s", r.gb_per_s),
                ("efficiency", r.efficiency),
            ] {
                if let Some(v) = v {
                    non_negative(&at(name), v)?;
                }
            }
            match (r.outcome, &r.timing) {
                (Outcome::Ok, None) => {
                    return Err(format!("{}: an ok variant is timed", at("timing")));
                }
                (Outcome::Ok, Some(t)) => {
                    let e = r
                        .rel_l2
                        .ok_or_else(|| format!("{}: an ok variant has its error", at("rel_l2")))?;
                    if e > r.tolerance {
                        return Err(format!(
                            "{}: {e} is over the tolerance {} of an ok variant",
                            at("rel_l2"),
                            r.tolerance
                        ));
                    }
                    check_timing(&at("timing"), t)?;
                }
                (_, Some(_)) => {
                    return Err(format!(
                        "{}: a {:?} variant is never timed",
                        at("timing"),
                        r.outcome
                    ));
                }
                (Outcome::Failed, None) if r.error.is_none() => {
                    return Err(format!("{}: a failed variant says why", at("error")));
                }
                _ => {}
            }
        }
        for (i, s) in self.skipped.iter().enumerate() {
            for (name, text) in [
                ("family", &s.family),
                ("variant", &s.variant),
                ("case", &s.case),
                ("why", &s.why),
            ] {
                bounded(&format!("skipped[{i}].{name}"), text)?;
            }
        }
        Ok(())
    }
}

fn check_timing(at: &str, t: &Timing) -> std::result::Result<(), String> {
    clock(&format!("{at}.clock"), &t.clock)?;
    for (name, v) in [
        ("median_ms", t.median_ms),
        ("min_ms", t.min_ms),
        ("max_ms", t.max_ms),
    ] {
        positive(&format!("{at}.{name}"), v)?;
    }
    if !(t.min_ms <= t.median_ms && t.median_ms <= t.max_ms) {
        return Err(format!(
            "{at}: min {} ≤ median {} ≤ max {} does not hold",
            t.min_ms, t.median_ms, t.max_ms
        ));
    }
    if t.repeats == 0 {
        return Err(format!("{at}.repeats: at least one timed run"));
    }
    Ok(())
}

fn positive(name: &str, v: f64) -> std::result::Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{name}: {v} is not a positive finite number"))
    }
}

fn non_negative(name: &str, v: f64) -> std::result::Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name}: {v} is not a finite number ≥ 0"))
    }
}

fn clock(name: &str, c: &str) -> std::result::Result<(), String> {
    match c {
        "gpu_timestamps" | "wall_clock" => Ok(()),
        other => Err(format!(
            "{name}: `{}` is not a clock (gpu_timestamps, wall_clock)",
            clip(other, 40)
        )),
    }
}

fn bounded(name: &str, text: &str) -> std::result::Result<(), String> {
    if text.len() > MAX_TEXT {
        return Err(format!("{name}: {} bytes, over {MAX_TEXT}", text.len()));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(format!("{name}: control characters"));
    }
    Ok(())
}

/// At most `n` characters of `s`, for quoting untrusted text in an error.
fn clip(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().count() > n {
        out.push('…');
    }
    out
}
