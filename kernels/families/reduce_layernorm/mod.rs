//! A split product's sum folded into the residual layer norm that reads it: where a product
//! cut along K ends the recording with its sum (`matmul_reduce`, with a bias) and the next call
//! is `add_layernorm` of that product, the sum is taken back and this one launch writes the
//! product, the residual sum and the norm (a BERT layer's output projection and feed-forward
//! product, each followed by its add + layernorm). The model code calls the four kernels it
//! always did; the fold happens here, beneath it.

pub(crate) mod cases;
pub mod cpu;

use crate::contract::Param;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::launch::{
    RowParams, Rowwise, check_eps, check_input_shape, check_no_alias, check_operands,
    check_out_shape,
};
use crate::registry::{Registry, Variant};
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

pub(crate) const OP: &str = "reduce_layernorm";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

/// The selector's call for rows of `cols`, of a product with a bias or none.
pub fn call(cols: usize, bias: bool) -> Rowwise {
    Rowwise {
        family: OP,
        dtype: DType::F32,
        cols,
        flag: Some(("bias", bias)),
    }
}

/// Checks the call and prepares its launch: C = Σ partials (+ bias), S = C + r, Y =
/// layernorm(S).
#[allow(clippy::too_many_arguments)]
pub fn launch(
    partials: &Tensor,
    bias: Option<&Tensor>,
    r: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    [c, sum, y]: [&Tensor; 3],
    eps: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let mut all = vec![partials, r, gamma, beta, c, sum, y];
    all.extend(bias);
    check_operands(OP, &all)?;
    if all.iter().any(|t| t.dtype() != DType::F32) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "every tensor is f32 (K is cut only for f32 products)".into(),
        });
    }
    let (rows, cols) = rows_cols(OP, c.shape())?;
    let count = rows * cols;
    let splits = crate::families::matmul_reduce::slices(OP, partials, count)?;
    let vectors = [("gamma", gamma), ("beta", beta)];
    for (name, t) in bias.map(|b| ("bias", b)).into_iter().chain(vectors) {
        check_input_shape(OP, name, t, &[cols])?;
    }
    check_input_shape(OP, "r", r, c.shape())?;
    check_out_shape(OP, sum, c.shape())?;
    check_out_shape(OP, y, c.shape())?;
    let mut inputs = vec![partials, r, gamma, beta];
    inputs.extend(bias);
    for out in [c, sum, y] {
        check_no_alias(OP, out, &inputs)?;
    }
    check_no_alias(OP, c, &[sum, y])?;
    check_no_alias(OP, sum, &[y])?;
    check_eps(OP, eps)?;
    let gpu = c.gpu();
    let choice = gpu.selector().choose(&call(cols, bias.is_some()), named)?;
    let params = RowParams::with_count(rows, cols, eps, splits);
    let groups = gpu.groups(OP, rows as u64)?;
    let dispatch = Dispatch::new(gpu, &choice.variant, &all, &params, groups)?;
    Ok((dispatch, choice))
}

/// The name of this family's variant in the design (dtype, threads per row, reduction) of
/// `norm`, a `layernorm` variant, with a bias or none: the rows reduced as `norm` reduces them,
/// so the fold gives `norm`'s bits.
pub(crate) fn design_of(registry: &Registry, norm: &Variant, bias: bool) -> Option<String> {
    let set = [("bias", Param::Bool(bias))];
    registry.like(OP, norm, &set).ok().map(|v| v.name.clone())
}

/// The variant of this family in the design of the `layernorm` variant the selector picks for a
/// residual norm over rows of `cols` (as [`design_of`]).
pub(crate) fn design_for(
    sel: &crate::select::Selector<'_>,
    cols: usize,
    bias: bool,
) -> Option<String> {
    let call = crate::families::layernorm::call(DType::F32, cols, true);
    let norm = sel.choose(&call, None).ok()?;
    design_of(sel.registry, &norm.variant, bias)
}
