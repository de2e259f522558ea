//! Attention on the GPU, two ways. The flash kernels are five families (`flash_fwd`,
//! `attention_delta`, `flash_bwd_dkdv`, `flash_bwd_dq`, `flash_bwd_fused`), each with its launcher
//! in its folder; this module holds what they share (the call's checks, the selector's rule,
//! the typed design) and the ops that chain them.
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
//! Layout: Q [.., Nq, D], K and V [.., Nk, D], leading extents equal (batch, heads, …). The
//! causal mask is bottom-right aligned: query i sees keys j ≤ i + Nk − Nq. A row that sees no
//! key gets output 0 (and LSE +∞), never NaN.

pub mod traffic;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::registry::Variant;
use crate::select::{self, Choice, Key, Request, filter, prefer};
use crate::shape::AttentionDims;
use crate::tensor::{DType, Tensor};

use super::{
    Reduce, attention_delta, check_no_alias, check_operands, check_out_shape, dtype_value,
    flash_bwd_dkdv, flash_bwd_dq, flash_bwd_fused, grid, software,
};

pub use crate::families::flash_fwd::{flash_attention, flash_attention_into, plan_forward};

const OP: &str = "attention";

/// The head dimensions the flash kernels are rendered for.
pub const HEAD_DIMS: [usize; 5] = [32, 64, 80, 96, 128];

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    bh: u32,
    nq: u32,
    nk: u32,
    shift: i32,
    scale: f32,
    scale_log2: f32,
    inf_bits: u32,
    _pad: u32,
}

/// The gradients of Q, K and V.
#[derive(Clone, Debug)]
pub struct Grads {
    pub dq: Tensor,
    pub dk: Tensor,
    pub dv: Tensor,
}

impl Grads {
    /// Uninitialised gradients shaped like Q, K and V.
    pub fn like(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Grads> {
        Ok(Grads {
            dq: Tensor::uninit(q.gpu(), q.shape(), q.dtype())?,
            dk: Tensor::uninit(k.gpu(), k.shape(), k.dtype())?,
            dv: Tensor::uninit(v.gpu(), v.shape(), v.dtype())?,
        })
    }
}

/// Checks Q, K, V: one device, one dtype (f32 or f16), compatible shapes, a finite scale.
pub fn dims(q: &Tensor, k: &Tensor, v: &Tensor, scale: f32) -> Result<AttentionDims> {
    check_operands(OP, &[q, k, v])?;
    if q.dtype() == DType::U32 {
        return Err(Error::shape(OP, "Q, K and V must be f32 or f16"));
    }
    if !scale.is_finite() {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("scale must be finite, got {scale}"),
        });
    }
    let d = AttentionDims::new(OP, q.shape(), k.shape(), v.shape())?;
    let check = |what: &str, n: usize| -> Result<()> {
        if n > u32::MAX as usize {
            return Err(Error::shape(
                OP,
                format!("{what} {n} does not fit in 32 bits"),
            ));
        }
        Ok(())
    };
    check("batch × heads", d.batch_heads)?;
    check("Nq", d.q_len)?;
    check("Nk", d.kv_len)?;
    Ok(d)
}

/// `dims`, for the flash kernels: the head dimension must be one they are rendered for (a
/// multiple of 4, as the D pre-pass reads vec4s), checked before any launch is prepared.
pub(crate) fn flash_dims(q: &Tensor, k: &Tensor, v: &Tensor, scale: f32) -> Result<AttentionDims> {
    let d = dims(q, k, v, scale)?;
    if !HEAD_DIMS.contains(&d.head_dim) {
        return Err(q.gpu().unsupported(
            OP,
            format!(
                "head dimension {}: the flash kernels are rendered for {HEAD_DIMS:?}",
                d.head_dim
            ),
        ));
    }
    Ok(d)
}

pub(crate) fn params(d: &AttentionDims, scale: f32) -> Params {
    Params {
        bh: d.batch_heads as u32,
        nq: d.q_len as u32,
        nk: d.kv_len as u32,
        shift: (d.kv_len as i64 - d.q_len as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        scale,
        scale_log2: scale * std::f32::consts::LOG2_E,
        inf_bits: f32::INFINITY.to_bits(),
        _pad: 0,
    }
}

/// The LSE's shape: Q's without the head dimension.
pub(crate) fn lse_shape(q: &Tensor) -> Vec<usize> {
    q.shape()[..q.shape().len() - 1].to_vec()
}

pub(crate) fn check_lse(lse: &Tensor, q: &Tensor) -> Result<()> {
    if lse.dtype() != DType::F32 {
        return Err(Error::shape(OP, "the LSE tensor must be f32"));
    }
    check_out_shape(OP, lse, &lse_shape(q))
}

/// How a flash kernel lays out its work (each family's contract lists which it has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashRoute {
    /// 4 threads per owned row: small tiles for small devices.
    Lanes,
    /// 16 × 16 threads with register blocks: GPUs.
    Tiled,
    /// Both products on cooperative matrices (f16).
    Coop,
    /// Register blocks as outer products of vec4s from transposed tiles (f32).
    Outer,
    /// The walked-past operand read from its buffer as cached broadcasts (f32).
    Stream,
}

