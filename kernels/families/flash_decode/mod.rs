//! Flash-decoding on the GPU: a few new query rows (1 for plain decoding) against a key/value
//! cache, with grouped query heads. The split pass (this family) cuts the cache's keys into
//! chunks across workgroups and writes each chunk's partial softmax state; the combine pass
//! (`families/flash_decode_combine`) merges them. The chunk size is the variant's, so the
//! selector, the tuned table and the fleet campaign choose it like any other value.

pub(crate) mod cases;
pub mod cpu;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::flash_decode_combine;
use crate::gpu::Dispatch;
use crate::launch::{check_no_alias, check_operands, check_out_shape, dtype_value, grid, software};
use crate::registry::Variant;
use crate::select::{self, Bucket, Call, Choice, Key, Request, prefer};
use crate::tensor::Tensor;

pub use cpu::DecodeDims;

const OP: &str = "flash_decode";

/// The head dimensions the split pass is rendered for.
pub const HEAD_DIMS: [usize; 3] = [32, 64, 128];

/// What the launcher and the rule read of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub dtype: DType,
    pub head_dim: u32,
    /// Query rows per workgroup.
    pub rows: u32,
    /// Keys per workgroup.
    pub chunk: u32,
    /// Loop bodies written out (hardware GPUs only).
    pub unroll: bool,
    /// The next block's keys and this block's values loaded ahead of use (unrolled f16
    /// bodies).
    pub ahead: bool,
    /// Threads per key on the lanes route; 0 on the keys route (a thread per key).
    pub lanes: u32,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            dtype: v.dtype()?,
            head_dim: v.count("head_dim")?,
            rows: v.count("rows")?,
            chunk: v.count("chunk")?,
            unroll: v.flag("unroll")?,
            ahead: v.flag("ahead")?,
            lanes: if v.one_of("route", &[("keys", false), ("lanes", true)])? {
                v.count("lanes")?
            } else {
                0
            },
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    q_heads: u32,
    kv_heads: u32,
    nq: u32,
    cap: u32,
    _pad0: u32,
    rows: u32,
    chunks: u32,
    causal: u32,
    scale_log2: f32,
    columns: u32,
    _pad: [u32; 2],
}

/// A decoding call as the selector sees it.
#[derive(Clone, Copy, Debug)]
pub struct DecodeCall {
    pub dtype: DType,
    pub dims: DecodeDims,
}

impl DecodeCall {
    /// Query rows per K/V head: the group's heads × the new rows.
    fn rows(&self) -> usize {
        self.dims.group() * self.dims.q_len
    }
}

impl Call for DecodeCall {
    fn key(&self) -> Key {
        let d = &self.dims;
        Key::new(
            OP,
            self.dtype,
            &[d.batch * d.kv_heads, self.rows(), d.len, d.head_dim],
            0,
            Bucket::new(&[
                ('d', d.head_dim),
                ('r', select::bucket(self.rows())),
                ('n', select::bucket(d.len)),
                ('h', select::bucket(d.batch * d.kv_heads)),
            ]),
        )
    }

