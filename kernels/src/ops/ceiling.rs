//! The two kernels the fleet campaign measures a device's ceilings with: a vec4 copy (memory
//! bandwidth) and an FMA chain (arithmetic rate). Neither is used by a model.

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::{DType, Tensor};

use super::{check_no_alias, check_operands, check_out_shape, choose_widest};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CopyParams {
    vecs: u32,
    _pad: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FmaParams {
    groups: u32,
    iters: u32,
    a: f32,
    b: f32,
}

/// Both kernels take flat f32 tensors whose length is a multiple of `multiple`.
fn check(op: &'static str, x: &Tensor, y: &Tensor, multiple: usize) -> Result<()> {
    check_operands(op, &[x, y])?;
    check_out_shape(op, y, x.shape())?;
    check_no_alias(op, y, &[x])?;
    if x.dtype() != DType::F32 || !x.numel().is_multiple_of(multiple) {
        return Err(Error::shape(
            op,
            format!(
                "X is {} with {} elements: expected f32 and a multiple of {multiple}",
                x.dtype().wgsl(),
                x.numel()
            ),
        ));
    }
    Ok(())
}

/// Prepares Y = X as a vec4 copy.
pub fn plan_copy(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    let vecs = (x.numel() / 4) as u32;
    let params = CopyParams { vecs, _pad: [0; 3] };
    plan("copy", x, y, 4, &params, named)
}

/// Prepares Y = `iters` steps of v ← v·a + b from X: 2·iters FLOPs per element.
pub fn plan_fma_chain(
    x: &Tensor,
    y: &Tensor,
    iters: u32,
    a: f32,
    b: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let groups = (x.numel() / 16) as u32;
    let params = FmaParams {
        groups,
        iters,
        a,
        b,
    };
    plan("fma_chain", x, y, 16, &params, named)
}

/// Both kernels: one invocation per `per_invocation` elements of flat f32 tensors.
fn plan(
    op: &'static str,
    x: &Tensor,
    y: &Tensor,
    per_invocation: usize,
    params: &impl bytemuck::Pod,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check(op, x, y, per_invocation)?;
    let choice = choose_widest(op, x, None, named)?;
    let gpu = x.gpu();
    let wg = choice.variant.int("wg")?.max(1) as u64;
    let groups = gpu.groups(op, ((x.numel() / per_invocation) as u64).div_ceil(wg))?;
    let dispatch = Dispatch::new(gpu, &choice.variant, &[x, y], params, groups)?;
    Ok((dispatch, choice))
}
