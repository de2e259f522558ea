//! One AdamW step on the GPU, in place on the parameters and both moments.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::optim::AdamW;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{
    check_input_shape, check_no_alias, check_operands, launch_elementwise, record,
};

const OP: &str = "adamw";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    _pad: [u32; 2],
}

/// One AdamW update of `p` with gradient `g`, moments `m` and `v` updated in place (see
/// [`crate::cpu::adamw()`] for the rule, which this kernel follows step for step). Every check
/// (shapes, dtypes, separate buffers, hyper-parameters) runs before anything is launched.
pub fn adamw(p: &Tensor, g: &Tensor, m: &Tensor, v: &Tensor, h: &AdamW) -> Result<()> {
    let corrections = bias_corrections(p.gpu(), h)?;
    adamw_into(p, g, m, v, h, &corrections, None)?;
    Ok(())
}

/// `h`'s bias corrections (1 − β₁ᵗ, 1 − β₂ᵗ) as the kernel reads them: an f32 tensor [2].
/// Rewrite it with [`Tensor::write`] for the next step of a captured training step.
pub fn bias_corrections(gpu: &crate::Gpu, h: &AdamW) -> Result<Tensor> {
    let (bc1, bc2) = h.bias_corrections();
    Tensor::from_slice(gpu, &[2], &[bc1, bc2], DType::F32)
}

/// [`adamw`] with the named variant or the selector's choice; `p`, `m` and `v` are both the
/// inputs and the outputs. `corrections` (f32 [2]) must hold `h`'s bias corrections when the
/// launch runs.
pub fn adamw_into(
    p: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    h: &AdamW,
    corrections: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(p.gpu(), launch(p, g, m, v, h, corrections, named)?)
}

/// Checks the call and prepares its launch. The learning rate, betas and weight decay are baked
/// into the launch's parameters; the step's bias corrections are read from `corrections` when it
/// runs.
pub fn launch(
    p: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    h: &AdamW,
    corrections: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[p, g, m, v, corrections])?;
    check_corrections(OP, corrections)?;
    for (name, t) in [("g", g), ("m", m), ("v", v)] {
        check_input_shape(OP, name, t, p.shape())?;
    }
    // p, m and v are written while g (and each other) are read: four separate buffers.
    check_no_alias(OP, p, &[g, m, v, corrections])?;
    check_no_alias(OP, m, &[g, v, corrections])?;
    check_no_alias(OP, v, &[g, corrections])?;
    h.check(OP)?;
    let params = Params {
        n: p.numel() as u32,
        lr: h.lr,
        beta1: h.beta1,
        beta2: h.beta2,
        eps: h.eps,
        weight_decay: h.weight_decay,
        _pad: [0; 2],
    };
    launch_elementwise(
        OP,
        p,
        None,
        p.numel(),
        named,
        &[p, g, m, v, corrections],
        &params,
    )
}

/// The bias corrections an AdamW launch reads: two f32 values.
pub(crate) fn check_corrections(op: &'static str, corrections: &Tensor) -> Result<()> {
    if corrections.dtype() != DType::F32 || corrections.numel() != 2 {
        return Err(Error::shape(
            op,
            format!(
                "the bias corrections must be two f32 values, got {} {:?}",
                corrections.dtype().wgsl(),
                corrections.shape()
            ),
        ));
    }
    Ok(())
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{adamw, adamw_into, bias_corrections};
}
