//! Crowd reports (from the collector) in, picks out, by rules that a few bad actors cannot move
//! (`fleet/SCHEMA.md`, "Merging crowd reports"):
//!
//! - a result counts only when its variant exists, is offered to the report's own profile, its
//!   case is one the curated reports measured at the profile's scale, its error is within the
//!   family's own tolerance, and its time is possible on its class's ceilings (the median of
//!   the class's devices' claims, never above what any device of its type can do); a report
//!   whose claimed ceilings sit far off its class's is set aside whole;
//! - a device (a fingerprint of the report's `device` fields) votes once per variant, with the
//!   median of its reports (one per sender: the latest), and a sender brings one device per class;
//! - a variant is picked only when a quorum of devices timed it, by the median of their medians;
//!   it is excluded when a quorum found it wrong or failed and they outnumber the devices that
//!   found it right, never where a curated report of the class found it right;
//! - `skipped` entries are unmeasured: they never count.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use kiln::{DeviceProfile, Registry};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::case_models::CaseModels;
use crate::merge::{self, Key};
use crate::report::{Outcome, Report};

/// Devices that must agree before the crowd decides a (class, family, bucket, scope).
pub const DEFAULT_QUORUM: usize = 3;
/// How far past the device's own ceilings a time may go before it is impossible: caches can
/// beat the copy kernel's DRAM bandwidth, and matrix units (f16 cooperative matrices) run at up
/// to ~16× the f32 FMA peak, of which the FMA chain measures about half. The curated reports'
/// fastest results reach 1× (lavapipe's copy) and 0.36× (the H200's).
pub const DEFAULT_MARGIN: f64 = 32.0;
/// How far a report's claimed ceilings may sit from its class's median (either way) before the
/// report is set aside: devices of one class differ (a laptop's and a desktop's GPU of one
/// vendor and feature set, about 4.5× in copy bandwidth), a forged ceiling by far more.
pub const CEILING_SPREAD: f64 = 16.0;

/// The most any device of a type can do, whatever its reports claim: the class's ceilings are
/// clamped to these (copy GB/s read + written, FMA GFLOP/s). The H200 measures 4,300 and about
/// 33,000; these leave room for hardware years ahead, not for 1e30.
fn physical_limit(device_type: &str) -> (f64, f64) {
    match device_type {
        "cpu" => (2_000.0, 50_000.0),
        _ => (30_000.0, 1_000_000.0),
    }
}

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
    /// Variants a quorum of devices found wrong or failed, more of them than found them
    /// right: never picked.
    pub excluded: Vec<Verdict>,
    /// Variants some devices found wrong or failed, too few to exclude them: for the
    /// reviewer's eye.
    pub disputed: Vec<Verdict>,
}

/// How many of a class's distinct devices found a variant wrong (or failed), and how many
/// timed it right.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub variant: String,
    pub wrong: usize,
    pub right: usize,
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

/// What the merge reads of a report, and nothing else: its device profile (the class, the
/// fingerprint and the variants offered to it), its claimed ceilings and, of each result, what
/// the rules check. The collector stores one beside each report, so that merging again never
/// parses the whole report (the H200's is 187 KB; its digest 53 KB, and none of a report's
/// validation). `Tally::add` merges a report through its digest: the two give the same merge
/// by construction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Digest {
    /// [`DIGEST_VERSION`]: a digest of another version is not read (its report is).
    pub v: u32,
    pub device: DeviceProfile,
    pub copy_gb_per_s: f64,
    pub fma_gflop_per_s: f64,
    pub results: Vec<DigestResult>,
}

/// The version of [`Digest`] this build writes and reads.
pub const DIGEST_VERSION: u32 = 1;

/// One result as the merge reads it: family, variant, case, bucket, outcome, relative L2 error
/// and the timing's median (present exactly when the report has a timing); written as an array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DigestResult(
    pub String,
    pub String,
    pub String,
    pub String,
    pub Outcome,
    pub Option<f64>,
    pub Option<f64>,
);

impl Digest {
    pub fn of(report: &Report) -> Digest {
        Digest {
            v: DIGEST_VERSION,
            device: report.device.clone(),
            copy_gb_per_s: report.ceilings.copy_gb_per_s,
            fma_gflop_per_s: report.ceilings.fma_gflop_per_s,
            results: report
                .results
                .iter()
                .map(|x| {
                    DigestResult(
                        x.family.clone(),
                        x.variant.clone(),
                        x.case.clone(),
                        x.bucket.clone(),
                        x.outcome,
                        x.rel_l2,
                        x.timing.as_ref().map(|t| t.median_ms),
                    )
                })
                .collect(),
        }
    }

