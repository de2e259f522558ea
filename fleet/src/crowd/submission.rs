//! A stored crowd report and what the merge reads of it: the columns the collector keeps beside
//! it (`Head`), its digest, and the fingerprint that makes reports of one device one vote.

use kiln::DeviceProfile;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::report::{Outcome, Report};

/// One stored crowd report: the collector's id (its arrival order), who sent it (a salted hash
/// of the address, never the address) and the report.
#[derive(Clone, Debug)]
pub struct Submission {
    pub id: i64,
    pub sender: String,
    pub report: Report,
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
