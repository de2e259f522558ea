//! rmsnorm_backward's cases: dX, and dgamma from the layer norm's parameter kernel that the plan
//! chains (run and checked too, so the mean-0 statistics are proven; only this family's
//! dispatch, the first, is timed).
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("rmsnorm_backward");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let (x, xa) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let (g, ga) = inputs.pair(gpu, &[cols], DType::F32)?;
    let (dy, dya) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let (want_dx, want_dg) = super::cpu::rmsnorm_backward(&xa, &ga, &dya, 1e-5)?;
    let (o_dx, dx) = out(gpu, &[rows, cols], DType::F32, want_dx.data)?;
    let (o_dg, dg) = out(gpu, &[cols], DType::F32, want_dg.data)?;
    Ok(vec![Case {
        family: "rmsnorm_backward",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("rmsnorm_backward {rows}x{cols} f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [2.0e-6, 3e-3]),
        // Per element: the square, g, g · x and the two adds of the sums; g again and three
        // operations for dX.
        flops: 10.0 * rc,
        // The timed dispatch reads X and dY and writes dX.
        bytes: 3.0 * rc * 4.0,
        outputs: vec![o_dx.named("dx"), o_dg.named("dg")],
        launch: Box::new(move |v| {
            let named = super::BackwardVariants {
                rows: v,
                params: None,
            };
            let plan = super::launch(&x, &g, &dy, &dx, &dg, 1e-5, named)?;
            let choice = plan.choices[0].clone();
            Ok(Launches {
                all: plan.dispatches,
                timed: vec![0],
                choice,
            })
        }),
    }])
}
