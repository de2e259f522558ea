//! RMS normalisation over the last axis on the GPU: x · rstd · gamma with rstd =
//! 1 / sqrt(mean(x²) + eps), one workgroup per row.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

use crate::launch::{
    RowParams, Rowwise, check_eps, check_input_shape, check_no_alias, check_operands,
    check_out_shape, choose_rowwise, record,
};

const OP: &str = "rmsnorm";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

/// x · rstd · gamma over the last axis, rstd = 1 / sqrt(mean(x²) + eps); gamma is [cols].
pub fn rmsnorm(x: &Tensor, gamma: &Tensor, eps: f32) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    rmsnorm_into(x, gamma, &y, eps, None)?;
    Ok(y)
}

/// Writes the RMS norm of `x` into `y`, with the named variant or the selector's choice.
pub fn rmsnorm_into(
    x: &Tensor,
    gamma: &Tensor,
    y: &Tensor,
    eps: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(x.gpu(), launch(x, gamma, y, eps, named)?)
}

/// The selector's call for an RMS norm over rows of `cols`.
pub fn call(dtype: DType, cols: usize) -> Rowwise {
    Rowwise {
        family: OP,
        dtype,
        cols,
        flag: None,
    }
}

/// Checks the call and prepares its launch.
pub fn launch(
    x: &Tensor,
    gamma: &Tensor,
    y: &Tensor,
    eps: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, gamma, y])?;
    check_out_shape(OP, y, x.shape())?;
    check_no_alias(OP, y, &[x, gamma])?;
    let (rows, cols) = rows_cols(OP, x.shape())?;
    check_input_shape(OP, "gamma", gamma, &[cols])?;
    check_eps(OP, eps)?;
    let choice = choose_rowwise(OP, x, None, named)?;
    let gpu = x.gpu();
    let groups = gpu.groups(OP, rows as u64)?;
    let params = RowParams::new(rows, cols, eps);
    let dispatch = Dispatch::new(gpu, &choice.variant, &[x, gamma, y], &params, groups)?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{rmsnorm, rmsnorm_into};
}
