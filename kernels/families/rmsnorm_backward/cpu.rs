//! rmsnorm_backward's CPU reference: dx, and dgamma as the chained parameter kernel sums it.

use crate::cpu::Array;
use crate::error::Result;
use crate::families::layernorm_backward::cpu::check;

/// The gradients of [`rmsnorm`](crate::cpu::rmsnorm) given dy: `(dx, dgamma)`. rstd is
/// recomputed from x as the forward computes it; with g = dy ∘ gamma,
/// dx = rstd · (g − x · rstd² · mean(g ∘ x)) and dgamma = Σ_rows dy ∘ x · rstd, summed in row
/// order.
pub fn rmsnorm_backward(x: &Array, gamma: &Array, dy: &Array, eps: f32) -> Result<(Array, Array)> {
    let (rows, cols) = check("rmsnorm_backward", x, Some(gamma), dy, eps)?;
    let n = cols as f32;
    let mut dx = Vec::with_capacity(rows * cols);
    let mut dgamma = vec![0.0f32; cols];
    for r in 0..rows {
        let row = &x.data[r * cols..][..cols];
        let d = &dy.data[r * cols..][..cols];
        let rstd = rstd(row, eps);
        let g: Vec<f32> = d.iter().zip(&gamma.data).map(|(d, g)| d * g).collect();
        let mean_gx = g.iter().zip(row).map(|(g, v)| g * v).sum::<f32>() / n;
        let c = rstd * rstd * mean_gx;
        for j in 0..cols {
            dx.push(rstd * (g[j] - row[j] * c));
            dgamma[j] += d[j] * (row[j] * rstd);
        }
    }
    Ok((Array::new(&x.shape, dx)?, Array::new(&[cols], dgamma)?))
}

/// A row's 1 / sqrt(mean(x²) + eps), as the forward's reference computes it.
fn rstd(row: &[f32], eps: f32) -> f32 {
    let mean_sq = row.iter().map(|v| v * v).sum::<f32>() / row.len() as f32;
    1.0 / (mean_sq + eps).sqrt()
}

#[cfg(test)]
mod tests {
    use super::rmsnorm_backward;
    use crate::cpu::{Array, rel_l2};
    use crate::error::Result;
    use crate::families::rmsnorm::cpu::rmsnorm;

