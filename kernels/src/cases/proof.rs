//! The proof of a family: every variant the adapter offers, run on the family's
//! [`Scale::Proof`](super::Scale::Proof) cases against the CPU reference. A variant is proven
//! when at least two cases took it and each output of each was within its bound; the selector's
//! own pick must be right on every case too. A family the adapter offers nothing of is skipped,
//! never proven. `tests/every_variant.rs` runs it natively and the fleet page's module in the
//! browser (`site/tests/prove.mjs`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Scale, Scored, for_family};
use crate::Gpu;
use crate::error::{Error, Result};

/// What the proof of one family found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Proof {
    pub family: String,
    /// Every variant the adapter can run: its tier's core and experimental designs.
    pub offered: usize,
    /// How many of those its tier keeps experimental.
    pub experimental: usize,
    /// Variants that ran on at least two cases, all within tolerance.
    pub proven: usize,
    pub runs: usize,
    /// The largest error measured per kind of case (its name without sizes) and output, and
    /// that output's bound.
    pub worst: BTreeMap<String, (f64, f64)>,
    /// Why nothing was run, where the adapter offers no variant of the family: a skip, which
    /// the test reports as one, never a pass.
    pub skipped: Option<String>,
    /// `family/variant: why` for each variant not proven.
    pub failures: Vec<String>,
}

/// Runs every variant of `family` that the adapter can run (its tier's experimental designs
/// too) on the family's proof cases.
pub async fn prove_family(gpu: &Gpu, family: &str) -> Result<Proof> {
    let variants: Vec<_> = gpu
        .registry()
        .supported(family, gpu.profile())?
        .cloned()
        .collect();
    if variants.is_empty() {
        // Nothing this adapter can run (the cooperative-matrix ceiling on an adapter without
        // cooperative matrices): nothing proven, and said so.
        return Ok(Proof {
            family: family.to_string(),
            skipped: Some(format!("{} offers no {family} variant", gpu.profile().name)),
            ..Proof::default()
        });
    }
    let cases = for_family(gpu, family, Scale::Proof)?;
    if cases.is_empty() {
        return Err(Error::UnknownKernel(format!("{family} (no proof case)")));
    }
    let tier = gpu.profile().tier();
    let mut p = Proof {
        family: family.to_string(),
        offered: variants.len(),
        experimental: variants
            .iter()
            .filter(|v| v.experimental_on(tier).is_some())
            .count(),
        ..Proof::default()
    };
    for variant in &variants {
        let name = &variant.name;
        let mut took = 0;
        let mut bad = Vec::new();
        for case in cases.iter().filter(|c| variant.takes(&c.fixed)) {
            let launches = match case.launches(Some(name)) {
                Ok(launches) => launches,
                // The variant's route refuses this shape (whole fragments, equal shapes, …).
                Err(Error::Shape { .. }) => continue,
                Err(e) => {
                    bad.push(format!("{} failed to plan: {e}", case.name));
                    continue;
                }
            };
            took += 1;
            p.runs += 1;
            match case.check(gpu, &launches).await {
                Ok(scores) => {
                    for score in &scores {
                        let kind = match score.output {
                            "" => kind_of(&case.name),
                            o => format!("{} [{o}]", kind_of(&case.name)),
                        };
                        let worst = p.worst.entry(kind).or_insert((0.0, score.tolerance));
                        if score.err.is_finite() {
                            worst.0 = worst.0.max(score.err);
                        }
                        if !score.ok() {
                            bad.push(format!("{}: {}", case.name, score.describe()));
                        }
                    }
                }
                Err(e) => bad.push(format!("{} failed: {e}", case.name)),
            }
        }
        if took < 2 {
            bad.push(format!("only {took} proof cases take it"));
        }
        if bad.is_empty() {
            p.proven += 1;
        } else {
            p.failures
                .extend(bad.into_iter().map(|b| format!("{family}/{name}: {b}")));
        }
    }
    // The selector's own pick on every case (the tuned table's or the rule's), as a model
    // would call the op: it must plan and be right too.
    for case in &cases {
        let checked = match case.launches(None) {
            Ok(launches) => case
                .check(gpu, &launches)
                .await
                .map(|scores| (scores, launches)),
            Err(e) => Err(e),
        };
        match checked {
            Ok((scores, _)) if scores.iter().all(Scored::ok) => {}
            Ok((scores, launches)) => {
                let off: Vec<String> = scores
                    .iter()
                    .filter(|s| !s.ok())
                    .map(Scored::describe)
                    .collect();
                p.failures.push(format!(
                    "{}: the selector's pick {} is off: {}",
                    case.name,
                    launches.choice.variant.name,
                    off.join(", ")
                ))
            }
            Err(e) => p
                .failures
                .push(format!("{}: the selector's pick failed: {e}", case.name)),
        }
    }
    Ok(p)
}

/// A case's name without its sizes: `matmul 37x45x29 bias f32` → `matmul bias f32`.
fn kind_of(name: &str) -> String {
    name.split(' ')
        .filter(|w| !w.starts_with(|c: char| c.is_ascii_digit()))
        .filter(|w| {
            let sizes = |t: &str| t.split('/').all(|n| n.parse::<usize>().is_ok());
            !(w.starts_with(['B', 'H', 'N']) && sizes(&w[1..]))
        })
        .collect::<Vec<_>>()
        .join(" ")
}
