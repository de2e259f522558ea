//! swap_axes's cases: [a, b, c] → [b, a, c], and in a proof also [o, a, b, c] → [o, b, a, c].
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-7;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("swap_axes");
    let [a, b, c] = z.swap;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let (x, xa) = inputs.pair(gpu, &[a, b, c], dtype)?;
        let (o, y) = out(gpu, &[b, a, c], dtype, cpu::swap_axes01(&xa)?.data)?;
        cases.push(Case {
            family: "swap_axes",
            fixed: vec![dtype_is(dtype)],
            name: format!("swap_axes {a}x{b}x{c} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
            flops: 0.0,
            bytes: 2.0 * (a * b * c) as f64 * dtype.size() as f64,
            outputs: vec![o],
            launch: Box::new(move |v| Ok(single(crate::families::swap_axes::launch(&x, &y, v)?))),
        });
        if z.full {
            let (x, xa) = inputs.pair(gpu, &[2, a, b, c], dtype)?;
            let (o, y) = out(gpu, &[2, b, a, c], dtype, cpu::swap_axes12(&xa)?.data)?;
            cases.push(Case {
                family: "swap_axes",
                fixed: vec![dtype_is(dtype)],
                name: format!("swap_axes12 2x{a}x{b}x{c} {}", dtype.wgsl()),
                tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
                flops: 0.0,
                bytes: 4.0 * (a * b * c) as f64 * dtype.size() as f64,
                outputs: vec![o],
                launch: Box::new(move |v| {
                    Ok(single(crate::families::swap_axes::plan12(&x, &y, v)?))
                }),
            });
        }
    }
    Ok(cases)
}
