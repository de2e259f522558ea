//! flash_bwd_fused's cases: dK, dV and dQ in one pass, from a GPU forward, per dtype, mask and head dim (the inputs are
//! attention_delta's).
use crate::cases::prelude::*;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    crate::families::attention_delta::cases::backward_cases(gpu, z, crate::families::attention_delta::cases::Pass::Fused)
}
