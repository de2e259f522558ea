//! transpose's cases: the last two axes of a batch of matrices swapped.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-7;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("transpose");
    let [b, r, c] = z.transpose;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let (x, xa) = inputs.pair(gpu, &[b, r, c], dtype)?;
        let (o, y) = out(gpu, &[b, c, r], dtype, cpu::transpose(&xa)?.data)?;
        cases.push(Case {
            family: "transpose",
            fixed: vec![dtype_is(dtype)],
            name: format!("transpose {b}x{r}x{c} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
            flops: 0.0,
            bytes: 2.0 * (b * r * c) as f64 * dtype.size() as f64,
            outputs: vec![o],
            launch: Box::new(move |v| Ok(single(crate::families::transpose::launch(&x, &y, v)?))),
        });
    }
    Ok(cases)
}
