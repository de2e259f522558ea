//! Swapping the first two axes of a rank-3 tensor on the GPU: attention's heads split and merge.

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use super::{check_no_alias, check_operands, check_out_shape, choose_widest};

const OP: &str = "swap_axes";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    a: u32,
    b: u32,
    c: u32,
    _pad: u32,
}

/// [a, b, c] → [b, a, c].
pub fn swap_axes01(x: &Tensor) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), &swapped(x.shape())?, x.dtype())?;
    swap_axes01_into(x, &y, None)?;
    Ok(y)
}

/// Writes `x` with its first two axes swapped into `y`.
pub fn swap_axes01_into(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<Choice> {
    let (dispatch, choice) = plan(x, y, named)?;
    x.gpu().submit(&[&dispatch]);
    Ok(choice)
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

/// Checks the call and prepares its launch.
pub fn plan(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, y])?;
    let want = swapped(x.shape())?;
    check_out_shape(OP, y, &want)?;
    check_no_alias(OP, y, &[x])?;
    let choice = choose_widest(OP, x, String::new(), named)?;
    let gpu = x.gpu();
    let wg = choice.variant.int("wg").max(1) as u64;
    let groups = gpu.groups(OP, (x.numel() as u64).div_ceil(wg))?;
    let s = x.shape();
    let params = gpu.uniform(&Params {
        a: s[0] as u32,
        b: s[1] as u32,
        c: s[2] as u32,
        _pad: 0,
    });
    let pipeline = gpu.pipeline(&choice.variant)?;
    let dispatch = Dispatch::new(gpu, pipeline, &[x.buffer(), y.buffer(), &params], groups);
    Ok((dispatch, choice))
}
