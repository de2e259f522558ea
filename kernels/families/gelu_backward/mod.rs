//! The gradient of elementwise gelu on the GPU.

pub mod cpu;
pub(crate) mod cases;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::ops::{check_input_shape, check_no_alias, check_operands, check_out_shape, choose_widest};

const OP: &str = "gelu_backward";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::ops::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    _pad: [u32; 3],
}

/// dx = dy · (Φ(x) + x · φ(x)), the gradient of the exact gelu (see [`super::gelu()`]).
pub fn gelu_backward(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let dx = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    gelu_backward_into(x, dy, &dx, None)?;
    Ok(dx)
}

/// Writes the gelu gradient into `dx`, with the named variant or the selector's choice.
pub fn gelu_backward_into(
    x: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    let (dispatch, choice) = plan(x, dy, dx, named)?;
    x.gpu().record_owned(dispatch)?;
    Ok(choice)
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
    let choice = choose_widest(OP, x, None, named)?;
    let gpu = x.gpu();
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let groups = gpu.groups(OP, (x.numel() as u64).div_ceil(wg))?;
    let params = Params {
        n: x.numel() as u32,
        _pad: [0; 3],
    };
    let dispatch = Dispatch::new(gpu, &choice.variant, &[x, dy, dx], &params, groups)?;
    Ok((dispatch, choice))
}
