use crate::cpu::Array;
use crate::error::{Error, Result};

/// A split product's slices [splits, rows, cols] summed in order into dY, then the layer norm's
/// input gradient from it (with `acc` added): `(dY, dX)`, as `matmul_reduce` followed by
/// `layernorm_backward`.
pub fn reduce_layernorm_backward(
    partials: &Array,
    x: &Array,
    gamma: &Array,
    acc: Option<&Array>,
    eps: f32,
) -> Result<(Array, Array)> {
    let [_, rows, cols] = partials.shape[..] else {
        return Err(Error::shape(
            "reduce_layernorm_backward",
            format!("slices {:?}: expected [splits, rows, cols]", partials.shape),
        ));
    };
    if x.shape != [rows, cols] {
        return Err(Error::shape(
            "reduce_layernorm_backward",
            format!("x {:?}: expected [{rows}, {cols}]", x.shape),
        ));
    }
    let dy = crate::cpu::matmul_reduce(partials, None, false)?;
    let (dx, _, _) = match acc {
        Some(acc) => crate::cpu::layernorm_backward_add(x, gamma, &dy, acc, eps)?,
        None => crate::cpu::layernorm_backward(x, gamma, &dy, eps)?,
    };
    Ok((dy, dx))
}
