//! gelu_backward's cases: dX = dY · gelu'(X).
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("gelu_backward");
    let n = z.elementwise;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let (x, xa) = inputs.pair(gpu, &[n], dtype)?;
        let (dy, dya) = inputs.pair(gpu, &[n], dtype)?;
        let (o, dx) = out(gpu, &[n], dtype, cpu::gelu_backward(&xa, &dya)?.data)?;
        cases.push(Case {
            family: "gelu_backward",
            fixed: vec![dtype_is(dtype)],
            name: format!("gelu_backward {n} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, 2e-6),
            flops: 30.0 * n as f64,
            bytes: 3.0 * n as f64 * dtype.size() as f64,
            outputs: vec![o],
            plan: Box::new(move |v| {
                Ok(single(crate::families::gelu_backward::plan(
                    &x, &dy, &dx, v,
                )?))
            }),
        });
    }
    Ok(cases)
}
