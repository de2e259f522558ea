use crate::cpu::Array;
use crate::error::Result;
use crate::shape::rows_cols;

/// The gradient of y = softmax(scale · x) from y (`p`) and dy (`dp`):
/// dx = scale · p ∘ (dp − rowsum(p ∘ dp)).
pub fn softmax_backward(p: &Array, dp: &Array, scale: f32) -> Result<Array> {
    let (rows, cols) = rows_cols("softmax_backward", &p.shape)?;
    crate::shape::check_len("softmax_backward", &p.shape, dp.data.len())?;
    let mut dx = vec![0.0f32; rows * cols];
    for r in 0..rows {
        let (pr, dr) = (&p.data[r * cols..][..cols], &dp.data[r * cols..][..cols]);
        let s: f32 = pr.iter().zip(dr).map(|(a, b)| a * b).sum();
        for j in 0..cols {
            dx[r * cols + j] = scale * pr[j] * (dr[j] - s);
        }
    }
    Array::new(&p.shape, dx)
}
