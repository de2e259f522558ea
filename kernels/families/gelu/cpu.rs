//! gelu's CPU reference, one element.

/// gelu(x) = x · Φ(x) = x/2 · (1 + erf(x/√2)), the exact form BERT uses.
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2))
}
