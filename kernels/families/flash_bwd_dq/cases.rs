//! flash_bwd_dq's cases: dQ, from a GPU forward, per dtype, mask and head dim (the inputs are
//! attention_delta's).
use super::*;

pub(super) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    super::attention_delta::backward_cases(gpu, z, super::attention_delta::Pass::Dq)
}
