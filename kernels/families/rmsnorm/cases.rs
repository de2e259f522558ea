//! rmsnorm's cases: rows divided by their root mean square and scaled by gamma.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("rmsnorm");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let (x, xa) = inputs.pair(gpu, &[rows, cols], dtype)?;
        let (g, ga) = inputs.pair(gpu, &[cols], dtype)?;
        let want = super::cpu::rmsnorm(&xa, &ga, 1e-5)?.data;
        let (o, y) = out(gpu, &[rows, cols], dtype, want)?;
        cases.push(Case {
            family: "rmsnorm",
            fixed: vec![dtype_is(dtype)],
            name: format!("rmsnorm {rows}x{cols} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [1.9e-6, 2.1e-3]),
            // A square and an add per element for the sum, two products for Y.
            flops: 4.0 * rc,
            bytes: 2.0 * rc * dtype.size() as f64,
            outputs: vec![o],
            launch: Box::new(move |v| Ok(single(super::launch(&x, &g, &y, 1e-5, v)?))),
        });
    }
    Ok(cases)
}
