//! sinusoid's cases: rows of sin and cos waves sampled along a line.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-3;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("sinusoid");
    let (waves, n) = z.sinusoid;
    let freq = inputs.data(waves, DType::F32);
    let phase = inputs.data(waves, DType::F32);
    let want = cpu::sinusoid(&freq, &phase, n, 0.0, 0.01)?.data;
    let f = Tensor::from_slice(gpu, &[waves], &freq, DType::F32)?;
    let ph = Tensor::from_slice(gpu, &[waves], &phase, DType::F32)?;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let (o, y) = out(gpu, &[2 * waves, n], dtype, want.clone())?;
        let (f, ph) = (f.clone(), ph.clone());
        cases.push(Case {
            family: "sinusoid",
            fixed: vec![dtype_is(dtype)],
            name: format!("sinusoid {waves}x{n} {}", dtype.wgsl()),
            // WGSL lets sin and cos be off by 2⁻¹¹ absolute, and SwiftShader uses that room:
            // 10× its 1.07e-4 (lavapipe 2.5e-8, the H200 1.6e-7); f16 10× lavapipe's 1.7e-4.
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [1.1e-3, 1.7e-3]),
            flops: 2.0 * (2 * waves * n) as f64,
            bytes: (2 * waves * n) as f64 * dtype.size() as f64,
            outputs: vec![o],
            launch: Box::new(move |v| {
                Ok(single(crate::families::sinusoid::launch(
                    &f, &ph, &y, 0.0, 0.01, v,
                )?))
            }),
        });
    }
    Ok(cases)
}
