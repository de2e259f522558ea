//! kv_append's cases: a step's rows written into a cache that already holds some.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`: a copy is exact, but a report's tolerance must be
/// positive (as `copy`'s); the proof sets allow 0.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-7;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("kv_append");
    // [B, Hkv, n, Cap, len, D]: a prefill's rows and a decode step's, not multiples of a workgroup.
    let shapes: Vec<[usize; 6]> = if z.full {
        let [b, h, _, n] = z.attention[0];
        vec![
            [b, h + 1, n, 2 * n + 3, n - 1, 36],
            [b + 1, h, 1, n + 2, n, 128],
        ]
    } else {
        vec![[1, 8, 1, 4096, 4000, 128], [1, 8, 512, 4096, 0, 128]]
    };
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        for &[b, h, n, cap, len, d] in &shapes {
            let (k, ka) = inputs.pair(gpu, &[b, h, n, d], dtype)?;
            let (v, va) = inputs.pair(gpu, &[b, h, n, d], dtype)?;
            let (k0, mut kca) = inputs.pair(gpu, &[b, h, cap, d], dtype)?;
            let (v0, mut vca) = inputs.pair(gpu, &[b, h, cap, d], dtype)?;
            let kc = Tensor::uninit(gpu, &[b, h, cap, d], dtype)?;
            let full = Tensor::from_u32(gpu, &[1], &[cap as u32])?;
            let after = Tensor::from_u32(gpu, &[1], &[(len + n) as u32])?;
            let vc = Tensor::uninit(gpu, &[b, h, cap, d], dtype)?;
            super::cpu::cache_append(&mut kca, &ka, len)?;
            super::cpu::cache_append(&mut vca, &va, len)?;
            // The check poisons the caches; an append of their earlier contents at length 0 (the
            // selector's variant) restores them before the append under test, so the whole
            // caches are compared: the rows it must not touch too.
            cases.push(Case {
                family: "kv_append",
                fixed: vec![dtype_is(dtype)],
                name: format!(
                    "kv_append B{b} Hkv{h} n{n} into {len}/{cap} D{d} {}",
                    dtype.wgsl()
                ),
                tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
                flops: 0.0,
                bytes: 4.0 * (b * h * n * d) as f64 * dtype.size() as f64,
                outputs: vec![
                    values(&kc, &kca.data).named("k").exact_in(z),
                    values(&vc, &vca.data).named("v").exact_in(z),
                ],
                launch: Box::new(move |name| {
                    let (append, choice) = super::launch(&k, &v, &kc, &vc, &after, len, name)?;
                    let (restore, _) = super::launch(&k0, &v0, &kc, &vc, &full, 0, None)?;
                    Ok(Launches {
                        all: vec![restore, append],
                        timed: vec![1],
                        choice,
                    })
                }),
            });
        }
    }
    Ok(cases)
}
