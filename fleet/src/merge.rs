//! Reports in, tuned table out: for each device class, op family and shape bucket, the fastest
//! variant that was correct on every device of the class that ran it.

use std::collections::{BTreeMap, BTreeSet};

use kiln::{TunedEntry, TunedTable};
use serde::Serialize;

use crate::report::{Outcome, Report};

/// What the merge decided for one (class, family, bucket).
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

/// The picks for a set of reports, in class, family, bucket order.
pub fn picks(reports: &[Report]) -> Vec<Pick> {
    // (class, family, bucket) → variant → per-device median times, and variants ever wrong.
    type Key = (String, String, String);
    let mut times: BTreeMap<Key, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    let mut bad: BTreeMap<Key, BTreeSet<String>> = BTreeMap::new();
    for report in reports {
        let class = report.device.class();
        // A variant timed on several cases of one bucket counts with its slowest.
        let mut per_device: BTreeMap<(Key, String), f64> = BTreeMap::new();
        for r in &report.results {
            let key = (class.clone(), r.family.clone(), r.bucket.clone());
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
            let (class, family, bucket) = key;
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

/// The tuned table for a merge's `picks`. Entries of `keep` for a (class, family, bucket) the
/// picks do not cover stay: a merge replaces what it measured and nothing else (entries from a
/// benchmark sweep at other shapes, other device classes).
pub fn tuned_table(picks: &[Pick], keep: &TunedTable, source: &str) -> TunedTable {
    let measured: BTreeSet<(&str, &str, &str)> = picks
        .iter()
        .map(|p| (p.class.as_str(), p.family.as_str(), p.bucket.as_str()))
        .collect();
    let mut entries: Vec<TunedEntry> = keep
        .entries
        .iter()
        .filter(|e| !measured.contains(&(e.class.as_str(), e.family.as_str(), e.bucket.as_str())))
        .cloned()
        .collect();
    entries.extend(picks.iter().map(|p| TunedEntry {
        class: p.class.clone(),
        family: p.family.clone(),
        bucket: p.bucket.clone(),
        variant: p.variant.clone(),
        source: format!(
            "{source}; slowest of {} device(s) {:.4} ms",
            p.devices, p.worst_ms
        ),
    }));
    TunedTable {
        version: kiln::select::TUNED_VERSION,
        entries,
    }
}
