//! Attention on the GPU, two ways. The flash kernels are five families (`flash_fwd`,
//! `attention_delta`, `flash_bwd_dkdv`, `flash_bwd_dq`, `flash_bwd_fused`), each with its launcher
//! in its folder; what they share (the call's checks, the selector's rule, the typed design)
//! lives below them in `launch::flash`, and this module holds the ops that chain them.
//!
//! - **Flash** (FlashAttention-2): [`flash_attention`] runs one kernel that walks the keys in
//!   blocks with an online softmax and writes O and the log-sum-exp (LSE) per row;
//!   [`flash_attention_backward`] runs three: D = rowsum(dO ∘ O), then dK/dV per key block and
//!   dQ per query block, each recomputing the probabilities from Q, K and the LSE. Two passes
//!   rather than atomics by default: WebGPU has no float atomics, and one writer per element
//!   keeps the result deterministic. Where the adapter has f32 atomics (native Vulkan and Metal)
//!   and the tuned table measured it faster, one pass (`flash_bwd_fused`) computes dK and dV
//!   and adds each key block's share of dQ with atomics, so S and dP are recomputed once
//!   instead of twice; dQ's last bits then vary from run to run with the order of the additions.
//! - **Naive**: [`naive_attention`] materialises the scores with the matmul, softmax and
//!   transpose ops (S = Q·Kᵀ, P = softmax(S), O = P·V), and [`naive_attention_backward`] runs
//!   the textbook backward on the saved P. It is the comparison the flash kernels are
//!   measured against, and the two are tested equal.
//!
//! Layout: Q [.., Nq, D], K and V [.., Nk, D], leading extents equal (batch, heads, …), except
//! that the flash forward and backward take grouped query heads: K and V [B, Hkv, Nk, D] under
//! Q [B, Hq, Nq, D] with Hkv dividing Hq, each K/V head read once per group. The
//! causal mask is bottom-right aligned: query i sees keys j ≤ i + Nk − Nq. A row that sees no
//! key gets output 0 (and LSE +∞), never NaN.

pub mod traffic;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::{attention_delta, flash_bwd_dkdv, flash_bwd_dq, flash_bwd_fused};
use crate::gpu::Dispatch;
use crate::launch::flash::{Bound, check_lse, choose_flash, grouped_flash_dims, lse_shape, params};
use crate::launch::{check_no_alias, check_operands, check_out_shape};
use crate::select::Choice;
use crate::shape::AttentionDims;
use crate::tensor::Tensor;

pub use crate::families::flash_fwd::{flash_attention, flash_attention_into, launch_forward};
pub use crate::launch::flash::{FlashCall, FlashDesign, FlashRoute, Grads, HEAD_DIMS, dims};

const OP: &str = "attention";

/// Variant names to force in the backward pass (`None`: the selector's choice).
#[derive(Clone, Copy, Debug, Default)]
pub struct BackwardVariants<'a> {
    pub dq: Option<&'a str>,
    pub dkdv: Option<&'a str>,
    /// The `attention_delta` pre-pass.
    pub delta: Option<&'a str>,
    /// The one-pass backward (`flash_bwd_fused`) instead of the dK/dV and dQ passes.
    pub fused: Option<&'a str>,
}

/// The backward pass's launches, the scratch tensor they share and the variants chosen.
#[derive(Debug)]
pub struct BackwardPlan {
    /// D = rowsum(dO ∘ O), dK/dV, dQ, in order; or D, dQ ← 0, the one-pass kernel.
    pub dispatches: Vec<Dispatch>,
    pub choices: Vec<Choice>,
    /// The D scratch tensor [.., Nq] (f32).
    pub delta: Tensor,
    /// The zeros dQ is reset from before the one-pass kernel adds to it.
    pub zeros: Option<Tensor>,
}

/// Flash attention's backward pass: the gradients of Q, K and V given dO, from Q, K, V and the
/// forward pass's O and LSE.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    d_o: &Tensor,
    causal: bool,
    scale: f32,
) -> Result<Grads> {
    let grads = Grads::like(q, k, v)?;
    flash_attention_backward_into(q, k, v, o, lse, d_o, &grads, causal, scale)?;
    Ok(grads)
}

