use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};

/// The gradient of [`gelu`](crate::cpu::gelu): dx = dy · (Φ(x) + x · φ(x)), with Φ the standard normal
/// distribution function (the same erf as the forward) and φ its density.
pub fn gelu_backward(x: &Array, dy: &Array) -> Result<Array> {
    check_array("gelu_backward", x)?;
    if dy.shape != x.shape {
        return Err(Error::shape(
            "gelu_backward",
            format!("dy has shape {:?}, x has {:?}", dy.shape, x.shape),
        ));
    }
    // 1/√(2π)
    const INV_SQRT_2PI: f32 = 0.398_942_3;
    let dx = x
        .data
        .iter()
        .zip(&dy.data)
        .map(|(&v, &d)| {
            let cdf = 0.5 * (1.0 + libm::erff(v * std::f32::consts::FRAC_1_SQRT_2));
            let pdf = INV_SQRT_2PI * (-0.5 * v * v).exp();
            d * (cdf + v * pdf)
        })
        .collect();
    Array::new(&x.shape, dx)
}
