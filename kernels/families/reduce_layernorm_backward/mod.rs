//! A split product's sum folded into the layer norm backward that reads it: where a product cut
//! along K ends the recording with its sum (`matmul_reduce`, no epilogue) and the next call is
//! the layer norm's backward with that product as dY (a transformer block's input gradient
//! through its MLP or its Q/K/V projection), the sum is taken back and this family's launch
//! writes dY and dX with the row statistics; the dgamma/dbeta launch after it reads them as
//! before. The model code calls the backward it always did.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::launch::{
    RowParams, Rowwise, check_eps, check_input_shape, check_no_alias, check_operands,
    check_out_shape,
};
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

pub(crate) const OP: &str = "reduce_layernorm_backward";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

/// The selector's call for rows of `cols`, with a residual's gradient added or none.
pub fn call(cols: usize, accumulate: bool) -> Rowwise {
    Rowwise {
        family: OP,
        dtype: DType::F32,
        cols,
        flag: Some(("accumulate", accumulate)),
    }
}

/// Checks the call and prepares its launch: dY = Σ partials, dX = the layer norm's input
/// gradient from it (+ acc), each row's mean and rstd into `stats` [rows, 2].
#[allow(clippy::too_many_arguments)]
pub fn launch(
    partials: &Tensor,
    x: &Tensor,
    gamma: &Tensor,
    acc: Option<&Tensor>,
    [dy, dx, stats]: [&Tensor; 3],
    eps: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let mut inputs = vec![partials, x, gamma];
    inputs.extend(acc);
    check_operands(OP, &[&inputs[..], &[dy, dx, stats]].concat())?;
    if inputs
        .iter()
        .chain([&dy, &dx])
        .any(|t| t.dtype() != DType::F32)
    {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "every tensor is f32 (K is cut only for f32 products)".into(),
        });
    }
    let (rows, cols) = rows_cols(OP, x.shape())?;
    let splits = crate::families::matmul_reduce::slices(OP, partials, rows * cols)?;
    check_input_shape(OP, "gamma", gamma, &[cols])?;
    if let Some(acc) = acc {
        check_input_shape(OP, "the added gradient", acc, x.shape())?;
    }
    check_out_shape(OP, dy, x.shape())?;
    check_out_shape(OP, dx, x.shape())?;
    check_out_shape(OP, stats, &[rows, 2])?;
    for out in [dy, dx, stats] {
        check_no_alias(OP, out, &inputs)?;
    }
    check_no_alias(OP, dy, &[dx, stats])?;
    check_no_alias(OP, dx, &[stats])?;
    check_eps(OP, eps)?;
    let gpu = x.gpu();
    let choice = gpu.selector().choose(&call(cols, acc.is_some()), named)?;
    let params = RowParams::with_count(rows, cols, eps, splits);
    let mut bound = vec![x, gamma, partials, dx, stats, dy];
    bound.extend(acc);
    let groups = gpu.groups(OP, rows as u64)?;
    let dispatch = Dispatch::new(gpu, &choice.variant, &bound, &params, groups)?;
    Ok((dispatch, choice))
}
