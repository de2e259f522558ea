//! The flash backward's pre-pass on the GPU: D = rowsum(dO ∘ O), one thread per row reading
//! vec4s. The backward that chains it with the dK/dV and dQ families is
//! `kiln::ops::attention::flash_attention_backward`; its CPU reference is the backward's
//! (`kiln::cpu::attention_backward`).

pub(crate) mod cases;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::AttentionDims;
use crate::tensor::Tensor;

const OP: &str = "attention_delta";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    vecs: u32,
}

/// Prepares D [.., Nq] (f32) = rowsum(dO ∘ O) for a checked backward call of dims `d` (the
/// head dimension a multiple of 4).
pub(crate) fn launch(
    d_o: &Tensor,
    o: &Tensor,
    delta: &Tensor,
    d: &AttentionDims,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let gpu = o.gpu();
    let rows = d.batch_heads * d.q_len;
    let choice = crate::launch::choose_elementwise(OP, o, None, named)?;
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let params = Params {
        rows: rows as u32,
        vecs: (d.head_dim / 4) as u32,
    };
    let groups = gpu.groups(OP, (rows as u64).div_ceil(wg))?;
    let dispatch = Dispatch::new(gpu, &choice.variant, &[d_o, o, delta], &params, groups)?;
    Ok((dispatch, choice))
}