/// What the flash families' launchers and rule read of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashDesign {
    pub dtype: DType,
    pub head_dim: u32,
    pub block_q: u32,
    pub block_k: u32,
    pub causal: bool,
    pub route: FlashRoute,
    pub unroll: bool,
    /// How a row's maxima are combined (the forward only).
    pub reduce: Option<Reduce>,
}

impl FlashDesign {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(FlashDesign {
            dtype: v.dtype()?,
            head_dim: v.count("head_dim")?,
            block_q: v.count("block_q")?,
            block_k: v.count("block_k")?,
            causal: v.flag("causal")?,
            route: v.one_of(
                "route",
                &[
                    ("lanes", FlashRoute::Lanes),
                    ("tiled", FlashRoute::Tiled),
                    ("coop", FlashRoute::Coop),
                    ("outer", FlashRoute::Outer),
                    ("stream", FlashRoute::Stream),
                ],
            )?,
            unroll: v.flag("unroll")?,
            reduce: match v.get("reduce") {
                None => None,
                Some(_) => Some(Reduce::parse(v)?),
            },
        })
    }
}

/// A call of one of the flash families as the selector sees it.
#[derive(Clone, Copy, Debug)]
pub struct FlashCall {
    pub family: &'static str,
    pub dtype: DType,
    pub dims: AttentionDims,
    pub causal: bool,
}

impl FlashCall {
    /// Whether a workgroup owns query blocks (and walks the keys) or key blocks.
    fn owns(&self) -> Owns {
        match self.family {
            "flash_fwd" | "flash_bwd_dq" => Owns::Queries,
            _ => Owns::Keys,
        }
    }
}

/// A design's (owned, walked) block sizes.
fn blocks(design: &FlashDesign, owns: Owns) -> (i64, i64) {
    let (q, k) = (i64::from(design.block_q), i64::from(design.block_k));
    match owns {
        Owns::Queries => (q, k),
        Owns::Keys => (k, q),
    }
}

impl select::Call for FlashCall {
    fn key(&self) -> Key {
        let d = &self.dims;
        Key::new(
            self.family,
            self.dtype,
            &[d.batch_heads, d.q_len, d.kv_len, d.head_dim],
            u32::from(self.causal),
        )
    }

    /// Cooperative matrices first on a GPU where the lengths fit; then the largest owned block
    /// that still leaves enough workgroups to fill the device (128 on a GPU, 8 on a software
    /// adapter), the streamed block as large as it goes, the tiled route on GPUs (measured faster on the
    /// H200, PERF.md), unrolled, subgroup reductions where the family has them. The outer and
    /// stream routes are reached by name or the tuned table only.
    fn request(&self, profile: &DeviceProfile) -> Request<'_> {
        let d = self.dims;
        let gpu_device = !software(profile);
        let owns = self.owns();
        let owned_len = match owns {
            Owns::Queries => d.q_len,
            Owns::Keys => d.kv_len,
        };
        let enough = if gpu_device { 128 } else { 8 };
        let groups = |b: usize| d.batch_heads * owned_len.div_ceil(b);
        let target = [64, 32, 16, 8, 4]
            .into_iter()
            .find(|&b| groups(b) >= enough)
            .unwrap_or(4) as i64;
        Request {
            op: self.family,
            fixed: vec![
                dtype_value(self.dtype),
                ("head_dim", Param::Int(d.head_dim as i64)),
                ("causal", Param::Bool(self.causal)),
            ],
            bucket: format!(
                "d{}_q{}_k{}",
                d.head_dim,
                select::bucket(d.q_len),
                select::bucket(d.kv_len)
            ),
            filters: vec![filter(
                "routes that load whole cooperative fragments need lengths that are multiples of 16",
                move |v| crate::ops::sizes_fit(v, &[d.q_len, d.kv_len]),
            )],
            order: vec![
                prefer(
                    "routes other than outer and stream (by name or tuned table only)",
                    |v| {
                        let route = FlashDesign::parse(v)?.route;
                        Ok(-i64::from(matches!(
                            route,
                            FlashRoute::Outer | FlashRoute::Stream
                        )))
                    },
                ),
                prefer("cooperative matrices on a GPU", move |v| {
                    Ok(i64::from(
                        gpu_device && FlashDesign::parse(v)?.route == FlashRoute::Coop,
                    ))
                }),
                prefer(
                    "an owned block no larger than the largest that leaves ≥ 128 workgroups (8 on a software adapter)",
                    move |v| Ok(-i64::from(blocks(&FlashDesign::parse(v)?, owns).0 > target)),
                ),
                prefer("the largest owned block", move |v| {
                    Ok(blocks(&FlashDesign::parse(v)?, owns).0)
                }),
                prefer("the largest streamed block", move |v| {
                    Ok(blocks(&FlashDesign::parse(v)?, owns).1)
                }),
                prefer("the tiled route on a GPU", move |v| {
                    Ok(i64::from(
                        gpu_device && FlashDesign::parse(v)?.route == FlashRoute::Tiled,
                    ))
                }),
                prefer("unrolled", |v| Ok(i64::from(FlashDesign::parse(v)?.unroll))),
                prefer("subgroup reductions", |v| {
                    Ok(i64::from(
                        FlashDesign::parse(v)?.reduce == Some(Reduce::Subgroup),
                    ))
                }),
            ],
            ride: &[],
        }
    }
}

