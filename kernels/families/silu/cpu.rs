//! silu's CPU reference, one element.

/// silu(x) = x · σ(x) = x / (1 + e^−x).
pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}
