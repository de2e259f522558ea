//! The selector's picks for the sample calls (`kiln::explain`) on every stored profile, pinned
//! in each family's `snapshot.txt` (`[picks]`): the rules' branches for hardware GPUs,
//! cooperative matrices and browsers run here without those devices, and a change to a rule or
//! the tuned table shows up as a diff to review. `KILN_UPDATE_SNAPSHOTS=1` rewrites the sections.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use kiln::Registry;
use kiln::device::stored_profiles;
use kiln::select::{Selector, TunedTable};

/// Each family's picks on every stored profile, as its `[picks]` section reads.
fn current() -> std::collections::BTreeMap<String, String> {
    let registry = Registry::builtin().unwrap();
    let tuned = TunedTable::builtin().unwrap();
    let mut out = std::collections::BTreeMap::<String, String>::new();
    for (name, profile) in stored_profiles().unwrap() {
        for p in kiln::explain::sample_picks(&Selector::new(&registry, &profile, &tuned)) {
            let section = out.entry(p.family.clone()).or_default();
            section.push_str(&format!("{name:<20} {}\n", p.line()));
        }
    }
    out
}

#[test]
fn the_picks_for_sample_calls_on_every_stored_profile_are_as_pinned() {
    let now = current();
    let registry = Registry::builtin().unwrap();
    for contract in registry.contracts() {
        let section = now.get(&contract.family).cloned().unwrap_or_default();
        common::check_family_snapshot(&contract.family, "picks", &section);
    }
    // Every stored profile gets a variant for the plain f32 products.
    for line in now["matmul"].lines().filter(|l| l.contains(" f32 ")) {
        assert!(!line.contains("→ none"), "{line}");
    }
}

/// The rule at the Mega step's products on the stored H200 profile (the H100 is of its class):
/// an f32 product of ≥ 2¹⁹ outputs and K ≥ 1536 keeps the 128 tile and has K cut into a power
/// of two of slices (3 slices of 2048 measured slower than 2 and 8 on the H200,
/// kernels/perf/embedding-under-cuda-graph.md); a smaller one at K 2048 is cut in two (whole 1.7×
/// slower on the H100, kernels/perf/mega-products-tall-tiles.md); a short K is not cut, and one
/// to two rounds of 128 square 128 tiles become 128 × 64 tiles with K slices of 8 (H100,
/// kernels/perf/mega-products-tall-tiles.md).
#[test]
fn the_mega_steps_products_take_the_measured_tiles_and_cuts() {
    for (m, n, k, a_trans, tile, splits) in [
        (512, 1536, 2048, true, "_r8_", 2),
        (2048, 512, 2048, false, "_r8_", 2),
        (2048, 512, 1536, false, "_r8_", 2),
        (512, 512, 2048, true, "_r4_", 2),
        (2048, 1536, 512, false, "_r8x4_k8_", 1),
        (2048, 2048, 512, false, "_r8_", 1),
    ] {
        let (variant, cut) = h200_product(m, n, k, a_trans, false);
        let what = format!("{m}x{n}x{k}: {variant} cut {cut}");
        assert!(variant.contains(tile), "{what}");
        assert_eq!(cut, splits, "{what}");
    }
}

/// Below the long-K products and K 2048 the H200 cuts K only where that makes three slices or
/// more: a cut in two cost its sum's launch for what it saved
/// (kernels/perf/split-sums-in-permutes.md). The Medium step's forward Q/K/V product stays whole;
/// its weight gradients and its input gradients through the MLP and the Q/K/V projection are cut
/// (their sums go into the norm's backward: `reduce_layernorm_backward`).
#[test]
fn small_products_on_the_h200_are_cut_in_three_or_more_or_not_at_all() {
    for (m, n, k, a_trans, b_trans, splits) in [
        (1024, 384, 128, false, false, 1),
        (1024, 128, 128, false, true, 1),
        (212, 1536, 384, false, false, 1),
        (1024, 128, 512, false, true, 4),
        (1024, 128, 384, false, true, 4),
        (17, 1152, 384, false, false, 6),
        (128, 384, 1024, true, false, 11),
    ] {
        let (variant, cut) = h200_product(m, n, k, a_trans, b_trans);
        assert_eq!(cut, splits, "{m}x{n}x{k}: {variant} cut {cut}");
    }
}

/// The Medium step's products whose next op `kiln::fusion` writes from the product's launch
/// (the MLP's gelu and gelu backward, Q/K/V and dO into heads) are whole on the H200 and their
/// designs have the two-output epilogues: the step loses those sixteen launches there too.
#[test]
fn the_medium_steps_products_on_the_h200_take_the_ops_after_them() {
    use kiln::ops::matmul::{Design, Epilogue};
    let registry = Registry::builtin().unwrap();
    // u = h2 · W1 [1024, 512] by K 128; dg = dx · W2ᵀ, W2 stored [512, 128]; QKV = h1 · Wqkv
    // [1024, 384] by K 128; dO = dx · Woᵀ [1024, 128] by K 128.
    for (m, n, k, b_trans, epilogue) in [
        (1024, 512, 128, false, Epilogue::BiasAndGelu),
        (1024, 512, 128, true, Epilogue::BiasAndGeluGrad),
        (1024, 384, 128, false, Epilogue::BiasAndHeads),
        (1024, 128, 128, true, Epilogue::BiasAndHeads),
    ] {
        let (variant, cut) = h200_product(m, n, k, false, b_trans);
        assert_eq!(cut, 1, "{variant}");
        let plain = registry
            .variants("matmul")
            .unwrap()
            .iter()
            .find(|v| v.name == variant)
            .unwrap();
        let sibling = registry.variants("matmul").unwrap().iter().find(|v| {
            let (a, b) = (Design::parse(v).unwrap(), Design::parse(plain).unwrap());
            a.epilogue == epilogue
                && Design {
                    epilogue: b.epilogue,
                    ..a
                } == b
        });
        assert!(
            sibling.is_some(),
            "{variant} has no {} form",
            epilogue.name()
        );
    }
}

/// The variant an f32 product of M × N × K (A or B read transposed) gets on the stored H200
/// profile, and the slices its K is cut in.
fn h200_product(m: usize, n: usize, k: usize, a_trans: bool, b_trans: bool) -> (String, usize) {
    use kiln::DType;
    use kiln::ops::matmul::{Call, choose, split_for};
    let registry = Registry::builtin().unwrap();
    let tuned = TunedTable::builtin().unwrap();
    let (_, profile) = stored_profiles()
        .unwrap()
        .into_iter()
        .find(|(name, _)| *name == "nvidia-h200")
        .unwrap();
    let sel = Selector::new(&registry, &profile, &tuned);
    let mut call = Call::new(DType::F32, 1, m, n, k);
    call.layout.a_trans = a_trans;
    call.layout.b_trans = b_trans;
    let choice = choose(&sel, &call, None).unwrap();
    let split = split_for(&profile, &choice.variant, &call).unwrap();
    (choice.variant.name.clone(), split.splits)
}
