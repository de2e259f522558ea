//! The reference of the matrix units' ceiling kernel.

use crate::cpu::Array;
use crate::error::{Error, Result};

/// Every fragment of `groups` workgroups (8 subgroups, 4 accumulators each) after `iters` steps
/// acc ← A·B + acc from zero, for `x` [4, 512] holding four equal copies of A then B (16 × 16,
/// row-major): `iters` · A·B, row-major, repeated — [groups, 8, 4, 256].
pub fn mma_chain(x: &Array, iters: u32, groups: usize) -> Result<Array> {
    if x.data.len() < 512 {
        return Err(Error::shape(
            "mma_chain",
            format!("X has {} elements: expected A and B, 512", x.data.len()),
        ));
    }
    let (a, b) = x.data[..512].split_at(256);
    let mut c = [0.0f32; 256];
    for r in 0..16 {
        for col in 0..16 {
            let dot: f32 = (0..16).map(|k| a[r * 16 + k] * b[k * 16 + col]).sum();
            c[r * 16 + col] = dot;
        }
    }
    // The GPU adds the product `iters` times; so does this, in f32.
    let mut acc = [0.0f32; 256];
    for _ in 0..iters {
        for (s, v) in acc.iter_mut().zip(&c) {
            *s += v;
        }
    }
    let fragments = groups * 8 * 4;
    let data = (0..fragments).flat_map(|_| acc.iter().copied()).collect();
    Array::new(&[groups, 8, 4, 256], data)
}
