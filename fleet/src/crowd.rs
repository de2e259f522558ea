//! Crowd reports (from the collector) in, picks out, by rules that a few bad actors cannot move
//! (`fleet/SCHEMA.md`, "Merging crowd reports"):
//!
//! - a result counts only when its variant exists, is offered to the report's own profile, its
//!   case is one the curated reports measured at the profile's scale, its error is within the
//!   family's own tolerance, and its time is possible on the device's own ceilings;
//! - a device (a fingerprint of the report's `device` fields) votes once per variant, with the
//!   median of its reports (one per sender: the latest), and a sender brings one device per class;
//! - a variant is picked only when a quorum of devices timed it, by the median of their medians;
//!   it is excluded when a quorum found it wrong or failed;
//! - `skipped` entries are unmeasured: they never count.

use std::collections::{BTreeMap, HashMap, HashSet};

use kiln::{DeviceProfile, Registry};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::case_models::CaseModels;
use crate::merge::{self, Key};
use crate::report::{Outcome, Report, VariantResult};

/// Devices that must agree before the crowd decides a (class, family, bucket, scope).
pub const DEFAULT_QUORUM: usize = 3;
/// How far past the device's own ceilings a time may go before it is impossible: caches can
/// beat the copy kernel's DRAM bandwidth, and matrix units (f16 cooperative matrices) run at up
/// to ~16× the f32 FMA peak, of which the FMA chain measures about half. The curated reports'
/// fastest results reach 1× (lavapipe's copy) and 0.36× (the H200's).
pub const DEFAULT_MARGIN: f64 = 32.0;

/// One stored crowd report: the collector's id (its arrival order), who sent it (a salted hash
/// of the address, never the address) and the report.
#[derive(Clone, Debug)]
pub struct Submission {
    pub id: i64,
    pub sender: String,
    pub report: Report,
}

/// The merge's thresholds.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    pub quorum: usize,
    pub margin: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            quorum: DEFAULT_QUORUM,
            margin: DEFAULT_MARGIN,
        }
    }
}

/// A report, or one result of it, that does not count, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetAside {
    pub id: i64,
    pub device: String,
    /// `the report`, or `matmul f32_x on matmul 256x256x256 f32`.
    pub what: String,
    pub why: String,
}

/// One device's vote for a variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Vote {
    /// The first 12 hex digits of the device's fingerprint.
    pub fingerprint: String,
    pub device: String,
    /// The median of its senders' times (each the slowest case of the bucket).
    pub ms: f64,
    pub senders: usize,
}

/// What the crowd decided for one (class, family, bucket, scope), and the evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CrowdPick {
    pub class: String,
    pub family: String,
    pub bucket: String,
    pub variant: String,
    /// The median over devices of each device's median.
    pub median_ms: f64,
    pub votes: Vec<Vote>,
    /// The next best variant that reached a quorum, and its median.
    pub runner_up: Option<(String, f64)>,
    /// Variants a quorum of devices found wrong or failed: never picked.
    pub excluded: Vec<String>,
    /// Variants some devices, fewer than a quorum, found wrong or failed, with how many: for
    /// the reviewer's eye.
    pub disputed: Vec<(String, usize)>,
}

/// A (class, family, bucket, scope) the crowd measured but cannot decide yet.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unmet {
    pub class: String,
    pub family: String,
    pub bucket: String,
    /// `merge::scope_of`: the dtype, and whether causal, from the variant's typed values.
    pub scope: String,
    /// The most devices that timed any one eligible variant.
    pub devices: usize,
}

/// The crowd merge's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CrowdMerge {
    pub picks: Vec<CrowdPick>,
    pub unmet: Vec<Unmet>,
    pub set_aside: Vec<SetAside>,
    /// Reports read, and those that counted (the latest of each sender and device).
    pub reports: usize,
    pub counted: usize,
}