/// The choice for one flash family on this call.
pub(crate) fn choose_flash(
    family: &'static str,
    d: &AttentionDims,
    t: &Tensor,
    causal: bool,
    named: Option<&str>,
) -> Result<Choice> {
    let call = FlashCall {
        family,
        dtype: t.dtype(),
        dims: *d,
        causal,
    };
    t.gpu().selector().choose(&call, named)
}

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
    let plan = plan_backward(
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
pub fn plan_backward(
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
    let d = flash_dims(q, k, v, scale)?;
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

    let (pre, delta_choice) = attention_delta::plan(d_o, o, &delta, &d, named.delta)?;

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
        let fused = flash_bwd_fused::plan(&bound, grads, choice)?;
        return Ok(BackwardPlan {
            dispatches: vec![pre, fused.clear, fused.dispatch],
            choices: vec![delta_choice, fused.clear_choice, fused.choice],
            delta,
            zeros: Some(fused.zeros),
        });
    }
    let (dkdv, dkdv_choice) = flash_bwd_dkdv::plan(&bound, grads, causal, named.dkdv)?;
    let (dq, dq_choice) = flash_bwd_dq::plan(&bound, grads, causal, named.dq)?;
    Ok(BackwardPlan {
        dispatches: vec![pre, dkdv, dq],
        choices: vec![delta_choice, dkdv_choice, dq_choice],
        delta,
        zeros: None,
    })
}

/// What every backward kernel binds first: Q, K, V, dO, LSE and D (then its outputs), for a
/// checked call.
pub(crate) struct Bound<'a> {
    pub q: &'a Tensor,
    pub k: &'a Tensor,
    pub v: &'a Tensor,
    pub d_o: &'a Tensor,
    pub lse: &'a Tensor,
    pub delta: &'a Tensor,
    pub dims: AttentionDims,
    pub params: Params,
}

/// Which sequence a backward kernel's workgroups own blocks of (it walks the other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owns {
    /// Key blocks (dK/dV, the one pass).
    Keys,
    /// Query blocks (dQ).
    Queries,
}

/// The launch of a backward kernel: a workgroup per owned block and per (batch, head).
pub(crate) fn launch_backward(
    bound: &Bound<'_>,
    choice: &Choice,
    owns: Owns,
    outputs: &[&Tensor],
) -> Result<Dispatch> {
    let design = FlashDesign::parse(&choice.variant)?;
    let d = &bound.dims;
    let (block, len) = match owns {
        Owns::Keys => (design.block_k, d.kv_len),
        Owns::Queries => (design.block_q, d.q_len),
    };
    let mut tensors = vec![bound.q, bound.k, bound.v, bound.d_o, bound.lse, bound.delta];
    tensors.extend_from_slice(outputs);
    let gpu = bound.q.gpu();
    let groups = grid(
        OP,
        gpu,
        [len.div_ceil(block.max(1) as usize), d.batch_heads, 1],
    )?;
    Dispatch::new(gpu, &choice.variant, &tensors, &bound.params, groups)
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
    let plan = plan_naive_forward(q, k, v, causal, scale)?;
    q.gpu()
        .record(&plan.dispatches.iter().collect::<Vec<_>>())?;
    Ok(plan)
}

/// Prepares the naive forward pass: Q·Kᵀ (K read transposed in place), softmax, P·V.
pub fn plan_naive_forward(
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
        crate::ops::matmul::plan_bt(&q3, &k3, &s, None)?.0,
        crate::ops::softmax::plan(&s, &probs, causal, scale, None)?.0,
        crate::ops::matmul::plan(&probs, &v3, &out.reshape(q3.shape())?, None)?.0,
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
    let dispatches = plan_naive_backward(q, k, v, probs, d_o, &grads, scale)?;
    q.gpu().record_all(dispatches)?;
    Ok(grads)
}

/// Prepares the naive backward pass: two transposes, four matmuls (dO·Vᵀ reads V transposed in
/// place) and a softmax backward.
pub fn plan_naive_backward(
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
        crate::ops::transpose::plan(probs, &pt, None)?.0,
        crate::ops::matmul::plan(&pt, &do3, &dv3, None)?.0,
        crate::ops::matmul::plan_bt(&do3, &v3, &dp, None)?.0,
        crate::ops::softmax_backward::plan(probs, &dp, &ds, scale, None)?.0,
        crate::ops::matmul::plan(&ds, &k3, &dq3, None)?.0,
        crate::ops::transpose::plan(&ds, &dst, None)?.0,
        crate::ops::matmul::plan(&dst, &q3, &dk3, None)?.0,
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
