//! The rules' checks of each result of a report (variant offered, case known at the report's
//! scale, bucket, tolerance), and the observations per variant and bucket that survive them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use kiln::{DeviceProfile, Registry};

use super::picks::SetAside;
use super::submission::{Digest, DigestResult};
use crate::case_models::CaseModels;
use crate::merge::{self, Key};
use crate::report::Outcome;

/// What one report says about one variant in one bucket.
#[derive(Clone, Copy, Debug)]
pub(super) struct Obs {
    /// The report's id: a report set aside later takes its observations with it.
    pub(super) id: i64,
    pub(super) kind: Seen,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Seen {
    /// Timed: the slowest median over the bucket's cases, with the bytes and FLOPs of that
    /// case (the curated model's), for the plausibility check against the class's ceilings.
    Time { ms: f64, bytes: f64, flops: f64 },
    /// Wrong or failed on some case of the bucket.
    Wrong,
}

/// The rules' per-result checks that depend only on this build (its registry and the curated
/// cases) and on what of a device decides the variants it is offered, remembered across reports
/// and merges: merging a class then costs its reports' results, not lookups in the registry.
/// The collector keeps one for its life; what it remembers is bounded by the build's variants
/// and, for the offered sets, by [`Checks::OFFERED`].
#[derive(Debug)]
pub struct Checks<'a> {
    pub(super) models: &'a CaseModels,
    pub(super) registry: &'a Registry,
    /// (family, `kiln::registry::support_key` of a profile) → the variants offered to it.
    offered: HashMap<(String, String), Rc<HashSet<String>>>,
    /// (family, variant) → its scope (`merge::scope_in`), for variants the registry has.
    scopes: HashMap<(String, String), String>,
}

impl<'a> Checks<'a> {
    /// The most offered sets remembered (a set is a family's variant names, about 2 KB); past
    /// it they are forgotten and found again: reports can claim any limits they like.
    pub const OFFERED: usize = 4096;

    pub fn new(models: &'a CaseModels, registry: &'a Registry) -> Self {
        Checks {
            models,
            registry,
            offered: HashMap::new(),
            scopes: HashMap::new(),
        }
    }

    /// The variants of `family` offered to `device` (`support`: its support key, if it has one).
    fn offered(
        &mut self,
        family: &str,
        device: &DeviceProfile,
        support: Option<&str>,
    ) -> Rc<HashSet<String>> {
        let find = || {
            let names = self
                .registry
                .supported(family, device)
                .map(|vs| vs.map(|v| v.name.clone()).collect())
                .unwrap_or_default();
            Rc::new(names)
        };
        let Some(support) = support else {
            return find();
        };
        let key = (family.to_string(), support.to_string());
        if let Some(set) = self.offered.get(&key) {
            return set.clone();
        }
        let set = find();
        if self.offered.len() >= Self::OFFERED {
            self.offered.clear();
        }
        self.offered.insert(key, set.clone());
        set
    }

    /// The scope of an offered variant (`merge::scope_in`).
    fn scope(&mut self, family: &str, variant: &str) -> String {
        let key = (family.to_string(), variant.to_string());
        let registry = self.registry;
        self.scopes
            .entry(key)
            .or_insert_with(|| merge::scope_in(registry, family, variant))
            .clone()
    }
}

/// One report's observations per (key, variant): each result checked, a variant timed on
/// several cases of one bucket counted with its slowest, and wrong if any case was.
pub(super) fn observations(
    id: i64,
    r: &Digest,
    checks: &mut Checks,
    aside: &mut Vec<SetAside>,
) -> BTreeMap<(Key, String), Obs> {
    let class = r.device.class();
    let support = kiln::registry::support_key(&r.device);
    let mut offered: HashMap<&str, Rc<HashSet<String>>> = HashMap::new();
    let mut out: BTreeMap<(Key, String), Obs> = BTreeMap::new();
    for x in &r.results {
        let DigestResult(family, variant, case, ..) = x;
        let offered = offered
            .entry(family.as_str())
            .or_insert_with(|| checks.offered(family, &r.device, support.as_deref()))
            .clone();
        match check(&r.device, x, &offered, checks.models, checks.registry) {
            Err(why) => aside.push(SetAside {
                id,
                device: r.device.name.clone(),
                what: format!("{family} {variant} on {case}"),
                why,
            }),
            Ok((bucket, kind)) => {
                let scope = checks.scope(family, variant);
                let key = (
                    (class.clone(), family.clone(), bucket.to_string(), scope),
                    variant.clone(),
                );
                let slot = out.entry(key).or_insert(Obs { id, kind });
                slot.kind = match (slot.kind, kind) {
                    (
                        Seen::Time { ms: a, .. },
                        Seen::Time {
                            ms: b,
                            bytes,
                            flops,
                        },
                    ) if b >= a => Seen::Time {
                        ms: b,
                        bytes,
                        flops,
                    },
                    (t @ Seen::Time { .. }, Seen::Time { .. }) => t,
                    _ => Seen::Wrong,
                };
            }
        }
    }
    out
}

/// One result against the rules: its bucket (the case's, as the curated reports measured it)
/// and what it says, or why it does not count. Whether its time is possible is decided later,
/// against its class's ceilings (`Tally::finish`).
fn check<'m>(
    device: &DeviceProfile,
    x: &DigestResult,
    offered: &HashSet<String>,
    models: &'m CaseModels,
    registry: &Registry,
) -> Result<(&'m str, Seen), String> {
    let DigestResult(family, variant, case, bucket, outcome, rel_l2, median_ms) = x;
    // Every variant offered exists: the registry is searched only for one that is not.
    if !offered.contains(variant.as_str()) {
        if registry.variant(family, variant).is_err() {
            return Err(format!(
                "no variant `{variant}` of a family `{family}` in this build's registry"
            ));
        }
        return Err(
            "not offered to the report's own device profile (it lacks a feature or \
                    limit the variant needs)"
                .into(),
        );
    }
    let model = models.get(case).ok_or_else(|| {
        "not a case the curated reports measured: its bytes and FLOPs are unknown".to_string()
    })?;
    if model.family != *family {
        return Err(format!("the case is one of {}'s", model.family));
    }
    let software = device.is_software();
    if model.software != software {
        return Err(format!(
            "a {} campaign's case on a {} device: a campaign runs its own scale's cases",
            scale(model.software),
            scale(software)
        ));
    }
    if model.dtype == kiln::DType::F16 && !device.features.shader_f16 {
        return Err("an f16 case on a device without shader_f16".into());
    }
    if *bucket != model.bucket {
        return Err(format!(
            "bucket `{bucket}`, but the case's is `{}`",
            model.bucket
        ));
    }
    match (outcome, median_ms) {
        (Outcome::Ok, Some(ms)) => {
            // The family's own tolerance, never the report's.
            let tolerance = kiln::cases::campaign_tolerance(family, model.dtype)
                .ok_or_else(|| format!("the family {family} has no case table"))?;
            if rel_l2.is_none_or(|e| e > tolerance) {
                return Ok((model.bucket.as_str(), Seen::Wrong));
            }
            let seen = Seen::Time {
                ms: *ms,
                bytes: model.bytes,
                flops: model.flops,
            };
            Ok((model.bucket.as_str(), seen))
        }
        // Validation makes an ok result timed; anything else ran and was not right.
        _ => Ok((model.bucket.as_str(), Seen::Wrong)),
    }
}

fn scale(software: bool) -> &'static str {
    if software { "software" } else { "hardware" }
}
