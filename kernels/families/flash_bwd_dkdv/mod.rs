//! FlashAttention-2's backward, the dK/dV pass on the GPU: a workgroup per key block walks the
//! query blocks, recomputing the probabilities from Q, K and the LSE, and accumulates dV = Pᵀ·dO
//! and dK = scale · dSᵀ·Q. `kiln::ops::attention::flash_attention_backward` chains it after
//! `attention_delta` and before `flash_bwd_dq`; the CPU reference is the backward's
//! (`kiln::cpu::attention_backward`).

pub(crate) mod cases;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::launch::flash::{Bound, FlashDesign, Grads, Owns, choose_flash, launch_backward};
use crate::select::Choice;

const OP: &str = "flash_bwd_dkdv";

/// What the launcher and the rule read of a variant.
pub type Design = FlashDesign;

/// Prepares dK and dV for a checked backward call.
pub(crate) fn launch(
    bound: &Bound<'_>,
    grads: &Grads,
    causal: bool,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let choice = choose_flash(OP, &bound.dims, bound.q, causal, named)?;
    let dispatch = launch_backward(bound, &choice, Owns::Keys, &[&grads.dk, &grads.dv])?;
    Ok((dispatch, choice))
}
