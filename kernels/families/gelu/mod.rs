//! Elementwise gelu on the GPU.

pub mod cpu;
pub(crate) mod cases;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::ops::{check_no_alias, check_operands, check_out_shape, choose_widest};

const OP: &str = "gelu";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::ops::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    _pad: [u32; 3],
}

/// gelu(x) = x/2 · (1 + erf(x/√2)), elementwise.
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    gelu_into(x, &y, None)?;
    Ok(y)
}

/// Writes gelu(x) into `y`, with the named variant or the selector's choice.
pub fn gelu_into(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<Choice> {
    let (dispatch, choice) = plan(x, y, named)?;
    x.gpu().record_owned(dispatch)?;
    Ok(choice)
}

/// Checks the call and prepares its launch.
pub fn plan(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, y])?;
    check_out_shape(OP, y, x.shape())?;
    check_no_alias(OP, y, &[x])?;
    let choice = choose_widest(OP, x, None, named)?;
    let gpu = x.gpu();
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let groups = gpu.groups(OP, (x.numel() as u64).div_ceil(wg))?;
    let params = Params {
        n: x.numel() as u32,
        _pad: [0; 3],
    };
    let dispatch = Dispatch::new(gpu, &choice.variant, &[x, y], &params, groups)?;
    Ok((dispatch, choice))
}