    /// The fewest rows per workgroup that hold a K/V head's rows (else the most); the lanes
    /// route where offered; then the largest chunk that still leaves enough workgroups to fill
    /// the device (256 on a GPU, 16 on a software adapter), or the smallest chunk when none
    /// does; on the lanes route 8 lanes a key for long chunks over few workgroups, else the
    /// most; on the keys route unrolled where offered, and loads ahead where the pick leaves at
    /// most that many workgroups.
    fn request(&self, profile: &DeviceProfile) -> Request<'_> {
        let d = self.dims;
        let rows = self.rows() as i64;
        let enough = if software(profile) { 16 } else { 256 };
        let heads = d.batch * d.kv_heads;
        let workgroups = move |v: &Variant| -> Result<usize> {
            let design = Design::parse(v)?;
            let tiles = (rows as usize).div_ceil(design.rows as usize);
            Ok(heads * tiles * cpu::chunk_count(d.len, design.chunk as usize))
        };
        Request {
            key: self.key(),
            fixed: vec![
                dtype_value(self.dtype),
                ("head_dim", Param::Int(d.head_dim as i64)),
            ],
            filters: Vec::new(),
            order: vec![
                prefer(
                    "the fewest rows per workgroup that hold a K/V head's query rows, else the most",
                    move |v| {
                        let r = i64::from(Design::parse(v)?.rows);
                        Ok(if r >= rows { 1000 - r } else { r })
                    },
                ),
                // H100, f16 and f32, B 1 and 8, Hq 32 / Hkv 8, D 128, N 1k to 128k: 1.06–1.48×
                // the keys route's pick (kernels/perf/decode-lane-teams.md).
                prefer("the lanes route", |v| {
                    Ok(i64::from(Design::parse(v)?.lanes > 0))
                }),
                prefer(
                    "a chunk that leaves ≥ 256 workgroups (16 on a software adapter)",
                    move |v| Ok(i64::from(workgroups(v)? >= enough)),
                ),
                prefer(
                    "then the largest chunk if one does, else the smallest",
                    move |v| {
                        let chunk = i64::from(Design::parse(v)?.chunk);
                        Ok(if workgroups(v)? >= enough {
                            chunk
                        } else {
                            -chunk
                        })
                    },
                ),
                // Long loops over few workgroups want more bytes in flight a thread (H100: B 1 at
                // 32k and 128k, 1.5 % and 6 % faster with 8 lanes); otherwise the most lanes, the
                // fewest registers (B 8 at 32k, and 8k: 10 % and 18 % faster with 16).
                prefer(
                    "8 lanes a key where the chunk is ≥ 1024 keys over at most 256 workgroups, else the most",
                    move |v| {
                        let design = Design::parse(v)?;
                        let lanes = i64::from(design.lanes);
                        Ok(if design.chunk >= 1024 && workgroups(v)? <= enough {
                            -(lanes - 8).abs()
                        } else {
                            lanes
                        })
                    },
                ),
                prefer("unrolled", |v| Ok(i64::from(Design::parse(v)?.unroll))),
                // With so few workgroups a block's loads and its arithmetic wait on each other
                // (H200, B 1, D 128: 12–23 % faster ahead; at 512 workgroups 1–10 % slower at
                // B 8, D 128, and about a third at D 64).
                prefer(
                    "loads ahead where at most 256 workgroups run, else without them",
                    move |v| {
                        Ok(i64::from(
                            Design::parse(v)?.ahead == (workgroups(v)? <= enough),
                        ))
                    },
                ),
            ],
            left_open: &[],
        }
    }
}

/// The split and combine launches of one decoding call, the scratch they share and the
/// variants chosen.
#[derive(Debug)]
pub struct DecodePlan {
    pub split: Dispatch,
    pub combine: Dispatch,
    pub choice: Choice,
    pub combine_choice: Choice,
    /// The chunks' partial outputs [rows, chunks, D] and (max, sum) [rows, chunks, 2].
    pub part_out: Tensor,
    pub part_max_sum: Tensor,
}

/// Checks Q and the caches (one device and dtype, f32 or f16, Hq a multiple of Hkv,
/// 1 ≤ len ≤ capacity, a finite scale, a head dimension the kernels are rendered for).
pub fn decode_dims(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    len: usize,
    scale: f32,
) -> Result<DecodeDims> {
    check_operands(OP, &[q, k, v])?;
    if q.dtype() == DType::U32 {
        return Err(Error::shape(OP, "Q and the caches must be f32 or f16"));
    }
    if !scale.is_finite() {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("scale must be finite, got {scale}"),
        });
    }
    let d = DecodeDims::new(q.shape(), k.shape(), v.shape(), len)?;
    if u32::try_from(d.batch * d.kv_heads * d.capacity * d.head_dim).is_err() {
        return Err(Error::shape(
            OP,
            format!(
                "a cache of {:?} is too large to index in 32 bits",
                k.shape()
            ),
        ));
    }
    if !HEAD_DIMS.contains(&d.head_dim) {
        return Err(q.gpu().unsupported(
            OP,
            format!(
                "head dimension {}: flash-decoding is rendered for {HEAD_DIMS:?}",
                d.head_dim
            ),
        ));
    }
    Ok(d)
}

