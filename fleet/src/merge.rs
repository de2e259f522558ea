//! Curated reports (the project's own, checked in under `fleet/reports/`) in, tuned table out:
//! for each device class, op family, shape bucket and scope (dtype, causal), the fastest
//! variant that was correct on every device of the class that ran it. Crowd reports go through
//! `crate::crowd` instead.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use kiln::{Registry, TunedEntry, TunedTable};
use serde::Serialize;

use crate::report::{Outcome, Report};

/// What one tuned entry decides: device class, family, shape bucket and the variant's scope
/// (`scope_of`). Variants of one bucket that differ in scope serve different calls (the selector
/// takes only an entry whose variant takes the call), so each scope gets its own pick.
pub type Key = (String, String, String, String);

/// The scope of `family`'s `variant` (`kiln::registry::Scope`: its dtype and whether it is
/// causal, as `f32` or `f16 causal`), read from the variant's typed values in this build's
/// registry. A variant this build does not have is its own scope, `not in this build`: it can
/// never share a pick with one the selector can run.
pub fn scope_of(family: &str, variant: &str) -> String {
    builtin().map_or_else(
        || "not in this build".to_string(),
        |r| scope_in(r, family, variant),
    )
}

/// [`scope_of`], read from `registry` (one the caller has loaded already: loading this build's
/// again takes seconds).
pub fn scope_in(registry: &Registry, family: &str, variant: &str) -> String {
    registry
        .variant(family, variant)
        .ok()
        .and_then(|v| v.scope().ok())
        .map_or_else(|| "not in this build".to_string(), |s| s.to_string())
}

/// This build's registry, loaded once (`None` if it fails to load, which its own tests forbid).
fn builtin() -> Option<&'static Registry> {
    static REGISTRY: OnceLock<Option<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::builtin().ok()).as_ref()
}

/// The key of a result or pick of `variant` in (class, family, bucket).
pub fn key_of(class: &str, family: &str, bucket: &str, variant: &str) -> Key {
    (
        class.to_string(),
        family.to_string(),
        bucket.to_string(),
        scope_of(family, variant),
    )
}

/// What the merge decided for one (class, family, bucket, scope).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pick {
    pub class: String,
    pub family: String,
    pub bucket: String,
    pub variant: String,
    /// The slowest median (ms) the variant had on the class's devices: the time the choice
    /// promises everywhere in the class.
    pub worst_ms: f64,
    /// Devices of the class that timed it.
    pub devices: usize,
    /// Variants excluded because they were wrong or failed on some device of the class.
    pub excluded: Vec<String>,
}

/// The picks for a set of reports, in class, family, bucket, scope order.
pub fn picks(reports: &[Report]) -> Vec<Pick> {
    // (class, family, bucket, scope) → variant → per-device median times, and variants ever
    // wrong.
    let mut times: BTreeMap<Key, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    let mut bad: BTreeMap<Key, BTreeSet<String>> = BTreeMap::new();
    for report in reports {
        let class = report.device.class();
        // A variant timed on several cases of one bucket counts with its slowest.
        let mut per_device: BTreeMap<(Key, String), f64> = BTreeMap::new();
        for r in &report.results {
            let key = key_of(&class, &r.family, &r.bucket, &r.variant);
            match (r.outcome, &r.timing) {
                (Outcome::Ok, Some(t)) => {
                    let slot = per_device
                        .entry((key, r.variant.clone()))
                        .or_insert(t.median_ms);
                    *slot = slot.max(t.median_ms);
                }
                _ => {
                    bad.entry(key).or_default().insert(r.variant.clone());
                }
            }
        }
        for ((key, variant), ms) in per_device {
            times
                .entry(key)
                .or_default()
                .entry(variant)
                .or_default()
                .push(ms);
        }
    }
    let mut out = Vec::new();
    for (key, variants) in times {
        let excluded = bad.get(&key).cloned().unwrap_or_default();
        let best = variants
            .iter()
            .filter(|(v, _)| !excluded.contains(*v))
            .map(|(v, ms)| (v, ms.iter().copied().fold(0.0f64, f64::max), ms.len()))
            .min_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(b.0)));
        if let Some((variant, worst_ms, devices)) = best {
            let (class, family, bucket, _) = key;
            out.push(Pick {
                class,
                family,
                bucket,
                variant: variant.clone(),
                worst_ms,
                devices,
                excluded: excluded.into_iter().collect(),
            });
        }
    }
    out
}

/// The tuned table for a merge's `picks`. Entries of `keep` for a (class, family, bucket, scope)
/// the picks do not cover stay: a merge replaces what it measured and nothing else (entries from
/// a benchmark sweep at other shapes, other device classes).
pub fn tuned_table(picks: &[Pick], keep: &TunedTable, source: &str) -> TunedTable {
    replace(keep, picks.iter().map(|p| entry(p, source)).collect())
}

/// A curated pick as a tuned-table entry.
pub fn entry(p: &Pick, source: &str) -> TunedEntry {
    TunedEntry {
        class: p.class.clone(),
        family: p.family.clone(),
        bucket: p.bucket.clone(),
        variant: p.variant.clone(),
        source: format!(
            "{source}; slowest of {} device(s) {:.4} ms",
            p.devices, p.worst_ms
        ),
    }
}

/// `keep` with every entry of a (class, family, bucket, scope) that `entries` decide replaced by
/// them, in place (where the first of the old ones stood), and the entries of a new key after
/// the rest: a merge moves nothing it did not decide.
pub fn replace(keep: &TunedTable, entries: Vec<TunedEntry>) -> TunedTable {
    let mut pending: BTreeMap<Key, Vec<TunedEntry>> = BTreeMap::new();
    let mut order = Vec::new();
    for e in entries {
        let k = key(&e);
        if !pending.contains_key(&k) {
            order.push(k.clone());
        }
        pending.entry(k).or_default().push(e);
    }
    let decided: BTreeSet<Key> = pending.keys().cloned().collect();
    let mut out = Vec::new();
    for e in &keep.entries {
        let k = key(e);
        match pending.remove(&k) {
            Some(new) => out.extend(new),
            None if decided.contains(&k) => {}
            None => out.push(e.clone()),
        }
    }
    for k in order {
        if let Some(new) = pending.remove(&k) {
            out.extend(new);
        }
    }
    TunedTable {
        version: kiln::select::TUNED_VERSION,
        entries: out,
    }
}

/// An entry's (class, family, bucket, scope).
pub fn key(e: &TunedEntry) -> Key {
    key_of(&e.class, &e.family, &e.bucket, &e.variant)
}
