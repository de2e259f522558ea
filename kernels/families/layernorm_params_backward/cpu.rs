use crate::cpu::Array;
use crate::error::Result;
use crate::families::layernorm_backward::cpu::{check, stats};

/// The gradients of the layer norm's gamma and beta given dy: dgamma = Σ_rows dy ∘ x̂ and
/// dbeta = Σ_rows dy, both summed in row order, with x̂ = (x − mean) · rstd recomputed from x
/// as the forward computes it.
pub fn layernorm_params_backward(x: &Array, dy: &Array, eps: f32) -> Result<(Array, Array)> {
    let (rows, cols) = check("layernorm_params_backward", x, None, dy, eps)?;
    let mut dgamma = vec![0.0f32; cols];
    let mut dbeta = vec![0.0f32; cols];
    for r in 0..rows {
        let row = &x.data[r * cols..][..cols];
        let d = &dy.data[r * cols..][..cols];
        let (mean, rstd) = stats(row, eps);
        for j in 0..cols {
            dgamma[j] += d[j] * ((row[j] - mean) * rstd);
            dbeta[j] += d[j];
        }
    }
    Ok((Array::new(&[cols], dgamma)?, Array::new(&[cols], dbeta)?))
}
