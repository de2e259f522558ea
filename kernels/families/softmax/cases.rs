//! softmax's cases: rows of scaled scores, plain and with a causal mask.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("softmax");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        for causal in [false, true] {
            let (x, xa) = inputs.pair(gpu, &[rows, cols], dtype)?;
            let want = cpu::softmax(&xa, causal, 0.5)?.data;
            let (o, y) = out(gpu, &[rows, cols], dtype, want)?;
            cases.push(Case {
                family: "softmax",
                fixed: vec![dtype_is(dtype), ("causal", Param::Bool(causal))],
                name: format!(
                    "softmax {rows}x{cols}{} {}",
                    if causal { " causal" } else { "" },
                    dtype.wgsl()
                ),
                tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [2.5e-6, 2.2e-3]),
                flops: 5.0 * rc,
                bytes: 2.0 * rc * dtype.size() as f64,
                outputs: vec![o],
                launch: Box::new(move |v| {
                    Ok(single(crate::families::softmax::launch(
                        &x, &y, causal, 0.5, v,
                    )?))
                }),
            });
        }
    }
    Ok(cases)
}
