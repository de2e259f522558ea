//! Four independent chains of dependent multiply-adds per invocation: the arithmetic-rate
//! ceiling the fleet campaign measures a device with, and the work `bench::warm_up_clocks` brings a
//! hardware GPU's clocks up with. Not used by a model.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    groups: u32,
    iters: u32,
    a: f32,
    b: f32,
}

/// Prepares Y = `iters` steps of v ← v·a + b from X: 2·iters FLOPs per element (X's length a
/// multiple of 16).
pub fn launch(
    x: &Tensor,
    y: &Tensor,
    iters: u32,
    a: f32,
    b: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let groups = (x.numel() / 16) as u32;
    let params = Params {
        groups,
        iters,
        a,
        b,
    };
    super::copy::launch_flat("fma_chain", x, y, 16, &params, named)
}
