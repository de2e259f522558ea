use crate::cpu::Array;
use crate::error::{Error, Result};

/// gelu(x · W1 + b1) · W2 in slices: the hidden units cut into parts of `per`, slice s the
/// product of part s of the hidden layer with the rows of W2 that part meets. x [M, D], W1 [D, H],
/// b1 [H], W2 [H, N] → [⌈H / per⌉, M, N]; the slices add up to the whole product (in order,
/// that sum is `mlp` without its b2).
pub fn mlp_slices(x: &Array, w1: &Array, b1: &Array, w2: &Array, per: usize) -> Result<Array> {
    let hidden = crate::cpu::linear_gelu(x, w1, b1)?;
    let (m, h) = crate::shape::rows_cols("mlp", &hidden.shape)?;
    let bad = |detail: String| Error::shape("mlp", detail);
    let [h2, n] = w2.shape[..] else {
        return Err(bad(format!("W2 {:?}: expected [hidden, cols]", w2.shape)));
    };
    if h2 != h || per == 0 {
        return Err(bad(format!(
            "W2 {:?} after {h} hidden units in parts of {per}",
            w2.shape
        )));
    }
    let slices = h.div_ceil(per);
    let mut out = vec![0.0f32; slices * m * n];
    for (s, slice) in out.chunks_mut(m * n).enumerate() {
        for i in 0..m {
            for p in s * per..((s + 1) * per).min(h) {
                let hip = hidden.data[i * h + p];
                for j in 0..n {
                    slice[i * n + j] += hip * w2.data[p * n + j];
                }
            }
        }
    }
    Array::new(&[slices, m, n], out)
}

/// gelu(x · W1 + b1) · W2 + b2: a transformer's feed-forward block.
pub fn mlp(x: &Array, w1: &Array, b1: &Array, w2: &Array, b2: &Array) -> Result<Array> {
    crate::cpu::linear(&crate::cpu::linear_gelu(x, w1, b1)?, w2, b2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked by hand: x = [1, 2], W1 = [[1, 0, -1], [0, 1, 1]] gives x · W1 = [1, 2, 1]; with
    /// b1 = [0, 0, -1] the pre-activations are [1, 2, 0], and gelu(0) = 0 leaves the third unit
    /// out of the second slice.
    #[test]
    fn slices_split_the_hidden_units() -> Result<()> {
        let x = Array::new(&[1, 2], vec![1.0, 2.0])?;
        let w1 = Array::new(&[2, 3], vec![1.0, 0.0, -1.0, 0.0, 1.0, 1.0])?;
        let b1 = Array::new(&[3], vec![0.0, 0.0, -1.0])?;
        let w2 = Array::new(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
        let s = mlp_slices(&x, &w1, &b1, &w2, 2)?;
        assert_eq!(s.shape, [2, 1, 2]);
        let (g1, g2) = (0.841_344_7_f32, 1.954_5_f32);
        let want = [g1 + 3.0 * g2, 2.0 * g1 + 4.0 * g2, 0.0, 0.0];
        for (got, want) in s.data.iter().zip(want) {
            assert!((got - want).abs() < 1e-4, "{:?}", s.data);
        }
        let whole = mlp(&x, &w1, &b1, &w2, &Array::new(&[2], vec![0.5, -0.5])?)?;
        assert!((whole.data[0] - (want[0] + 0.5)).abs() < 1e-4);
        assert!((whole.data[1] - (want[1] - 0.5)).abs() < 1e-4);
        Ok(())
    }

    #[test]
    fn a_part_of_zero_is_refused() -> Result<()> {
        let x = Array::new(&[1, 1], vec![1.0])?;
        let w = Array::new(&[1, 1], vec![1.0])?;
        let b = Array::new(&[1], vec![0.0])?;
        assert!(mlp_slices(&x, &w, &b, &w, 0).is_err());
        Ok(())
    }
}
