use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::shape::cross_entropy_rows;

/// Softmax cross-entropy over the last axis with integer targets. `logits` is [.., vocab]
/// (rank ≥ 2, rows = the product of the leading extents), `targets` has one id per row.
/// Returns `(loss [rows], dlogits)`: loss = logsumexp(row) − `row[target]`, and
/// dlogits = (softmax(row) − onehot(target)) · grad_scale (1/rows for the mean loss's gradient).
pub fn cross_entropy(logits: &Array, targets: &[u32], grad_scale: f32) -> Result<(Array, Array)> {
    let op = "cross_entropy";
    check_array(op, logits)?;
    let (rows, vocab) = cross_entropy_rows(op, &logits.shape, targets.len())?;
    if !grad_scale.is_finite() {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("grad_scale must be finite, got {grad_scale}"),
        });
    }
    if let Some((i, t)) = targets
        .iter()
        .enumerate()
        .find(|&(_, &t)| t as usize >= vocab)
    {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("target {t} of row {i} is out of range for a vocabulary of {vocab}"),
        });
    }
    let mut loss = Vec::with_capacity(rows);
    let mut grad = vec![0.0f32; rows * vocab];
    for (r, &t) in targets.iter().enumerate() {
        let row = &logits.data[r * vocab..][..vocab];
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let s: f32 = row.iter().map(|v| (v - m).exp()).sum();
        let t = t as usize;
        loss.push(m + s.ln() - row[t]);
        let out = &mut grad[r * vocab..][..vocab];
        for (j, (g, v)) in out.iter_mut().zip(row).enumerate() {
            let onehot = if j == t { 1.0 } else { 0.0 };
            *g = ((v - m).exp() / s - onehot) * grad_scale;
        }
    }
    Ok((Array::new(&[rows], loss)?, Array::new(&logits.shape, grad)?))
}
