//! Cutting K: a product of too few output tiles to fill the device is cut into slices whose
//! sum a second launch (`matmul_reduce`) adds, where measurement showed it pays.

use super::*;

/// How a product's K is cut across workgroups (`splits` = 1: not at all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub splits: usize,
    /// K elements per slice, a multiple of 32 (every K slice a tile stages divides it).
    pub k_split: usize,
}

impl Split {
    pub const NONE: Split = Split {
        splits: 1,
        k_split: usize::MAX,
    };

    /// `splits` slices of K (clamped to 1..=K/32), as equal as multiples of 32 allow.
    pub fn of_k(k: usize, splits: usize) -> Split {
        let splits = splits.clamp(1, k.div_ceil(32).max(1));
        if splits == 1 {
            return Split::NONE;
        }
        let k_split = k.div_ceil(splits).next_multiple_of(32);
        Split {
            splits: k.div_ceil(k_split),
            k_split,
        }
    }
}

/// The rule for cutting K (measured on the H200, kernels/perf/record-once-whole-models.md: a
/// product of few output tiles is bound by the length of its K loop, 26 µs for 17×384·384×1152 on
/// 18 workgroups): on a hardware GPU, an f32 product on the tiled or vec4 route whose tiles make
/// fewer than 128 workgroups is cut into enough K slices of at least 64 to make 128 (at most 16
/// slices), where that is three slices or more (two at K ≥ 2048; a power of two for the long-K
/// products); the slices go to a workspace that a second kernel adds in order, with the epilogue.
pub fn split_for(profile: &DeviceProfile, variant: &Variant, call: &Call) -> Result<Split> {
    let d = &call.dims;
    let design = Design::parse(variant)?;
    let (rows, cols) = (design.tile.max(1) as usize, design.tile_n.max(1) as usize);
    let base = d.batch * d.m.div_ceil(rows) * d.n.div_ceil(cols);
    let routes = matches!(design.route, Route::Tiled | Route::Vec4);
    let whole = profile.is_software() || call.epilogue.two_outputs();
    if whole || call.dtype != DType::F32 || !routes || base >= 128 {
        return Ok(Split::NONE);
    }
    let mut splits = 128usize.div_ceil(base).min(d.k / 64).min(16);
    let fewest = if long_k(call.dtype, d) {
        // A count of slices that divides K evenly: at [512, 1536] by K 2048, 3 slices took
        // 0.164 ms where 2 took 0.134 (H200, kernels/perf/embedding-under-cuda-graph.md).
        splits = 1 << splits.max(1).ilog2();
        2
    } else if d.k >= 2048 {
        // A smaller C at a K as long: [512, 512] by K 2048 took 0.056 ms in two slices and
        // 0.096 whole (H100, kernels/perf/mega-products-tall-tiles.md).
        2
    } else {
        // Below the long-K products a cut in two costs its sum's launch for what it saves:
        // [1024, 128] by [128, 384] took 17.1 µs cut in two and 13.8 whole, [212, 384] by
        // [384, 1536] 25.7 and 24.7 (H200, kernels/perf/split-sums-in-permutes.md).
        3
    };
    if splits < fewest {
        return Ok(Split::NONE);
    }
    Ok(Split::of_k(d.k, splits))
}

/// An f32 product with a large C (≥ 2¹⁹ outputs) and a long K (≥ 1536): on a hardware GPU it
/// keeps the largest tile and has K cut into a power of two of slices to fill the device.
pub(super) fn long_k(dtype: DType, d: &MatmulDims) -> bool {
    dtype == DType::F32 && d.m * d.n >= 1 << 19 && d.k >= 1536
}

/// A product's variant and how its K is cut: the named variant or the selector's, cut as
/// [`split_for`] says (or into `force` slices).
pub(super) fn decide(
    sel: &select::Selector<'_>,
    call: &Call,
    named: Option<&str>,
    force: Option<usize>,
) -> Result<(Choice, Split)> {
    let choice = choose(sel, call, named)?;
    let split = match force {
        Some(n) if !call.epilogue.two_outputs() => Split::of_k(call.dims.k, n),
        _ => split_for(sel.profile, &choice.variant, call)?,
    };
    Ok((choice, split))
}

/// The choices of the launches [`launch_split`] makes for `call`, from the call alone (a
/// plan-only run): the product's, then the sum's when K is cut. Under a cut the slices run the
/// chosen variant's plain form and its epilogue rides on the sum.
pub fn choices_for(sel: &select::Selector<'_>, call: &Call) -> Result<Vec<Choice>> {
    let (choice, split) = decide(sel, call, None, None)?;
    if split.splits == 1 {
        return Ok(vec![choice]);
    }
    let sum = crate::families::matmul_reduce::Call::sum(call.epilogue);
    Ok(vec![choice, sel.choose(&sum, None)?])
}
