//! rmsnorm's CPU reference: each row divided by its root mean square, then scaled by gamma.

use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::shape::rows_cols;

/// RMS normalisation over the last axis: x · rstd · gamma with rstd = 1 / sqrt(mean(x²) + eps),
/// as in PyTorch's `rms_norm` (no mean is subtracted, there is no bias).
pub fn rmsnorm(x: &Array, gamma: &Array, eps: f32) -> Result<Array> {
    const OP: &str = "rmsnorm";
    check_array(OP, x)?;
    check_array(OP, gamma)?;
    let (rows, cols) = rows_cols(OP, &x.shape)?;
    if gamma.shape != [cols] {
        return Err(Error::shape(
            OP,
            format!("gamma has shape {:?}, expected [{cols}]", gamma.shape),
        ));
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("eps must be finite and ≥ 0, got {eps}"),
        });
    }
    let mut y = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        let row = &x.data[r * cols..][..cols];
        let rstd = rstd(row, eps);
        y.extend(row.iter().zip(&gamma.data).map(|(v, g)| v * rstd * g));
    }
    Array::new(&x.shape, y)
}

/// A row's 1 / sqrt(mean(x²) + eps), the squares summed in f32 in row order.
fn rstd(row: &[f32], eps: f32) -> f32 {
    let mean_sq = row.iter().map(|v| v * v).sum::<f32>() / row.len() as f32;
    1.0 / (mean_sq + eps).sqrt()
}

#[cfg(test)]
mod tests {
    use super::rmsnorm;
    use crate::cpu::Array;
    use crate::error::Result;

    fn close(got: &[f32], want: &[f32], tol: f32) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= tol, "got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn hand_values() -> Result<()> {
        // [3, 4]: mean of squares 12.5, so each is divided by sqrt(12.5) ≈ 3.5355 (eps 0).
        let x = Array::new(&[1, 2], vec![3.0, 4.0])?;
        let rms = 12.5f32.sqrt();
        let y = rmsnorm(&x, &Array::new(&[2], vec![1.0, 1.0])?, 0.0)?;
        close(&y.data, &[3.0 / rms, 4.0 / rms], 1e-6);
        close(&y.data, &[0.848_528, 1.131_371], 1e-6);
        // Gamma scales each column; rows are normalised independently ([1, 1]: rms 1).
        let x = Array::new(&[2, 2], vec![3.0, 4.0, 1.0, -1.0])?;
        let y = rmsnorm(&x, &Array::new(&[2], vec![2.0, -0.5])?, 0.0)?;
        close(&y.data, &[6.0 / rms, -2.0 / rms, 2.0, 0.5], 1e-6);
        // eps is added to the mean of squares: [0, 0] with eps 1 stays 0, [1, 1] with eps 3
        // is halved.
        let x = Array::new(&[2, 2], vec![0.0, 0.0, 1.0, 1.0])?;
        let g = Array::new(&[2], vec![1.0, 1.0])?;
        close(&rmsnorm(&x, &g, 1.0)?.data[..2], &[0.0, 0.0], 0.0);
        close(&rmsnorm(&x, &g, 3.0)?.data[2..], &[0.5, 0.5], 1e-7);
        Ok(())
    }

    #[test]
    fn a_row_comes_out_with_unit_rms_and_ignores_its_scale() -> Result<()> {
        let data = [0.3f32, -1.7, 2.2, 0.05, -0.9];
        let x = Array::new(&[1, 5], data.to_vec())?;
        let g = Array::new(&[5], vec![1.0; 5])?;
        let y = rmsnorm(&x, &g, 0.0)?;
        let ms = y.data.iter().map(|v| v * v).sum::<f32>() / 5.0;
        assert!((ms - 1.0).abs() < 1e-6, "mean of squares {ms}");
        let scaled = Array::new(&[1, 5], data.iter().map(|v| v * 8.0).collect())?;
        close(&rmsnorm(&scaled, &g, 0.0)?.data, &y.data, 1e-6);
        Ok(())
    }

    #[test]
    fn bad_input_is_an_error() -> Result<()> {
        let x = Array::new(&[2, 3], vec![1.0; 6])?;
        let g = Array::new(&[3], vec![1.0; 3])?;
        assert!(rmsnorm(&x, &Array::new(&[2], vec![1.0; 2])?, 1e-5).is_err());
        assert!(rmsnorm(&x, &g, f32::NAN).is_err());
        assert!(rmsnorm(&x, &g, -1e-5).is_err());
        assert!(rmsnorm(&x, &g, f32::INFINITY).is_err());
        // A hand-built array whose data is short of its shape.
        let short = Array {
            shape: vec![2, 3],
            data: vec![0.0; 4],
        };
        assert!(rmsnorm(&short, &g, 1e-5).is_err());
        Ok(())
    }
}
