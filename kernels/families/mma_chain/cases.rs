//! mma_chain's cases: chains of cooperative multiply-adds, the matrix units' ceiling. Only an
//! adapter with cooperative matrices has variants; the others get no case.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`: f32 sums of `iters` equal products.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-4;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    if !gpu.profile().features.cooperative_matrix || !gpu.profile().features.shader_f16 {
        return Ok(Vec::new());
    }
    let mut inputs = Inputs::for_family("mma_chain");
    let (groups, iters) = z.mma;
    // Four equal copies of A and B (the kernels read copy k mod 4 at step k).
    let ab = inputs.data(512, DType::F16);
    let copies: Vec<f32> = (0..4).flat_map(|_| ab.iter().copied()).collect();
    let x = Tensor::from_slice(gpu, &[4, 512], &copies, DType::F16)?;
    let xa = Array::new(&[4, 512], copies)?;
    let want = cpu::mma_chain(&xa, iters, groups)?.data;
    let (o, y) = out(gpu, &[groups, 8, 4, 256], DType::F32, want)?;
    let fragments = (groups * 8 * 4) as f64;
    Ok(vec![Case {
        family: "mma_chain",
        fixed: crate::families::mma_chain::fixed(),
        name: format!("mma_chain {groups}x8x4 fragments × {iters} f16"),
        // f32 sums of equal products: the proof's few steps stay near f32's rounding.
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [1e-6, 3e-3]),
        flops: fragments * 2.0 * 4096.0 * f64::from(iters),
        bytes: fragments * 1024.0,
        outputs: vec![o],
        launch: Box::new(move |v| {
            Ok(single(crate::families::mma_chain::launch(
                &x, &y, iters, v,
            )?))
        }),
    }])
}
