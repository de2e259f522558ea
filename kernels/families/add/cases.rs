//! add's cases: equal shapes (the contiguous and vec4 forms) and a broadcast row.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-6;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("add");
    let (r, c) = z.rows;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        for (b_shape, what) in [(vec![r, c], "same shape"), (vec![c], "broadcast")] {
            let (a, aa) = inputs.pair(gpu, &[r, c], dtype)?;
            let (b, ba) = inputs.pair(gpu, &b_shape, dtype)?;
            let (o, y) = out(gpu, &[r, c], dtype, cpu::add(&aa, &ba)?.data)?;
            let nb = b_shape.iter().product::<usize>();
            cases.push(Case {
                family: "add",
                fixed: vec![dtype_is(dtype)],
                name: format!("add {r}x{c} + {b_shape:?} ({what}) {}", dtype.wgsl()),
                tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 2.4e-3]),
                flops: (r * c) as f64,
                bytes: (2 * r * c + nb) as f64 * dtype.size() as f64,
                outputs: vec![o],
                launch: Box::new(move |v| Ok(single(crate::families::add::launch(&a, &b, &y, v)?))),
            });
        }
    }
    Ok(cases)
}
