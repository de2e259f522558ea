//! The gradient of an embedding lookup on the GPU: dY's rows summed per token id.

pub(crate) mod cases;
pub mod cpu;

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{
    check_ids, check_no_alias, check_operands, check_out_shape, choose_elementwise, record,
};

const OP: &str = "embedding_backward";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    cols: u32,
    vocab: u32,
    segments: u32,
}

/// Runs a long token list is cut into (`segments` in the template): a thread per (id,
/// column) walking all of a Medium step's 1,024 tokens left most of the H200 idle (0.05 ms a
/// launch, kernels/perf/embedding-under-cuda-graph.md). Short lists keep one run: the CPU
/// path's order.
fn segments(n: usize, wg: u32) -> u32 {
    let want = if n >= 256 { 8 } else { 1 };
    want.min(wg.max(1))
}

/// `dy` [n, cols] and `tokens` (u32, `[n]`) → d_table [vocab, cols], row t the sum of dy's rows
/// whose token is t (no atomics: every run gives the same bits). A list of under 256 tokens is
/// added in token order, as the CPU path adds; a longer one in 8 runs, each in order, then the
/// runs in order. The work grows as vocab · cols · n: meant for small vocabularies. A token ≥ vocab adds to no
/// row (the forward lookup already wrote NaN for it).
pub fn embedding_backward(dy: &Tensor, tokens: &Tensor, vocab: usize) -> Result<Tensor> {
    let cols = dy_cols(dy, tokens)?;
    if vocab == 0 {
        return Err(Error::shape(
            OP,
            "vocab is 0: the table needs at least one row",
        ));
    }
    let d_table = Tensor::uninit(dy.gpu(), &[vocab, cols], dy.dtype())?;
    embedding_backward_into(dy, tokens, &d_table, None)?;
    Ok(d_table)
}

/// Writes the table's gradient into `d_table` ([vocab, cols]: the vocabulary is its first
/// extent), with the named variant or the selector's choice.
pub fn embedding_backward_into(
    dy: &Tensor,
    tokens: &Tensor,
    d_table: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(dy.gpu(), launch(dy, tokens, d_table, named)?)
}

/// Checks the call and prepares its launch.
pub fn launch(
    dy: &Tensor,
    tokens: &Tensor,
    d_table: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[dy, d_table])?;
    check_ids(OP, "tokens", tokens, dy)?;
    let n = tokens.numel();
    let cols = dy_cols(dy, tokens)?;
    let vocab = d_table.shape().first().copied().unwrap_or(0);
    check_out_shape(OP, d_table, &[vocab, cols])?;
    check_no_alias(OP, d_table, &[dy, tokens])?;
    let choice = choose_elementwise(OP, dy, None, named)?;
    let wg = Design::parse(&choice.variant)?.wg.max(1);
    let segments = segments(n, wg);
    let params = Params {
        n: n as u32,
        cols: cols as u32,
        vocab: vocab as u32,
        segments,
    };
    let gpu = dy.gpu();
    let per_group = u64::from(wg / segments);
    let groups = gpu.groups(OP, (d_table.numel() as u64).div_ceil(per_group))?;
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[dy, tokens, d_table],
        &params,
        groups,
    )?;
    Ok((dispatch, choice))
}

/// The columns of `dy`, which must be [n, cols] for n tokens.
fn dy_cols(dy: &Tensor, tokens: &Tensor) -> Result<usize> {
    let n = tokens.numel();
    match *dy.shape() {
        [rows, cols] if rows == n => Ok(cols),
        _ => Err(Error::shape(
            OP,
            format!(
                "dy has shape {:?}, expected [{n}, cols] for {n} tokens",
                dy.shape()
            ),
        )),
    }
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{embedding_backward, embedding_backward_into};
}