    /// A stored digest: `None` when it is not one this build reads (another version, or not a
    /// digest at all), and the report itself is to be read instead.
    pub fn parse(text: &str) -> Option<Digest> {
        serde_json::from_str::<Digest>(text)
            .ok()
            .filter(|d| d.v == DIGEST_VERSION)
    }
}

/// What one report says about one variant in one bucket.
#[derive(Clone, Copy, Debug)]
struct Obs {
    /// The report's id: a report set aside later takes its observations with it.
    id: i64,
    kind: Seen,
}

#[derive(Clone, Copy, Debug)]
enum Seen {
    /// Timed: the slowest median over the bucket's cases, with the bytes and FLOPs of that
    /// case (the curated model's), for the plausibility check against the class's ceilings.
    Time { ms: f64, bytes: f64, flops: f64 },
    /// Wrong or failed on some case of the bucket.
    Wrong,
}

/// A counted report's claimed ceilings.
#[derive(Clone, Debug)]
struct Claim {
    id: i64,
    device: String,
    fingerprint: String,
    device_type: String,
    copy: f64,
    fma: f64,
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
    let mut checks = Checks::new(models, registry);
    let mut tally = Tally::new(&mut checks, *rules);
    let counted = tally.select(&heads);
    for s in submissions.iter().filter(|s| counted.contains(&s.id)) {
        tally.add(s);
    }
    let mut out = tally.finish();
    out.reports = submissions.len();
    out
}

/// The rules' per-result checks that depend only on this build (its registry and the curated
/// cases) and on what of a device decides the variants it is offered, remembered across reports
/// and merges: merging a class then costs its reports' results, not lookups in the registry.
/// The collector keeps one for its life; what it remembers is bounded by the build's variants
/// and, for the offered sets, by [`Checks::OFFERED`].
#[derive(Debug)]
pub struct Checks<'a> {
    models: &'a CaseModels,
    registry: &'a Registry,
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

/// The merge, fed one report at a time (the collector's summary reads them from its database
/// one by one): `select` the reports that count from their heads, `add` each of them, `finish`.
#[derive(Debug)]
pub struct Tally<'c, 'a> {
    checks: &'c mut Checks<'a>,
    rules: Rules,
    /// (class, family, bucket, scope) → variant → device fingerprint → one observation per
    /// sender.
    seen: BTreeMap<Key, BTreeMap<String, BTreeMap<String, Vec<Obs>>>>,
    names: HashMap<String, String>,
    /// Class → every counted report's claimed ceilings.
    claims: BTreeMap<String, Vec<Claim>>,
    out: CrowdMerge,
}