/// Writes flash attention's backward pass into `grads` (views of one tensor may be given).
#[allow(clippy::too_many_arguments)]
pub fn flash_attention_backward_into(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    d_o: &Tensor,
    grads: &Grads,
    causal: bool,
    scale: f32,
) -> Result<Vec<Choice>> {
    let plan = launch_backward(
        q,
        k,
        v,
        o,
        lse,
        d_o,
        grads,
        causal,
        scale,
        BackwardVariants::default(),
    )?;
    q.gpu().record_all(plan.dispatches)?;
    Ok(plan.choices)
}

/// Checks a flash backward call and prepares its three launches.
#[allow(clippy::too_many_arguments)]
pub fn launch_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    d_o: &Tensor,
    grads: &Grads,
    causal: bool,
    scale: f32,
    named: BackwardVariants<'_>,
) -> Result<BackwardPlan> {
    let d = grouped_flash_dims(q, k, v, scale)?;
    let all = [q, k, v, o, d_o, &grads.dq, &grads.dk, &grads.dv];
    check_operands(OP, &all)?;
    for (t, like) in [
        (o, q),
        (d_o, q),
        (&grads.dq, q),
        (&grads.dk, k),
        (&grads.dv, v),
    ] {
        check_out_shape(OP, t, like.shape())?;
    }
    check_lse(lse, q)?;
    let inputs = [q, k, v, o, lse, d_o];
    for out in [&grads.dq, &grads.dk, &grads.dv] {
        check_no_alias(OP, out, &inputs)?;
    }
    if grads.dq.overlaps(&grads.dk) || grads.dq.overlaps(&grads.dv) || grads.dk.overlaps(&grads.dv)
    {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "dQ, dK and dV must be separate tensors".into(),
        });
    }
    let gpu = q.gpu();
    let delta = Tensor::uninit(gpu, &lse_shape(q), DType::F32)?;

    let (pre, delta_choice) = attention_delta::launch(d_o, o, &delta, &d, named.delta)?;

    let bound = Bound {
        q,
        k,
        v,
        d_o,
        lse,
        delta: &delta,
        dims: d,
        params: params(&d, scale),
    };
    if let Some(choice) = choose_fused(&d, q, causal, named)? {
        let fused = flash_bwd_fused::launch(&bound, grads, choice)?;
        return Ok(BackwardPlan {
            dispatches: vec![pre, fused.clear, fused.dispatch],
            choices: vec![delta_choice, fused.clear_choice, fused.choice],
            delta,
            zeros: Some(fused.zeros),
        });
    }
    let (dkdv, dkdv_choice) = flash_bwd_dkdv::launch(&bound, grads, causal, named.dkdv)?;
    let (dq, dq_choice) = flash_bwd_dq::launch(&bound, grads, causal, named.dq)?;
    Ok(BackwardPlan {
        dispatches: vec![pre, dkdv, dq],
        choices: vec![delta_choice, dkdv_choice, dq_choice],
        delta,
        zeros: None,
    })
}

/// The one-pass backward where the caller names it, or where the tuned table picks it for this
/// device and shape (measured faster); never by rule, so an adapter without measurements keeps
/// the deterministic two passes, and so does a call that names either of them.
fn choose_fused(
    d: &AttentionDims,
    q: &Tensor,
    causal: bool,
    named: BackwardVariants<'_>,
) -> Result<Option<Choice>> {
    if named.fused.is_some() {
        return choose_flash(FUSED, d, q, causal, named.fused).map(Some);
    }
    if named.dq.is_some() || named.dkdv.is_some() {
        return Ok(None);
    }
    // No tuned entry here, or none the adapter offers (no f32 atomics, f16, a head dim it lacks).
    let call = FlashCall {
        family: FUSED,
        dtype: q.dtype(),
        dims: *d,
        causal,
    };
    q.gpu().selector().tuned_only(&call)
}

const FUSED: &str = "flash_bwd_fused";

/// The naive path's launches and the tensors they write.
#[derive(Debug)]
pub struct NaivePlan {
    pub dispatches: Vec<Dispatch>,
    /// O, shaped like Q.
    pub out: Tensor,
    /// The probabilities P [BH, Nq, Nk], kept for the backward pass.
    pub probs: Tensor,
}

