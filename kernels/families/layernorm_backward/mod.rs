//! The gradients of layer normalisation on the GPU: dX and each row's statistics from one
//! workgroup per row (this family), then dgamma and dbeta from a workgroup per 16 columns
//! (`layernorm_params_backward`), both recorded together.

pub mod cpu;
pub(crate) mod cases;

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::{DType, Tensor};

use crate::ops::{
    check_input_shape, check_no_alias, check_operands, check_out_shape, choose_rowwise,
};

const OP: &str = "layernorm_backward";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::ops::RowDesign;

/// The parameters both kernels read.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    pub rows: u32,
    pub cols: u32,
    pub eps: f32,
    pub _pad: u32,
}

/// Variant names to force (`None`: the selector's choice).
#[derive(Clone, Copy, Debug, Default)]
pub struct BackwardVariants<'a> {
    /// The `layernorm_backward` kernel (dX, per row).
    pub rows: Option<&'a str>,
    /// The `layernorm_params_backward` kernel (dgamma and dbeta, per column).
    pub params: Option<&'a str>,
}

/// The two launches, the scratch they share and the variants chosen.
#[derive(Debug)]
pub struct BackwardPlan {
    /// dX (and the row statistics), then dgamma and dbeta, in order.
    pub dispatches: Vec<Dispatch>,
    pub choices: Vec<Choice>,
    /// Each row's mean and 1/std, [rows, 2] f32: written by the first kernel, read by the second.
    pub stats: Tensor,
}

/// The gradients of y = layernorm(x, gamma, beta, eps) given dy: `(dx, dgamma, dbeta)`. Mean and
/// 1/std are recomputed from x, as the forward computes them.
pub fn layernorm_backward(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor, Tensor)> {
    let gpu = x.gpu();
    let dx = Tensor::uninit(gpu, x.shape(), x.dtype())?;
    let dgamma = Tensor::uninit(gpu, gamma.shape(), gamma.dtype())?;
    let dbeta = Tensor::uninit(gpu, gamma.shape(), gamma.dtype())?;
    layernorm_backward_into(
        x,
        gamma,
        dy,
        &dx,
        &dgamma,
        &dbeta,
        eps,
        BackwardVariants::default(),
    )?;
    Ok((dx, dgamma, dbeta))
}

/// Writes the three gradients, with the named variants or the selector's choices.
#[allow(clippy::too_many_arguments)]
pub fn layernorm_backward_into(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    dbeta: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<Vec<Choice>> {
    let plan = plan(x, gamma, dy, dx, dgamma, dbeta, eps, named)?;
    x.gpu().record_all(plan.dispatches)?;
    Ok(plan.choices)
}

/// Checks the call and prepares its two launches.
#[allow(clippy::too_many_arguments)]
pub fn plan(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    dbeta: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<BackwardPlan> {
    check_operands(OP, &[x, gamma, dy, dx, dgamma, dbeta])?;
    let (rows, cols) = rows_cols(OP, x.shape())?;
    check_input_shape(OP, "gamma", gamma, &[cols])?;
    check_input_shape(OP, "dy", dy, x.shape())?;
    check_out_shape(OP, dx, x.shape())?;
    check_out_shape(OP, dgamma, &[cols])?;
    check_out_shape(OP, dbeta, &[cols])?;
    let inputs = [x, gamma, dy];
    for out in [dx, dgamma, dbeta] {
        check_no_alias(OP, out, &inputs)?;
    }
    if dx.overlaps(dgamma) || dx.overlaps(dbeta) || dgamma.overlaps(dbeta) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "dx, dgamma and dbeta must be separate tensors".into(),
        });
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("eps must be finite and ≥ 0, got {eps}"),
        });
    }
    let gpu = x.gpu();
    let stats = Tensor::uninit(gpu, &[rows, 2], DType::F32)?;
    let params = Params {
        rows: rows as u32,
        cols: cols as u32,
        eps,
        _pad: 0,
    };

    let row_choice = choose_rowwise(OP, x, None, named.rows)?;
    let row_dispatch = Dispatch::new(
        gpu,
        &row_choice.variant,
        &[x, gamma, dy, dx, &stats],
        &params,
        gpu.groups(OP, rows as u64)?,
    )?;

    let (col_dispatch, col_choice) = crate::ops::layernorm_params_backward::plan(
        x,
        dy,
        &stats,
        (dgamma, dbeta),
        &params,
        named.params,
    )?;
    Ok(BackwardPlan {
        dispatches: vec![row_dispatch, col_dispatch],
        choices: vec![row_choice, col_choice],
        stats,
    })
}
