//! The gradient of elementwise gelu on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{
    CountParams, check_input_shape, check_no_alias, check_operands, check_out_shape,
    plan_elementwise, record,
};

const OP: &str = "gelu_backward";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

/// dx = dy · (Φ(x) + x · φ(x)), the gradient of the exact gelu (see [`super::gelu()`]). Where
/// dy is the f32 product recorded last and that launch takes a second output (as for
/// [`super::gelu()`]), dx is written by it (`matmul::fold`).
pub fn gelu_backward(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let dx = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    if !crate::families::matmul::fold::gelu_backward(x, dy, &dx)? {
        gelu_backward_into(x, dy, &dx, None)?;
    }
    Ok(dx)
}

/// Writes the gelu gradient into `dx`, with the named variant or the selector's choice.
pub fn gelu_backward_into(
    x: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(x.gpu(), plan(x, dy, dx, named)?)
}

/// Checks the call and prepares its launch.
pub fn plan(
    x: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, dy, dx])?;
    check_input_shape(OP, "dy", dy, x.shape())?;
    check_out_shape(OP, dx, x.shape())?;
    check_no_alias(OP, dx, &[x, dy])?;
    let params = CountParams::new(x.numel());
    plan_elementwise(OP, x, None, x.numel(), named, &[x, dy, dx], &params)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{gelu_backward, gelu_backward_into};
}
