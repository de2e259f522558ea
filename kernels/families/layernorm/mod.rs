//! Layer normalisation over the last axis on the GPU, optionally of a residual sum (add and
//! layernorm in one launch).

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

use crate::launch::{
    RowParams, Rowwise, check_eps, check_no_alias, check_operands, check_out_shape, choose_rowwise,
    record,
};

const OP: &str = "layernorm";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

/// (x − mean) / sqrt(var + eps) · gamma + beta over the last axis; gamma and beta are [cols].
pub fn layernorm(x: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    layernorm_into(x, gamma, beta, &y, eps, None)?;
    Ok(y)
}

/// Writes the layer norm of `x` into `y`, with the named variant or the selector's choice.
pub fn layernorm_into(
    x: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    y: &Tensor,
    eps: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(x.gpu(), launch(x, gamma, beta, y, eps, named)?)
}

/// The selector's call for a layer norm over rows of `cols` (of x + r with `residual`).
pub fn call(dtype: DType, cols: usize, residual: bool) -> Rowwise {
    Rowwise {
        family: OP,
        dtype,
        cols,
        flag: Some(("residual", residual)),
    }
}

/// S = x + r and Y = layernorm(S), in one launch: `(S, Y)`. When x is a product cut along K
/// whose sum was the last launch recorded, that sum is folded in (`reduce_layernorm`).
pub fn add_layernorm(
    x: &Tensor,
    r: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor)> {
    let sum = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    let y = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    let (dispatch, choice) = launch_with(x, Some((r, &sum)), gamma, beta, &y, eps, None)?;
    // Where x is a split product whose sum is the newest launch, one launch does both, in the
    // norm's design.
    let fold = crate::fusion::add_layernorm;
    if !fold(x, r, gamma, beta, [&sum, &y], eps, &choice.variant)? {
        x.gpu().record_owned(dispatch)?;
    }
    Ok((sum, y))
}

/// Checks the call and prepares its launch.
pub fn launch(
    x: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    y: &Tensor,
    eps: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    launch_with(x, None, gamma, beta, y, eps, named)
}

/// [`plan`], with a residual `(r, sum)`: the row normalised is x + r, and it is written to sum.
pub fn launch_with(
    x: &Tensor,
    residual: Option<(&Tensor, &Tensor)>,
    gamma: &Tensor,
    beta: &Tensor,
    y: &Tensor,
    eps: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, gamma, beta, y])?;
    check_out_shape(OP, y, x.shape())?;
    check_no_alias(OP, y, &[x, gamma, beta])?;
    if let Some((r, sum)) = residual {
        check_operands(OP, &[x, r, sum])?;
        crate::launch::check_input_shape(OP, "r", r, x.shape())?;
        check_out_shape(OP, sum, x.shape())?;
        check_no_alias(OP, sum, &[x, r, gamma, beta, y])?;
        check_no_alias(OP, y, &[r])?;
    }
    let (rows, cols) = rows_cols(OP, x.shape())?;
    for (name, t) in [("gamma", gamma), ("beta", beta)] {
        if t.shape() != [cols] {
            return Err(Error::shape(
                OP,
                format!("{name} has shape {:?}, expected [{cols}]", t.shape()),
            ));
        }
    }
    check_eps(OP, eps)?;
    let flag = Some(("residual", residual.is_some()));
    let choice = choose_rowwise(OP, x, flag, named)?;
    let gpu = x.gpu();
    let groups = gpu.groups(OP, rows as u64)?;
    let params = RowParams::new(rows, cols, eps);
    let mut tensors = vec![x, gamma, beta, y];
    if let Some((r, sum)) = residual {
        tensors.extend([r, sum]);
    }
    let dispatch = Dispatch::new(gpu, &choice.variant, &tensors, &params, groups)?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{add_layernorm, layernorm, layernorm_into};
}
