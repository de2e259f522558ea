//! The gradients of layer normalisation on the GPU: dX and each row's statistics from one
//! workgroup per row (this family), then dgamma and dbeta from a workgroup per 16 columns
//! (`layernorm_params_backward`), both recorded together.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::families::layernorm_params_backward::launch_norm_backward;
use crate::select::Choice;
use crate::tensor::Tensor;

const OP: &str = "layernorm_backward";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

pub use crate::families::layernorm_params_backward::{BackwardPlan, BackwardVariants};

/// The gradients of y = layernorm(x, gamma, beta, eps) given dy: `(dx, dgamma, dbeta)`. Mean and
/// 1/std are recomputed from x, as the forward computes them.
pub fn layernorm_backward(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor, Tensor)> {
    let gpu = x.gpu();
    let dx = Tensor::uninit(gpu, x.shape(), x.dtype())?;
    let dgamma = Tensor::uninit(gpu, gamma.shape(), gamma.dtype())?;
    let dbeta = Tensor::uninit(gpu, gamma.shape(), gamma.dtype())?;
    layernorm_backward_into(
        x,
        gamma,
        dy,
        &dx,
        &dgamma,
        &dbeta,
        eps,
        BackwardVariants::default(),
    )?;
    Ok((dx, dgamma, dbeta))
}

/// Writes the three gradients, with the named variants or the selector's choices. Where dy is
/// the sum of a split product recorded last, that sum is folded into the first launch
/// (`reduce_layernorm_backward`).
#[allow(clippy::too_many_arguments)]
pub fn layernorm_backward_into(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    dbeta: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<Vec<Choice>> {
    let plan = launch(x, gamma, dy, dx, dgamma, dbeta, eps, named)?;
    record_folding(plan, x, gamma, dy, None, dx, eps)
}

/// Checks the call and prepares its two launches.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    dbeta: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<BackwardPlan> {
    let outputs = (dx, dgamma, Some(dbeta));
    launch_norm_backward(OP, x, gamma, dy, outputs, Some(None), eps, named)
}

/// [`layernorm_backward_into`] with `acc` added to dX as it is written: dX = acc + the layer
/// norm's input gradient (the gradient a residual path brings, and the norm's, in one launch);
/// a split product's sum folded in as there.
#[allow(clippy::too_many_arguments)]
pub fn layernorm_backward_add_into(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    acc: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    dbeta: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<Vec<Choice>> {
    let plan = launch_add(x, gamma, dy, acc, dx, dgamma, dbeta, eps, named)?;
    record_folding(plan, x, gamma, dy, Some(acc), dx, eps)
}

/// Records a checked plan, its first launch replaced by `reduce_layernorm_backward`'s where
/// that takes in the sum that wrote dy ([`fold`](crate::families::reduce_layernorm_backward)).
fn record_folding(
    plan: BackwardPlan,
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    acc: Option<&Tensor>,
    dx: &Tensor,
    eps: f32,
) -> Result<Vec<Choice>> {
    let outputs = [dx, &plan.stats];
    let norm = plan.choices[0].variant.clone();
    let fold = crate::fusion::layernorm_backward;
    match fold(x, gamma, dy, acc, outputs, eps, &norm)? {
        Some(choice) => {
            let BackwardPlan {
                mut dispatches,
                mut choices,
                ..
            } = plan;
            x.gpu().record_all(dispatches.split_off(1))?;
            choices[0] = choice;
            Ok(choices)
        }
        None => plan.record(x.gpu()),
    }
}

/// Checks a call of [`layernorm_backward_add_into`] and prepares its two launches.
#[allow(clippy::too_many_arguments)]
pub fn launch_add(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    acc: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    dbeta: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<BackwardPlan> {
    let outputs = (dx, dgamma, Some(dbeta));
    launch_norm_backward(OP, x, gamma, dy, outputs, Some(Some(acc)), eps, named)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{layernorm_backward, layernorm_backward_add_into, layernorm_backward_into};
}
