use crate::cpu::Array;
use crate::error::Result;
use crate::shape::rows_cols;

/// Softmax of `scale · x` over the last axis. With `causal`, row i of each [q, cols] matrix
/// (q = the second-to-last extent) sees keys j ≤ i + cols − q; a row that sees none is zeros.
pub fn softmax(x: &Array, causal: bool, scale: f32) -> Result<Array> {
    let (rows, cols) = rows_cols("softmax", &x.shape)?;
    let q = if x.shape.len() >= 2 {
        x.shape[x.shape.len() - 2]
    } else {
        1
    };
    let mut y = vec![0.0f32; rows * cols];
    for r in 0..rows {
        let row = &x.data[r * cols..][..cols];
        let end = if causal {
            // Last visible key: the diagonal that ends at the last key.
            let last = (r % q) as i64 + cols as i64 - q as i64;
            (last + 1).clamp(0, cols as i64) as usize
        } else {
            cols
        };
        if end == 0 {
            continue;
        }
        let m = row[..end]
            .iter()
            .map(|v| v * scale)
            .fold(f32::NEG_INFINITY, f32::max);
        if m == f32::NEG_INFINITY {
            // Every visible logit is −∞ (masked): zeros, as the GPU kernel writes.
            continue;
        }
        let out = &mut y[r * cols..][..cols];
        let mut sum = 0.0f32;
        for j in 0..end {
            out[j] = (row[j] * scale - m).exp();
            sum += out[j];
        }
        for v in &mut out[..end] {
            *v /= sum;
        }
    }
    Array::new(&x.shape, y)
}
