//! The gradients of RMS normalisation on the GPU: dX and each row's rstd from one workgroup per
//! row (this family), then dgamma from the layer norm's parameter kernel
//! (`layernorm_params_backward`) fed those statistics with a mean of 0, both recorded together.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::families::layernorm_params_backward::launch_norm_backward;
use crate::select::Choice;
use crate::tensor::Tensor;

const OP: &str = "rmsnorm_backward";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

pub use crate::families::layernorm_params_backward::{BackwardPlan, BackwardVariants};

/// The gradients of y = rmsnorm(x, gamma, eps) given dy: `(dx, dgamma)`. rstd is recomputed
/// from x, as the forward computes it.
pub fn rmsnorm_backward(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor)> {
    let gpu = x.gpu();
    let dx = Tensor::uninit(gpu, x.shape(), x.dtype())?;
    let dgamma = Tensor::uninit(gpu, gamma.shape(), gamma.dtype())?;
    rmsnorm_backward_into(x, gamma, dy, &dx, &dgamma, eps, BackwardVariants::default())?;
    Ok((dx, dgamma))
}

/// Writes both gradients, with the named variants or the selector's choices.
pub fn rmsnorm_backward_into(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<Vec<Choice>> {
    launch(x, gamma, dy, dx, dgamma, eps, named)?.record(x.gpu())
}

/// Checks the call and prepares its two launches: this family's row kernel writes each row's
/// (0, rstd), so the layer norm's column kernel, Σ dy · (x − mean) · rstd, sums rmsnorm's
/// dgamma exactly (its dbeta goes to a scratch tensor).
pub fn launch(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dgamma: &Tensor,
    eps: f32,
    named: BackwardVariants<'_>,
) -> Result<BackwardPlan> {
    launch_norm_backward(OP, x, gamma, dy, (dx, dgamma, None), None, eps, named)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{rmsnorm_backward, rmsnorm_backward_into};
}
