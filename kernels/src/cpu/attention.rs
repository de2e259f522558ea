//! Attention's backward pass on the CPU: the standard algorithm (the full probability matrix)
//! and FlashAttention-2's (the probabilities recomputed from Q, K and the saved LSE). One
//! reference checks the flash backward's families together (D, dK/dV, dQ, or the one pass), so
//! it lives here rather than in one family's folder; the forward is `flash_fwd`'s.
//!
//! Layout and masking as the forward's (`families/flash_fwd/cpu.rs`).

use super::Array;
use crate::error::Result;
use crate::families::flash_fwd::cpu::{Forward, dot, grouped_dims, probs_row, row};

const OP: &str = "attention";

/// The gradients of the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Grads {
    pub dq: Array,
    pub dk: Array,
    pub dv: Array,
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
    let a = grouped_dims(q, k, v)?;
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
            let kv = a.kv_matrix(bh);
            let dp: Vec<f32> = (0..nk)
                .map(|j| dot(doi, row(&v.data, nk, d, kv, j)))
                .collect();
            let pdp: f32 = p.iter().zip(&dp).map(|(p, g)| p * g).sum();
            for j in 0..nk {
                let ds = p[j] * (dp[j] - pdp);
                let (kj, vj) = (row(&k.data, nk, d, kv, j), row(&v.data, nk, d, kv, j));
                for c in 0..d {
                    out[(bh * nq + i) * d + c] += p[j] * vj[c];
                    dq[(bh * nq + i) * d + c] += scale * ds * kj[c];
                    dk[(kv * nk + j) * d + c] += scale * ds * qi[c];
                    dv[(kv * nk + j) * d + c] += p[j] * doi[c];
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
    let a = grouped_dims(q, k, v)?;
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
        let kv = a.kv_matrix(bh);
        let s = scale * dot(qi, row(&k.data, nk, d, kv, j));
        let p = (s - fwd.lse[bh * nq + i]).exp();
        let dp = dot(row(&d_out.data, nq, d, bh, i), row(&v.data, nk, d, kv, j));
        (p, p * (dp - delta[bh * nq + i]))
    };
    // With grouped heads the query heads of a group add into their K/V head's dK and dV.
    for bh in 0..a.batch_heads {
        let kv = a.kv_matrix(bh);
        for k0 in (0..nk).step_by(block_k) {
            for q0 in (0..nq).step_by(block_q) {
                for j in k0..(k0 + block_k).min(nk) {
                    for i in q0..(q0 + block_q).min(nq) {
                        let (p, ds) = p_ds(bh, i, j);
                        let (qi, doi) =
                            (row(&q.data, nq, d, bh, i), row(&d_out.data, nq, d, bh, i));
                        for c in 0..d {
                            dv[(kv * nk + j) * d + c] += p * doi[c];
                            dk[(kv * nk + j) * d + c] += scale * ds * qi[c];
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
                        let kj = row(&k.data, nk, d, kv, j);
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
