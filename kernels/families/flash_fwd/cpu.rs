//! Attention's forward pass on the CPU, twice: the standard algorithm (the full score matrix,
//! softmax, then the product with V) and FlashAttention-2's tiled algorithm (online softmax over
//! key blocks, the log-sum-exp saved). The tiled version is tested equal to the standard one
//! before any WGSL is trusted; the backward's references, which check several families, are in
//! `kiln::cpu` (src/cpu/attention.rs).
//!
//! Layout: Q [.., Nq, D], K and V [.., Nk, D], row-major, leading extents flattened. Masking
//! follows [`AttentionDims::visible`]. A row that sees no key has output 0 and LSE +∞, so
//! that exp(s − LSE) is 0 wherever the backward pass recomputes it.

use crate::cpu::Array;
use crate::error::Result;
use crate::shape::AttentionDims;

const OP: &str = "attention";

/// What attention returns besides the output: the natural log-sum-exp of each query row's
/// scaled scores, [.., Nq].
#[derive(Clone, Debug, PartialEq)]
pub struct Forward {
    pub out: Array,
    pub lse: Vec<f32>,
}
/// Q [.., Hq, Nq, D] against K and V [.., Hkv, Nk, D], Hkv dividing Hq (grouped-query
/// attention; Hkv = Hq is plain multi-head).
pub(crate) fn grouped_dims(q: &Array, k: &Array, v: &Array) -> Result<AttentionDims> {
    AttentionDims::grouped(OP, &q.shape, &k.shape, &v.shape)
}

pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Row `i` of matrix `bh` of a [BH, rows, D] array.
pub(crate) fn row(x: &[f32], rows: usize, d: usize, bh: usize, i: usize) -> &[f32] {
    &x[(bh * rows + i) * d..][..d]
}

/// Row `i` of matrix `bh` of the probabilities softmax(scale · q_i·Kᵀ, masked), and the row's
/// natural LSE; `None` for a row that sees no key.
pub(crate) fn probs_row(
    a: &AttentionDims,
    (q, k): (&Array, &Array),
    causal: bool,
    scale: f32,
    bh: usize,
    i: usize,
) -> Option<(Vec<f32>, f32)> {
    let (nq, nk, d) = (a.q_len, a.kv_len, a.head_dim);
    let qi = row(&q.data, nq, d, bh, i);
    let s: Vec<Option<f32>> = (0..nk)
        .map(|j| {
            a.visible(causal, i, j)
                .then(|| scale * dot(qi, row(&k.data, nk, d, a.kv_matrix(bh), j)))
        })
        .collect();
    let m = s
        .iter()
        .flatten()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return None;
    }
    let mut p: Vec<f32> = s.iter().map(|x| x.map_or(0.0, |x| (x - m).exp())).collect();
    let sum: f32 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= sum);
    Some((p, m + sum.ln()))
}

/// Standard attention: softmax(scale · Q·Kᵀ, masked) · V, one full score row at a time.
pub fn attention(q: &Array, k: &Array, v: &Array, causal: bool, scale: f32) -> Result<Forward> {
    let a = grouped_dims(q, k, v)?;
    let (nq, nk, d) = (a.q_len, a.kv_len, a.head_dim);
    let mut out = vec![0.0f32; a.batch_heads * nq * d];
    let mut lse = vec![f32::INFINITY; a.batch_heads * nq];
    for bh in 0..a.batch_heads {
        for i in 0..nq {
            let Some((p, l)) = probs_row(&a, (q, k), causal, scale, bh, i) else {
                continue;
            };
            let o = &mut out[(bh * nq + i) * d..][..d];
            for (j, pj) in p.iter().enumerate() {
                for (o, vj) in o.iter_mut().zip(row(&v.data, nk, d, a.kv_matrix(bh), j)) {
                    *o += pj * vj;
                }
            }
            lse[bh * nq + i] = l;
        }
    }
    Ok(Forward {
        out: Array::new(&q.shape, out)?,
        lse,
    })
}
/// FlashAttention-2's forward pass: for each block of `block_q` query rows, walk the keys in
/// blocks of `block_k`, keeping the running max m, running sum l and the unnormalised output
/// accumulator; rescale by exp(m_old − m_new) when the max grows; divide by l at the end.
pub fn flash_forward(
    q: &Array,
    k: &Array,
    v: &Array,
    causal: bool,
    scale: f32,
    block_q: usize,
    block_k: usize,
) -> Result<Forward> {
    let a = grouped_dims(q, k, v)?;
    let (nq, nk, d) = (a.q_len, a.kv_len, a.head_dim);
    let (block_q, block_k) = (block_q.max(1), block_k.max(1));
    let mut out = vec![0.0f32; q.data.len()];
    let mut lse = vec![f32::INFINITY; a.batch_heads * nq];
    for bh in 0..a.batch_heads {
        for q0 in (0..nq).step_by(block_q) {
            let rows = block_q.min(nq - q0);
            let mut m = vec![f32::NEG_INFINITY; rows];
            let mut l = vec![0.0f32; rows];
            let mut acc = vec![0.0f32; rows * d];
            for k0 in (0..nk).step_by(block_k) {
                let cols = block_k.min(nk - k0);
                for r in 0..rows {
                    let i = q0 + r;
                    let qi = row(&q.data, nq, d, bh, i);
                    let s: Vec<Option<f32>> = (k0..k0 + cols)
                        .map(|j| {
                            a.visible(causal, i, j)
                                .then(|| scale * dot(qi, row(&k.data, nk, d, a.kv_matrix(bh), j)))
                        })
                        .collect();
                    let m_new = s.iter().flatten().copied().fold(m[r], f32::max);
                    if m_new == f32::NEG_INFINITY {
                        continue; // nothing visible yet
                    }
                    let alpha = (m[r] - m_new).exp(); // exp(−∞) = 0 on the first visible block
                    let acc_r = &mut acc[r * d..][..d];
                    acc_r.iter_mut().for_each(|x| *x *= alpha);
                    l[r] *= alpha;
                    for (jj, sj) in s.iter().enumerate() {
                        let Some(sj) = sj else { continue };
                        let p = (sj - m_new).exp();
                        l[r] += p;
                        for (o, vj) in
                            acc_r
                                .iter_mut()
                                .zip(row(&v.data, nk, d, a.kv_matrix(bh), k0 + jj))
                        {
                            *o += p * vj;
                        }
                    }
                    m[r] = m_new;
                }
            }
            for r in 0..rows {
                if l[r] > 0.0 {
                    let i = q0 + r;
                    for c in 0..d {
                        out[(bh * nq + i) * d + c] = acc[r * d + c] / l[r];
                    }
                    lse[bh * nq + i] = m[r] + l[r].ln();
                }
            }
        }
    }
    Ok(Forward {
        out: Array::new(&q.shape, out)?,
        lse,
    })
}
