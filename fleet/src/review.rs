//! The review step between crowd data and `kernels/tuned.json`: the table a merge of curated and
//! crowd reports would write, and what it would change and why, for a person to read before
//! anything is written (`fleet merge --from`, which writes only with `--write`).
//!
//! Curated picks decide their (class, family, bucket, scope) as `fleet merge` always has; a crowd
//! pick fills only a (class, family, bucket, scope) no curated report measured.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use kiln::{TunedEntry, TunedTable};

use crate::crowd::{CrowdMerge, CrowdPick, Repeated, Verdict};
use crate::merge::{self, Key, Pick};
use crate::text::one_line;

/// One entry the merge writes, against what the table held for its (class, family, bucket,
/// scope).
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub class: String,
    pub family: String,
    pub bucket: String,
    /// The variants the table had for it (none: the entry is new).
    pub was: Vec<String>,
    pub now: String,
    /// The evidence: the devices and the statistic behind it.
    pub why: String,
    /// Decided by crowd reports (else by curated ones).
    pub crowd: bool,
}

/// What a merge would write and why.
#[derive(Clone, Debug)]
pub struct Review {
    pub table: TunedTable,
    /// Entries added or changed.
    pub changes: Vec<Change>,
    /// Entries written as they were.
    pub unchanged: Vec<Change>,
    /// Crowd picks for a (class, family, bucket, scope) a curated report decides: not written.
    pub overruled: Vec<CrowdPick>,
    pub crowd: CrowdMerge,
    pub quorum: usize,
}

/// The review of merging `curated` picks and a `crowd` merge into `before`.
pub fn review(
    before: &TunedTable,
    curated: &[Pick],
    curated_source: &str,
    crowd: CrowdMerge,
    crowd_source: &str,
    quorum: usize,
) -> Review {
    let curated_keys: BTreeSet<Key> = curated
        .iter()
        .map(|p| merge::key_of(&p.class, &p.family, &p.bucket, &p.variant))
        .collect();
    let mut decided: Vec<(TunedEntry, String, bool)> = curated
        .iter()
        .map(|p| {
            let why = format!(
                "curated: slowest of {} device(s) {:.4} ms",
                p.devices, p.worst_ms
            );
            (merge::entry(p, curated_source), why, false)
        })
        .collect();
    let mut overruled = Vec::new();
    for p in &crowd.picks {
        let key = merge::key_of(&p.class, &p.family, &p.bucket, &p.variant);
        if curated_keys.contains(&key) {
            overruled.push(p.clone());
            continue;
        }
        let entry = TunedEntry {
            class: p.class.clone(),
            family: p.family.clone(),
            bucket: p.bucket.clone(),
            variant: p.variant.clone(),
            source: format!(
                "{crowd_source}; median of {} devices' medians {:.4} ms",
                p.votes.len(),
                p.median_ms
            ),
        };
        decided.push((entry, evidence(p), true));
    }
    let table = merge::replace(before, decided.iter().map(|(e, _, _)| e.clone()).collect());
    let mut was: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    for e in &before.entries {
        was.entry(merge::key(e))
            .or_default()
            .push(e.variant.clone());
    }
    let (mut changes, mut unchanged) = (Vec::new(), Vec::new());
    for (e, why, crowd) in decided {
        let before = was.get(&merge::key(&e)).cloned().unwrap_or_default();
        let same = before.len() == 1 && before[0] == e.variant;
        let change = Change {
            class: e.class,
            family: e.family,
            bucket: e.bucket,
            was: before,
            now: e.variant,
            why,
            crowd,
        };
        if same {
            unchanged.push(change);
        } else {
            changes.push(change);
        }
    }
    Review {
        table,
        changes,
        unchanged,
        overruled,
        crowd,
        quorum,
    }
}

/// A crowd pick's evidence on one line.
fn evidence(p: &CrowdPick) -> String {
    let votes: Vec<String> = p
        .votes
        .iter()
        .map(|v| {
            format!(
                "{} {} {:.4} ms{}",
                v.fingerprint,
                one_line(&v.device),
                v.ms,
                if v.repeated {
                    format!(
                        " (sender {}: a profile another sender reported first)",
                        v.sender
                    )
                } else {
                    String::new()
                }
            )
        })
        .collect();
    let mut s = format!(
        "crowd: median {:.4} ms of {} devices' medians [{}]",
        p.median_ms,
        p.votes.len(),
        votes.join("; ")
    );
    if let Some((v, ms)) = &p.runner_up {
        let _ = write!(s, "; runner-up {v} {ms:.4} ms");
    }
    for v in &p.excluded {
        let _ = write!(
            s,
            "; {} excluded: wrong on {} device(s){}, right on {}",
            v.variant,
            v.wrong,
            repeated(v),
            v.right
        );
    }
    for v in &p.disputed {
        let _ = write!(
            s,
            "; {} disputed: wrong on {} device(s){}, right on {}, too few to exclude it",
            v.variant,
            v.wrong,
            repeated(v),
            v.right
        );
    }
    s
}

