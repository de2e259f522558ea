//! layernorm_params_backward's cases: dgamma and dbeta, the second dispatch of the layer norm's
//! backward plan (the inputs are layernorm_backward's).
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32: layernorm_backward's table builds its cases.
pub(crate) const CAMPAIGN_TOLERANCE: f64 =
    crate::families::layernorm_backward::cases::CAMPAIGN_TOLERANCE;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    crate::families::layernorm_backward::cases::backward_cases(gpu, z, 1)
}
