//! reduce_layernorm_backward's cases: a split product's slices summed into dY and the layer
//! norm's input gradient taken from it, dY, dX and the row statistics checked, with a
//! residual's gradient added and without.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("reduce_layernorm_backward");
    let (rows, cols) = z.rows;
    let splits = z.reduce[0];
    let rc = (rows * cols) as f64;
    let f = DType::F32;
    let (partials, pa) = inputs.pair(gpu, &[splits, rows * cols], f)?;
    let pa = Array::new(&[splits, rows, cols], pa.data)?;
    let (x, xa) = inputs.pair(gpu, &[rows, cols], f)?;
    let (g, ga) = inputs.pair(gpu, &[cols], f)?;
    let (acc, acca) = inputs.pair(gpu, &[rows, cols], f)?;
    let mut cases = Vec::new();
    for accumulate in [false, true] {
        let added = accumulate.then_some(&acca);
        let (dy, dx) = cpu::reduce_layernorm_backward(&pa, &xa, &ga, added, 1e-5)?;
        let (o_dy, dy) = out(gpu, &[rows, cols], f, dy.data)?;
        let (o_dx, dx) = out(gpu, &[rows, cols], f, dx.data)?;
        // Each row's mean and rstd, which the dgamma/dbeta launch reads next.
        let want: Vec<f32> = xa
            .data
            .chunks(cols)
            .flat_map(|row| {
                let (mean, rstd) = crate::families::layernorm_backward::cpu::stats(row, 1e-5);
                [mean, rstd]
            })
            .collect();
        let (o_stats, stats) = out(gpu, &[rows, 2], f, want)?;
        let (partials, x, g, acc) = (partials.clone(), x.clone(), g.clone(), acc.clone());
        let with = if accumulate { " + a gradient" } else { "" };
        cases.push(Case {
            family: "reduce_layernorm_backward",
            fixed: vec![dtype_is(f), ("accumulate", Param::Bool(accumulate))],
            name: format!("reduce_layernorm_backward {splits}x{rows}x{cols}{with} f32"),
            tolerance: tolerance(z, f, CAMPAIGN_TOLERANCE, [1.7e-6, 3e-3]),
            flops: (splits as f64 + 13.0) * rc,
            bytes: (splits as f64 + 5.0) * rc * 4.0,
            outputs: vec![
                o_dy.named("dy").exact_in(z),
                o_dx.named("dx"),
                // The statistics' own bound: 10× their worst on lavapipe (1.5e-7).
                o_stats
                    .named("stats")
                    .within(proof_bound(z, f, [1.5e-6, 3e-3])),
            ],
            launch: Box::new(move |v| {
                Ok(single(crate::families::reduce_layernorm_backward::launch(
                    &partials,
                    &x,
                    &g,
                    accumulate.then_some(&acc),
                    [&dy, &dx, &stats],
                    1e-5,
                    v,
                )?))
            }),
        });
    }
    Ok(cases)
}