/// Attention of Q's rows [B, Hq, Nq, D] against the first `len` rows of the caches
/// [B, Hkv, Cap, D]: O like Q and the natural LSE [B, Hq, Nq] (f32). Under `causal` query i sees
/// keys j ≤ len − Nq + i.
pub fn flash_decode(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    len: usize,
    causal: bool,
    scale: f32,
) -> Result<(Tensor, Tensor)> {
    decode_dims(q, k, v, len, scale)?;
    let length = Tensor::from_u32(q.gpu(), &[1], &[len as u32])?;
    let o = Tensor::uninit(q.gpu(), q.shape(), q.dtype())?;
    let lse = Tensor::uninit(q.gpu(), &q.shape()[..3], DType::F32)?;
    flash_decode_into(q, k, v, &length, len, &o, &lse, causal, scale, None)?;
    Ok((o, lse))
}

/// Writes [`flash_decode`]'s O and LSE into `o` and `lse`, with the named split variant or the
/// selector's choice. The kernels read the length from `length` (u32 [1]) when they run; the
/// split is planned for `len` keys, which must be at least that many (chunks past the length
/// write an empty state).
#[allow(clippy::too_many_arguments)]
pub fn flash_decode_into(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    length: &Tensor,
    len: usize,
    o: &Tensor,
    lse: &Tensor,
    causal: bool,
    scale: f32,
    named: Option<&str>,
) -> Result<Choice> {
    let plan = launch(q, k, v, length, len, o, lse, causal, scale, named)?;
    q.gpu().record_all(vec![plan.split, plan.combine])?;
    Ok(plan.choice)
}

/// Checks a decoding call and prepares its two launches, the split planned for `len` keys (the
/// kernels read the length itself from `length` when they run).
#[allow(clippy::too_many_arguments)]
pub fn launch(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    length: &Tensor,
    len: usize,
    o: &Tensor,
    lse: &Tensor,
    causal: bool,
    scale: f32,
    named: Option<&str>,
) -> Result<DecodePlan> {
    let d = decode_dims(q, k, v, len, scale)?;
    crate::families::kv_append::check_length(OP, length)?;
    check_operands(OP, &[q, o])?;
    check_out_shape(OP, o, q.shape())?;
    if lse.dtype() != DType::F32 {
        return Err(Error::shape(OP, "the LSE tensor must be f32"));
    }
    check_out_shape(OP, lse, &q.shape()[..3])?;
    check_no_alias(OP, o, &[q, k, v, lse])?;
    check_no_alias(OP, lse, &[q, k, v])?;
    let gpu = q.gpu();
    let call = DecodeCall {
        dtype: q.dtype(),
        dims: d,
    };
    let choice = gpu.selector().choose(&call, named)?;
    let design = Design::parse(&choice.variant)?;
    let chunks = cpu::chunk_count(d.len, design.chunk as usize);
    let rows = call.rows();
    let tiles = rows.div_ceil(design.rows as usize);
    let all_rows = d.rows();
    let part_out = Tensor::uninit(gpu, &[all_rows, chunks, d.head_dim], DType::F32)?;
    let part_max_sum = Tensor::uninit(gpu, &[all_rows, chunks, 2], DType::F32)?;
    let params = Params {
        q_heads: d.q_heads as u32,
        kv_heads: d.kv_heads as u32,
        nq: d.q_len as u32,
        cap: d.capacity as u32,
        _pad0: 0,
        rows: rows as u32,
        chunks: chunks as u32,
        causal: u32::from(causal),
        scale_log2: scale * std::f32::consts::LOG2_E,
        columns: (d.head_dim / 4) as u32,
        _pad: [0; 2],
    };
    let groups = grid(OP, gpu, [chunks, d.batch * d.kv_heads, tiles])?;
    let split = Dispatch::new(
        gpu,
        &choice.variant,
        &[q, k, v, &part_out, &part_max_sum, length],
        &params,
        groups,
    )?;
    let (combine, combine_choice) =
        flash_decode_combine::launch(&part_out, &part_max_sum, o, lse, None)?;
    Ok(DecodePlan {
        split,
        combine,
        choice,
        combine_choice,
        part_out,
        part_max_sum,
    })
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{DecodeDims, flash_decode};
}