    /// Values uniform in [-gain, gain), seeded.
    fn arr(seed: u64, shape: &[usize], gain: f32) -> Result<Array> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let n = shape.iter().product();
        Array::new(
            shape,
            (0..n).map(|_| (rng.f32() * 2.0 - 1.0) * gain).collect(),
        )
    }

    /// Central differences of `loss` at `x`, one element at a time, step `h`.
    fn numeric(x: &Array, h: f32, loss: impl Fn(&Array) -> Result<f64>) -> Result<Vec<f32>> {
        let mut x = x.clone();
        (0..x.data.len())
            .map(|i| {
                let old = x.data[i];
                x.data[i] = old + h;
                let up = loss(&x)?;
                x.data[i] = old - h;
                let down = loss(&x)?;
                x.data[i] = old;
                Ok(((up - down) / (2.0 * f64::from(h))) as f32)
            })
            .collect()
    }

    fn assert_close(case: &str, got: &[f32], want: &[f32], tol: f64) {
        let err = rel_l2(got, want);
        assert!(
            err <= tol,
            "{case}: relative L2 error {err:.3e} over {tol:.0e} (got {got:?}, want {want:?})"
        );
    }

    #[test]
    fn matches_finite_differences_of_the_forward() -> Result<()> {
        // The loss Σ dy ∘ rmsnorm(x) is summed in f64 over the f32 forward, step 1e-2. Here the
        // differences agree with dx to 1.1e-5 (the step's truncation error) and with dgamma to
        // 8e-7 (the loss is linear in gamma: only f32 rounding); the tolerances are about ten
        // times those.
        let (rows, cols) = (3, 5);
        let x = arr(1, &[rows, cols], 2.0)?;
        let gamma = arr(2, &[cols], 1.5)?;
        let dy = arr(3, &[rows, cols], 1.0)?;
        let eps = 1e-5;
        let (dx, dgamma) = rmsnorm_backward(&x, &gamma, &dy, eps)?;
        assert_eq!(
            (dx.shape.as_slice(), dgamma.shape.as_slice()),
            (&[rows, cols][..], &[cols][..])
        );
        let h = 1e-2;
        let num_x = numeric(&x, h, |x| Ok(rmsnorm(x, &gamma, eps)?.dot(&dy)))?;
        assert_close("rmsnorm dx", &dx.data, &num_x, 1e-4);
        let num_g = numeric(&gamma, h, |g| Ok(rmsnorm(&x, g, eps)?.dot(&dy)))?;
        assert_close("rmsnorm dgamma", &dgamma.data, &num_g, 8e-6);
        Ok(())
    }

    #[test]
    fn dx_is_orthogonal_to_x_without_eps() -> Result<()> {
        // With eps 0 the norm ignores the row's scale, so moving x along itself changes nothing:
        // Σ_j dx_j · x_j = 0 in every row.
        let (rows, cols) = (4, 7);
        let x = arr(4, &[rows, cols], 1.0)?;
        let gamma = arr(5, &[cols], 1.0)?;
        let dy = arr(6, &[rows, cols], 1.0)?;
        let (dx, _) = rmsnorm_backward(&x, &gamma, &dy, 0.0)?;
        for r in 0..rows {
            let at = r * cols..(r + 1) * cols;
            let s: f32 = dx.data[at.clone()]
                .iter()
                .zip(&x.data[at])
                .map(|(d, v)| d * v)
                .sum();
            assert!(s.abs() < 1e-5, "row {r}: Σ dx · x = {s}");
        }
        Ok(())
    }

    #[test]
    fn hand_values() -> Result<()> {
        // x = [3, 4], gamma = 1, eps 0: rstd = 1/√12.5, y = x · rstd. With dy = [1, 0]:
        // mean(g ∘ x) = 1.5, dx = rstd · ([1, 0] − x · 1.5 / 12.5) = rstd · [0.64, −0.48],
        // and dgamma = dy ∘ x · rstd = [3 · rstd, 0].
        let rstd = 1.0 / 12.5f32.sqrt();
        let x = Array::new(&[1, 2], vec![3.0, 4.0])?;
        let g = Array::new(&[2], vec![1.0, 1.0])?;
        let dy = Array::new(&[1, 2], vec![1.0, 0.0])?;
        let (dx, dgamma) = rmsnorm_backward(&x, &g, &dy, 0.0)?;
        for (got, want) in dx.data.iter().zip([0.64 * rstd, -0.48 * rstd]) {
            assert!((got - want).abs() < 1e-6, "dx {:?}", dx.data);
        }
        for (got, want) in dgamma.data.iter().zip([3.0 * rstd, 0.0]) {
            assert!((got - want).abs() < 1e-6, "dgamma {:?}", dgamma.data);
        }
        Ok(())
    }

    #[test]
    fn bad_input_is_an_error() -> Result<()> {
        let x = arr(7, &[2, 3], 1.0)?;
        let g = arr(8, &[3], 1.0)?;
        assert!(rmsnorm_backward(&x, &arr(9, &[2], 1.0)?, &x, 1e-5).is_err());
        assert!(rmsnorm_backward(&x, &g, &arr(10, &[6], 1.0)?, 1e-5).is_err());
        assert!(rmsnorm_backward(&x, &g, &x, f32::NAN).is_err());
        assert!(rmsnorm_backward(&x, &g, &x, -1.0).is_err());
        let short = Array {
            shape: vec![2, 3],
            data: vec![0.0; 4],
        };
        assert!(rmsnorm_backward(&short, &g, &x, 1e-5).is_err());
        Ok(())
    }
}
