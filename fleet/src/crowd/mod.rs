//! Crowd reports (from the collector) in, picks out, by rules that a few bad actors cannot move
//! (`fleet/SCHEMA.md`, "Merging crowd reports"):
//!
//! - a result counts only when its variant exists, is offered to the report's own profile, its
//!   case is one the curated reports measured at the profile's scale, its error is within the
//!   family's own tolerance, and its time is possible on its class's ceilings (the median of
//!   the class's devices' claims, never above what any device of its type can do); a report
//!   whose claimed ceilings sit far off its class's is set aside whole;
//! - a sender votes once per class, with the device it reported first there (a fingerprint of
//!   the report's `device` fields) and its latest report of it; a profile another sender
//!   reported first is still this sender's own vote, never a vote on that sender's device;
//! - a variant is picked only when a quorum of devices timed it, by the median of their medians;
//!   it is excluded when a quorum found it wrong or failed and they outnumber the devices that
//!   found it right, never where a curated report of the class found it right;
//! - `skipped` entries are unmeasured: they never count.
//!
//! The rules' thresholds are in `rules`, what a report brings in `submission`, the per-result
//! checks in `checks`, the merge itself in `tally`, its result in `picks`.

mod checks;
mod picks;
mod rules;
mod submission;
mod tally;

pub use checks::Checks;
pub use picks::{CrowdMerge, CrowdPick, Repeated, SetAside, Unmet, Verdict, Vote};
pub use rules::{CEILING_SPREAD, DEFAULT_MARGIN, DEFAULT_QUORUM, Rules};
pub use submission::{DIGEST_VERSION, Digest, DigestResult, Head, Submission, fingerprint};
pub use tally::Tally;

use kiln::Registry;

use crate::case_models::CaseModels;

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