impl<'c, 'a> Tally<'c, 'a> {
    pub fn new(checks: &'c mut Checks<'a>, rules: Rules) -> Self {
        Tally {
            checks,
            rules,
            seen: BTreeMap::new(),
            names: HashMap::new(),
            claims: BTreeMap::new(),
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
        self.add_digest(s.id, &Digest::of(&s.report));
    }

    /// One report that counts, by its digest (`select` said so): what `add` does with the
    /// report.
    pub fn add_digest(&mut self, id: i64, r: &Digest) {
        let fp = fingerprint(&r.device);
        self.names
            .entry(fp.clone())
            .or_insert_with(|| r.device.name.clone());
        self.claims
            .entry(r.device.class())
            .or_default()
            .push(Claim {
                id,
                device: r.device.name.clone(),
                fingerprint: fp.clone(),
                device_type: r.device.device_type.clone(),
                copy: r.copy_gb_per_s,
                fma: r.fma_gflop_per_s,
            });
        let observed = observations(id, r, self.checks, &mut self.out.set_aside);
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
        let (ceilings, dropped) = self.class_ceilings();
        for ((class, family, bucket, scope), variants) in std::mem::take(&mut self.seen) {
            let Some(&(copy, fma)) = ceilings.get(&class) else {
                continue;
            };
            let mut candidates: Vec<(String, f64, Vec<Vote>)> = Vec::new();
            let (mut excluded, mut disputed, mut most) = (Vec::new(), Vec::new(), 0);
            for (variant, devices) in variants {
                let mut votes = Vec::new();
                let mut wrong = 0;
                for (fp, list) in devices {
                    let (mut times, mut wrongs) = (Vec::new(), 0);
                    for o in list.iter().filter(|o| !dropped.contains(&o.id)) {
                        match o.kind {
                            Seen::Wrong => wrongs += 1,
                            Seen::Time { ms, bytes, flops } => {
                                match implausible(ms, bytes, flops, copy, fma, rules.margin) {
                                    None => times.push(ms),
                                    Some(why) => self.out.set_aside.push(SetAside {
                                        id: o.id,
                                        device: self.names.get(&fp).cloned().unwrap_or_default(),
                                        what: format!("{family} {variant} in bucket {bucket}"),
                                        why,
                                    }),
                                }
                            }
                        }
                    }
                    if times.is_empty() && wrongs == 0 {
                        continue;
                    }
                    // A device is wrong for a variant when at least as many of its senders
                    // found it wrong as timed it.
                    if wrongs >= times.len() {
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
                let verdict = Verdict {
                    variant: variant.clone(),
                    wrong,
                    right: votes.len(),
                };
                // A `wrong` needs a quorum and a majority of the class's devices that ran the
                // variant, and never overrules a curated report of the class.
                let curated = self.checks.models.right_by_class().contains(&(
                    class.clone(),
                    family.clone(),
                    variant.clone(),
                ));
                if wrong >= rules.quorum && wrong > votes.len() && !curated {
                    excluded.push(verdict);
                    continue;
                }
                if wrong > 0 {
                    disputed.push(verdict);
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

    /// Each class's ceilings: the median over its devices of each device's median claim,
    /// clamped to what a device of the type can do; and the reports set aside whole because
    /// their claims sit more than `CEILING_SPREAD` from the class's (with why).
    fn class_ceilings(&mut self) -> (BTreeMap<String, (f64, f64)>, HashSet<i64>) {
        let mut ceilings = BTreeMap::new();
        let mut dropped = HashSet::new();
        for (class, claims) in &self.claims {
            let mut per_device: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
            for c in claims {
                let d = per_device.entry(c.fingerprint.as_str()).or_default();
                d.0.push(c.copy);
                d.1.push(c.fma);
            }
            let (copies, fmas): (Vec<f64>, Vec<f64>) = per_device
                .into_values()
                .map(|(c, f)| (median(c), median(f)))
                .unzip();
            let (max_copy, max_fma) =
                physical_limit(claims.first().map_or("", |c| c.device_type.as_str()));
            let copy = median(copies).min(max_copy);
            let fma = median(fmas).min(max_fma);
            for c in claims {
                let off = |claim: f64, class: f64| {
                    claim > class * CEILING_SPREAD || claim * CEILING_SPREAD < class
                };
                if off(c.copy, copy) || off(c.fma, fma) {
                    dropped.insert(c.id);
                    self.out.set_aside.push(SetAside {
                        id: c.id,
                        device: c.device.clone(),
                        what: "the report".into(),
                        why: format!(
                            "its ceilings (copy {:.3e} GB/s, FMA {:.3e} GFLOP/s) sit more than \
                             {CEILING_SPREAD}× from its class's ({copy:.3e} GB/s, {fma:.3e} \
                             GFLOP/s: the median of the class's devices, at most what a \
                             device of its type can do)",
                            c.copy, c.fma
                        ),
                    });
                }
            }
            ceilings.insert(class.clone(), (copy, fma));
        }
        (ceilings, dropped)
    }
}

/// Why a time is impossible on a class's ceilings (`margin` past them), or `None`.
fn implausible(
    ms: f64,
    bytes: f64,
    flops: f64,
    copy: f64,
    fma: f64,
    margin: f64,
) -> Option<String> {
    let gb = bytes / ms / 1e6;
    let gflop = flops / ms / 1e6;
    if gb > copy * margin {
        return Some(format!(
            "implausible: {ms:.3e} ms moves {gb:.3e} GB/s, over {margin}× the class's copy \
             ceiling of {copy:.3e} GB/s"
        ));
    }
    if gflop > fma * margin {
        return Some(format!(
            "implausible: {ms:.3e} ms does {gflop:.3e} GFLOP/s, over {margin}× the class's FMA \
             ceiling of {fma:.3e} GFLOP/s"
        ));
    }
    None
}

/// One report's observations per (key, variant): each result checked, a variant timed on
/// several cases of one bucket counted with its slowest, and wrong if any case was.
fn observations(
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

/// The median; of an even count the upper of the two middle values (the slower: a promise the
/// class keeps). `values` is never empty here.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
