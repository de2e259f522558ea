use crate::cpu::Array;
use crate::error::{Error, Result};

/// [.., rows, cols] → [.., cols, rows].
pub fn transpose(x: &Array) -> Result<Array> {
    let n = x.shape.len();
    if n < 2 {
        return Err(Error::shape(
            "transpose",
            format!("shape {:?} has no two axes to swap", x.shape),
        ));
    }
    let (rows, cols) = (x.shape[n - 2], x.shape[n - 1]);
    let mut shape = x.shape.clone();
    shape.swap(n - 2, n - 1);
    let mut y = vec![0.0f32; x.data.len()];
    for (src, dst) in x.data.chunks(rows * cols).zip(y.chunks_mut(rows * cols)) {
        for r in 0..rows {
            for c in 0..cols {
                dst[c * rows + r] = src[r * cols + c];
            }
        }
    }
    Array::new(&shape, y)
}
