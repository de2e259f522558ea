//! What the project's own campaigns say about each fixed case: its family, bucket, dtype, scale,
//! and the bytes and FLOPs its timed dispatches move and do. A crowd result is checked against
//! these rather than against what its own report says (a report's rates are its own claim).
//!
//! The case tables build their inputs on a GPU, so the model is read back from the curated
//! reports: a campaign writes `gb_per_s = bytes / median` and `gflop_per_s = flops / median`
//! from the case table's model, which every campaign of one scale shares.

use std::collections::{BTreeMap, HashSet};

use kiln::DType;

use crate::report::{Outcome, Report};

/// One fixed case, as the curated reports measured it.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseModel {
    pub family: String,
    pub bucket: String,
    pub dtype: DType,
    /// A software adapter's case (`Scale::Software`: smaller shapes), else a hardware one.
    pub software: bool,
    /// Bytes the timed dispatches move at the fewest, and their FLOPs (0 for pure moves).
    pub bytes: f64,
    pub flops: f64,
}

/// The cases the curated reports measured, by case name.
#[derive(Clone, Debug, Default)]
pub struct CaseModels {
    cases: BTreeMap<String, CaseModel>,
    /// (class, family, variant) that some curated device of the class ran right.
    right: HashSet<(String, String, String)>,
}

impl CaseModels {
    /// The models of every case an `ok` result of `curated` timed.
    pub fn from_curated(curated: &[Report]) -> CaseModels {
        let mut cases = BTreeMap::new();
        let mut right = HashSet::new();
        for report in curated {
            let software = report.device.is_software();
            let class = report.device.class();
            for r in &report.results {
                if r.outcome == Outcome::Ok {
                    right.insert((class.clone(), r.family.clone(), r.variant.clone()));
                }
                let (Outcome::Ok, Some(t), Some(gb), Some(dtype)) =
                    (r.outcome, &r.timing, r.gb_per_s, dtype_of(&r.case))
                else {
                    continue;
                };
                cases.entry(r.case.clone()).or_insert_with(|| CaseModel {
                    family: r.family.clone(),
                    bucket: r.bucket.clone(),
                    dtype,
                    software,
                    bytes: gb * t.median_ms * 1e6,
                    flops: r.gflop_per_s.unwrap_or(0.0) * t.median_ms * 1e6,
                });
            }
        }
        CaseModels { cases, right }
    }

    /// (class, family, variant) that some curated device of the class ran right: a crowd's
    /// `wrong` never excludes one of these.
    pub fn right_by_class(&self) -> &HashSet<(String, String, String)> {
        &self.right
    }

    /// Whether every result of `report` whose case the curated reports measured names that
    /// case's family and bucket (the campaign writes the bucket its case's call falls in, so
    /// another is a claim about another call); the first that does not, as the reason. A case
    /// no curated report measured cannot be checked here (a newer build's, say): the merge
    /// never counts it.
    pub fn check_cases(&self, report: &Report) -> Result<(), String> {
        for (i, x) in report.results.iter().enumerate() {
            let Some(model) = self.cases.get(&x.case) else {
                continue;
            };
            if model.family != x.family {
                return Err(format!(
                    "results[{i}].family: `{}`, but the case `{}` is one of {}'s",
                    x.family, x.case, model.family
                ));
            }
            if model.bucket != x.bucket {
                return Err(format!(
                    "results[{i}].bucket: `{}` is not the bucket of the case `{}` (`{}`)",
                    x.bucket, x.case, model.bucket
                ));
            }
        }
        Ok(())
    }

    pub fn get(&self, case: &str) -> Option<&CaseModel> {
        self.cases.get(case)
    }

    pub fn len(&self) -> usize {
        self.cases.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }
}

/// A case's dtype: the last word of its name (`matmul 256x256x256 f32`).
pub fn dtype_of(case: &str) -> Option<DType> {
    match case.rsplit(' ').next() {
        Some("f32") => Some(DType::F32),
        Some("f16") => Some(DType::F16),
        _ => None,
    }
}
