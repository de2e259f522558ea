//! flash_bwd_dkdv's cases: dK and dV, from a GPU forward, per dtype, mask and head dim (the inputs are
//! attention_delta's).
use super::*;

pub(super) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    super::attention_delta::backward_cases(gpu, z, super::attention_delta::Pass::DkDv)
}
