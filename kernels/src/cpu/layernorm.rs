use super::{Array, check_array};
use crate::error::{Error, Result};
use crate::shape::rows_cols;

/// Layer normalisation over the last axis: (x − mean) / sqrt(var + eps) · gamma + beta,
/// with the biased variance (divided by cols), as in PyTorch.
pub fn layernorm(x: &Array, gamma: &Array, beta: &Array, eps: f32) -> Result<Array> {
    let (rows, cols) = rows_cols("layernorm", &x.shape)?;
    for (name, t) in [("gamma", gamma), ("beta", beta)] {
        if t.shape != [cols] {
            return Err(Error::shape(
                "layernorm",
                format!("{name} has shape {:?}, expected [{cols}]", t.shape),
            ));
        }
    }
    let mut y = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        let row = &x.data[r * cols..][..cols];
        let mean = row.iter().sum::<f32>() / cols as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / cols as f32;
        let inv_std = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter().zip(&gamma.data).zip(&beta.data) {
            y.push((v - mean) * inv_std * g + b);
        }
    }
    Array::new(&x.shape, y)
}

/// The gradients of [`layernorm`] given dy: `(dx, dgamma, dbeta)`. Mean and 1/std are
/// recomputed from x as the forward computes them (biased variance); with x̂ = (x − mean) · rstd
/// and g = dy ∘ gamma, dx = rstd · (g − mean(g) − x̂ · mean(g ∘ x̂)), dgamma = Σ_rows dy ∘ x̂ and
/// dbeta = Σ_rows dy, both summed in row order.
pub fn layernorm_backward(
    x: &Array,
    gamma: &Array,
    dy: &Array,
    eps: f32,
) -> Result<(Array, Array, Array)> {
    let op = "layernorm_backward";
    for a in [x, gamma, dy] {
        check_array(op, a)?;
    }
    let (rows, cols) = rows_cols(op, &x.shape)?;
    if gamma.shape != [cols] {
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
    let n = cols as f32;
    let mut dx = Vec::with_capacity(rows * cols);
    let mut dgamma = vec![0.0f32; cols];
    let mut dbeta = vec![0.0f32; cols];
    for r in 0..rows {
        let row = &x.data[r * cols..][..cols];
        let d = &dy.data[r * cols..][..cols];
        let mean = row.iter().sum::<f32>() / n;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
        let rstd = 1.0 / (var + eps).sqrt();
        let xhat: Vec<f32> = row.iter().map(|v| (v - mean) * rstd).collect();
        let g: Vec<f32> = d.iter().zip(&gamma.data).map(|(d, g)| d * g).collect();
        let mean_g = g.iter().sum::<f32>() / n;
        let mean_gx = g.iter().zip(&xhat).map(|(g, h)| g * h).sum::<f32>() / n;
        for j in 0..cols {
            dx.push(rstd * (g[j] - mean_g - xhat[j] * mean_gx));
            dgamma[j] += d[j] * xhat[j];
            dbeta[j] += d[j];
        }
    }
    Ok((
        Array::new(&x.shape, dx)?,
        Array::new(&[cols], dgamma)?,
        Array::new(&[cols], dbeta)?,
    ))
}

/// S = x + r and layernorm(S): the reference of the layer norm's residual form, `(S, Y)`.
pub fn add_layernorm(
    x: &Array,
    r: &Array,
    gamma: &Array,
    beta: &Array,
    eps: f32,
) -> Result<(Array, Array)> {
    if x.shape != r.shape {
        return Err(crate::error::Error::shape(
            "add_layernorm",
            format!("x {:?} and r {:?} differ", x.shape, r.shape),
        ));
    }
    let sum = super::add(x, r)?;
    let y = layernorm(&sum, gamma, beta, eps)?;
    Ok((sum, y))
}
