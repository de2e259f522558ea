//! layernorm's cases: rows normalised with gain and bias; in a proof also the residual form
//! (x + r normalised, the sum written too).
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("layernorm");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let residuals: &[bool] = if z.full { &[false, true] } else { &[false] };
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        for &residual in residuals {
            let (x, xa) = inputs.pair(gpu, &[rows, cols], dtype)?;
            let (r, ra) = inputs.pair(gpu, &[rows, cols], dtype)?;
            let (g, ga) = inputs.pair(gpu, &[cols], dtype)?;
            let (b, ba) = inputs.pair(gpu, &[cols], dtype)?;
            let (outputs, sum, y) = if residual {
                let (s, y) = cpu::add_layernorm(&xa, &ra, &ga, &ba, 1e-5)?;
                let (o_s, sum) = out(gpu, &[rows, cols], dtype, s.data)?;
                let (o_y, y) = out(gpu, &[rows, cols], dtype, y.data)?;
                (vec![o_s, o_y], Some(sum), y)
            } else {
                let want = cpu::layernorm(&xa, &ga, &ba, 1e-5)?.data;
                let (o, y) = out(gpu, &[rows, cols], dtype, want)?;
                (vec![o], None, y)
            };
            cases.push(Case {
                family: "layernorm",
                fixed: vec![dtype_is(dtype), ("residual", Param::Bool(residual))],
                name: format!(
                    "layernorm {rows}x{cols}{} {}",
                    if residual { " residual" } else { "" },
                    dtype.wgsl()
                ),
                tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [1.5e-6, 2.3e-3]),
                flops: 8.0 * rc,
                bytes: if residual { 4.0 } else { 2.0 } * rc * dtype.size() as f64,
                outputs,
                launch: Box::new(move |v| {
                    let residual = sum.as_ref().map(|sum| (&r, sum));
                    Ok(single(crate::families::layernorm::launch_with(
                        &x, residual, &g, &b, &y, 1e-5, v,
                    )?))
                }),
            });
        }
    }
    Ok(cases)
}
