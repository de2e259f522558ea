//! The gradient of softmax over the last axis on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

use crate::launch::{
    RowParams, check_no_alias, check_operands, check_out_shape, choose_rowwise, record,
};

const OP: &str = "softmax_backward";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

/// dX of y = softmax(scale · x), from the softmax output `p` and the gradient `dp` of y:
/// dX = scale · p ∘ (dp − rowsum(p ∘ dp)). Masked entries (p = 0) get 0.
pub fn softmax_backward(p: &Tensor, dp: &Tensor, scale: f32) -> Result<Tensor> {
    let dx = Tensor::uninit(p.gpu(), p.shape(), p.dtype())?;
    softmax_backward_into(p, dp, &dx, scale, None)?;
    Ok(dx)
}

/// Writes the softmax gradient into `dx`, with the named variant or the selector's choice.
pub fn softmax_backward_into(
    p: &Tensor,
    dp: &Tensor,
    dx: &Tensor,
    scale: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(p.gpu(), launch(p, dp, dx, scale, named)?)
}

/// Checks the call and prepares its launch.
pub fn launch(
    p: &Tensor,
    dp: &Tensor,
    dx: &Tensor,
    scale: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[p, dp, dx])?;
    check_out_shape(OP, dp, p.shape())?;
    check_out_shape(OP, dx, p.shape())?;
    check_no_alias(OP, dx, &[p, dp])?;
    if !scale.is_finite() {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("scale must be finite, got {scale}"),
        });
    }
    let (rows, cols) = rows_cols(OP, p.shape())?;
    let choice = choose_rowwise(OP, p, None, named)?;
    let gpu = p.gpu();
    let groups = gpu.groups(OP, rows as u64)?;
    let params = RowParams::new(rows, cols, scale);
    let dispatch = Dispatch::new(gpu, &choice.variant, &[p, dp, dx], &params, groups)?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{softmax_backward, softmax_backward_into};
}
