use crate::cpu::Array;
use crate::error::{Error, Result};

/// [a, b, c] → [b, a, c]: the first two axes swapped, the last kept whole (attention heads:
/// [tokens, heads, head_dim] ↔ [heads, tokens, head_dim]).
pub fn swap_axes01(x: &Array) -> Result<Array> {
    let [a, b, c] = x.shape[..] else {
        return Err(Error::shape(
            "swap_axes",
            format!("shape {:?}: expected rank 3", x.shape),
        ));
    };
    let mut y = vec![0.0f32; x.data.len()];
    for i in 0..a {
        for j in 0..b {
            y[(j * a + i) * c..][..c].copy_from_slice(&x.data[(i * b + j) * c..][..c]);
        }
    }
    Array::new(&[b, a, c], y)
}

/// [a, b, c, d] → [a, c, b, d]: the middle two axes swapped (attention heads with a batch:
/// [batch, tokens, heads, head_dim] ↔ [batch, heads, tokens, head_dim]).
pub fn swap_axes12(x: &Array) -> Result<Array> {
    let [a, b, c, d] = x.shape[..] else {
        return Err(Error::shape(
            "swap_axes",
            format!("shape {:?}: expected rank 4", x.shape),
        ));
    };
    let mut y = vec![0.0f32; x.data.len()];
    for n in 0..a {
        for i in 0..b {
            for j in 0..c {
                y[((n * c + j) * b + i) * d..][..d]
                    .copy_from_slice(&x.data[((n * b + i) * c + j) * d..][..d]);
            }
        }
    }
    Array::new(&[a, c, b, d], y)
}
