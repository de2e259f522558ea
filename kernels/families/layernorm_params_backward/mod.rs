//! The layer norm's gamma and beta gradients on the GPU: a workgroup per 16 columns whose lanes
//! sum every (wg / 16)-th row and add their sums in a fixed tree order (deterministic, no
//! atomics). The second launch of `layernorm_backward`, which writes the row statistics it reads.

pub mod cpu;
pub(crate) mod cases;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::ops::choose_widest;
use crate::ops::layernorm_backward::Params;
use crate::select::Choice;
use crate::tensor::Tensor;

const OP: &str = "layernorm_params_backward";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::ops::ElementDesign;

/// Prepares dgamma and dbeta from x, dy and the row statistics `stats` ([rows, 2]: mean and
/// 1/std) that `layernorm_backward`'s first kernel wrote; the call was checked there.
pub(crate) fn plan(
    x: &Tensor,
    dy: &Tensor,
    stats: &Tensor,
    (dgamma, dbeta): (&Tensor, &Tensor),
    params: &Params,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let choice = choose_widest(OP, x, None, named)?;
    let gpu = x.gpu();
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[x, dy, stats, dgamma, dbeta],
        params,
        // A workgroup per 16 columns.
        gpu.groups(OP, u64::from(params.cols).div_ceil(16))?,
    )?;
    Ok((dispatch, choice))
}
