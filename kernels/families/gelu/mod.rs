//! Elementwise gelu on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{
    CountParams, check_no_alias, check_operands, check_out_shape, plan_elementwise, record,
};

const OP: &str = "gelu";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

/// gelu(x) = x/2 · (1 + erf(x/√2)), elementwise. Where x is the f32 product recorded last and
/// that launch takes a second output (whole, no epilogue or a bias, a design with the
/// two-output forms, outside a noted chain), y is written by it (`matmul::fold`).
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    if !crate::families::matmul::fold::gelu(x, &y)? {
        gelu_into(x, &y, None)?;
    }
    Ok(y)
}

/// Writes gelu(x) into `y`, with the named variant or the selector's choice.
pub fn gelu_into(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<Choice> {
    record(x.gpu(), plan(x, y, named)?)
}

/// Checks the call and prepares its launch.
pub fn plan(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, y])?;
    check_out_shape(OP, y, x.shape())?;
    check_no_alias(OP, y, &[x])?;
    let params = CountParams::new(x.numel());
    plan_elementwise(OP, x, None, x.numel(), named, &[x, y], &params)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{gelu, gelu_into};
}
