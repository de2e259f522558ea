//! Swapping the last two axes of a batch of matrices on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::registry::Variant;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{check_no_alias, check_operands, check_out_shape, choose_elementwise, record};

const OP: &str = "transpose";

/// What the launcher reads of a variant: dtype and the square tile a workgroup moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub dtype: DType,
    pub tile: u32,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            dtype: v.dtype()?,
            tile: v.count("tile")?,
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
}

/// [.., rows, cols] → [.., cols, rows].
pub fn transpose(x: &Tensor) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), &transposed_shape(x.shape())?, x.dtype())?;
    transpose_into(x, &y, None)?;
    Ok(y)
}

/// Writes the transpose of `x` into `y`, with the named variant or the selector's choice.
pub fn transpose_into(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<Choice> {
    record(x.gpu(), launch(x, y, named)?)
}

fn transposed_shape(shape: &[usize]) -> Result<Vec<usize>> {
    crate::shape::non_empty(OP, shape)?;
    if shape.len() < 2 {
        return Err(Error::shape(
            OP,
            format!("shape {shape:?} has no two axes to swap"),
        ));
    }
    let mut out = shape.to_vec();
    out.swap(shape.len() - 1, shape.len() - 2);
    Ok(out)
}

/// Checks the call and prepares its launch.
pub fn launch(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, y])?;
    let want = transposed_shape(x.shape())?;
    check_out_shape(OP, y, &want)?;
    check_no_alias(OP, y, &[x])?;
    let (rows, cols) = (want[want.len() - 1], want[want.len() - 2]);
    let batch = x.numel() / (rows * cols);
    let choice = choose_elementwise(OP, x, None, named)?;
    let gpu = x.gpu();
    let tile = Design::parse(&choice.variant)?.tile.max(1) as usize;
    let groups = crate::launch::grid(OP, gpu, [cols.div_ceil(tile), rows.div_ceil(tile), batch])?;
    let params = Params {
        rows: rows as u32,
        cols: cols as u32,
    };
    let dispatch = Dispatch::new(gpu, &choice.variant, &[x, y], &params, groups)?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{transpose, transpose_into};
}
