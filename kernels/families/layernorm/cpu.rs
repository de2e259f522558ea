use crate::cpu::Array;
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
    let sum = crate::cpu::add(x, r)?;
    let y = layernorm(&sum, gamma, beta, eps)?;
    Ok((sum, y))
}