/// A device's identity for the quorum: the SHA-256 of its profile as written in the report
/// (name, backend, type, vendor and device ids, driver and its version, features, subgroup
/// sizes, cooperative-matrix configurations and limits), in hex. Two reports of one fingerprint
/// are one device, whoever sent them.
pub fn fingerprint(profile: &DeviceProfile) -> String {
    // Serialising plain data with string keys cannot fail; the fields' order is the type's.
    let canonical = serde_json::to_string(profile).unwrap_or_default();
    format!("{:x}", Sha256::digest(canonical.as_bytes()))
}

/// What one report says about one variant in one bucket.
#[derive(Clone, Copy, Debug)]
enum Obs {
    /// Timed: the slowest median over the bucket's cases.
    Time(f64),
    /// Wrong or failed on some case of the bucket.
    Wrong,
}

/// What the merge needs to know of a stored report before reading it: its id, sender, class,
/// device fingerprint and device name (the collector keeps these in columns).
#[derive(Clone, Debug, PartialEq)]
pub struct Head {
    pub id: i64,
    pub sender: String,
    pub class: String,
    pub fingerprint: String,
    pub device: String,
}

impl Head {
    pub fn of(s: &Submission) -> Head {
        Head {
            id: s.id,
            sender: s.sender.clone(),
            class: s.report.device.class(),
            fingerprint: fingerprint(&s.report.device),
            device: s.report.device.name.clone(),
        }
    }
}

/// Merges crowd reports by the rules: `models` are the curated reports' cases, `registry` the
/// kernels this build has.
pub fn merge(
    submissions: &[Submission],
    models: &CaseModels,
    registry: &Registry,
    rules: &Rules,
) -> CrowdMerge {
    let heads: Vec<Head> = submissions.iter().map(Head::of).collect();
    let mut tally = Tally::new(models, registry, *rules);
    let counted = tally.select(&heads);
    for s in submissions.iter().filter(|s| counted.contains(&s.id)) {
        tally.add(s);
    }
    let mut out = tally.finish();
    out.reports = submissions.len();
    out
}

/// The merge, fed one report at a time (the collector's summary reads them from its database
/// one by one): `select` the reports that count from their heads, `add` each of them, `finish`.
#[derive(Debug)]
pub struct Tally<'a> {
    models: &'a CaseModels,
    registry: &'a Registry,
    rules: Rules,
    /// (class, family, bucket, scope) → variant → device fingerprint → one observation per
    /// sender.
    seen: BTreeMap<Key, BTreeMap<String, BTreeMap<String, Vec<Obs>>>>,
    names: HashMap<String, String>,
    out: CrowdMerge,
}

impl<'a> Tally<'a> {
    pub fn new(models: &'a CaseModels, registry: &'a Registry, rules: Rules) -> Self {
        Tally {
            models,
            registry,
            rules,
            seen: BTreeMap::new(),
            names: HashMap::new(),
            out: CrowdMerge::default(),
        }
    }

    /// The ids of the reports that count: per (device fingerprint, sender) the latest, and per
    /// (sender, class) only the first device that sender reported (one address cannot be
    /// several devices of one class). The others are set aside, with why.
    pub fn select(&mut self, heads: &[Head]) -> HashSet<i64> {
        let mut order: Vec<&Head> = heads.iter().collect();
        order.sort_by_key(|h| h.id);
        let mut device_of: HashMap<(&str, &str), &str> = HashMap::new();
        let mut latest: BTreeMap<(&str, &str), &Head> = BTreeMap::new();
        for h in order {
            let first = *device_of
                .entry((h.sender.as_str(), h.class.as_str()))
                .or_insert(h.fingerprint.as_str());
            if first != h.fingerprint {
                self.out.set_aside.push(SetAside {
                    id: h.id,
                    device: h.device.clone(),
                    what: "the report".into(),
                    why: format!(
                        "another device of class {} from a sender that already reported one \
                         (device {}): one device per sender and class counts",
                        h.class,
                        &first[..12.min(first.len())]
                    ),
                });
                continue;
            }
            if let Some(older) = latest.insert((h.fingerprint.as_str(), h.sender.as_str()), h) {
                self.out.set_aside.push(SetAside {
                    id: older.id,
                    device: older.device.clone(),
                    what: "the report".into(),
                    why: format!(
                        "superseded by report {} of the same device and sender",
                        h.id
                    ),
                });
            }
        }
        self.out.counted = latest.len();
        latest.values().map(|h| h.id).collect()
    }

