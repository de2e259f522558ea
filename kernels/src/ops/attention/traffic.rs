//! The byte-traffic model of the two attention paths: for each kernel a path launches, the bytes
//! of global memory it reads and writes if each tensor it touches is read once and written
//! once (caches perfect within a kernel, nothing kept between kernels). The flash path's
//! advantage is what this model shows: the naive path writes the N×N scores and probabilities
//! (and in the backward pass their gradients and transposes) and reads them back, while the
//! flash kernels keep them in workgroup memory.

use serde::Serialize;

use crate::dtype::DType;
use crate::shape::AttentionDims;

/// Which implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Path {
    Flash,
    /// The flash path with the one-pass backward (dQ zeroed, then added to with atomics).
    FlashFused,
    Naive,
}

/// One kernel launch's global-memory traffic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelBytes {
    pub kernel: &'static str,
    pub read: u64,
    pub written: u64,
}

/// The kernels a path launches for the forward pass (and the backward pass after it, with
/// `backward`), with their traffic.
pub fn traffic(d: &AttentionDims, dtype: DType, path: Path, backward: bool) -> Vec<KernelBytes> {
    let e = dtype.size();
    let bh = d.batch_heads as u64;
    let q = bh * d.q_len as u64 * d.head_dim as u64 * e; // Q, O, dO, dQ
    // K, V, dK, dV, Kᵀ, Vᵀ: with grouped query heads, K/V heads only.
    let kv = d.kv_matrices() as u64 * d.kv_len as u64 * d.head_dim as u64 * e;
    let rows = bh * d.q_len as u64 * 4; // LSE, D (f32)
    let nn = bh * d.q_len as u64 * d.kv_len as u64 * e; // S, P, dP, dS and transposes
    let k = |kernel, read, written| KernelBytes {
        kernel,
        read,
        written,
    };
    let mut out = Vec::new();
    match path {
        Path::Flash | Path::FlashFused => {
            out.push(k("flash_fwd", q + 2 * kv, q + rows));
            if backward {
                out.push(k("attention_delta", 2 * q, rows));
                if path == Path::Flash {
                    out.push(k("flash_bwd_dkdv", 2 * q + 2 * kv + 2 * rows, 2 * kv));
                    out.push(k("flash_bwd_dq", 2 * q + 2 * kv + 2 * rows, q));
                } else {
                    // dQ is copied from zeros, then read and written by the atomic additions
                    // (once, in this model; every key block's workgroup adds to it in L2).
                    out.push(k("copy dQ ← 0", q, q));
                    out.push(k("flash_bwd_fused", 3 * q + 2 * kv + 2 * rows, 2 * kv + q));
                }
            }
        }
        Path::Naive => {
            out.push(k("matmul S = Q·Kᵀ", q + kv, nn));
            out.push(k("softmax P", nn, nn));
            out.push(k("matmul O = P·V", nn + kv, q));
            if backward {
                out.push(k("transpose P", nn, nn));
                out.push(k("matmul dV = Pᵀ·dO", nn + q, kv));
                out.push(k("matmul dP = dO·Vᵀ", q + kv, nn));
                out.push(k("softmax backward dS", 2 * nn, nn));
                out.push(k("matmul dQ = dS·K", nn + kv, q));
                out.push(k("transpose dS", nn, nn));
                out.push(k("matmul dK = dSᵀ·Q", nn + q, kv));
            }
        }
    }
    out
}

/// Read plus written over a list of kernels.
pub fn total(kernels: &[KernelBytes]) -> u64 {
    kernels.iter().map(|k| k.read + k.written).sum()
}

/// One N×N matrix of scores (or probabilities) over all batches and heads: the tensor the
/// flash kernels never write.
pub fn score_matrix_bytes(d: &AttentionDims, dtype: DType) -> u64 {
    d.batch_heads as u64 * d.q_len as u64 * d.kv_len as u64 * dtype.size()
}
