//! Embedding lookup on the GPU: rows of a table gathered by token id.

pub(crate) mod cases;
pub mod cpu;

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::embedding_table;
use crate::tensor::Tensor;

use crate::launch::{
    check_ids, check_no_alias, check_operands, check_out_shape, launch_elementwise, record,
};

const OP: &str = "embedding";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    cols: u32,
    vocab: u32,
    nan_bits: u32,
}

/// `table` [vocab, cols] gathered by `tokens` (u32, `[n]`) → [n, cols].
///
/// A token ≥ vocab cannot raise an error from inside the kernel: its output row comes out NaN,
/// so it shows downstream instead of reading another row.
pub fn embedding(table: &Tensor, tokens: &Tensor) -> Result<Tensor> {
    let (_, cols) = embedding_table(OP, table.shape())?;
    let y = Tensor::uninit(table.gpu(), &[tokens.numel(), cols], table.dtype())?;
    embedding_into(table, tokens, &y, None)?;
    Ok(y)
}

/// Writes the gathered rows into `y`, with the named variant or the selector's choice.
pub fn embedding_into(
    table: &Tensor,
    tokens: &Tensor,
    y: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(table.gpu(), launch(table, tokens, y, named)?)
}

/// Checks the call and prepares its launch.
pub fn launch(
    table: &Tensor,
    tokens: &Tensor,
    y: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[table, y])?;
    check_ids(OP, "tokens", tokens, table)?;
    let (vocab, cols) = embedding_table(OP, table.shape())?;
    let n = tokens.numel();
    check_out_shape(OP, y, &[n, cols])?;
    check_no_alias(OP, y, &[table, tokens])?;
    let params = Params {
        n: n as u32,
        cols: cols as u32,
        vocab: vocab as u32,
        nan_bits: f32::NAN.to_bits(),
    };
    launch_elementwise(
        OP,
        table,
        None,
        y.numel(),
        named,
        &[table, tokens, y],
        &params,
    )
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{embedding, embedding_into};
}
