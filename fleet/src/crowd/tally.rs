//! The merge fed one report at a time: which reports count, each device's vote per variant,
//! the classes' ceilings, and the picks by quorum and median.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::checks::{Checks, Obs, Seen, observations};
use super::picks::{CrowdMerge, CrowdPick, Repeated, SetAside, Unmet, Verdict, Vote};
use super::rules::{CEILING_SPREAD, Rules, implausible, physical_limit};
use super::submission::{Digest, Head, Submission, fingerprint};
use crate::merge::Key;

/// A counted report's claimed ceilings.
#[derive(Clone, Debug)]
struct Claim {
    id: i64,
    device: String,
    /// The sender's device that claims it: a copied profile's claim is its sender's own.
    voter: Voter,
    device_type: String,
    copy: f64,
    fma: f64,
}

/// Who votes with a counted report: its sender's device (the profile's fingerprint and the
/// sender's hash), and whether another sender reported that profile first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Voter {
    fingerprint: String,
    sender: String,
    repeated: bool,
}

/// The merge, fed one report at a time (the collector's summary reads them from its database
/// one by one): `select` the reports that count from their heads, `add` each of them, `finish`.
#[derive(Debug)]
pub struct Tally<'c, 'a> {
    checks: &'c mut Checks<'a>,
    rules: Rules,
    /// (class, family, bucket, scope) → variant → voter (a sender's device) → its
    /// observations (one: the sender's latest report of the device).
    seen: BTreeMap<Key, BTreeMap<String, BTreeMap<Voter, Vec<Obs>>>>,
    /// The voter of each counted report (`select`).
    voters: HashMap<i64, Voter>,
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
            voters: HashMap::new(),
            names: HashMap::new(),
            claims: BTreeMap::new(),
            out: CrowdMerge::default(),
        }
    }

    /// The ids of the reports that count: per (device fingerprint, sender) the latest, and per
    /// (sender, class) only the first device that sender reported (one address cannot be
    /// several devices of one class). The others are set aside, with why.
    ///
    /// Each counted report votes as its sender's device: a profile (fingerprint) reported by
    /// several senders is one device per sender, never one device whose verdicts all of them
    /// decide together. A profile is anyone's to copy (every report's is in the export), so a
    /// copy votes only for the sender that sent it, as an invented profile would: it can neither
    /// outvote nor tie the sender that reported the profile first. Such profiles are listed
    /// (`CrowdMerge::repeated`) for the review.
    pub fn select(&mut self, heads: &[Head]) -> HashSet<i64> {
        let mut order: Vec<&Head> = heads.iter().collect();
        order.sort_by_key(|h| h.id);
        let mut device_of: HashMap<(&str, &str), &str> = HashMap::new();
        let mut latest: BTreeMap<(&str, &str), &Head> = BTreeMap::new();
        // Per fingerprint, its senders in the order of their first counted report.
        let mut senders_of: BTreeMap<&str, Vec<&Head>> = BTreeMap::new();
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
            let senders = senders_of.entry(h.fingerprint.as_str()).or_default();
            if !senders.iter().any(|first| first.sender == h.sender) {
                senders.push(h);
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
        for ((fp, sender), h) in &latest {
            let first = senders_of
                .get(fp)
                .and_then(|s| s.first())
                .is_none_or(|first| first.sender == *sender);
            self.voters.insert(
                h.id,
                Voter {
                    fingerprint: fp.to_string(),
                    sender: sender.to_string(),
                    repeated: !first,
                },
            );
        }
        for (fp, senders) in senders_of {
            let [first, others @ ..] = senders.as_slice() else {
                continue;
            };
            if others.is_empty() {
                continue;
            }
            self.out.repeated.push(Repeated {
                fingerprint: short(fp),
                device: first.device.clone(),
                class: first.class.clone(),
                first: (first.id, short_sender(&first.sender)),
                others: others
                    .iter()
                    .map(|h| (h.id, short_sender(&h.sender)))
                    .collect(),
            });
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
        // Every caller selects first; a report it did not select votes as a device of its own.
        let voter = self.voters.get(&id).cloned().unwrap_or_else(|| Voter {
            fingerprint: fp.clone(),
            sender: format!("report {id}"),
            repeated: false,
        });
        self.names
            .entry(fp.clone())
            .or_insert_with(|| r.device.name.clone());
        self.claims
            .entry(r.device.class())
            .or_default()
            .push(Claim {
                id,
                device: r.device.name.clone(),
                voter: voter.clone(),
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
                .entry(voter.clone())
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
            for (variant, voters) in variants {
                let mut votes = Vec::new();
                let (mut wrong, mut wrong_repeated) = (0, 0);
                for (voter, list) in voters {
                    let fp = &voter.fingerprint;
                    let (mut times, mut wrongs) = (Vec::new(), 0);
                    for o in list.iter().filter(|o| !dropped.contains(&o.id)) {
                        match o.kind {
                            Seen::Wrong => wrongs += 1,
                            Seen::Time { ms, bytes, flops } => {
                                match implausible(ms, bytes, flops, copy, fma, rules.margin) {
                                    None => times.push(ms),
                                    Some(why) => self.out.set_aside.push(SetAside {
                                        id: o.id,
                                        device: self.names.get(fp).cloned().unwrap_or_default(),
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
                    // A sender's device is wrong for a variant when its report found it wrong
                    // (with several reports, as often as it timed it).
                    if wrongs >= times.len() {
                        wrong += 1;
                        wrong_repeated += usize::from(voter.repeated);
                        continue;
                    }
                    votes.push(Vote {
                        fingerprint: short(fp),
                        device: self.names.get(fp).cloned().unwrap_or_default(),
                        ms: median(times),
                        sender: short_sender(&voter.sender),
                        repeated: voter.repeated,
                    });
                }
                let verdict = Verdict {
                    variant: variant.clone(),
                    wrong,
                    right: votes.len(),
                    wrong_repeated,
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
            let mut per_device: BTreeMap<&Voter, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
            for c in claims {
                let d = per_device.entry(&c.voter).or_default();
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

/// A fingerprint as the review and the summary show it: its first 12 hex digits.
fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(12).collect()
}

/// A sender as the review shows it: the first 8 hex digits of its salted hash (enough to tell
/// a class's senders apart; the whole hash is in the export).
fn short_sender(sender: &str) -> String {
    sender.chars().take(8).collect()
}

/// The median; of an even count the upper of the two middle values (the slower: a promise the
/// class keeps). `values` is never empty here.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
