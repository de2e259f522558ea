//! FlashAttention-2's backward in one pass on the GPU, where the adapter has f32 atomics: dK and
//! dV as `flash_bwd_dkdv`'s stream route, and each key block's share of dQ added with
//! `atomicAdd` into a dQ zeroed first. Chosen by `kiln::ops::attention` from the tuned table or
//! by name only; the CPU reference is the backward's (`kiln::cpu::attention_backward`).

pub(crate) mod cases;

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::Dispatch;
use crate::launch::flash::{Bound, FlashDesign, Grads, Owns, launch_backward};
use crate::select::Choice;
use crate::tensor::Tensor;

/// What the launcher and the rule read of a variant.
pub type Design = FlashDesign;

/// The one-pass launch and the reset of dQ it adds into.
pub(crate) struct OnePass {
    /// dQ ← 0, copied on the GPU from `zeros`.
    pub clear: Dispatch,
    pub clear_choice: Choice,
    pub dispatch: Dispatch,
    pub choice: Choice,
    pub zeros: Tensor,
}

/// Prepares the one pass of `choice` for a checked backward call.
pub(crate) fn launch(bound: &Bound<'_>, grads: &Grads, choice: Choice) -> Result<OnePass> {
    // dQ is added to by every key block: it starts from zeros copied in on the GPU.
    let zeros = Tensor::full(bound.q.gpu(), grads.dq.shape(), 0.0, DType::F32)?;
    let (clear, clear_choice) = crate::families::copy::launch(&zeros, &grads.dq, None)?;
    let outputs = [&grads.dk, &grads.dv, &grads.dq];
    let dispatch = launch_backward(bound, &choice, Owns::Keys, &outputs)?;
    Ok(OnePass {
        clear,
        clear_choice,
        dispatch,
        choice,
        zeros,
    })
}
