//! layernorm_params_backward's cases: dgamma and dbeta, the second dispatch of the layer norm's
//! backward plan (the inputs are layernorm_backward's).
use crate::cases::prelude::*;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    crate::families::layernorm_backward::cases::backward_cases(gpu, z, 1)
}
