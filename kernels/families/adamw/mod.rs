//! One AdamW step on the GPU, in place on the parameters and both moments.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::optim::AdamW;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{check_input_shape, check_no_alias, check_operands, plan_elementwise, record};

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
    bc1: f32,
    bc2: f32,
}

/// One AdamW update of `p` with gradient `g`, moments `m` and `v` updated in place (see
/// [`crate::cpu::adamw()`] for the rule, which this kernel follows step for step). Every check
/// (shapes, dtypes, separate buffers, hyper-parameters) runs before anything is launched.
pub fn adamw(p: &Tensor, g: &Tensor, m: &Tensor, v: &Tensor, h: &AdamW) -> Result<()> {
    adamw_into(p, g, m, v, h, None)?;
    Ok(())
}

/// [`adamw`] with the named variant or the selector's choice; `p`, `m` and `v` are both the
/// inputs and the outputs.
pub fn adamw_into(
    p: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    h: &AdamW,
    named: Option<&str>,
) -> Result<Choice> {
    record(p.gpu(), plan(p, g, m, v, h, named)?)
}

/// Checks the call and prepares its launch. The step and learning rate are baked into the
/// launch's parameters: plan again for the next step.
pub fn plan(
    p: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    h: &AdamW,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[p, g, m, v])?;
    for (name, t) in [("g", g), ("m", m), ("v", v)] {
        check_input_shape(OP, name, t, p.shape())?;
    }
    // p, m and v are written while g (and each other) are read: four separate buffers.
    check_no_alias(OP, p, &[g, m, v])?;
    check_no_alias(OP, m, &[g, v])?;
    check_no_alias(OP, v, &[g])?;
    h.check(OP)?;
    let (bc1, bc2) = h.bias_corrections();
    let params = Params {
        n: p.numel() as u32,
        lr: h.lr,
        beta1: h.beta1,
        beta2: h.beta2,
        eps: h.eps,
        weight_decay: h.weight_decay,
        bc1,
        bc2,
    };
    plan_elementwise(OP, p, None, p.numel(), named, &[p, g, m, v], &params)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{adamw, adamw_into};
}
