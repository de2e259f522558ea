//! A split product's sum folded into the residual layer norm that reads it: where a product
//! cut along K ends the recording with its sum (`matmul_reduce`, with a bias) and the next call
//! is `add_layernorm` of that product, the sum is taken back and this one launch writes the
//! product, the residual sum and the norm (a BERT layer's output projection and feed-forward
//! product, each followed by its add + layernorm). The model code calls the four kernels it
//! always did; the fold happens here, beneath it.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::{Bindable, Dispatch};
use crate::launch::{
    RowParams, Rowwise, check_eps, check_input_shape, check_no_alias, check_operands,
    check_out_shape,
};
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

const OP: &str = "reduce_layernorm";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

/// The selector's call for rows of `cols`.
pub fn call(cols: usize) -> Rowwise {
    Rowwise {
        family: OP,
        dtype: DType::F32,
        cols,
        flag: None,
    }
}

/// Checks the call and prepares its launch: C = Σ partials + bias, S = C + r, Y = layernorm(S).
#[allow(clippy::too_many_arguments)]
pub fn plan(
    partials: &Tensor,
    bias: &Tensor,
    r: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    [c, sum, y]: [&Tensor; 3],
    eps: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let all = [partials, bias, r, gamma, beta, c, sum, y];
    check_operands(OP, &all)?;
    if all.iter().any(|t| t.dtype() != DType::F32) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "every tensor is f32 (K is cut only for f32 products)".into(),
        });
    }
    let (rows, cols) = rows_cols(OP, c.shape())?;
    let count = rows * cols;
    let splits = match partials.shape() {
        [s, rest] if *rest == count && *s > 0 => *s,
        other => {
            return Err(Error::shape(
                OP,
                format!("the slices are {other:?}: expected [splits, {count}]"),
            ));
        }
    };
    for (name, t) in [("bias", bias), ("gamma", gamma), ("beta", beta)] {
        check_input_shape(OP, name, t, &[cols])?;
    }
    check_input_shape(OP, "r", r, c.shape())?;
    check_out_shape(OP, sum, c.shape())?;
    check_out_shape(OP, y, c.shape())?;
    let inputs = [partials, bias, r, gamma, beta];
    for out in [c, sum, y] {
        check_no_alias(OP, out, &inputs)?;
    }
    check_no_alias(OP, c, &[sum, y])?;
    check_no_alias(OP, sum, &[y])?;
    check_eps(OP, eps)?;
    let gpu = c.gpu();
    let choice = gpu.selector().choose(&call(cols), named)?;
    let params = RowParams::with_count(rows, cols, eps, splits);
    let groups = gpu.groups(OP, rows as u64)?;
    let dispatch = Dispatch::new(gpu, &choice.variant, &all, &params, groups)?;
    Ok((dispatch, choice))
}

/// `add_layernorm(x, r)` as one launch with the sum of the split product that wrote `x`, when
/// that sum (with a bias) is the newest launch recorded: it is replaced by this family's
/// launch, which writes `x` too. Returns whether it folded; when it did not (another launch
/// came after the sum, or no variant takes the call), nothing was changed.
pub(crate) fn fold(
    x: &Tensor,
    r: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    [sum, y]: [&Tensor; 2],
    eps: f32,
) -> Result<bool> {
    let gpu = x.gpu();
    let Ok((rows, cols)) = rows_cols(OP, x.shape()) else {
        return Ok(false);
    };
    // matmul_reduce binds (partials, C, bias) with a bias epilogue; its C must be x exactly.
    gpu.replace_last(|label, bound| {
        let is_sum = label.starts_with("matmul_reduce/")
            && label.ends_with("_bias")
            && bound.len() == 3
            && bound[1].key() == x.slice().key();
        if !is_sum || x.dtype() != DType::F32 {
            return None;
        }
        let count = rows * cols;
        let splits = (bound[0].size / 4) as usize / count;
        let partials = Tensor::over(gpu, bound[0].clone(), &[splits, count], DType::F32);
        let bias = Tensor::over(gpu, bound[2].clone(), &[cols], DType::F32);
        let planned = plan(&partials, &bias, r, gamma, beta, [x, sum, y], eps, None);
        planned.ok().map(|(dispatch, _)| dispatch)
    })
}
