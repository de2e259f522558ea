//! flash_decode's cases: new query rows against a cache longer than they are, with grouped
//! query heads, per dtype, mask and head dim. The problems are shared with the combine pass's
//! table (`families/flash_decode_combine/cases.rs`).
use crate::cases::prelude::*;

use super::cpu::DecodeDims;
use crate::families::flash_fwd::cpu::Forward;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-4;

/// One decoding problem: inputs, the CPU's answer and the names its cases share.
pub(crate) struct Decode {
    pub dtype: DType,
    pub causal: bool,
    pub dims: DecodeDims,
    pub scale: f32,
    pub q: (Tensor, Array),
    pub k: (Tensor, Array),
    pub v: (Tensor, Array),
    pub want: Forward,
    /// `B1 Hq8/2 Nq1 len300 D64 causal f32`.
    pub suffix: String,
    /// Bytes of the keys and values the call reads.
    pub kv_bytes: f64,
    pub flops: f64,
}

impl Decode {
    pub fn fixed(&self) -> Vec<(&'static str, Param)> {
        vec![
            dtype_is(self.dtype),
            ("head_dim", Param::Int(self.dims.head_dim as i64)),
        ]
    }
}

/// [B, Hq, Hkv, Nq, len, Cap] of a set. A proof set derives four from its attention shapes
/// [b, h, n]: groups of 3 and 4 heads, 1 to 3 new rows (9 rows per K/V head take two tiles of
/// 8), caches of 259 to 560 keys (two or three 256-key chunks, blocks of 128 with a tail) with
/// room to spare. A campaign times the GQA shape the decode anchors use.
fn shapes(gpu: &Gpu, z: &Sizes) -> Vec<[usize; 6]> {
    if z.full {
        z.attention
            .iter()
            .map(|&[b, h, n]| {
                let kv = h + 1;
                [b, kv * (3 + n % 2), kv, 1 + n % 3, 7 * n, 7 * n + 5]
            })
            .collect()
    } else if gpu.profile().is_software() {
        vec![[1, 8, 2, 1, 2048, 2048]]
    } else {
        vec![[1, 32, 8, 1, 32768, 32768]]
    }
}

/// The problems of a set: each shape in each dtype; a proof set adds the causal mask and both
/// head dims.
pub(crate) fn problems(gpu: &Gpu, z: &Sizes, family: &str) -> Result<Vec<Decode>> {
    let mut inputs = Inputs::for_family(family);
    let head_dims: &[usize] = if z.full { &[64, 128] } else { &[128] };
    let masks: &[bool] = if z.full { &[false, true] } else { &[false] };
    let mut out = Vec::new();
    for [b, hq, hkv, nq, len, cap] in shapes(gpu, z) {
        for &d in head_dims {
            for dtype in dtypes(gpu, z).into_iter().chain((!z.full && gpu.profile().features.shader_f16).then_some(DType::F16)) {
                for &causal in masks {
                    let q = inputs.pair(gpu, &[b, hq, nq, d], dtype)?;
                    let k = inputs.pair(gpu, &[b, hkv, cap, d], dtype)?;
                    let v = inputs.pair(gpu, &[b, hkv, cap, d], dtype)?;
                    let scale = 1.0 / (d as f32).sqrt();
                    let want = cpu::decode_attention(&q.1, &k.1, &v.1, len, causal, scale)?;
                    let dims = DecodeDims::new(&q.1.shape, &k.1.shape, &v.1.shape, len)?;
                    out.push(Decode {
                        dtype,
                        causal,
                        dims,
                        scale,
                        q,
                        k,
                        v,
                        want,
                        suffix: format!(
                            "B{b} Hq{hq}/{hkv} Nq{nq} len{len} D{d}{} {}",
                            if causal { " causal" } else { "" },
                            dtype.wgsl()
                        ),
                        kv_bytes: (2 * b * hkv * len * d) as f64 * dtype.size() as f64,
                        flops: (4 * b * hq * nq * len * d) as f64,
                    });
                }
            }
        }
    }
    Ok(out)
}

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for p in problems(gpu, z, "flash_decode")? {
        let (o, o_t) = out(gpu, &p.q.1.shape, p.dtype, p.want.out.data.clone())?;
        let (lse, lse_t) = out(gpu, &p.q.1.shape[..3], DType::F32, p.want.lse.clone())?;
        let (q, k, v) = (p.q.0.clone(), p.k.0.clone(), p.v.0.clone());
        let (len, causal, scale) = (p.dims.len, p.causal, p.scale);
        cases.push(Case {
            family: "flash_decode",
            fixed: p.fixed(),
            name: format!("flash_decode {}", p.suffix),
            tolerance: tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, 1e-6),
            flops: p.flops,
            bytes: p.kv_bytes,
            outputs: vec![o, lse],
            plan: Box::new(move |name| {
                let plan = super::plan(&q, &k, &v, len, &o_t, &lse_t, causal, scale, name)?;
                Ok(Planned {
                    all: vec![plan.split, plan.combine],
                    timed: vec![0, 1],
                    choice: plan.choice,
                })
            }),
        });
    }
    Ok(cases)
}
