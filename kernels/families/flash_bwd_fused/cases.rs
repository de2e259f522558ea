//! flash_bwd_fused's cases: dK, dV and dQ in one pass, from a GPU forward, per dtype, mask and head dim (the inputs are
//! attention_delta's).
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32: attention_delta's table builds its cases.
pub(crate) const CAMPAIGN_TOLERANCE: f64 =
    crate::families::attention_delta::cases::BACKWARD_CAMPAIGN_TOLERANCE;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    crate::families::attention_delta::cases::backward_cases(
        gpu,
        z,
        crate::families::attention_delta::cases::Pass::Fused,
    )
}
