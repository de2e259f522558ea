//! Every variant the adapter in hand is offered (its tier's experimental designs too) runs against
//! its CPU reference
//! (`kiln::cases::prove_family`): each family's proof cases (`Scale::Proof`: two sets of small
//! shapes that are not tile multiples, outputs NaN-poisoned first) on every variant
//! `Registry::supported` lists for the profile. A variant passes when at least two cases took it
//! and each output of each was within its bound, and the selector's own pick is right on every
//! case. A family the adapter offers nothing of is a skip the test runner counts, not a pass.
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
    if let Some(why) = &p.skipped {
        // Nothing to prove here is a skip the runner counts, never a pass.
        assert_eq!(p.offered, 0, "{family}: skipped with variants offered");
        kiln_testing::skip(why);
        return;
    }
    // One block per family (the tests run in parallel): the count, then the worst error of
    // each kind of case and output beside its bound.
    let mut block = format!(
        "every variant: {family} on {adapter}: {} of {} offered ({} of them experimental) proven in {} runs",
        p.proven, p.offered, p.experimental, p.runs
    );
    for (kind, (err, tol)) in &p.worst {
        block.push_str(&format!(
            "\n  {kind}: worst relative L2 {err:.2e} (allowed {tol:.1e})"
        ));
    }
    println!("{block}");
    // A failure is one variant at one case: a variant wrong at two shapes is listed twice.
    assert!(
        p.failures.is_empty(),
        "{} of {} offered variants of {family} not proven ({} failures):\n  {}",
        p.offered - p.proven,
        p.offered,
        p.failures.len(),
        p.failures.join("\n  ")
    );
    assert!(p.offered > 0 && p.proven == p.offered);
}

/// A family the adapter offers nothing of (the cooperative-matrix ceiling on lavapipe) is a
/// skip, never a proof: nothing proven of nothing offered is not a pass.
#[test]
fn a_family_with_nothing_offered_is_skipped_not_proven() {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    let registry = gpu.registry();
    let empty = registry.contracts().map(|c| c.family.clone()).find(|f| {
        let mut offered = registry.supported(f, gpu.profile()).unwrap();
        offered.next().is_none()
    });
    let Some(family) = empty else {
        kiln_testing::skip(&format!("{} offers every family", gpu.profile().name));
        return;
    };
    let p = pollster::block_on(cases::prove_family(&gpu, &family)).unwrap();
    assert!(p.skipped.is_some(), "{family}: {p:?}");
    assert_eq!((p.offered, p.proven, p.runs), (0, 0, 0), "{family}");
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
