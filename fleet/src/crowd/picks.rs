//! What the merge decides: the picks with their votes and verdicts, what the crowd cannot
//! decide yet, and what was set aside and why.

use serde::Serialize;

/// A report, or one result of it, that does not count, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetAside {
    pub id: i64,
    pub device: String,
    /// `the report`, or `matmul f32_x on matmul 256x256x256 f32`.
    pub what: String,
    pub why: String,
}

/// One sender's device's vote for a variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Vote {
    /// The first 12 hex digits of the device's fingerprint.
    pub fingerprint: String,
    pub device: String,
    /// Its time: the slowest case of the bucket in the sender's latest report of the device.
    pub ms: f64,
    /// The first 8 hex digits of the sender's hash.
    pub sender: String,
    /// Another sender reported this profile first: the vote is this sender's own, not that
    /// device's (a copied profile, or two machines alike).
    pub repeated: bool,
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

/// How many of a class's senders' devices found a variant wrong (or failed), and how many
/// timed it right.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub variant: String,
    pub wrong: usize,
    pub right: usize,
    /// Of the `wrong`, those whose profile another sender reported first.
    pub wrong_repeated: usize,
}

/// A device profile (fingerprint) that more than one sender reported: each sender's reports
/// are a device of that sender's, never votes on the first sender's device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Repeated {
    /// The first 12 hex digits of the fingerprint.
    pub fingerprint: String,
    pub device: String,
    pub class: String,
    /// The first report of it, and its sender (the first 8 hex digits of the hash).
    pub first: (i64, String),
    /// Each other sender's first report of it, and the sender.
    pub others: Vec<(i64, String)>,
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
    /// Profiles more than one sender reported.
    pub repeated: Vec<Repeated>,
    /// Reports read, and those that counted (the latest of each sender and device).
    pub reports: usize,
    pub counted: usize,
}
