use crate::cpu::Array;
use crate::error::Result;

/// gelu(x) = x · Φ(x) = x/2 · (1 + erf(x/√2)), the exact form BERT uses.
pub fn gelu(x: &Array) -> Result<Array> {
    let y = x
        .data
        .iter()
        .map(|&v| 0.5 * v * (1.0 + libm::erff(v * std::f32::consts::FRAC_1_SQRT_2)))
        .collect();
    Array::new(&x.shape, y)
}
