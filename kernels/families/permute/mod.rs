//! Reordering the four leading axes of a rank-5 tensor on the GPU, rows of the last kept whole:
//! what took two `swap_axes` launches (Q, K and V split from one product into heads with a
//! batch, and their gradients put back) in one.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{check_no_alias, check_operands, check_out_shape, launch_elementwise, record};

const OP: &str = "permute";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    extents: [u32; 4],
    c: u32,
    strides: [u32; 4],
    _pad: [u32; 3],
}

/// X [d0, d1, d2, d3, c] with its leading axes in `order` (Y's axis i is X's axis
/// `order[i]`): [B, T, 3, H, d] with order [2, 0, 3, 1] is [3, B, H, T, d]. When X is a
/// product cut along K whose sum was the last launch recorded, that sum is folded in
/// (`reduce_permute`); when it is an f32 product of one matrix recorded last, whole, and the
/// order splits it into heads ([2, 0, 3, 1]), that launch writes Y too where its design has the
/// two-output forms (`kiln::fusion`).
pub fn permute(x: &Tensor, order: [usize; 4]) -> Result<Tensor> {
    let (shape, _) = cpu::permuted(x.shape(), order)?;
    let y = Tensor::uninit(x.gpu(), &shape, x.dtype())?;
    let planned = launch(x, order, &y, None)?;
    if !crate::fusion::permute(x, order, &y)? {
        record(x.gpu(), planned)?;
    }
    Ok(y)
}

/// Writes `x` with its leading axes in `order` into `y`, with the named variant or the
/// selector's choice.
pub fn permute_into(
    x: &Tensor,
    order: [usize; 4],
    y: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(x.gpu(), launch(x, order, y, named)?)
}

/// Checks the call and prepares its launch.
pub fn launch(
    x: &Tensor,
    order: [usize; 4],
    y: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let ([e0, e1, e2, e3, c], strides) = cpu::permuted(x.shape(), order)?;
    check_operands(OP, &[x, y])?;
    check_out_shape(OP, y, &[e0, e1, e2, e3, c])?;
    check_no_alias(OP, y, &[x])?;
    let params = Params {
        extents: [e0, e1, e2, e3].map(|e| e as u32),
        c: c as u32,
        strides: strides.map(|s| s as u32),
        _pad: [0; 3],
    };
    launch_elementwise(OP, x, None, x.numel(), named, &[x, y], &params)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{permute, permute_into};
}
