//! reduce_layernorm's cases: a split product's slices summed with the bias, the residual added
//! and the rows normalised, all three results checked, with and without a bias.
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
    let mut cases = Vec::new();
    for with_bias in [false, true] {
        let (c, s, y) = cpu::reduce_layernorm(&pa, with_bias.then_some(&ba), &ra, &ga, &bb, 1e-5)?;
        let (o_c, c) = out(gpu, &[rows, cols], f, c.data)?;
        let (o_s, s) = out(gpu, &[rows, cols], f, s.data)?;
        let (o_y, y) = out(gpu, &[rows, cols], f, y.data)?;
        let (partials, bias, r, g, b) = (
            partials.clone(),
            bias.clone(),
            r.clone(),
            g.clone(),
            b.clone(),
        );
        let with = if with_bias { " with a bias" } else { "" };
        cases.push(Case {
            family: "reduce_layernorm",
            fixed: vec![dtype_is(f), ("bias", Param::Bool(with_bias))],
            name: format!("reduce_layernorm {splits}x{rows}x{cols}{with} f32"),
            tolerance: tolerance(z, f, CAMPAIGN_TOLERANCE, [1.4e-6, 3e-3]),
            flops: (splits as f64 + 10.0) * rc,
            bytes: (splits as f64 + 5.0) * rc * 4.0,
            outputs: vec![
                o_c.named("c").exact_in(z),
                o_s.named("sum").exact_in(z),
                o_y.named("y"),
            ],
            launch: Box::new(move |v| {
                Ok(single(crate::families::reduce_layernorm::launch(
                    &partials,
                    with_bias.then_some(&bias),
                    &r,
                    &g,
                    &b,
                    [&c, &s, &y],
                    1e-5,
                    v,
                )?))
            }),
        });
    }
    Ok(cases)
}
