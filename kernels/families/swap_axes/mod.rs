//! Swapping two axes before the last on the GPU: [a, b, c] → [b, a, c] and, with a leading
//! batch, [a, b, c, d] → [a, c, b, d] (attention's heads split and merge). One kernel: the
//! rank-3 case is the rank-4 one with an outer count of 1.

pub(crate) mod cases;
pub mod cpu;

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{check_no_alias, check_operands, check_out_shape, launch_elementwise, record};

const OP: &str = "swap_axes";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    a: u32,
    b: u32,
    c: u32,
    /// Blocks of [a, b, c] swapped one after the other.
    outer: u32,
}

/// [a, b, c] → [b, a, c].
pub fn swap_axes01(x: &Tensor) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), &swapped(x.shape())?, x.dtype())?;
    swap_axes01_into(x, &y, None)?;
    Ok(y)
}

/// Writes `x` with its first two axes swapped into `y`.
pub fn swap_axes01_into(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<Choice> {
    record(x.gpu(), launch(x, y, named)?)
}

/// [a, b, c, d] → [a, c, b, d]. When x is a product cut along K whose sum was the last launch
/// recorded, that sum is folded in (`reduce_permute`, over [a, b, c, 1, d]); when it is a whole
/// product recorded last, the product writes the swap too (`kiln::fusion`, as heads: rows of
/// b, one part of c heads of d).
pub fn swap_axes12(x: &Tensor) -> Result<Tensor> {
    let shape = swapped12(x.shape())?;
    let y = Tensor::uninit(x.gpu(), &shape, x.dtype())?;
    let planned = plan12(x, &y, None)?;
    if !crate::fusion::swap12(x, &y)? {
        record(x.gpu(), planned)?;
    }
    Ok(y)
}

/// Writes `x` with its middle two axes swapped into `y`.
pub fn swap_axes12_into(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<Choice> {
    record(x.gpu(), plan12(x, y, named)?)
}

fn swapped12(shape: &[usize]) -> Result<Vec<usize>> {
    match *shape {
        [a, b, c, d] => Ok(vec![a, c, b, d]),
        _ => Err(Error::shape(
            OP,
            format!("shape {shape:?}: expected rank 4"),
        )),
    }
}

fn swapped(shape: &[usize]) -> Result<Vec<usize>> {
    match *shape {
        [a, b, c] => Ok(vec![b, a, c]),
        _ => Err(Error::shape(
            OP,
            format!("shape {shape:?}: expected rank 3"),
        )),
    }
}

/// Checks a rank-3 call ([a, b, c] → [b, a, c]) and prepares its launch.
pub fn launch(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    let want = swapped(x.shape())?;
    let s = x.shape();
    launch_blocks(x, y, &want, [1, s[0], s[1], s[2]], named)
}

/// Checks a rank-4 call ([a, b, c, d] → [a, c, b, d]) and prepares its launch.
pub fn plan12(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    let want = swapped12(x.shape())?;
    let s = x.shape();
    launch_blocks(x, y, &want, [s[0], s[1], s[2], s[3]], named)
}

/// `outer` blocks of [a, b, c] → [b, a, c]; `want` is the output shape the call makes.
fn launch_blocks(
    x: &Tensor,
    y: &Tensor,
    want: &[usize],
    [outer, a, b, c]: [usize; 4],
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, y])?;
    check_out_shape(OP, y, want)?;
    check_no_alias(OP, y, &[x])?;
    let params = Params {
        a: a as u32,
        b: b as u32,
        c: c as u32,
        outer: outer as u32,
    };
    launch_elementwise(OP, x, None, x.numel(), named, &[x, y], &params)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{swap_axes01, swap_axes01_into, swap_axes12, swap_axes12_into};
}
