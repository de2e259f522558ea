//! Every variant the adapter in hand is offered runs against its CPU reference: each family's
//! proof cases (`kiln::cases`, `Scale::Proof`: two sets of small shapes that are not tile
//! multiples, outputs NaN-poisoned first) on every variant `Registry::supported` lists for the
//! profile. A variant passes when at least two cases took it and each was within the case's
//! tolerance. On lavapipe that is every lavapipe-offered variant; `scripts/bench-gpu.sh`'s
//! check stage runs this file on the H200.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use kiln::cases::{self, Scale};
use kiln::{Gpu, GpuOptions};

/// What the proof of one family found.
#[derive(Default)]
struct Proof {
    offered: usize,
    /// Variants that ran on at least two cases, all within tolerance.
    proven: usize,
    runs: usize,
    /// The largest error measured per case kind (the case name without its shape), and the
    /// tolerance allowed.
    worst: BTreeMap<String, (f64, f64)>,
    failures: Vec<String>,
}

/// Runs every offered variant of `families` on their proof cases; fails listing every variant
/// that was wrong, failed, or that fewer than two cases took.
fn prove(families: &[&str]) {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap_or_else(|e| {
        panic!(
            "GPU tests need an adapter (Mesa lavapipe in CI: apt install mesa-vulkan-drivers): {e}"
        )
    });
    let profile = gpu.profile().clone();
    let mut failures = Vec::new();
    let (mut offered, mut proven) = (0, 0);
    for &family in families {
        let p = prove_family(&gpu, family);
        println!(
            "every variant: {family} on {}: {} of {} offered proven in {} runs",
            profile.name, p.proven, p.offered, p.runs
        );
        for (kind, (err, tol)) in &p.worst {
            println!("  {kind}: worst relative L2 {err:.2e} (allowed {tol:.0e})");
        }
        offered += p.offered;
        proven += p.proven;
        failures.extend(p.failures);
    }
    println!(
        "every variant: {proven} of {offered} offered variants of {families:?} proven on {}",
        profile.name
    );
    assert!(
        failures.is_empty(),
        "{} of {offered} offered variants not proven:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(proven, offered);
}

fn prove_family(gpu: &Gpu, family: &str) -> Proof {
    let cases = cases::for_family(gpu, family, Scale::Proof).unwrap();
    assert!(!cases.is_empty(), "{family} has no proof case");
    let variants: Vec<String> = gpu
        .registry()
        .supported(family, gpu.profile())
        .unwrap()
        .map(|v| v.name.clone())
        .collect();
    let mut p = Proof {
        offered: variants.len(),
        ..Proof::default()
    };
    for name in &variants {
        let variant = gpu.registry().variant(family, name).unwrap();
        let mut took = 0;
        let mut bad = Vec::new();
        for case in cases.iter().filter(|c| variant.takes(&c.fixed)) {
            let planned = match case.plan(name) {
                Ok(planned) => planned,
                // The variant's route refuses this shape (whole fragments, equal shapes…).
                Err(kiln::Error::Shape { .. }) => continue,
                Err(e) => {
                    bad.push(format!("{} failed to plan: {e}", case.name));
                    continue;
                }
            };
            took += 1;
            p.runs += 1;
            match pollster::block_on(case.check(gpu, &planned)) {
                Ok(err) => {
                    let kind = kind_of(&case.name);
                    let worst = p.worst.entry(kind).or_insert((0.0, case.tolerance));
                    if err.is_finite() {
                        worst.0 = worst.0.max(err);
                    }
                    if err.is_nan() || err > case.tolerance {
                        bad.push(format!(
                            "{}: relative L2 {err:.3e} over {:.0e}",
                            case.name, case.tolerance
                        ));
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
                .extend(bad.into_iter().map(|b| format!("  {family}/{name}: {b}")));
        }
    }
    p
}

/// A case's name without its sizes: `matmul 37x45x29 bias f32` → `matmul bias f32`.
fn kind_of(name: &str) -> String {
    name.split(' ')
        .filter(|w| !w.starts_with(|c: char| c.is_ascii_digit()))
        .filter(|w| !(w.starts_with(['B', 'H', 'N']) && w[1..].parse::<usize>().is_ok()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every family with a case table is proven by one of the tests below.
#[test]
fn every_family_has_a_proof() {
    let listed: Vec<&str> = [MATMUL, FLASH_FORWARD, FLASH_BACKWARD, OTHERS].concat();
    let registry = kiln::Registry::builtin().unwrap();
    for contract in registry.contracts() {
        assert!(
            cases::families().any(|f| f == contract.family),
            "{} has no case table (families/{0}/cases.rs)",
            contract.family
        );
        assert!(
            listed.contains(&contract.family.as_str()),
            "{} is proven by no test in every_variant.rs",
            contract.family
        );
    }
}

const MATMUL: &[&str] = &["matmul", "matmul_reduce"];
const FLASH_FORWARD: &[&str] = &["flash_fwd"];
const FLASH_BACKWARD: &[&str] = &[
    "attention_delta",
    "flash_bwd_dq",
    "flash_bwd_dkdv",
    "flash_bwd_fused",
];
const OTHERS: &[&str] = &[
    "adamw",
    "add",
    "copy",
    "cross_entropy",
    "embedding",
    "embedding_backward",
    "fma_chain",
    "gelu",
    "gelu_backward",
    "layernorm",
    "layernorm_backward",
    "layernorm_params_backward",
    "rgba8",
    "sinusoid",
    "softmax",
    "softmax_backward",
    "swap_axes",
    "transpose",
];

#[test]
fn every_offered_matmul_variant_matches_the_cpu() {
    prove(MATMUL);
}

#[test]
fn every_offered_flash_forward_variant_matches_the_cpu() {
    prove(FLASH_FORWARD);
}

#[test]
fn every_offered_flash_backward_variant_matches_the_cpu() {
    prove(FLASH_BACKWARD);
}

#[test]
fn every_offered_variant_of_the_other_families_matches_the_cpu() {
    prove(OTHERS);
}
