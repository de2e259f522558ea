//! layernorm_params_backward's cases: dgamma and dbeta, the second dispatch of the layer norm's
//! backward plan (the inputs are layernorm_backward's).
use super::*;

pub(super) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    super::layernorm_backward::backward_cases(gpu, z, 1)
}
