//! References for the fleet campaign's ceiling kernels.

use crate::cpu::Array;
use crate::error::Result;

/// `iters` steps of v ← v·a + b for every element (fused, as the GPU's `fma`).
pub fn fma_chain(x: &Array, iters: u32, a: f32, b: f32) -> Result<Array> {
    let y = x
        .data
        .iter()
        .map(|&v| (0..iters).fold(v, |v, _| v.mul_add(a, b)))
        .collect();
    Array::new(&x.shape, y)
}
