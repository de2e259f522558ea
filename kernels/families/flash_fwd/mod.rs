//! FlashAttention-2's forward pass on the GPU: one kernel walks the keys in blocks with an
//! online softmax and writes O and the log-sum-exp (LSE) per row. The call's checks, the
//! selector's rule and the backward that chains the other flash families are in
//! `kiln::ops::attention`.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::launch::flash::{
    FlashDesign, check_lse, choose_flash, grouped_flash_dims, lse_shape, params,
};
use crate::launch::{check_no_alias, check_operands, check_out_shape, grid, record};
use crate::select::Choice;
use crate::tensor::Tensor;

const OP: &str = "attention";

/// What the launcher and the rule read of a variant.
pub type Design = FlashDesign;

/// Flash attention: O = softmax(scale · Q·Kᵀ, masked) · V, and the LSE [.., Nq] (f32).
pub fn flash_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    causal: bool,
    scale: f32,
) -> Result<(Tensor, Tensor)> {
    let o = Tensor::uninit(q.gpu(), q.shape(), q.dtype())?;
    let lse = Tensor::uninit(q.gpu(), &lse_shape(q), DType::F32)?;
    flash_attention_into(q, k, v, &o, &lse, causal, scale, None)?;
    Ok((o, lse))
}

/// Writes flash attention's output and LSE into `o` and `lse`.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention_into(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    causal: bool,
    scale: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(
        q.gpu(),
        launch_forward(q, k, v, o, lse, causal, scale, named)?,
    )
}

/// Checks a flash forward call and prepares its launch.
#[allow(clippy::too_many_arguments)]
pub fn launch_forward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    causal: bool,
    scale: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_out_shape(OP, o, q.shape())?;
    launch_rows(q, k, v, o, lse, causal, scale, named, 1)
}

/// [`launch_forward`] with O written with its heads merged into rows: for Q [B, H, Nq, D] (any
/// B · H matrices seen as `heads` heads of B′ = B · H / heads batches), `y` is [B′, Nq, heads,
/// D], what swapping O's middle axes would make (a transformer's attention output before its
/// projection), written by the same launch.
#[allow(clippy::too_many_arguments)]
pub fn launch_forward_merged(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    y: &Tensor,
    lse: &Tensor,
    heads: usize,
    causal: bool,
    scale: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let d = grouped_flash_dims(q, k, v, scale)?;
    if heads == 0 || d.batch_heads % heads != 0 {
        return Err(Error::shape(
            OP,
            format!(
                "{} query matrices do not make whole batches of {heads} heads",
                d.batch_heads
            ),
        ));
    }
    check_out_shape(OP, y, &[d.batch_heads / heads, d.q_len, heads, d.head_dim])?;
    launch_rows(q, k, v, y, lse, causal, scale, named, heads)
}

#[allow(clippy::too_many_arguments)]
fn launch_rows(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    causal: bool,
    scale: f32,
    named: Option<&str>,
    o_heads: usize,
) -> Result<(Dispatch, Choice)> {
    let d = grouped_flash_dims(q, k, v, scale)?;
    check_operands(OP, &[q, o])?;
    check_lse(lse, q)?;
    check_no_alias(OP, o, &[q, k, v, lse])?;
    check_no_alias(OP, lse, &[q, k, v])?;
    let choice = choose_flash("flash_fwd", &d, q, causal, named)?;
    let gpu = q.gpu();
    let block = Design::parse(&choice.variant)?.block_q.max(1) as usize;
    let groups = grid(OP, gpu, [d.q_len.div_ceil(block), d.batch_heads, 1])?;
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[q, k, v, o, lse],
        &params(&d, scale).with_o_heads(o_heads),
        groups,
    )?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::flash_attention;
}