/// Naive attention: S = Q·Kᵀ and P = softmax(scale · S) materialised, O = P·V.
pub fn naive_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    causal: bool,
    scale: f32,
) -> Result<NaivePlan> {
    let plan = launch_naive_forward(q, k, v, causal, scale)?;
    q.gpu()
        .record(&plan.dispatches.iter().collect::<Vec<_>>())?;
    Ok(plan)
}

/// Prepares the naive forward pass: Q·Kᵀ (K read transposed in place), softmax, P·V.
pub fn launch_naive_forward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    causal: bool,
    scale: f32,
) -> Result<NaivePlan> {
    let d = dims(q, k, v, scale)?;
    let gpu = q.gpu();
    let (q3, k3, v3) = flat(&d, q, k, v)?;
    let s = Tensor::uninit(gpu, &[d.batch_heads, d.q_len, d.kv_len], q.dtype())?;
    let probs = Tensor::uninit(gpu, s.shape(), q.dtype())?;
    let out = Tensor::uninit(gpu, q.shape(), q.dtype())?;
    let dispatches = vec![
        crate::ops::matmul::launch_bt(&q3, &k3, &s, None)?.0,
        crate::ops::softmax::launch(&s, &probs, causal, scale, None)?.0,
        crate::ops::matmul::launch(&probs, &v3, &out.reshape(q3.shape())?, None)?.0,
    ];
    Ok(NaivePlan {
        dispatches,
        out,
        probs,
    })
}

/// Naive backward from the saved P: dV = Pᵀ·dO, dP = dO·Vᵀ, dS = scale · P ∘ (dP − rowsum(P ∘ dP)),
/// dQ = dS·K, dK = dSᵀ·Q.
#[allow(clippy::too_many_arguments)]
pub fn naive_attention_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    probs: &Tensor,
    d_o: &Tensor,
    scale: f32,
) -> Result<Grads> {
    let grads = Grads::like(q, k, v)?;
    let dispatches = launch_naive_backward(q, k, v, probs, d_o, &grads, scale)?;
    q.gpu().record_all(dispatches)?;
    Ok(grads)
}

/// Prepares the naive backward pass: two transposes, four matmuls (dO·Vᵀ reads V transposed in
/// place) and a softmax backward.
pub fn launch_naive_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    probs: &Tensor,
    d_o: &Tensor,
    grads: &Grads,
    scale: f32,
) -> Result<Vec<Dispatch>> {
    let d = dims(q, k, v, scale)?;
    check_out_shape(OP, probs, &[d.batch_heads, d.q_len, d.kv_len])?;
    check_out_shape(OP, d_o, q.shape())?;
    let gpu = q.gpu();
    let (q3, k3, v3) = flat(&d, q, k, v)?;
    let do3 = d_o.reshape(q3.shape())?;
    let (dq3, dk3, dv3) = (
        grads.dq.reshape(q3.shape())?,
        grads.dk.reshape(k3.shape())?,
        grads.dv.reshape(v3.shape())?,
    );
    let nn = [d.batch_heads, d.kv_len, d.q_len];
    let pt = Tensor::uninit(gpu, &nn, q.dtype())?;
    let dp = Tensor::uninit(gpu, probs.shape(), q.dtype())?;
    let ds = Tensor::uninit(gpu, probs.shape(), q.dtype())?;
    let dst = Tensor::uninit(gpu, &nn, q.dtype())?;
    Ok(vec![
        crate::ops::transpose::launch(probs, &pt, None)?.0,
        crate::ops::matmul::launch(&pt, &do3, &dv3, None)?.0,
        crate::ops::matmul::launch_bt(&do3, &v3, &dp, None)?.0,
        crate::ops::softmax_backward::launch(probs, &dp, &ds, scale, None)?.0,
        crate::ops::matmul::launch(&ds, &k3, &dq3, None)?.0,
        crate::ops::transpose::launch(&ds, &dst, None)?.0,
        crate::ops::matmul::launch(&dst, &q3, &dk3, None)?.0,
    ])
}

/// Q, K, V seen as [BH, N, D].
fn flat(d: &AttentionDims, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    Ok((
        q.reshape(&[d.batch_heads, d.q_len, d.head_dim])?,
        k.reshape(&[d.batch_heads, d.kv_len, d.head_dim])?,
        v.reshape(&[d.batch_heads, d.kv_len, d.head_dim])?,
    ))
}
