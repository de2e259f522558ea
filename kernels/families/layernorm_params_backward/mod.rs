//! The layer norm's gamma and beta gradients on the GPU: a workgroup per 16 columns whose lanes
//! sum every (wg / 16)-th row and add their sums in a fixed tree order (deterministic, no
//! atomics). The second launch of a normalisation's backward (`layernorm_backward`,
//! `rmsnorm_backward`), whose row kernel writes the statistics it reads; both plan through
//! [`launch_norm_backward`] here.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::{Dispatch, Gpu};
use crate::launch::{
    RowParams, check_eps, check_input_shape, check_no_alias, check_operands, check_out_shape,
    choose_elementwise, choose_rowwise,
};
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

const OP: &str = "layernorm_params_backward";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

/// Prepares dgamma and dbeta from x, dy and the row statistics `stats` ([rows, 2]: mean and
/// 1/std) that the row kernel wrote; the call was checked in [`launch_norm_backward`].
fn launch_columns(
    x: &Tensor,
    dy: &Tensor,
    stats: &Tensor,
    (dgamma, dbeta): (&Tensor, &Tensor),
    params: &RowParams,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let choice = choose_elementwise(OP, x, None, named)?;
    let gpu = x.gpu();
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[x, dy, stats, dgamma, dbeta],
        params,
        // A workgroup per 16 columns.
        gpu.groups(OP, u64::from(params.cols).div_ceil(16))?,
    )?;
    Ok((dispatch, choice))
}

/// Variant names to force in a normalisation's backward (`None`: the selector's choice).
#[derive(Clone, Copy, Debug, Default)]
pub struct BackwardVariants<'a> {
    /// The row kernel (dX and the row statistics, per row).
    pub rows: Option<&'a str>,
    /// This family's kernel (dgamma and dbeta, per column).
    pub params: Option<&'a str>,
}

/// A normalisation's backward: its two launches, the statistics they share, the variants chosen.
#[derive(Debug)]
pub struct BackwardPlan {
    /// dX (and the row statistics), then dgamma and dbeta, in order.
    pub dispatches: Vec<Dispatch>,
    pub choices: Vec<Choice>,
    /// Each row's mean and 1/std, [rows, 2] f32 (RMS normalisation's mean is 0): written by the
    /// first kernel, read by the second.
    pub stats: Tensor,
}

impl BackwardPlan {
    /// Records both launches into the device's current recording: the body of each
    /// normalisation's `*_backward_into`.
    pub fn record(self, gpu: &Gpu) -> Result<Vec<Choice>> {
        gpu.record_all(self.dispatches)?;
        Ok(self.choices)
    }
}

/// Checks a normalisation's backward call and prepares its launches: the family `op`'s row
/// kernel (binding x, gamma, dy, dx and the statistics it writes), then this family's column
/// sums. `dbeta` is `None` where the normalisation has no beta (rmsnorm): the column kernel's
/// dbeta then goes to a scratch tensor the launch holds. `acc` is `Some` for a row kernel with
/// an `accumulate` variable: with a tensor, it is added to dX as dX is written.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_norm_backward(
    op: &'static str,
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    (dx, dgamma, dbeta): (&Tensor, &Tensor, Option<&Tensor>),
    acc: Option<Option<&Tensor>>,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<BackwardPlan> {
    let outputs: Vec<&Tensor> = [Some(dx), Some(dgamma), dbeta]
        .into_iter()
        .flatten()
        .collect();
    check_operands(op, &[&[x, gamma, dy][..], &outputs].concat())?;
    let (rows, cols) = rows_cols(op, x.shape())?;
    check_input_shape(op, "gamma", gamma, &[cols])?;
    check_input_shape(op, "dy", dy, x.shape())?;
    check_out_shape(op, dx, x.shape())?;
    for t in &outputs[1..] {
        check_out_shape(op, t, &[cols])?;
    }
    for (i, out) in outputs.iter().enumerate() {
        check_no_alias(op, out, &[x, gamma, dy])?;
        if outputs[i + 1..].iter().any(|o| o.overlaps(out)) {
            return Err(Error::InvalidArgument {
                op,
                detail: "the gradients must be separate tensors".into(),
            });
        }
    }
    let added = acc.flatten();
    if let Some(a) = added {
        check_operands(op, &[x, a])?;
        check_input_shape(op, "the added gradient", a, x.shape())?;
        check_no_alias(op, dx, &[a])?;
    }
    check_eps(op, eps)?;
    let gpu = x.gpu();
    let stats = Tensor::uninit(gpu, &[rows, 2], DType::F32)?;
    let params = RowParams::new(rows, cols, eps);

    let flag = acc.map(|a| ("accumulate", a.is_some()));
    let row_choice = choose_rowwise(op, x, flag, named.rows)?;
    let mut bound = vec![x, gamma, dy, dx, &stats];
    bound.extend(added);
    let row_dispatch = Dispatch::new(
        gpu,
        &row_choice.variant,
        &bound,
        &params,
        gpu.groups(op, rows as u64)?,
    )?;
    let scratch;
    let dbeta = match dbeta {
        Some(t) => t,
        None => {
            scratch = Tensor::uninit(gpu, &[cols], x.dtype())?;
            &scratch
        }
    };
    let (col_dispatch, col_choice) =
        launch_columns(x, dy, &stats, (dgamma, dbeta), &params, named.params)?;
    Ok(BackwardPlan {
        dispatches: vec![row_dispatch, col_dispatch],
        choices: vec![row_choice, col_choice],
        stats,
    })
}
