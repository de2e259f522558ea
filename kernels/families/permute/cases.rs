//! permute's cases: the two orders the GPU path uses (Q, K and V into heads, and their
//! gradients back), on extents that are not multiples of any workgroup; in a proof also one
//! that moves every axis.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-7;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("permute");
    let [a, b, c] = z.swap;
    // [B, T, 3, H, d] → [3, B, H, T, d] and back; then every axis moved.
    let mut orders = vec![
        ([2, a, 3, 3, c], [2, 0, 3, 1]),
        ([3, 2, 3, a, c], [1, 3, 0, 2]),
    ];
    if z.full {
        orders.push(([3, 2, b.min(5), a, c], [3, 2, 1, 0]));
    }
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        for (shape, order) in &orders {
            let (shape, order) = (*shape, *order);
            let (x, xa) = inputs.pair(gpu, &shape, dtype)?;
            let want = cpu::permute(&xa, order)?;
            let (o, y) = out(gpu, &want.shape, dtype, want.data)?;
            cases.push(Case {
                family: "permute",
                fixed: vec![dtype_is(dtype)],
                name: format!("permute {shape:?} to {order:?} {}", dtype.wgsl()),
                tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
                flops: 0.0,
                bytes: 2.0 * xa.data.len() as f64 * dtype.size() as f64,
                outputs: vec![o],
                launch: Box::new(move |v| {
                    Ok(single(crate::families::permute::launch(&x, order, &y, v)?))
                }),
            });
        }
    }
    Ok(cases)
}
