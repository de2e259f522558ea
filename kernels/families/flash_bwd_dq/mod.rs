//! FlashAttention-2's backward, the dQ pass on the GPU: a workgroup per query block walks the
//! key blocks, recomputing the probabilities from Q, K and the LSE, and accumulates
//! dQ = scale · dS·K (one writer per element: no atomics). The last pass of
//! `kiln::ops::attention::flash_attention_backward`; the CPU reference is the backward's
//! (`kiln::cpu::attention_backward`).

pub(crate) mod cases;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::launch::flash::{Bound, FlashDesign, Grads, Owns, choose_flash, launch_backward};
use crate::select::Choice;

const OP: &str = "flash_bwd_dq";

/// What the launcher and the rule read of a variant.
pub type Design = FlashDesign;

/// Prepares dQ for a checked backward call.
pub(crate) fn launch(
    bound: &Bound<'_>,
    grads: &Grads,
    causal: bool,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let choice = choose_flash(OP, &bound.dims, bound.q, causal, named)?;
    let dispatch = launch_backward(bound, &choice, Owns::Queries, &[&grads.dq])?;
    Ok((dispatch, choice))
}
