//! Attention on the CPU, twice: the standard algorithm (the full score matrix, softmax, then
//! the products) and FlashAttention-2's tiled algorithm (online softmax over key blocks, the
//! log-sum-exp saved, the backward pass recomputing the probabilities from Q, K and the LSE).
//! The tiled version is tested equal to the standard one before any WGSL is trusted, and the
//! standard backward is tested against finite differences.
//!
//! Layout: Q [.., Nq, D], K and V [.., Nk, D], row-major, leading extents flattened. Masking
//! follows [`AttentionDims::visible`]. A row that sees no key has output 0 and LSE +∞, so
//! that exp(s − LSE) is 0 wherever the backward pass recomputes it.

use super::Array;
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

/// The gradients of the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Grads {
    pub dq: Array,
    pub dk: Array,
    pub dv: Array,
}

fn dims(q: &Array, k: &Array, v: &Array) -> Result<AttentionDims> {
    AttentionDims::new(OP, &q.shape, &k.shape, &v.shape)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Row `i` of matrix `bh` of a [BH, rows, D] array.
fn row(x: &[f32], rows: usize, d: usize, bh: usize, i: usize) -> &[f32] {
    &x[(bh * rows + i) * d..][..d]
}

/// Row `i` of matrix `bh` of the probabilities softmax(scale · q_i·Kᵀ, masked), and the row's
/// natural LSE; `None` for a row that sees no key.
fn probs_row(
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
                .then(|| scale * dot(qi, row(&k.data, nk, d, bh, j)))
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
    let a = dims(q, k, v)?;
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
                for (o, vj) in o.iter_mut().zip(row(&v.data, nk, d, bh, j)) {
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

/// Standard forward and backward, one pass over the query rows: P, O = P·V, dV = Pᵀ·dO, dP = dO·Vᵀ,
/// dS = P ∘ (dP − rowsum(P ∘ dP)), dQ = scale · dS·K, dK = scale · dSᵀ·Q.
pub fn attention_forward_backward(
    q: &Array,
    k: &Array,
    v: &Array,
    d_out: &Array,
    causal: bool,
    scale: f32,
) -> Result<(Forward, Grads)> {
    let a = dims(q, k, v)?;
    crate::shape::check_len(OP, &q.shape, d_out.data.len())?;
    let (nq, nk, d) = (a.q_len, a.kv_len, a.head_dim);
    let mut out = vec![0.0f32; q.data.len()];
    let mut lse = vec![f32::INFINITY; a.batch_heads * nq];
    let mut dq = vec![0.0f32; q.data.len()];
    let mut dk = vec![0.0f32; k.data.len()];
    let mut dv = vec![0.0f32; v.data.len()];
    // Each query row once: its probabilities give the forward output and, with dO, every
    // gradient term of the row. A row that sees no key contributes nothing.
    for bh in 0..a.batch_heads {
        for i in 0..nq {
            let Some((p, l)) = probs_row(&a, (q, k), causal, scale, bh, i) else {
                continue;
            };
            lse[bh * nq + i] = l;
            let (qi, doi) = (row(&q.data, nq, d, bh, i), row(&d_out.data, nq, d, bh, i));
            let dp: Vec<f32> = (0..nk)
                .map(|j| dot(doi, row(&v.data, nk, d, bh, j)))
                .collect();
            let pdp: f32 = p.iter().zip(&dp).map(|(p, g)| p * g).sum();
            for j in 0..nk {
                let ds = p[j] * (dp[j] - pdp);
                let (kj, vj) = (row(&k.data, nk, d, bh, j), row(&v.data, nk, d, bh, j));
                for c in 0..d {
                    out[(bh * nq + i) * d + c] += p[j] * vj[c];
                    dq[(bh * nq + i) * d + c] += scale * ds * kj[c];
                    dk[(bh * nk + j) * d + c] += scale * ds * qi[c];
                    dv[(bh * nk + j) * d + c] += p[j] * doi[c];
                }
            }
        }
    }
    let fwd = Forward {
        out: Array::new(&q.shape, out)?,
        lse,
    };
    let grads = Grads {
        dq: Array::new(&q.shape, dq)?,
        dk: Array::new(&k.shape, dk)?,
        dv: Array::new(&v.shape, dv)?,
    };
    Ok((fwd, grads))
}

/// The gradients alone (see [`attention_forward_backward`]).
pub fn attention_backward(
    q: &Array,
    k: &Array,
    v: &Array,
    d_out: &Array,
    causal: bool,
    scale: f32,
) -> Result<Grads> {
    Ok(attention_forward_backward(q, k, v, d_out, causal, scale)?.1)
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
    let a = dims(q, k, v)?;
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
                                .then(|| scale * dot(qi, row(&k.data, nk, d, bh, j)))
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
                        for (o, vj) in acc_r.iter_mut().zip(row(&v.data, nk, d, bh, k0 + jj)) {
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

/// FlashAttention-2's backward pass, as the GPU runs it: D = rowsum(dO ∘ O); then for each key
/// block, walk the query blocks recomputing P = exp(scale·Q·Kᵀ − LSE) and accumulate
/// dV += Pᵀ·dO and dK += scale · dSᵀ·Q; then for each query block, walk the key blocks and
/// accumulate dQ += scale · dS·K (two passes, so no thread ever adds into another's output).
#[allow(clippy::too_many_arguments)]
pub fn flash_backward(
    q: &Array,
    k: &Array,
    v: &Array,
    fwd: &Forward,
    d_out: &Array,
    causal: bool,
    scale: f32,
    block_q: usize,
    block_k: usize,
) -> Result<Grads> {
    let a = dims(q, k, v)?;
    crate::shape::check_len(OP, &q.shape, d_out.data.len())?;
    crate::shape::check_len(OP, &q.shape, fwd.out.data.len())?;
    let (nq, nk, d) = (a.q_len, a.kv_len, a.head_dim);
    let (block_q, block_k) = (block_q.max(1), block_k.max(1));
    let delta: Vec<f32> = (0..a.batch_heads * nq)
        .map(|r| dot(&d_out.data[r * d..][..d], &fwd.out.data[r * d..][..d]))
        .collect();
    let mut dq = vec![0.0f32; q.data.len()];
    let mut dk = vec![0.0f32; k.data.len()];
    let mut dv = vec![0.0f32; v.data.len()];
    // The entry (i, j) of P and dS, recomputed.
    let p_ds = |bh: usize, i: usize, j: usize| -> (f32, f32) {
        if !a.visible(causal, i, j) {
            return (0.0, 0.0);
        }
        let qi = row(&q.data, nq, d, bh, i);
        let s = scale * dot(qi, row(&k.data, nk, d, bh, j));
        let p = (s - fwd.lse[bh * nq + i]).exp();
        let dp = dot(row(&d_out.data, nq, d, bh, i), row(&v.data, nk, d, bh, j));
        (p, p * (dp - delta[bh * nq + i]))
    };
    for bh in 0..a.batch_heads {
        for k0 in (0..nk).step_by(block_k) {
            for q0 in (0..nq).step_by(block_q) {
                for j in k0..(k0 + block_k).min(nk) {
                    for i in q0..(q0 + block_q).min(nq) {
                        let (p, ds) = p_ds(bh, i, j);
                        let (qi, doi) =
                            (row(&q.data, nq, d, bh, i), row(&d_out.data, nq, d, bh, i));
                        for c in 0..d {
                            dv[(bh * nk + j) * d + c] += p * doi[c];
                            dk[(bh * nk + j) * d + c] += scale * ds * qi[c];
                        }
                    }
                }
            }
        }
        for q0 in (0..nq).step_by(block_q) {
            for k0 in (0..nk).step_by(block_k) {
                for i in q0..(q0 + block_q).min(nq) {
                    for j in k0..(k0 + block_k).min(nk) {
                        let (_, ds) = p_ds(bh, i, j);
                        let kj = row(&k.data, nk, d, bh, j);
                        for c in 0..d {
                            dq[(bh * nq + i) * d + c] += scale * ds * kj[c];
                        }
                    }
                }
            }
        }
    }
    Ok(Grads {
        dq: Array::new(&q.shape, dq)?,
        dk: Array::new(&k.shape, dk)?,
        dv: Array::new(&v.shape, dv)?,
    })
}