    /// One report that counts (`select` said so).
    pub fn add(&mut self, s: &Submission) {
        let fp = fingerprint(&s.report.device);
        self.names
            .entry(fp.clone())
            .or_insert_with(|| s.report.device.name.clone());
        let observed = observations(
            s,
            self.models,
            self.registry,
            &self.rules,
            &mut self.out.set_aside,
        );
        for ((key, variant), obs) in observed {
            self.seen
                .entry(key)
                .or_default()
                .entry(variant)
                .or_default()
                .entry(fp.clone())
                .or_default()
                .push(obs);
        }
    }

    /// Sets a report aside that could not be read (a stored row that no longer validates).
    pub fn unreadable(&mut self, id: i64, why: String) {
        self.out.set_aside.push(SetAside {
            id,
            device: String::new(),
            what: "the report".into(),
            why,
        });
    }

    /// The picks, and what the crowd cannot decide yet.
    pub fn finish(mut self) -> CrowdMerge {
        let rules = self.rules;
        for ((class, family, bucket, scope), variants) in std::mem::take(&mut self.seen) {
            let mut candidates: Vec<(String, f64, Vec<Vote>)> = Vec::new();
            let (mut excluded, mut disputed, mut most) = (Vec::new(), Vec::new(), 0);
            for (variant, devices) in variants {
                let mut votes = Vec::new();
                let mut wrong = 0;
                for (fp, list) in devices {
                    let times: Vec<f64> = list
                        .iter()
                        .filter_map(|o| match o {
                            Obs::Time(ms) => Some(*ms),
                            Obs::Wrong => None,
                        })
                        .collect();
                    // A device is wrong for a variant when at least as many of its senders
                    // found it wrong as timed it.
                    if list.len() - times.len() >= times.len() {
                        wrong += 1;
                        continue;
                    }
                    votes.push(Vote {
                        fingerprint: fp.chars().take(12).collect(),
                        device: self.names.get(&fp).cloned().unwrap_or_default(),
                        ms: median(times),
                        senders: list.len(),
                    });
                }
                if wrong >= rules.quorum {
                    excluded.push(variant);
                    continue;
                }
                if wrong > 0 {
                    disputed.push((variant.clone(), wrong));
                }
                most = most.max(votes.len());
                if votes.len() >= rules.quorum {
                    let m = median(votes.iter().map(|v| v.ms).collect());
                    candidates.push((variant, m, votes));
                }
            }
            candidates.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            let runner_up = candidates.get(1).map(|(v, m, _)| (v.clone(), *m));
            match candidates.into_iter().next() {
                Some((variant, median_ms, votes)) => self.out.picks.push(CrowdPick {
                    class,
                    family,
                    bucket,
                    variant,
                    median_ms,
                    votes,
                    runner_up,
                    excluded,
                    disputed,
                }),
                None => self.out.unmet.push(Unmet {
                    class,
                    family,
                    bucket,
                    scope,
                    devices: most,
                }),
            }
        }
        self.out
    }
}

