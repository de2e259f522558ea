//! Variant selection: for an op call, the tuned table (written from measurements, checked in)
//! first, the op's rule second. Every choice says which of the two made it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::error::{Error, Result};
use crate::registry::{Registry, Variant, unsupported_reason};

/// The tuned table format version this build reads.
pub const TUNED_VERSION: u32 = 1;

/// Measured best variants per device class, op family and shape bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunedTable {
    pub version: u32,
    pub entries: Vec<TunedEntry>,
}

/// One measured choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunedEntry {
    /// Device class, as `DeviceProfile::class` writes it.
    pub class: String,
    pub family: String,
    /// Shape bucket, as the op writes it (`m256_n256_k256`, …).
    pub bucket: String,
    pub variant: String,
    /// Where the entry came from (reports merged, date).
    #[serde(default)]
    pub source: String,
}

impl TunedTable {
    /// The table checked into the repository (`kernels/tuned.json`).
    pub fn builtin() -> Result<Self> {
        Self::from_json("kernels/tuned.json", include_str!("../tuned.json"))
    }

    pub fn from_json(what: &str, json: &str) -> Result<Self> {
        let table: TunedTable = serde_json::from_str(json).map_err(|e| Error::Parse {
            what: what.to_string(),
            detail: e.to_string(),
        })?;
        if table.version != TUNED_VERSION {
            return Err(Error::Parse {
                what: what.to_string(),
                detail: format!(
                    "version {} (this build reads {TUNED_VERSION})",
                    table.version
                ),
            });
        }
        Ok(table)
    }
}

/// Why a variant was chosen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Reason {
    /// The tuned table has an entry for this device class and shape bucket.
    Tuned { class: String, bucket: String },
    /// No tuned entry applied: the op's rule picked it.
    Rule(String),
    /// The caller named the variant.
    Forced,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Tuned { class, bucket } => {
                write!(f, "tuned table: class {class}, bucket {bucket}")
            }
            Reason::Rule(rule) => write!(f, "rule: {rule}"),
            Reason::Forced => write!(f, "named by the caller"),
        }
    }
}

/// The variant an op call runs, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Choice {
    pub variant: Variant,
    pub reason: Reason,
    /// The call's shape bucket, as tuned-table entries name it.
    pub bucket: String,
}

/// What an op asks of the selector.
pub struct Request<'a> {
    pub op: &'static str,
    /// Variables the call fixes (the dtype of its tensors, causal, …).
    pub fixed: Vec<(&'static str, Param)>,
    pub bucket: String,
    /// Whether a variant can take the call's shapes (vec4 needs a multiple of 4, …).
    pub fits: &'a dyn Fn(&Variant) -> bool,
    /// The rule: higher is preferred.
    pub score: &'a dyn Fn(&Variant) -> i64,
    /// The rule in words, for explanations.
    pub rule: &'a str,
}

impl fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("op", &self.op)
            .field("fixed", &self.fixed)
            .field("bucket", &self.bucket)
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

/// Picks the variant for a call: the named one if given (checked), else tuned table, else rule.
pub fn choose(
    registry: &Registry,
    profile: &DeviceProfile,
    tuned: &TunedTable,
    req: &Request<'_>,
    named: Option<&str>,
) -> Result<Choice> {
    if let Some(name) = named {
        let variant = registry.variant(req.op, name)?;
        if let Some(why) = unsupported_reason(variant, profile) {
            return Err(Error::Unsupported {
                op: req.op,
                adapter: profile.name.clone(),
                detail: format!("variant {name} {why}"),
            });
        }
        if !variant.takes(&req.fixed) || !(req.fits)(variant) {
            return Err(Error::shape(
                req.op,
                format!(
                    "variant {name} does not take this call ({})",
                    describe(&req.fixed)
                ),
            ));
        }
        return Ok(Choice {
            variant: variant.clone(),
            reason: Reason::Forced,
            bucket: req.bucket.clone(),
        });
    }

    if let Some(choice) = choose_tuned(registry, profile, tuned, req)? {
        return Ok(choice);
    }
    let candidates = candidates(registry, profile, req)?;
    // Highest score wins; on a tie the first in registry order.
    let best = candidates
        .iter()
        .copied()
        .rev()
        .max_by_key(|v| (req.score)(v))
        .ok_or_else(|| Error::Unsupported {
            op: req.op,
            adapter: profile.name.clone(),
            detail: format!("no variant takes this call ({})", describe(&req.fixed)),
        })?;
    Ok(Choice {
        variant: best.clone(),
        reason: Reason::Rule(req.rule.to_string()),
        bucket: req.bucket.clone(),
    })
}

/// The tuned table's pick for a call, if it has one for this device class and shape bucket
/// (among the variants that take the call); the rule is not consulted.
pub fn choose_tuned(
    registry: &Registry,
    profile: &DeviceProfile,
    tuned: &TunedTable,
    req: &Request<'_>,
) -> Result<Option<Choice>> {
    let class = profile.class();
    let mut entries = tuned
        .entries
        .iter()
        .filter(|e| e.class == class && e.family == req.op && e.bucket == req.bucket)
        .peekable();
    if entries.peek().is_none() {
        return Ok(None);
    }
    let candidates = candidates(registry, profile, req)?;
    Ok(entries
        .find_map(|e| candidates.iter().find(|v| v.name == e.variant))
        .map(|v| Choice {
            variant: (*v).clone(),
            reason: Reason::Tuned {
                class: class.clone(),
                bucket: req.bucket.clone(),
            },
            bucket: req.bucket.clone(),
        }))
}

/// The variants the adapter offers that take the call's fixed values and shapes.
fn candidates<'a>(
    registry: &'a Registry,
    profile: &'a DeviceProfile,
    req: &Request<'_>,
) -> Result<Vec<&'a Variant>> {
    Ok(registry
        .supported(req.op, profile)?
        .filter(|v| v.takes(&req.fixed) && (req.fits)(v))
        .collect())
}

/// The power of two at or above `x`: shape buckets group sizes within a factor of two.
pub fn bucket(x: usize) -> usize {
    x.max(1).next_power_of_two()
}

fn describe(fixed: &[(&'static str, Param)]) -> String {
    fixed
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
