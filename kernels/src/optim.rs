//! Optimiser hyper-parameters, shared by the CPU path (`cpu::adamw`) and the GPU update
//! (`ops::adamw`) so that both read one description of a step.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// AdamW hyper-parameters for one update (decoupled weight decay, Loshchilov & Hutter).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdamW {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
    /// 1-based step count
    pub step: u32,
}

impl AdamW {
    /// (1 − β₁ᵗ, 1 − β₂ᵗ) for this step, computed in f32 with `powi`: the GPU kernel receives
    /// these very numbers, so both paths divide by the same bias corrections.
    pub fn bias_corrections(&self) -> (f32, f32) {
        // Past i32::MAX steps βᵗ is 0 in f32 for any β < 1: saturating changes nothing.
        let t = i32::try_from(self.step).unwrap_or(i32::MAX);
        (1.0 - self.beta1.powi(t), 1.0 - self.beta2.powi(t))
    }

    /// Refuses hyper-parameters that would make the update NaN or meaningless: step 0 (the
    /// bias corrections would be 0), β outside [0, 1), a non-finite learning rate or weight
    /// decay, and eps ≤ 0 (a parameter whose gradients were all zero would divide 0 by 0).
    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        let invalid = |detail: String| Err(Error::InvalidArgument { op, detail });
        if self.step == 0 {
            return invalid("step is 1-based; step 0 has no bias correction".into());
        }
        if !self.lr.is_finite() {
            return invalid(format!("lr must be finite, got {}", self.lr));
        }
        if !self.weight_decay.is_finite() {
            return invalid(format!(
                "weight_decay must be finite, got {}",
                self.weight_decay
            ));
        }
        for (name, beta) in [("beta1", self.beta1), ("beta2", self.beta2)] {
            if !(0.0..1.0).contains(&beta) {
                return invalid(format!("{name} must be in [0, 1), got {beta}"));
            }
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return invalid(format!("eps must be finite and > 0, got {}", self.eps));
        }
        Ok(())
    }
}
