//! fma_chain's cases: a chain of fused multiply-adds per element, the arithmetic ceiling.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("fma_chain");
    let ((n, iters), a, b) = (z.fma, 0.999f32, 0.001f32);
    let (x, xa) = inputs.pair(gpu, &[n], DType::F32)?;
    let want = cpu::fma_chain(&xa, iters, a, b)?.data;
    let (o, y) = out(gpu, &[n], DType::F32, want)?;
    Ok(vec![Case {
        family: "fma_chain",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("fma_chain {n}×{iters} f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [3.4e-6, 3e-3]),
        flops: 2.0 * n as f64 * f64::from(iters),
        bytes: 2.0 * n as f64 * 4.0,
        outputs: vec![o],
        launch: Box::new(move |v| {
            Ok(single(crate::families::fma_chain::launch(
                &x, &y, iters, a, b, v,
            )?))
        }),
    }])
}
