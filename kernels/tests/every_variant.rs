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

/// Proves every offered variant of `family`; fails listing every variant that was wrong,
/// failed, or that fewer than two cases took.
fn prove(family: &str) {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap_or_else(|e| {
        panic!(
            "GPU tests need an adapter (Mesa lavapipe in CI: apt install mesa-vulkan-drivers): {e}"
        )
    });
    let adapter = gpu.profile().name.clone();
    let p = pollster::block_on(cases::prove_family(&gpu, family)).unwrap();
    println!(
        "every variant: {family} on {adapter}: {} of {} offered ({} of them experimental) proven in {} runs",
        p.proven, p.offered, p.experimental, p.runs
    );
    for (kind, (err, tol)) in &p.worst {
        println!("  {kind}: worst relative L2 {err:.2e} (allowed {tol:.0e})");
    }
    // A failure is one variant at one case: a variant wrong at two shapes is listed twice.
    assert!(
        p.failures.is_empty(),
        "{} of {} offered variants of {family} not proven ({} failures):\n  {}",
        p.offered - p.proven,
        p.offered,
        p.failures.len(),
        p.failures.join("\n  ")
    );
    assert_eq!(p.proven, p.offered);
}

/// Every family has a case table, so the test the build script writes for it proves something.
#[test]
fn every_family_has_a_proof() {
    let registry = kiln::Registry::builtin().unwrap();
    for contract in registry.contracts() {
        assert!(
            cases::families().any(|f| f == contract.family),
            "{} has no case table (families/{0}/cases.rs)",
            contract.family
        );
    }
}

// One test per family folder, `every_offered_<family>_variant_matches_the_cpu`, written by the
// build script: a new family is proven without being named here.
include!(concat!(env!("OUT_DIR"), "/every_variant_tests.rs"));
