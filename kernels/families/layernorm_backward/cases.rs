//! layernorm_backward's cases: dX and the row statistics (the first dispatch of the layer
//! norm's backward plan, which is timed).
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut cases = backward_cases(gpu, z, 0)?;
    cases.push(accumulate_case(gpu, z)?);
    Ok(cases)
}

/// dX with a residual's gradient added as it is written (the `accumulate` variants).
fn accumulate_case(gpu: &Gpu, z: &Sizes) -> Result<Case> {
    let mut inputs = Inputs::for_family("layernorm_backward");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let (x, xa) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let (g, ga) = inputs.pair(gpu, &[cols], DType::F32)?;
    let (dy, dya) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let (acc, acca) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let (want_dx, _, _) = cpu::layernorm_backward_add(&xa, &ga, &dya, &acca, 1e-5)?;
    let (o, dx) = out(gpu, &[rows, cols], DType::F32, want_dx.data)?;
    let (dg, db) = (
        Tensor::uninit(gpu, &[cols], DType::F32)?,
        Tensor::uninit(gpu, &[cols], DType::F32)?,
    );
    Ok(Case {
        family: "layernorm_backward",
        fixed: vec![dtype_is(DType::F32), ("accumulate", Param::Bool(true))],
        name: format!("layernorm_backward {rows}x{cols} + a gradient f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [1.4e-6, 3e-3]),
        flops: 13.0 * rc,
        bytes: 5.0 * rc * 4.0,
        outputs: vec![o],
        launch: Box::new(move |v| {
            use crate::families::layernorm_backward::{BackwardVariants, launch_add};
            let named = BackwardVariants {
                rows: v,
                params: None,
            };
            let plan = launch_add(&x, &g, &dy, &acc, &dx, &dg, &db, 1e-5, named)?;
            let choice = plan.choices[0].clone();
            Ok(Launches {
                all: plan.dispatches,
                timed: vec![0],
                choice,
            })
        }),
    })
}

/// The layer norm's backward on one input set, checking and timing dispatch `index` of its plan
/// (0: dX and the row statistics, 1: dgamma and dbeta). `layernorm_params_backward` shares it.
pub(crate) fn backward_cases(gpu: &Gpu, z: &Sizes, index: usize) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("layernorm_backward");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let (x, xa) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let (g, ga) = inputs.pair(gpu, &[cols], DType::F32)?;
    let (dy, dya) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let (want_dx, want_dg, want_db) = cpu::layernorm_backward(&xa, &ga, &dya, 1e-5)?;
    let (dx, dg, db) = (
        Tensor::uninit(gpu, &[rows, cols], DType::F32)?,
        Tensor::uninit(gpu, &[cols], DType::F32)?,
        Tensor::uninit(gpu, &[cols], DType::F32)?,
    );
    let (family, outputs, bytes, mut fixed) = if index == 0 {
        (
            "layernorm_backward",
            vec![values(&dx, &want_dx.data)],
            4.0 * rc * 4.0,
            vec![("accumulate", Param::Bool(false))],
        )
    } else {
        (
            "layernorm_params_backward",
            vec![values(&dg, &want_dg.data), values(&db, &want_db.data)],
            2.0 * rc * 4.0,
            Vec::new(),
        )
    };
    fixed.push(dtype_is(DType::F32));
    Ok(vec![Case {
        family,
        fixed,
        name: format!("{family} {rows}x{cols} f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [1.4e-6, 3e-3]),
        flops: 12.0 * rc,
        bytes,
        outputs,
        launch: Box::new(move |v| {
            use crate::families::layernorm_backward::{BackwardVariants, launch};
            let named = if index == 0 {
                BackwardVariants {
                    rows: v,
                    params: None,
                }
            } else {
                BackwardVariants {
                    rows: None,
                    params: v,
                }
            };
            let plan = launch(&x, &g, &dy, &dx, &dg, &db, 1e-5, named)?;
            let choice = plan.choices[index].clone();
            Ok(Launches {
                all: plan.dispatches,
                timed: vec![index],
                choice,
            })
        }),
    }])
}
