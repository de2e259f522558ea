//! flash_decode_combine's cases: the CPU split pass's partials of decoding problems merged into
//! O and the LSE. The problems (new query rows against a cache, grouped query heads) are also
//! the split pass's (`families/flash_decode/cases.rs`), which launches this family after it.
use crate::cases::prelude::*;

use crate::cpu::{DecodeDims, Forward};

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

/// Keys per chunk of the partials: several chunks on every shape.
const CHUNK: usize = 128;

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
            .map(|&[b, h, _, n]| {
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

/// The problems of a set: each shape in each dtype; a proof set adds the causal mask and every
/// head dim.
pub(crate) fn problems(gpu: &Gpu, z: &Sizes, family: &str) -> Result<Vec<Decode>> {
    let mut inputs = Inputs::for_family(family);
    let head_dims: &[usize] = if z.full { &[32, 64, 128] } else { &[128] };
    let masks: &[bool] = if z.full { &[false, true] } else { &[false] };
    let mut out = Vec::new();
    for [b, hq, hkv, nq, len, cap] in shapes(gpu, z) {
        for &d in head_dims {
            for dtype in dtypes(gpu, z)
                .into_iter()
                .chain((!z.full && gpu.profile().features.shader_f16).then_some(DType::F16))
            {
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
    for p in problems(gpu, z, "flash_decode_combine")? {
        let parts =
            cpu::decode_split(&p.q.1, &p.k.1, &p.v.1, p.dims.len, p.causal, p.scale, CHUNK)?;
        let rows = p.dims.rows();
        let d = p.dims.head_dim;
        let part_out = Tensor::from_slice(gpu, &[rows, parts.chunks, d], &parts.out, DType::F32)?;
        let part_ms =
            Tensor::from_slice(gpu, &[rows, parts.chunks, 2], &parts.max_sum, DType::F32)?;
        let want = cpu::decode_combine(&parts, &p.q.1.shape)?;
        let (o, o_t) = out(gpu, &p.q.1.shape, p.dtype, want.out.data)?;
        let (lse, lse_t) = out(gpu, &p.q.1.shape[..3], DType::F32, want.lse)?;
        cases.push(Case {
            family: "flash_decode_combine",
            fixed: vec![dtype_is(p.dtype)],
            name: format!(
                "flash_decode_combine {} chunks of {}",
                parts.chunks, p.suffix
            ),
            tolerance: tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, [1.2e-6, 2.2e-3]),
            flops: (rows * parts.chunks * d * 2) as f64,
            bytes: ((rows * parts.chunks * (d + 2)) * 4) as f64
                + (rows * d) as f64 * p.dtype.size() as f64,
            outputs: vec![
                o.named("o"),
                lse.named("lse")
                    .within(proof_bound(z, p.dtype, [6.6e-7, 9.4e-7])),
            ],
            launch: Box::new(move |name| {
                Ok(single(super::launch(
                    &part_out, &part_ms, &o_t, &lse_t, name,
                )?))
            }),
        });
    }
    Ok(cases)
}
