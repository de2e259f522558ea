//! What the flash attention families share, below both them and `ops::attention`: the call's
//! checks and shapes, the parameter block, the typed design, the selector's rule, and the launch
//! of a backward kernel.

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::registry::Variant;
use crate::select::{self, Bucket, Choice, Key, Request, filter, prefer};
use crate::shape::AttentionDims;
use crate::tensor::Tensor;

use super::{Reduce, check_operands, check_out_shape, dtype_value, grid, sizes_fit, software};

const OP: &str = "attention";

/// The head dimensions the flash kernels are rendered for.
pub const HEAD_DIMS: [usize; 6] = [16, 32, 64, 80, 96, 128];

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
    group: u32,
    /// The forward's O in heads (1) or with its H heads merged into rows (H).
    o_heads: u32,
    _pad: [u32; 3],
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

/// Checks Q, K, V: one device, one dtype (f32 or f16), compatible shapes (one head each), a
/// finite scale.
pub fn dims(q: &Tensor, k: &Tensor, v: &Tensor, scale: f32) -> Result<AttentionDims> {
    dims_of(q, k, v, scale, AttentionDims::new)
}

/// [`dims`] where K and V may have fewer heads than Q, dividing them (the forward pass).
pub fn grouped_dims(q: &Tensor, k: &Tensor, v: &Tensor, scale: f32) -> Result<AttentionDims> {
    dims_of(q, k, v, scale, AttentionDims::grouped)
}

type Shapes = fn(&'static str, &[usize], &[usize], &[usize]) -> Result<AttentionDims>;

fn dims_of(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f32,
    shapes: Shapes,
) -> Result<AttentionDims> {
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
    let d = shapes(OP, q.shape(), k.shape(), v.shape())?;
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

/// [`grouped_dims`], for the flash kernels (forward and backward take grouped query heads): the
/// head dimension must be one they are rendered for (a multiple of 4, as the D pre-pass reads
/// vec4s), checked before any launch is prepared.
pub(crate) fn grouped_flash_dims(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f32,
) -> Result<AttentionDims> {
    head_dim_rendered(q, grouped_dims(q, k, v, scale)?)
}

fn head_dim_rendered(q: &Tensor, d: AttentionDims) -> Result<AttentionDims> {
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
        group: d.group.max(1) as u32,
        o_heads: 1,
        _pad: [0; 3],
    }
}

impl Params {
    /// The forward writing O with `heads` heads merged into rows ([B, Nq, H, D]).
    pub(crate) fn with_o_heads(self, heads: usize) -> Params {
        Params {
            o_heads: heads.max(1) as u32,
            ..self
        }
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
            Bucket::new(&[
                ('d', d.head_dim),
                ('q', select::bucket(d.q_len)),
                ('k', select::bucket(d.kv_len)),
            ]),
        )
    }

    /// Cooperative matrices first on a GPU where the lengths fit; then the largest owned block
    /// that still leaves enough workgroups to fill the device (128 on a GPU, 8 on a software
    /// adapter; on a GPU no smaller than 32), the streamed block as large as it goes, on GPUs the
    /// tiled route, except for the forward at head dim 16 (measured faster on the H200, slower
    /// there on the H100, kernels/perf/flash-attention-2.md and
    /// kernels/perf/mega-products-tall-tiles.md), unrolled, subgroup reductions where the family
    /// has them. The outer and stream routes are reached by name or the tuned table only.
    fn request(&self, profile: &DeviceProfile) -> Request<'_> {
        let d = self.dims;
        let gpu_device = !software(profile);
        let owns = self.owns();
        let (owned_len, matrices) = match owns {
            Owns::Queries => (d.q_len, d.batch_heads),
            Owns::Keys => (d.kv_len, d.kv_matrices()),
        };
        let enough = if gpu_device { 128 } else { 8 };
        let groups = |b: usize| matrices * owned_len.div_ceil(b);
        // A GPU takes no block under 32: where blocks of 32 make fewer than 128 workgroups, a
        // larger block's shorter walk over the other sequence counted for more than filling the
        // device, even where blocks of 16 or 4 made 128 (the H100 at MiniLM's, the built-in
        // weights' and the small preset's shapes: 1.1-1.7x faster,
        // kernels/perf/mega-products-tall-tiles.md).
        let floor = if gpu_device { 32 } else { 4 };
        let target = [64, 32, 16, 8, 4]
            .into_iter()
            .find(|&b| groups(b) >= enough)
            .unwrap_or(4)
            .max(floor) as i64;
        // At head dim 16 the forward's tiled route is slower (the H100,
        // kernels/perf/mega-products-tall-tiles.md); the backward passes there were not timed and
        // keep it.
        let tiled_pays = d.head_dim >= 32 || self.family != "flash_fwd";
        Request {
            key: self.key(),
            fixed: vec![
                dtype_value(self.dtype),
                ("head_dim", Param::Int(d.head_dim as i64)),
                ("causal", Param::Bool(self.causal)),
            ],
            filters: vec![filter(
                "routes that load whole cooperative fragments need lengths that are multiples of 16",
                move |v| sizes_fit(v, &[d.q_len, d.kv_len]),
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
                    "an owned block no larger than the largest that leaves ≥ 128 workgroups (8 on a software adapter; on a GPU no smaller than 32)",
                    move |v| Ok(-i64::from(blocks(&FlashDesign::parse(v)?, owns).0 > target)),
                ),
                prefer("the largest owned block", move |v| {
                    Ok(blocks(&FlashDesign::parse(v)?, owns).0)
                }),
                prefer("the largest streamed block", move |v| {
                    Ok(blocks(&FlashDesign::parse(v)?, owns).1)
                }),
                prefer(
                    "on a GPU the tiled route (the forward at head dim 16: another)",
                    move |v| {
                        let tiled = FlashDesign::parse(v)?.route == FlashRoute::Tiled;
                        Ok(i64::from(gpu_device && tiled == tiled_pays))
                    },
                ),
                prefer("unrolled", |v| Ok(i64::from(FlashDesign::parse(v)?.unroll))),
                prefer("subgroup reductions", |v| {
                    Ok(i64::from(
                        FlashDesign::parse(v)?.reduce == Some(Reduce::Subgroup),
                    ))
                }),
            ],
            left_open: &[],
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
    // A key-owning workgroup serves a K/V matrix and walks its group's query heads.
    let (block, len, matrices) = match owns {
        Owns::Keys => (design.block_k, d.kv_len, d.kv_matrices()),
        Owns::Queries => (design.block_q, d.q_len, d.batch_heads),
    };
    let mut tensors = vec![bound.q, bound.k, bound.v, bound.d_o, bound.lse, bound.delta];
    tensors.extend_from_slice(outputs);
    let gpu = bound.q.gpu();
    let groups = grid(OP, gpu, [len.div_ceil(block.max(1) as usize), matrices, 1])?;
    Dispatch::new(gpu, &choice.variant, &tensors, &bound.params, groups)
}