/// One report's observations per (key, variant): each result checked, a variant timed on
/// several cases of one bucket counted with its slowest, and wrong if any case was.
fn observations(
    s: &Submission,
    models: &CaseModels,
    registry: &Registry,
    rules: &Rules,
    aside: &mut Vec<SetAside>,
) -> BTreeMap<(Key, String), Obs> {
    let r = &s.report;
    let class = r.device.class();
    let mut offered: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut out: BTreeMap<(Key, String), Obs> = BTreeMap::new();
    for x in &r.results {
        let offered = offered.entry(x.family.as_str()).or_insert_with(|| {
            registry
                .supported(&x.family, &r.device)
                .map(|vs| vs.map(|v| v.name.as_str()).collect())
                .unwrap_or_default()
        });
        match check(r, x, offered, models, registry, rules) {
            Err(why) => aside.push(SetAside {
                id: s.id,
                device: r.device.name.clone(),
                what: format!("{} {} on {}", x.family, x.variant, x.case),
                why,
            }),
            Ok((bucket, obs)) => {
                let key = (
                    merge::key_of(&class, &x.family, &bucket, &x.variant),
                    x.variant.clone(),
                );
                let slot = out.entry(key).or_insert(obs);
                *slot = match (*slot, obs) {
                    (Obs::Time(a), Obs::Time(b)) => Obs::Time(a.max(b)),
                    _ => Obs::Wrong,
                };
            }
        }
    }
    out
}

/// One result against the rules: its bucket (the case's, as the curated reports measured it)
/// and what it says, or why it does not count.
fn check(
    r: &Report,
    x: &VariantResult,
    offered: &HashSet<&str>,
    models: &CaseModels,
    registry: &Registry,
    rules: &Rules,
) -> Result<(String, Obs), String> {
    if registry.variant(&x.family, &x.variant).is_err() {
        return Err(format!(
            "no variant `{}` of a family `{}` in this build's registry",
            x.variant, x.family
        ));
    }
    if !offered.contains(x.variant.as_str()) {
        return Err(
            "not offered to the report's own device profile (it lacks a feature or \
                    limit the variant needs)"
                .into(),
        );
    }
    let model = models.get(&x.case).ok_or_else(|| {
        "not a case the curated reports measured: its bytes and FLOPs are unknown".to_string()
    })?;
    if model.family != x.family {
        return Err(format!("the case is one of {}'s", model.family));
    }
    let software = r.device.is_software();
    if model.software != software {
        return Err(format!(
            "a {} campaign's case on a {} device: a campaign runs its own scale's cases",
            scale(model.software),
            scale(software)
        ));
    }
    if model.dtype == kiln::DType::F16 && !r.device.features.shader_f16 {
        return Err("an f16 case on a device without shader_f16".into());
    }
    if x.bucket != model.bucket {
        return Err(format!(
            "bucket `{}`, but the case's is `{}`",
            x.bucket, model.bucket
        ));
    }
    match (x.outcome, &x.timing) {
        (Outcome::Ok, Some(t)) => {
            // The family's own tolerance, never the report's.
            let tolerance = kiln::cases::campaign_tolerance(&x.family, model.dtype)
                .ok_or_else(|| format!("the family {} has no case table", x.family))?;
            if x.rel_l2.is_none_or(|e| e > tolerance) {
                return Ok((model.bucket.clone(), Obs::Wrong));
            }
            let ms = t.median_ms;
            let gb = model.bytes / ms / 1e6;
            let gflop = model.flops / ms / 1e6;
            let c = &r.ceilings;
            if gb > c.copy_gb_per_s * rules.margin {
                return Err(format!(
                    "implausible: {ms:.3e} ms moves {gb:.3e} GB/s, over {}× the device's copy \
                     ceiling of {:.3e} GB/s",
                    rules.margin, c.copy_gb_per_s
                ));
            }
            if gflop > c.fma_gflop_per_s * rules.margin {
                return Err(format!(
                    "implausible: {ms:.3e} ms does {gflop:.3e} GFLOP/s, over {}× the device's \
                     FMA ceiling of {:.3e} GFLOP/s",
                    rules.margin, c.fma_gflop_per_s
                ));
            }
            Ok((model.bucket.clone(), Obs::Time(ms)))
        }
        // Validation makes an ok result timed; anything else ran and was not right.
        _ => Ok((model.bucket.clone(), Obs::Wrong)),
    }
}

fn scale(software: bool) -> &'static str {
    if software { "software" } else { "hardware" }
}

/// The median; of an even count the upper of the two middle values (the slower: a promise the
/// class keeps). `values` is never empty here.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
