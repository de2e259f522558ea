//! gelu's cases: the exact (erf) gelu of every element.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("gelu");
    let n = z.elementwise;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let (x, xa) = inputs.pair(gpu, &[n], dtype)?;
        let (o, y) = out(gpu, &[n], dtype, cpu::gelu(&xa)?.data)?;
        cases.push(Case {
            family: "gelu",
            fixed: vec![dtype_is(dtype)],
            name: format!("gelu {n} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, 1e-6),
            flops: 20.0 * n as f64,
            bytes: 2.0 * n as f64 * dtype.size() as f64,
            outputs: vec![o],
            plan: Box::new(move |v| Ok(single(crate::families::gelu::plan(&x, &y, v)?))),
        });
    }
    Ok(cases)
}