/// How many of a verdict's `wrong` devices came with a profile another sender reported first.
fn repeated(v: &Verdict) -> String {
    if v.wrong_repeated == 0 {
        String::new()
    } else {
        format!(
            " ({} of them a profile another sender reported first)",
            v.wrong_repeated
        )
    }
}

/// Most profiles reported by several senders listed (the rest are counted).
const MAX_REPEATED_LINES: usize = 20;

/// The profiles more than one sender reported, each with its first report and the others.
fn repeated_profiles(s: &mut String, repeated: &[Repeated]) {
    if repeated.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "profiles reported by more than one sender: {} (each sender counts as a device of its own; \
         none votes on another sender's device)",
        repeated.len()
    );
    for r in repeated.iter().take(MAX_REPEATED_LINES) {
        let others: Vec<String> = r
            .others
            .iter()
            .map(|(id, sender)| format!("report {id} from sender {sender}"))
            .collect();
        let _ = writeln!(
            s,
            "  {} {} ({}): first report {} from sender {}; also {}",
            r.fingerprint,
            one_line(&r.device),
            r.class,
            r.first.0,
            r.first.1,
            others.join(", ")
        );
    }
    if repeated.len() > MAX_REPEATED_LINES {
        let _ = writeln!(s, "  … and {} more", repeated.len() - MAX_REPEATED_LINES);
    }
}

/// Most set-aside lines printed (the rest are counted).
const MAX_ASIDE_LINES: usize = 20;

impl Review {
    /// The review as text: the crowd's reports, every entry added or changed with its
    /// evidence, crowd picks a curated one overrules, what the crowd cannot decide yet, and
    /// what was set aside and why.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let c = &self.crowd;
        let _ = writeln!(
            s,
            "crowd: {} report(s) read, {} counted (the latest per device and sender), quorum {} devices",
            c.reports, c.counted, self.quorum
        );
        for x in &self.changes {
            let verb = if x.was.is_empty() {
                "add".to_string()
            } else {
                format!("change {} →", x.was.join(", "))
            };
            let _ = writeln!(
                s,
                "  {verb} {} {} {} {}: {}",
                x.class,
                x.family,
                display_bucket(&x.bucket),
                x.now,
                x.why
            );
        }
        let _ = writeln!(
            s,
            "  {} entr{} unchanged ({} decided by the crowd)",
            self.unchanged.len(),
            if self.unchanged.len() == 1 {
                "y"
            } else {
                "ies"
            },
            self.unchanged.iter().filter(|x| x.crowd).count()
        );
        for p in &self.overruled {
            let _ = writeln!(
                s,
                "  keep the curated pick for {} {} {}: the crowd's {} is not written ({})",
                p.class,
                p.family,
                display_bucket(&p.bucket),
                p.variant,
                evidence(p)
            );
        }
        for u in &c.unmet {
            let _ = writeln!(
                s,
                "  undecided {} {} {} {}: {} of the {} devices a pick needs",
                u.class,
                u.family,
                display_bucket(&u.bucket),
                u.scope,
                u.devices,
                self.quorum
            );
        }
        repeated_profiles(&mut s, &c.repeated);
        if !c.set_aside.is_empty() {
            let _ = writeln!(s, "set aside: {}", c.set_aside.len());
            for a in c.set_aside.iter().take(MAX_ASIDE_LINES) {
                let _ = writeln!(
                    s,
                    "  report {} ({}): {}: {}",
                    a.id,
                    one_line(&a.device),
                    one_line(&a.what),
                    one_line(&a.why)
                );
            }
            if c.set_aside.len() > MAX_ASIDE_LINES {
                let _ = writeln!(s, "  … and {} more", c.set_aside.len() - MAX_ASIDE_LINES);
            }
        }
        s
    }
}

fn display_bucket(b: &str) -> &str {
    if b.is_empty() { "(any)" } else { b }
}
