//! Every variant the adapter in hand is offered (its tier's experimental designs too) runs against
//! its CPU reference
//! (`kiln::cases::prove_family`): each family's proof cases (`Scale::Proof`: two sets of small
//! shapes that are not tile multiples, outputs NaN-poisoned first) on every variant
//! `Registry::supported` lists for the profile. A variant passes when at least two cases took it
//! and each was within the case's tolerance, and the selector's own pick is right on every case.
//! On lavapipe that is every lavapipe-offered variant; `scripts/bench-gpu.sh`'s check stage runs
//! this file on the H200.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kiln::cases;
use kiln::{Gpu, GpuOptions};

/// Proves every offered variant of `families`; fails listing every variant that was wrong,
/// failed, or that fewer than two cases took.
fn prove(families: &[&str]) {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap_or_else(|e| {
        panic!(
            "GPU tests need an adapter (Mesa lavapipe in CI: apt install mesa-vulkan-drivers): {e}"
        )
    });
    let adapter = gpu.profile().name.clone();
    let mut failures = Vec::new();
    let (mut offered, mut proven) = (0, 0);
    for &family in families {
        let p = pollster::block_on(cases::prove_family(&gpu, family)).unwrap();
        println!(
            "every variant: {family} on {adapter}: {} of {} offered ({} of them experimental) proven in {} runs",
            p.proven, p.offered, p.experimental, p.runs
        );
        for (kind, (err, tol)) in &p.worst {
            println!("  {kind}: worst relative L2 {err:.2e} (allowed {tol:.0e})");
        }
        offered += p.offered;
        proven += p.proven;
        failures.extend(p.failures);
    }
    println!(
        "every variant: {proven} of {offered} offered variants of {families:?} proven on {adapter}"
    );
    assert!(
        failures.is_empty(),
        "{} of {offered} offered variants not proven:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
    assert_eq!(proven, offered);
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
    "mma_chain",
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
