//! Softmax over the last axis on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

use crate::launch::{
    Rowwise, check_no_alias, check_operands, check_out_shape, choose_rowwise, record,
};

const OP: &str = "softmax";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    q: u32,
    scale: f32,
}

/// Softmax of `scale · x` over the last axis. With `causal`, row i of each [q, cols] matrix
/// (q = the second-to-last extent) sees keys j ≤ i + cols − q; rows that see none are zeros.
pub fn softmax(x: &Tensor, causal: bool, scale: f32) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    softmax_into(x, &y, causal, scale, None)?;
    Ok(y)
}

/// Writes the softmax of `x` into `y`, with the named variant or the selector's choice.
pub fn softmax_into(
    x: &Tensor,
    y: &Tensor,
    causal: bool,
    scale: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(x.gpu(), launch(x, y, causal, scale, named)?)
}

/// The selector's call for a softmax over rows of `cols`.
pub fn call(dtype: DType, cols: usize, causal: bool) -> Rowwise {
    Rowwise {
        family: OP,
        dtype,
        cols,
        flag: Some(("causal", causal)),
    }
}

/// Checks the call and prepares its launch.
pub fn launch(
    x: &Tensor,
    y: &Tensor,
    causal: bool,
    scale: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, y])?;
    check_out_shape(OP, y, x.shape())?;
    check_no_alias(OP, y, &[x])?;
    let (rows, cols) = rows_cols(OP, x.shape())?;
    let q = match x.shape() {
        [.., q, _] => *q,
        _ => 1,
    };
    if !scale.is_finite() {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("scale must be finite, got {scale}"),
        });
    }
    let choice = choose_rowwise(OP, x, Some(("causal", causal)), named)?;
    let gpu = x.gpu();
    let groups = gpu.groups(OP, rows as u64)?;
    let params = Params {
        rows: rows as u32,
        cols: cols as u32,
        q: q as u32,
        scale,
    };
    let dispatch = Dispatch::new(gpu, &choice.variant, &[x, y], &params, groups)?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{softmax, softmax_into};
}
