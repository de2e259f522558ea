use crate::cpu::Array;
use crate::error::{Error, Result};

/// A split product's slices [splits, rows, cols] summed in order (with the bias [cols]), then
/// the residual r added and the row normalised: `(C, S, Y)`, as `matmul_reduce` followed by
/// `add_layernorm`.
pub fn reduce_layernorm(
    partials: &Array,
    bias: Option<&Array>,
    r: &Array,
    gamma: &Array,
    beta: &Array,
    eps: f32,
) -> Result<(Array, Array, Array)> {
    let [_, rows, cols] = partials.shape[..] else {
        return Err(Error::shape(
            "reduce_layernorm",
            format!("slices {:?}: expected [splits, rows, cols]", partials.shape),
        ));
    };
    if r.shape != [rows, cols] {
        return Err(Error::shape(
            "reduce_layernorm",
            format!("r {:?}: expected [{rows}, {cols}]", r.shape),
        ));
    }
    let c = crate::cpu::matmul_reduce(partials, bias, false)?;
    let (sum, y) = crate::cpu::add_layernorm(&c, r, gamma, beta, eps)?;
    Ok((c, sum, y))
}
