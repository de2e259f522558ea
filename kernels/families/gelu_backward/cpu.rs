//! gelu_backward's CPU reference, one element.

/// The gradient of [`gelu`](super::super::gelu::scalar::gelu): dx = dy · (Φ(x) + x · φ(x)),
/// with Φ the standard normal distribution function (the same erf as the forward) and φ its
/// density.
pub fn gelu_backward(x: f32, dy: f32) -> f32 {
    // 1/√(2π)
    const INV_SQRT_2PI: f32 = 0.398_942_3;
    let cdf = 0.5 * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2));
    let pdf = INV_SQRT_2PI * (-0.5 * x * x).exp();
    dy * (cdf + x * pdf)
}
