//! reduce_layernorm's cases: a split product's slices summed with the bias, the residual added
//! and the rows normalised, all three results checked.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("reduce_layernorm");
    let (rows, cols) = z.rows;
    let splits = z.reduce[0];
    let rc = (rows * cols) as f64;
    let f = DType::F32;
    let (partials, pa) = inputs.pair(gpu, &[splits, rows * cols], f)?;
    let pa = Array::new(&[splits, rows, cols], pa.data)?;
    let (bias, ba) = inputs.pair(gpu, &[cols], f)?;
    let (r, ra) = inputs.pair(gpu, &[rows, cols], f)?;
    let (g, ga) = inputs.pair(gpu, &[cols], f)?;
    let (b, bb) = inputs.pair(gpu, &[cols], f)?;
    let (c, s, y) = cpu::reduce_layernorm(&pa, &ba, &ra, &ga, &bb, 1e-5)?;
    let (o_c, c) = out(gpu, &[rows, cols], f, c.data)?;
    let (o_s, s) = out(gpu, &[rows, cols], f, s.data)?;
    let (o_y, y) = out(gpu, &[rows, cols], f, y.data)?;
    Ok(vec![Case {
        family: "reduce_layernorm",
        fixed: vec![dtype_is(f)],
        name: format!("reduce_layernorm {splits}x{rows}x{cols} f32"),
        tolerance: tolerance(z, f, CAMPAIGN_TOLERANCE, 4e-7),
        flops: (splits as f64 + 10.0) * rc,
        bytes: (splits as f64 + 5.0) * rc * 4.0,
        outputs: vec![o_c, o_s, o_y],
        plan: Box::new(move |v| {
            Ok(single(crate::families::reduce_layernorm::plan(
                &partials,
                &bias,
                &r,
                &g,
                &b,
                [&c, &s, &y],
                1e-5,
                v,
            )?))
        }),
    }])
}
