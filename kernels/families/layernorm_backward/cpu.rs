use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::shape::rows_cols;

/// The checks both backward references make: x [.., cols], gamma [cols] (when given), dy like x,
/// eps finite and ≥ 0. Returns (rows, cols).
pub(crate) fn check(
    op: &'static str,
    x: &Array,
    gamma: Option<&Array>,
    dy: &Array,
    eps: f32,
) -> Result<(usize, usize)> {
    for a in [Some(x), gamma, Some(dy)].into_iter().flatten() {
        check_array(op, a)?;
    }
    let (rows, cols) = rows_cols(op, &x.shape)?;
    if let Some(gamma) = gamma.filter(|g| g.shape != [cols]) {
        return Err(Error::shape(
            op,
            format!("gamma has shape {:?}, expected [{cols}]", gamma.shape),
        ));
    }
    if dy.shape != x.shape {
        return Err(Error::shape(
            op,
            format!("dy has shape {:?}, x has {:?}", dy.shape, x.shape),
        ));
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("eps must be finite and ≥ 0, got {eps}"),
        });
    }
    Ok((rows, cols))
}

/// A row's mean and 1/std, as the forward computes them (biased variance).
pub(crate) fn stats(row: &[f32], eps: f32) -> (f32, f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// The gradients of [`layernorm`](crate::cpu::layernorm) given dy: `(dx, dgamma, dbeta)`. Mean
/// and 1/std are recomputed from x as the forward computes them; with x̂ = (x − mean) · rstd and
/// g = dy ∘ gamma, dx = rstd · (g − mean(g) − x̂ · mean(g ∘ x̂)). dgamma and dbeta are
/// [`layernorm_params_backward`](crate::cpu::layernorm_params_backward)'s.
pub fn layernorm_backward(
    x: &Array,
    gamma: &Array,
    dy: &Array,
    eps: f32,
) -> Result<(Array, Array, Array)> {
    let (rows, cols) = check("layernorm_backward", x, Some(gamma), dy, eps)?;
    let n = cols as f32;
    let mut dx = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        let row = &x.data[r * cols..][..cols];
        let d = &dy.data[r * cols..][..cols];
        let (mean, rstd) = stats(row, eps);
        let xhat: Vec<f32> = row.iter().map(|v| (v - mean) * rstd).collect();
        let g: Vec<f32> = d.iter().zip(&gamma.data).map(|(d, g)| d * g).collect();
        let mean_g = g.iter().sum::<f32>() / n;
        let mean_gx = g.iter().zip(&xhat).map(|(g, h)| g * h).sum::<f32>() / n;
        dx.extend((0..cols).map(|j| rstd * (g[j] - mean_g - xhat[j] * mean_gx)));
    }
    let (dgamma, dbeta) = crate::cpu::layernorm_params_backward(x, dy, eps)?;
    Ok((Array::new(&x.shape, dx)?, dgamma, dbeta))
}

/// [`layernorm_backward`] with `acc` (x's shape) added to dX: (acc + dX, dgamma, dbeta), the
/// gradient a residual path brings and the norm's, as the `accumulate` kernels write it.
pub fn layernorm_backward_add(
    x: &Array,
    gamma: &Array,
    dy: &Array,
    acc: &Array,
    eps: f32,
) -> Result<(Array, Array, Array)> {
    check_array("layernorm_backward", acc)?;
    if acc.shape != x.shape {
        return Err(Error::shape(
            "layernorm_backward",
            format!(
                "the added gradient has shape {:?}, x has {:?}",
                acc.shape, x.shape
            ),
        ));
    }
    let (dx, dgamma, dbeta) = layernorm_backward(x, gamma, dy, eps)?;
    let sum = dx.data.iter().zip(&acc.data).map(|(d, a)| d + a).collect();
    Ok((Array::new(&x.shape, sum)?, dgamma, dbeta))
}
